// The client's view of a Kafka cluster: bootstrap, one Connection per broker (by node id, at
// the host:port each broker advertises in Metadata), a metadata cache of the topics in use, and
// group coordinator lookup. Used by the network producer, consumer and admin; single-threaded
// (a consumer's heartbeat thread opens its own Cluster).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "net/connection.h"
#include "protocol/errors.h"
#include "protocol/messages.h"

namespace silt::client {

// The connection lives one layer down (lib/net), shared with the cluster's replica fetcher.
using net::Connection;
using net::HostPort;
using net::ParseBootstrap;

struct ClusterOptions {
  std::vector<HostPort> bootstrap;
  std::string client_id = "silt";
  int request_timeout_ms = 30000;
  int retry_backoff_ms = 100;
  // How long a retriable failure (leader moving, topic just created, broker restarting) is
  // retried before the operation gives up.
  int retry_timeout_ms = 30000;
};

struct PartitionMeta {
  int32_t partition = 0;
  int32_t leader = -1;
  int32_t leader_epoch = -1;
  int16_t error_code = 0;
  std::vector<int32_t> replicas;
  std::vector<int32_t> isr;
  std::vector<int32_t> offline_replicas;  // Metadata v5+
};

struct TopicMeta {
  std::string name;
  std::optional<std::string> topic_id;  // base64; Metadata v10+ only
  int16_t error_code = 0;
  bool internal = false;
  std::vector<PartitionMeta> partitions;  // sorted by partition id
};

// True for errors a client retries after a metadata refresh and a backoff.
bool IsRetriableError(int16_t code);
// "NOT_LEADER_OR_FOLLOWER" as a Status (IOError), with `context` in front.
Status ErrorStatus(int16_t code, const std::string& context,
                   const std::optional<std::string>& message = std::nullopt);

class Cluster {
 public:
  // Connects to the first reachable bootstrap broker. IOError listing every address tried.
  static Result<std::unique_ptr<Cluster>> Connect(const ClusterOptions& options);
  ~Cluster();

  const ClusterOptions& options() const { return options_; }

  // The connection for metadata and admin requests (to a bootstrap broker, or any broker known
  // from metadata when none of those answers), reconnected if it broke. Never one of the
  // per-broker connections of Node(), so it never has another caller's requests in flight.
  Result<Connection*> Any();
  // The connection to broker `node_id` (from the last Metadata answer), opened on first use.
  Result<Connection*> Node(int32_t node_id);
  // Forgets a broken connection so the next use reconnects.
  void Drop(Connection* c);

  // Fetches metadata for `topics` (nullopt: all topics) and caches what it learns.
  Result<protocol::MetadataResponse> FetchMetadata(
      const std::optional<std::vector<std::string>>& topics, bool allow_auto_create);
  // Metadata for one topic, refreshed until every partition has a leader or the retry time
  // passes. NotFound for an unknown topic (after retrying for a topic just created).
  Result<TopicMeta> Topic(const std::string& topic, bool allow_auto_create);
  // The cached metadata of a topic, if any.
  const TopicMeta* Cached(const std::string& topic) const;

  // The coordinator of consumer group `group` (FindCoordinator), retried while it loads.
  Result<Connection*> Coordinator(const std::string& group);
  // Forgets the coordinator after NOT_COORDINATOR / a network error.
  void ForgetCoordinator(const std::string& group) { coordinators_.erase(group); }

  // Every broker of the last Metadata answer.
  const std::map<int32_t, HostPort>& brokers() const { return brokers_; }

 private:
  explicit Cluster(ClusterOptions options) : options_(std::move(options)) {}

  ClusterOptions options_;
  std::unique_ptr<Connection> bootstrap_;
  std::map<int32_t, HostPort> brokers_;
  std::map<int32_t, std::unique_ptr<Connection>> nodes_;
  std::map<std::string, TopicMeta> topics_;
  std::map<std::string, int32_t> coordinators_;
  size_t next_bootstrap_ = 0;
};

// Runs `attempt` until it succeeds, fails for good, or the cluster's retry time passes, backing
// off from retry_backoff_ms up to 1 s. `attempt(bool* retry)` returns OK, or a Status with
// `*retry` saying whether the failure may be retried (after a metadata refresh it does itself).
template <typename Fn>
Status Retrying(Cluster* cluster, Fn&& attempt) {
  const int64_t deadline = MonotonicMs() + cluster->options().retry_timeout_ms;
  int backoff = cluster->options().retry_backoff_ms;
  for (;;) {
    bool retry = false;
    Status st = attempt(&retry);
    if (st.ok() || !retry || MonotonicMs() >= deadline) return st;
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff));
    backoff = std::min(backoff * 2, 1000);
  }
}

}  // namespace silt::client
