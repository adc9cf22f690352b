// server.properties parsing and the producer-state rules, without a network.
#include <doctest/doctest.h>

#include <cstdlib>

#include "base/file.h"
#include "broker/config.h"
#include "broker/producer_state.h"

using namespace silt;
using namespace silt::broker;

TEST_CASE("a Kafka server.properties file maps onto the broker config") {
  char tmpl[] = "/tmp/silt-config-test-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::string path = JoinPath(dir, "server.properties");
  REQUIRE(WriteFileAtomic(path,
                          "# a comment\n"
                          "listeners=PLAINTEXT://0.0.0.0:19092\n"
                          "advertised.listeners=PLAINTEXT://broker.example:9093\n"
                          "log.dirs=/var/lib/silt\n"
                          "broker.id = 4\n"
                          "num.partitions=6\n"
                          "auto.create.topics.enable=false\n"
                          "log.retention.hours=2\n"
                          "log.segment.bytes=1048576\n"
                          "num.network.threads=3\n"
                          "num.io.threads=5\n"
                          "queued.max.requests=77\n"
                          "socket.send.buffer.bytes=102400\n"
                          "zookeeper.connect=localhost:2181\n")
              .ok());
  BrokerConfig c;
  REQUIRE(LoadServerProperties(path, &c).ok());
  CHECK(c.listen_host == "0.0.0.0");
  CHECK(c.listen_port == 19092);
  CHECK(c.advertised_host == "broker.example");
  CHECK(c.advertised_port == 9093);
  CHECK(c.data_dir == "/var/lib/silt");
  CHECK(c.node_id == 4);
  CHECK(c.num_partitions == 6);
  CHECK(!c.auto_create_topics);
  CHECK(c.log_defaults.retention_ms == 2 * 3600 * 1000);
  CHECK(c.log_defaults.segment_bytes == 1048576);
  // Kafka's thread keys: network threads run the sockets, io threads the handlers that wait.
  CHECK(c.io_threads == 3);
  CHECK(c.handler_threads == 5);
  CHECK(c.queued_max_requests == 77);
  CHECK(c.ignored_keys.size() == 2);

  CHECK(!ApplyServerProperty(&c, "num.partitions", "zero").ok());
  CHECK(ApplyServerProperty(&c, "no.such.key", "1").IsNotFound());
  CHECK(!ApplyServerProperty(&c, "listeners", "SSL://h:1").ok());
  (void)RemoveAll(dir);
}

TEST_CASE("log.dirs with several directories is refused rather than cut to the first") {
  BrokerConfig c;
  Status s = ApplyServerProperty(&c, "log.dirs", "/a,/b");
  CHECK(s.code() == Status::Code::kInvalidArgument);
  CHECK(s.message().find("one data directory") != std::string::npos);
  CHECK(c.data_dir == BrokerConfig().data_dir);
  CHECK(ApplyServerProperty(&c, "log.dirs", " /a ").ok());
  CHECK(c.data_dir == "/a");
}

TEST_CASE("every key listed as known is one the broker accepts") {
  for (const std::string& k : KnownServerProperties()) {
    BrokerConfig c;
    INFO(k);
    CHECK_FALSE(ApplyServerProperty(&c, k, "").IsNotFound());
  }
  BrokerConfig c;
  CHECK(ApplyServerProperty(&c, "log.retention.hourz", "").IsNotFound());
}

