// The broker's configuration: Kafka's server.properties names, parsed into one struct.
//
// Recognised keys: listeners, advertised.listeners, log.dirs / log.dir, node.id / broker.id,
// cluster.id, num.partitions, auto.create.topics.enable, default.replication.factor,
// message.max.bytes, socket.request.max.bytes, max.connections, num.network.threads,
// num.io.threads (request-handler threads), queued.max.requests, log.segment.bytes, log.roll.ms|hours, log.retention.ms|minutes|hours|bytes,
// log.flush.interval.messages|ms, log.index.interval.bytes, log.index.size.max.bytes,
// log.message.timestamp.type, log.cleanup.policy, compression.type, min.insync.replicas,
// log.retention.check.interval.ms, offsets.topic.num.partitions, offsets.retention.minutes,
// offsets.retention.check.interval.ms, offset.metadata.max.bytes, group.min.session.timeout.ms,
// group.max.session.timeout.ms, group.initial.rebalance.delay.ms; for cluster mode
// controller.quorum.voters, broker.heartbeat.interval.ms, broker.session.timeout.ms,
// replica.lag.time.max.ms, replica.fetch.max.bytes, replica.fetch.wait.max.ms,
// replica.fetch.backoff.ms,
// offsets.topic.replication.factor, unclean.leader.election.enable, auto.leader.rebalance.enable,
// leader.imbalance.check.interval.seconds, leader.imbalance.per.broker.percentage,
// controlled.shutdown.enable, controlled.shutdown.timeout.ms (silt's).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "storage/log_config.h"

