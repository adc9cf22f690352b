// DescribeCluster, DescribeLogDirs, DescribeProducers and OffsetDelete over the wire against an
// in-process broker, and OffsetCommit's answer for topics and partitions that do not exist.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "broker/broker_test_util.h"
#include "protocol/errors.h"
#include "protocol/messages_describe.h"

namespace silt::broker {
namespace {

using protocol::ErrorCode;
using testing::Client;
using testing::CreateTopic;
using testing::MakeBatch;
using testing::MakeProduce;
using testing::TestBroker;

int16_t E(ErrorCode c) { return protocol::ToWire(c); }

BrokerConfig GroupConfig() {
  BrokerConfig c;
  c.group_initial_rebalance_delay_ms = 0;
  c.offsets_topic_num_partitions = 3;
  return c;
}

void Produce(Client& c, const std::string& topic, int32_t partition, const std::string& batch) {
  protocol::ProduceResponse pr;
  c.Call(MakeProduce(topic, partition, batch), 7, &pr);
  REQUIRE(pr.responses.size() == 1);
  REQUIRE(pr.responses[0].partition_responses[0].error_code == 0);
}

// Bytes of the partition's segment files on disk.
int64_t LogBytes(const std::string& data_dir, const std::string& dir_name) {
  int64_t total = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(data_dir) / dir_name)) {
    if (e.path().extension() == ".log") total += static_cast<int64_t>(e.file_size());
  }
  return total;
}

// A ConsumerProtocolSubscription v0 naming `topics` (as the Java client and librdkafka write).
std::string Subscription(const std::vector<std::string>& topics) {
  std::string out;
  ByteWriter w(&out);
  w.I16(0);
  w.I32(static_cast<int32_t>(topics.size()));
  for (const auto& t : topics) {
    w.I16(static_cast<int16_t>(t.size()));
    w.Raw(t.data(), t.size());
  }
  w.I32(-1);  // no user data
  return out;
}

int16_t CommitOne(Client& c, const std::string& group, const std::string& topic,
                  int32_t partition, int64_t offset) {
  protocol::OffsetCommitRequest r;
  r.group_id = group;
  r.generation_id_or_member_epoch = -1;
  r.topics.push_back({topic, {{partition, offset, -1, -1, std::string("")}}});
  protocol::OffsetCommitResponse resp;
  c.Call(r, 2, &resp);
  REQUIRE(resp.topics.size() == 1);
  REQUIRE(resp.topics[0].partitions.size() == 1);
  return resp.topics[0].partitions[0].error_code;
}

int64_t Committed(Client& c, const std::string& group, const std::string& topic,
                  int32_t partition) {
  protocol::OffsetFetchRequest f;
  f.group_id = group;
  f.topics.emplace();
  f.topics->push_back({topic, {partition}});
  protocol::OffsetFetchResponse fr;
  c.Call(f, 1, &fr);
  REQUIRE(fr.topics.size() == 1);
  return fr.topics[0].partitions[0].committed_offset;
}

TEST_CASE("ApiVersions advertises DescribeLogDirs 0-4, OffsetDelete 0, DescribeCluster 0-1, DescribeProducers 0") {
  TestBroker b;
  Client c(b.port);
  protocol::ApiVersionsResponse resp;
  c.Call(protocol::ApiVersionsRequest{}, 2, &resp);
  std::map<int16_t, std::pair<int16_t, int16_t>> got;
  for (const auto& k : resp.api_keys) got[k.api_key] = {k.min_version, k.max_version};
  CHECK(got[35] == std::make_pair<int16_t, int16_t>(0, 4));
  CHECK(got[47] == std::make_pair<int16_t, int16_t>(0, 0));
  CHECK(got[60] == std::make_pair<int16_t, int16_t>(0, 1));
  CHECK(got[61] == std::make_pair<int16_t, int16_t>(0, 0));
}

TEST_CASE("DescribeCluster names this broker, the cluster id and the controller") {
  TestBroker b;
  Client c(b.port);
  for (int16_t v = 0; v <= 1; ++v) {
    CAPTURE(v);
    protocol::DescribeClusterRequest req;
    req.include_cluster_authorized_operations = v == 1;
    protocol::DescribeClusterResponse resp;
    c.Call(req, v, &resp);
    CHECK(resp.error_code == 0);
    CHECK(resp.cluster_id == b.server->broker().node().cluster_id);
    CHECK(!resp.cluster_id.empty());
    CHECK(resp.controller_id == 0);
    REQUIRE(resp.brokers.size() == 1);
    CHECK(resp.brokers[0].broker_id == 0);
    CHECK(resp.brokers[0].host == "127.0.0.1");
    CHECK(resp.brokers[0].port == b.port);
    CHECK_FALSE(resp.brokers[0].rack.has_value());
    if (v == 1) {
      // Everything a cluster supports is allowed (no authorizer): DESCRIBE (8) among them.
      CHECK((resp.cluster_authorized_operations & (1 << 8)) != 0);
    } else {
      CHECK(resp.cluster_authorized_operations == INT32_MIN);
    }
  }
  protocol::DescribeClusterRequest controllers;
  controllers.endpoint_type = protocol::DescribeClusterRequest::kControllers;
  protocol::DescribeClusterResponse resp;
  c.Call(controllers, 1, &resp);
  CHECK(resp.error_code == E(ErrorCode::UNSUPPORTED_ENDPOINT_TYPE));
  CHECK(resp.brokers.empty());
}