TEST_CASE("the controller's keys: replication factors, elections, preferred leaders, shutdown") {
  BrokerConfig c;
  CHECK(c.default_replication_factor == 1);
  CHECK(c.unclean_leader_election_enable == false);
  CHECK(c.auto_leader_rebalance_enable == true);
  CHECK(c.leader_imbalance_check_interval_ms == 30000);
  CHECK(c.leader_imbalance_per_broker_percentage == 10);
  CHECK(c.controlled_shutdown_enable == true);
  // offsets.topic.replication.factor: min(3, voters) unless set.
  CHECK(OffsetsTopicReplicationFactor(c) == 1);
  c.quorum_voters = "1@h:1,2@h:2";
  CHECK(OffsetsTopicReplicationFactor(c) == 2);
  c.quorum_voters = "1@h:1,2@h:2,3@h:3,4@h:4,5@h:5";
  CHECK(OffsetsTopicReplicationFactor(c) == 3);
  REQUIRE(ApplyServerProperty(&c, "offsets.topic.replication.factor", "2").ok());
  CHECK(OffsetsTopicReplicationFactor(c) == 2);
  REQUIRE(ApplyServerProperty(&c, "default.replication.factor", "3").ok());
  CHECK(c.default_replication_factor == 3);
  CHECK_FALSE(ApplyServerProperty(&c, "default.replication.factor", "0").ok());
  REQUIRE(ApplyServerProperty(&c, "unclean.leader.election.enable", "true").ok());
  CHECK(c.unclean_leader_election_enable);
  REQUIRE(ApplyServerProperty(&c, "auto.leader.rebalance.enable", "false").ok());
  CHECK_FALSE(c.auto_leader_rebalance_enable);
  REQUIRE(ApplyServerProperty(&c, "leader.imbalance.check.interval.seconds", "2").ok());
  CHECK(c.leader_imbalance_check_interval_ms == 2000);
  CHECK_FALSE(ApplyServerProperty(&c, "leader.imbalance.per.broker.percentage", "101").ok());
  REQUIRE(ApplyServerProperty(&c, "controlled.shutdown.timeout.ms", "1500").ok());
  CHECK(c.controlled_shutdown_timeout_ms == 1500);
  CHECK(c.ignored_keys.empty());
}

TEST_CASE("host:port parsing accepts listeners, bare pairs and bracketed IPv6") {
  std::string h;
  int p = 0;
  REQUIRE(ParseHostPort("127.0.0.1:0", &h, &p).ok());
  CHECK((h == "127.0.0.1" && p == 0));
  REQUIRE(ParseHostPort("[::1]:9092", &h, &p).ok());
  CHECK((h == "::1" && p == 9092));
  REQUIRE(ParseHostPort(":9092", &h, &p).ok());
  CHECK(h == "0.0.0.0");
  CHECK(!ParseHostPort("localhost", &h, &p).ok());
  CHECK(!ParseHostPort("h:70000", &h, &p).ok());
}

TEST_CASE("producer state keeps five batches and tells duplicates from gaps") {
  ProducerStateTable t;
  CHECK(t.Check(ProducerId(1), 0, 42, 42, nullptr) == SequenceCheck::kAppend);  // unknown: any start
  for (int i = 0; i < 7; ++i) t.Record(ProducerId(1), 0, ProducerBatch{i * 10, i * 10 + 9, i * 100, i * 100 + 9, -1});
  ProducerBatch orig;
  CHECK(t.Check(ProducerId(1), 0, 60, 69, &orig) == SequenceCheck::kDuplicate);
  CHECK(orig.base_offset == 600);
  CHECK(t.Check(ProducerId(1), 0, 20, 29, &orig) == SequenceCheck::kDuplicate);
  CHECK(t.Check(ProducerId(1), 0, 10, 19, &orig) == SequenceCheck::kOutOfOrder);  // older than the last 5
  CHECK(t.Check(ProducerId(1), 0, 70, 75, nullptr) == SequenceCheck::kAppend);
  CHECK(t.Check(ProducerId(1), 0, 71, 75, nullptr) == SequenceCheck::kOutOfOrder);
  CHECK(t.Check(ProducerId(1), 1, 0, 3, nullptr) == SequenceCheck::kAppend);
  CHECK(t.Check(ProducerId(1), 1, 5, 6, nullptr) == SequenceCheck::kOutOfOrder);
  t.Record(ProducerId(1), 2, ProducerBatch{0, 0, 800, 800, -1});
  CHECK(t.Check(ProducerId(1), 1, 70, 70, nullptr) == SequenceCheck::kFenced);
  // Sequence numbers wrap from INT32_MAX to 0.
  t.Record(ProducerId(2), 0, ProducerBatch{2147483600, 2147483647, 0, 47, -1});
  CHECK(t.Check(ProducerId(2), 0, 0, 5, nullptr) == SequenceCheck::kAppend);
}