namespace silt::broker {

struct BrokerConfig {
  std::string listen_host = "127.0.0.1";
  int listen_port = 9092;  // 0: an ephemeral port, reported in the "listening on" line
  // Where clients are told to connect (Metadata). Empty host: the bound address.
  std::string advertised_host;
  int advertised_port = -1;  // -1: the bound port
  int32_t node_id = 0;
  std::string cluster_id;  // empty: generated once and kept in the data dir
  // controller.quorum.voters (`1@host:port,...`): empty for a single node; else cluster mode.
  std::string quorum_voters;
  // metrics.listener (`--metrics`): HOST:PORT of the Prometheus /metrics endpoint; empty
  // (the default): none. Port 0 picks one, reported in a "metrics on" log line.
  std::string metrics_host;
  int metrics_port = -1;  // -1: off
  // Cluster mode: how often a node tells the controller it is alive, and after how long without
  // a word the controller fences it (its partitions lose it as leader). Kafka's are 2000 and
  // 9000; silt's are made for loopback and LAN links, where a leader's failure then costs
  // about 2.5 s of acks=all (heartbeats have a thread of their own on every node, so slow work
  // elsewhere does not delay them).
  int32_t broker_heartbeat_interval_ms = 250;   // broker.heartbeat.interval.ms
  int32_t broker_session_timeout_ms = 1500;     // broker.session.timeout.ms
  // Cluster mode, replication (lib/cluster/replica_manager.h): a follower not caught up for
  // replica.lag.time.max.ms leaves the ISR (Kafka's default is 30000; silt's 10000), and the
  // followers' fetches: bytes per partition, long-poll wait, and the pause after an error
  // (Kafka's default 1000; silt's 500).
  int32_t replica_lag_time_max_ms = 10000;      // replica.lag.time.max.ms
  int32_t replica_fetch_max_bytes = 1048576;    // replica.fetch.max.bytes
  int32_t replica_fetch_wait_max_ms = 500;      // replica.fetch.wait.max.ms
  int32_t replica_fetch_backoff_ms = 500;       // replica.fetch.backoff.ms
  // Incremental fetch sessions (KIP-227, lib/broker/fetch_session.h) held at most; 0 turns them
  // off (every fetch is then a full one). Kafka's default.
  int32_t max_incremental_fetch_session_cache_slots = 1000;  // max.incremental.fetch.session.cache.slots
  // Replicas per partition when CreateTopics asks for -1, and of auto-created topics.
  int32_t default_replication_factor = 1;       // default.replication.factor
  // Replicas of __consumer_offsets' partitions; -1: min(3, number of voters).
  int32_t offsets_topic_replication_factor = -1;  // offsets.topic.replication.factor
  // The controller's elections (cluster/controller.h): the default of the topic config of the
  // same name, whether leadership goes back to preferred replicas and how often that is checked,
  // and how much imbalance per broker is let be.
  bool unclean_leader_election_enable = false;        // unclean.leader.election.enable
  bool auto_leader_rebalance_enable = true;           // auto.leader.rebalance.enable
  int64_t leader_imbalance_check_interval_ms = 30000;  // leader.imbalance.check.interval.seconds
  int32_t leader_imbalance_per_broker_percentage = 10;  // leader.imbalance.per.broker.percentage
  // On SIGTERM a cluster node first asks the controller to move its leaderships away and waits
  // at most this long for it.
  bool controlled_shutdown_enable = true;       // controlled.shutdown.enable
  int32_t controlled_shutdown_timeout_ms = 5000;  // controlled.shutdown.timeout.ms (silt's)
  std::string data_dir = "./silt-data";
  int32_t num_partitions = 1;
  bool auto_create_topics = true;
  int32_t message_max_bytes = 1048588;                  // message.max.bytes
  int64_t socket_request_max_bytes = 100LL << 20;       // socket.request.max.bytes
  int32_t max_connections = 2147483647;                 // max.connections
  // Threads running the io_context: sockets, and the handlers that never wait
  // (num.network.threads; silt's default is one per core of a small machine).
  int io_threads = 2;
  // Request-handler threads, for the handlers that may wait (num.io.threads, Kafka's default),
  // and how many requests may wait for one before connections stop reading
  // (queued.max.requests). broker/handler_pool.h.
  int handler_threads = 8;
  int queued_max_requests = 500;
  // Partitions one CreateTopics or CreatePartitions request may create, over all its topics
  // (max.partitions.per.request, silt's; Kafka's KRaft controller has the same bound, fixed).
  int32_t max_partitions_per_request = 10000;
  // How often closed segments are checked against retention.ms/retention.bytes
  // (log.retention.check.interval.ms), and time-based flushes (flush.ms) are run.
  int64_t retention_check_interval_ms = 300000;
  // Most requests a connection may have in flight before the broker stops reading from it.
  int max_in_flight_per_connection = 64;
  storage::LogConfig log_defaults;  // topic defaults from the log.* keys
  // Group coordinator.
  int32_t offsets_topic_num_partitions = 50;                 // offsets.topic.num.partitions
  int64_t offsets_retention_ms = 7LL * 24 * 3600 * 1000;     // offsets.retention.minutes
  int64_t offsets_retention_check_interval_ms = 600000;      // offsets.retention.check.interval.ms
  int32_t offset_metadata_max_bytes = 4096;                  // offset.metadata.max.bytes
  int32_t group_min_session_timeout_ms = 6000;               // group.min.session.timeout.ms
  int32_t group_max_session_timeout_ms = 1800000;            // group.max.session.timeout.ms
  int32_t group_initial_rebalance_delay_ms = 3000;           // group.initial.rebalance.delay.ms
  bool log_cleaner_enable = true;             // log.cleaner.enable
  int64_t log_cleaner_backoff_ms = 15000;      // log.cleaner.backoff.ms
  // Keys that were accepted but have no effect here (reported once at start-up).
  std::vector<std::string> ignored_keys;
};

// Applies one Kafka server property. InvalidArgument naming the key for bad values, NotFound
// for a key this broker does not know.
Status ApplyServerProperty(BrokerConfig* config, const std::string& key, const std::string& value);

// Every key ApplyServerProperty accepts, the ignored ones of stock Kafka files included (for
// suggesting the nearest key to a misspelt one).
std::vector<std::string> KnownServerProperties();

// Reads a Java-style properties file (`key=value` or `key: value`, `#`/`!` comments) and applies
// each entry in order. Unknown keys are collected in ignored_keys rather than refused, so a stock
// Kafka server.properties loads.
Status LoadServerProperties(const std::string& path, BrokerConfig* config);

// offsets.topic.replication.factor as configured, where -1 (silt's default) is min(3, the
// number of voters in controller.quorum.voters), 1 without voters.
int32_t OffsetsTopicReplicationFactor(const BrokerConfig& config);

// Parses "HOST:PORT", "[v6]:PORT" or a listener "PLAINTEXT://HOST:PORT" (the first of a
// comma-separated list). An empty host means all interfaces (0.0.0.0).
Status ParseHostPort(const std::string& text, std::string* host, int* port);

}  // namespace silt::broker