TEST_CASE("DescribeLogDirs reports the data dir and each partition's size on disk") {
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "sized", 2);
  CreateTopic(c, "other");
  Produce(c, "sized", 0, MakeBatch(50));
  Produce(c, "sized", 0, MakeBatch(20));
  const int64_t size0 = LogBytes(b.data_dir, "sized-0");
  REQUIRE(size0 > 0);
  CHECK(LogBytes(b.data_dir, "sized-1") == 0);
  const std::string abs = std::filesystem::absolute(b.data_dir).lexically_normal().string();

  for (int16_t v = 0; v <= 4; ++v) {
    CAPTURE(v);
    protocol::DescribeLogDirsRequest req;
    req.topics.emplace();
    req.topics->push_back({"sized", {1, 0}});
    req.topics->push_back({"missing", {0}});
    protocol::DescribeLogDirsResponse resp;
    c.Call(req, v, &resp);
    CHECK(resp.error_code == 0);
    REQUIRE(resp.results.size() == 1);
    const auto& dir = resp.results[0];
    CHECK(dir.error_code == 0);
    CHECK(dir.log_dir == abs);
    // A topic this broker does not host is left out, as Kafka does.
    REQUIRE(dir.topics.size() == 1);
    CHECK(dir.topics[0].name == "sized");
    REQUIRE(dir.topics[0].partitions.size() == 2);
    CHECK(dir.topics[0].partitions[0].partition_index == 0);
    CHECK(dir.topics[0].partitions[0].partition_size == size0);
    CHECK(dir.topics[0].partitions[0].offset_lag == 0);
    CHECK_FALSE(dir.topics[0].partitions[0].is_future_key);
    CHECK(dir.topics[0].partitions[1].partition_index == 1);
    CHECK(dir.topics[0].partitions[1].partition_size == 0);
    if (v >= 4) {
      CHECK(dir.total_bytes > 0);
      CHECK(dir.usable_bytes >= 0);
      CHECK(dir.usable_bytes <= dir.total_bytes);
    } else {
      CHECK(dir.total_bytes == -1);
    }
  }

  // Null topics: every topic and partition.
  protocol::DescribeLogDirsRequest all;
  protocol::DescribeLogDirsResponse resp;
  c.Call(all, 2, &resp);
  REQUIRE(resp.results.size() == 1);
  std::map<std::string, size_t> partitions;
  for (const auto& t : resp.results[0].topics) partitions[t.name] = t.partitions.size();
  CHECK(partitions["sized"] == 2);
  CHECK(partitions["other"] == 1);
}

TEST_CASE("DescribeProducers lists a partition's idempotent producers with their last batch") {
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "idem", 2);
  protocol::InitProducerIdResponse ir;
  c.Call(protocol::InitProducerIdRequest{}, 1, &ir);
  REQUIRE(ir.error_code == 0);
  Produce(c, "idem", 0, MakeBatch(3, format::Compression::kNone, ir.producer_id, ir.producer_epoch, 0));
  Produce(c, "idem", 0, MakeBatch(4, format::Compression::kNone, ir.producer_id, ir.producer_epoch, 3));
  Produce(c, "idem", 1, MakeBatch(2));  // not idempotent: no producer state

  protocol::DescribeProducersRequest req;
  req.topics.push_back({"idem", {0, 1, 7}});
  req.topics.push_back({"missing", {0}});
  protocol::DescribeProducersResponse resp;
  c.Call(req, 0, &resp);
  REQUIRE(resp.topics.size() == 2);
  REQUIRE(resp.topics[0].partitions.size() == 3);
  const auto& p0 = resp.topics[0].partitions[0];
  CHECK(p0.error_code == 0);
  REQUIRE(p0.active_producers.size() == 1);
  CHECK(p0.active_producers[0].producer_id == ir.producer_id);
  CHECK(p0.active_producers[0].producer_epoch == ir.producer_epoch);
  CHECK(p0.active_producers[0].last_sequence == 6);
  CHECK(p0.active_producers[0].last_timestamp > 0);
  CHECK(p0.active_producers[0].coordinator_epoch == -1);
  CHECK(p0.active_producers[0].current_txn_start_offset == -1);
  CHECK(resp.topics[0].partitions[1].error_code == 0);
  CHECK(resp.topics[0].partitions[1].active_producers.empty());
  CHECK(resp.topics[0].partitions[2].error_code == E(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
  CHECK(resp.topics[1].partitions[0].error_code == E(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
}

TEST_CASE("OffsetCommit answers UNKNOWN_TOPIC_OR_PARTITION for a missing topic or partition and commits the rest") {
  TestBroker b(GroupConfig());
  Client c(b.port);
  CreateTopic(c, "real", 2);
  protocol::OffsetCommitRequest r;
  r.group_id = "g";
  r.generation_id_or_member_epoch = -1;
  r.topics.push_back({"real", {{0, 5, -1, -1, std::string("")}, {2, 6, -1, -1, std::string("")}}});
  r.topics.push_back({"nope", {{0, 7, -1, -1, std::string("")}}});
  for (int16_t v : {int16_t{2}, int16_t{7}}) {
    CAPTURE(v);
    protocol::OffsetCommitResponse resp;
    c.Call(r, v, &resp);
    std::map<std::pair<std::string, int32_t>, int16_t> errors;
    for (const auto& t : resp.topics) {
      for (const auto& p : t.partitions) errors[{t.name, p.partition_index}] = p.error_code;
    }
    CHECK(errors.size() == 3);
    CHECK(errors[{"real", 0}] == 0);
    CHECK(errors[{"real", 2}] == E(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
    CHECK(errors[{"nope", 0}] == E(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
  }
  CHECK(Committed(c, "g", "real", 0) == 5);
  CHECK(Committed(c, "g", "real", 2) == -1);
  CHECK(Committed(c, "g", "nope", 0) == -1);
  // Nothing but unknown partitions: still answered, nothing stored.
  CHECK(CommitOne(c, "g2", "nope", 0, 1) == E(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
  protocol::ListGroupsResponse lr;
  c.Call(protocol::ListGroupsRequest{}, 2, &lr);
  for (const auto& g : lr.groups) CHECK(g.group_id != "g2");
}

TEST_CASE("OffsetDelete removes an empty group's offsets durably and refuses a subscribed topic") {
  TestBroker b(GroupConfig());
  Client c(b.port);
  CreateTopic(c, "t", 2);
  CreateTopic(c, "u");
  REQUIRE(CommitOne(c, "idle", "t", 0, 10) == 0);
  REQUIRE(CommitOne(c, "idle", "t", 1, 11) == 0);
  REQUIRE(CommitOne(c, "idle", "u", 0, 12) == 0);

  protocol::OffsetDeleteRequest del;
  del.group_id = "idle";
  del.topics.push_back({"t", {{0}}});
  del.topics.push_back({"missing", {{0}}});
  del.topics.push_back({"u", {{3}}});
  protocol::OffsetDeleteResponse resp;
  c.Call(del, 0, &resp);
  CHECK(resp.error_code == 0);
  REQUIRE(resp.topics.size() == 3);
  CHECK(resp.topics[0].name == "t");
  CHECK(resp.topics[0].partitions[0].error_code == 0);
  CHECK(resp.topics[1].partitions[0].error_code == E(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
  CHECK(resp.topics[2].partitions[0].error_code == E(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
  CHECK(Committed(c, "idle", "t", 0) == -1);
  CHECK(Committed(c, "idle", "t", 1) == 11);

  // Group errors: the whole answer, no topics.
  del.group_id = "never";
  c.Call(del, 0, &resp);
  CHECK(resp.error_code == E(ErrorCode::GROUP_ID_NOT_FOUND));
  CHECK(resp.topics.empty());
  del.group_id = "";
  c.Call(del, 0, &resp);
  CHECK(resp.error_code == E(ErrorCode::INVALID_GROUP_ID));

  // A live consumer group subscribed to "t": its offsets there stay, those of "u" go.
  protocol::JoinGroupRequest join;
  join.group_id = "idle";
  join.session_timeout_ms = 30000;
  join.rebalance_timeout_ms = 30000;
  join.protocol_type = "consumer";
  join.protocols = {{"range", Subscription({"t"})}};
  protocol::JoinGroupResponse jr;
  c.Call(join, 3, &jr);
  REQUIRE(jr.error_code == 0);
  protocol::OffsetDeleteRequest live;
  live.group_id = "idle";
  live.topics.push_back({"t", {{1}}});
  live.topics.push_back({"u", {{0}}});
  c.Call(live, 0, &resp);
  CHECK(resp.error_code == 0);
  REQUIRE(resp.topics.size() == 2);
  CHECK(resp.topics[0].partitions[0].error_code == E(ErrorCode::GROUP_SUBSCRIBED_TO_TOPIC));
  CHECK(resp.topics[1].partitions[0].error_code == 0);
  CHECK(Committed(c, "idle", "t", 1) == 11);
  CHECK(Committed(c, "idle", "u", 0) == -1);

  // A non-consumer group with members cannot have offsets deleted at all.
  protocol::JoinGroupRequest connect = join;
  connect.group_id = "worker";
  connect.protocol_type = "connect";
  connect.protocols = {{"default", "md"}};
  c.Call(connect, 3, &jr);
  REQUIRE(jr.error_code == 0);
  live.group_id = "worker";
  c.Call(live, 0, &resp);
  CHECK(resp.error_code == E(ErrorCode::NON_EMPTY_GROUP));

  // The deletions are in __consumer_offsets: gone after a restart too.
  b.Restart();
  Client c2(b.port);
  CHECK(Committed(c2, "idle", "t", 0) == -1);
  CHECK(Committed(c2, "idle", "u", 0) == -1);
  CHECK(Committed(c2, "idle", "t", 1) == 11);
}

}  // namespace
}  // namespace silt::broker
