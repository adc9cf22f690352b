// The behaviour that newer versions of the group and admin APIs add, over the wire against an
// in-process broker: ListOffsets v7-9 (max timestamp, earliest local, latest tiered),
// OffsetFetch v8 (a batch of groups), JoinGroup v7 / SyncGroup v5 (the protocol named in both
// directions), ListGroups v4-5 (state and type filters), CreateTopics v5-7 (what was created,
// with its id), DeleteTopics v6 (by id) and FindCoordinator v6 (share groups are refused).
#include <map>
#include <string>
#include <vector>

#include "broker/broker_test_util.h"
#include "format/record_batch.h"
#include "protocol/errors.h"

namespace silt::broker {
namespace {

using protocol::ErrorCode;
using testing::Client;
using testing::CreateTopic;
using testing::MakeProduce;
using testing::TestBroker;

int16_t E(ErrorCode c) { return protocol::ToWire(c); }

BrokerConfig GroupConfig() {
  BrokerConfig c;
  c.group_initial_rebalance_delay_ms = 0;
  c.offsets_topic_num_partitions = 3;
  return c;
}

// One batch whose records carry the given timestamps.
std::string BatchWithTimestamps(const std::vector<int64_t>& ts) {
  format::RecordBatchBuilder b(format::RecordBatchBuilder::Options{});
  for (size_t i = 0; i < ts.size(); ++i) {
    std::string v = "v" + std::to_string(i);
    b.Add(std::nullopt, std::string_view(v), ts[i]);
  }
  auto r = b.Finish();
  REQUIRE(r.ok());
  return std::move(r).value();
}

protocol::ListOffsetsResponse::Partition ListOne(Client& c, const std::string& topic,
                                                 int64_t timestamp, int16_t version) {
  protocol::ListOffsetsRequest req;
  req.replica_id = -1;
  req.topics.push_back({topic, {{0, -1, timestamp, 1}}});
  protocol::ListOffsetsResponse resp;
  c.Call(req, version, &resp);
  REQUIRE(resp.topics.size() == 1);
  REQUIRE(resp.topics[0].partitions.size() == 1);
  return resp.topics[0].partitions[0];
}

TEST_CASE("ListOffsets v7 finds the record with the largest timestamp, v8 the earliest local offset, v9 no tiered offset") {
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "ts");
  // Offsets 0-2, then 3-5: the largest timestamp (9000) is at offset 4, not at a batch's end.
  for (const auto& batch : {BatchWithTimestamps({1000, 5000, 2000}),
                            BatchWithTimestamps({3000, 9000, 4000})}) {
    protocol::ProduceResponse pr;
    c.Call(MakeProduce("ts", 0, batch), 9, &pr);
    REQUIRE(pr.responses[0].partition_responses[0].error_code == 0);
  }
  auto max = ListOne(c, "ts", -3, 7);
  CHECK(max.error_code == 0);
  CHECK(max.offset == 4);
  CHECK(max.timestamp == 9000);
  CHECK(max.leader_epoch >= 0);

  auto local = ListOne(c, "ts", -4, 8);
  CHECK(local.error_code == 0);
  CHECK(local.offset == 0);

  auto tiered = ListOne(c, "ts", -5, 9);
  CHECK(tiered.error_code == 0);
  CHECK(tiered.offset == -1);

  // An empty partition has no largest timestamp.
  CreateTopic(c, "empty");
  CHECK(ListOne(c, "empty", -3, 7).offset == -1);
  // The older sentinels answer as before at the new versions.
  CHECK(ListOne(c, "ts", -1, 9).offset == 6);
  CHECK(ListOne(c, "ts", -2, 9).offset == 0);
  CHECK(ListOne(c, "ts", 4500, 9).offset == 1);  // the first record at or after it
}

int16_t Commit(Client& c, const std::string& group, const std::string& topic, int32_t partition,
               int64_t offset) {
  protocol::OffsetCommitRequest r;
  r.group_id = group;
  r.generation_id_or_member_epoch = -1;
  r.topics.push_back({topic, {{partition, offset, -1, -1, std::string("")}}});
  protocol::OffsetCommitResponse resp;
  c.Call(r, 9, &resp);
  REQUIRE(resp.topics.size() == 1);
  return resp.topics[0].partitions[0].error_code;
}

TEST_CASE("OffsetFetch v8 answers a batch of groups, each with its own offsets") {
  TestBroker b(GroupConfig());
  Client c(b.port);
  CreateTopic(c, "t", 2);
  REQUIRE(Commit(c, "g1", "t", 0, 11) == 0);
  REQUIRE(Commit(c, "g1", "t", 1, 12) == 0);
  REQUIRE(Commit(c, "g2", "t", 1, 22) == 0);

  protocol::OffsetFetchRequest req;
  req.groups.push_back({.group_id = "g1", .member_id = std::nullopt, .member_epoch = -1,
                        .topics = std::nullopt});  // every committed offset
  req.groups.push_back(
      {.group_id = "g2", .member_id = std::nullopt, .member_epoch = -1,
       .topics = std::vector<protocol::OffsetFetchRequest::GroupTopic>{{"t", {0, 1}}}});
  for (int16_t v : {int16_t{8}, int16_t{9}}) {
    CAPTURE(v);
    protocol::OffsetFetchResponse resp;
    c.Call(req, v, &resp);
    CHECK(resp.topics.empty());
    REQUIRE(resp.groups.size() == 2);
    std::map<std::pair<std::string, int32_t>, int64_t> got;
    for (const auto& g : resp.groups) {
      CHECK(g.error_code == 0);
      for (const auto& t : g.topics) {
        for (const auto& p : t.partitions) got[{g.group_id, p.partition_index}] = p.committed_offset;
      }
    }
    CHECK(got.size() == 4);
    CHECK(got[{"g1", 0}] == 11);
    CHECK(got[{"g1", 1}] == 12);
    CHECK(got[{"g2", 0}] == -1);
    CHECK(got[{"g2", 1}] == 22);
  }
}

// A ConsumerProtocolSubscription v0 naming one topic.
std::string Subscription(const std::string& topic) {
  std::string out;
  ByteWriter w(&out);
  w.I16(0);
  w.I32(1);
  w.I16(static_cast<int16_t>(topic.size()));
  w.Raw(topic.data(), topic.size());
  w.I32(-1);
  return out;
}

TEST_CASE("JoinGroup v7+ and SyncGroup v5 name the protocol, and SyncGroup refuses another one") {
  TestBroker b(GroupConfig());
  Client c(b.port);
  CreateTopic(c, "t");
  protocol::JoinGroupRequest join;
  join.group_id = "g";
  join.session_timeout_ms = 30000;
  join.rebalance_timeout_ms = 30000;
  join.protocol_type = "consumer";
  join.reason = "starting";
  join.protocols = {{"range", Subscription("t")}};
  protocol::JoinGroupResponse jr;
  c.Call(join, 9, &jr);
  REQUIRE(jr.error_code == E(ErrorCode::MEMBER_ID_REQUIRED));
  join.member_id = jr.member_id;
  c.Call(join, 9, &jr);
  REQUIRE(jr.error_code == 0);
  CHECK(jr.protocol_type == std::optional<std::string>("consumer"));
  CHECK(jr.protocol_name == "range");
  CHECK_FALSE(jr.skip_assignment);

  protocol::SyncGroupRequest sync;
  sync.group_id = "g";
  sync.generation_id = jr.generation_id;
  sync.member_id = jr.member_id;
  sync.protocol_type = "consumer";
  sync.protocol_name = "roundrobin";  // not the group's choice
  protocol::SyncGroupResponse sr;
  c.Call(sync, 5, &sr);
  CHECK(sr.error_code == E(ErrorCode::INCONSISTENT_GROUP_PROTOCOL));

  sync.protocol_name = "range";
  sync.assignments = {{jr.member_id, "assignment-bytes"}};
  c.Call(sync, 5, &sr);
  REQUIRE(sr.error_code == 0);
  CHECK(sr.assignment == "assignment-bytes");
  CHECK(sr.protocol_type == std::optional<std::string>("consumer"));
  CHECK(sr.protocol_name == std::optional<std::string>("range"));

  // ListGroups v4 filters by state, v5 by type (case-insensitively), and names both.
  protocol::ListGroupsRequest lg;
  protocol::ListGroupsResponse lr;
  c.Call(lg, 5, &lr);
  REQUIRE(lr.groups.size() == 1);
  CHECK(lr.groups[0].group_state == "Stable");
  CHECK(lr.groups[0].group_type == "classic");
  lg.states_filter = {"empty"};
  c.Call(lg, 4, &lr);
  CHECK(lr.groups.empty());
  lg.states_filter = {"Empty", "stable"};
  c.Call(lg, 4, &lr);
  CHECK(lr.groups.size() == 1);
  lg.states_filter.clear();
  lg.types_filter = {"consumer"};
  c.Call(lg, 5, &lr);
  CHECK(lr.groups.empty());
  lg.types_filter = {"Classic"};
  c.Call(lg, 5, &lr);
  CHECK(lr.groups.size() == 1);
}

TEST_CASE("CreateTopics v7 returns the created topic's id, partitions and configs; DeleteTopics v6 deletes by id") {
  TestBroker b;
  Client c(b.port);
  protocol::CreateTopicsRequest req;
  req.timeout_ms = 5000;
  protocol::CreateTopicsRequest::Topic t;
  t.name = "created";
  t.num_partitions = 3;
  t.replication_factor = -1;
  t.configs.push_back({"retention.ms", std::string("12345")});
  req.topics.push_back(t);
  protocol::CreateTopicsResponse resp;
  c.Call(req, 7, &resp);
  REQUIRE(resp.topics.size() == 1);
  const auto tr = resp.topics[0];
  REQUIRE(tr.error_code == 0);
  CHECK(tr.num_partitions == 3);
  CHECK(tr.replication_factor == 1);
  CHECK_FALSE(tr.topic_id.is_zero());
  REQUIRE(tr.configs.has_value());
  std::map<std::string, std::pair<std::string, int8_t>> configs;
  for (const auto& cfg : *tr.configs) configs[cfg.name] = {cfg.value.value_or(""), cfg.config_source};
  CHECK(configs["retention.ms"] == std::pair<std::string, int8_t>{"12345", 1});  // DYNAMIC_TOPIC
  REQUIRE(configs.count("cleanup.policy") == 1);
  CHECK(configs["cleanup.policy"].second == 5);  // DEFAULT_CONFIG

  // The id is the one Metadata reports.
  protocol::MetadataRequest md;
  md.topics.emplace();
  md.topics->push_back({.name = "created"});
  md.allow_auto_topic_creation = false;
  protocol::MetadataResponse mr;
  c.Call(md, 12, &mr);
  REQUIRE(mr.topics.size() == 1);
  CHECK(mr.topics[0].topic_id == tr.topic_id);

  // validate_only describes without creating.
  req.validate_only = true;
  req.topics[0].name = "validated";
  c.Call(req, 5, &resp);
  CHECK(resp.topics[0].error_code == 0);
  CHECK(resp.topics[0].num_partitions == 3);
  CHECK(resp.topics[0].configs.has_value());

  // DeleteTopics v6: an unknown id, then the topic by its id.
  protocol::DeleteTopicsRequest del;
  del.timeout_ms = 5000;
  const Uuid unknown(Uuid::Bytes{0, 0, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 0xff});
  del.topics.push_back({std::nullopt, unknown});
  protocol::DeleteTopicsResponse dr;
  c.Call(del, 6, &dr);
  REQUIRE(dr.responses.size() == 1);
  CHECK(dr.responses[0].error_code == E(ErrorCode::UNKNOWN_TOPIC_ID));
  del.topics = {{std::nullopt, tr.topic_id}};
  c.Call(del, 6, &dr);
  REQUIRE(dr.responses.size() == 1);
  CHECK(dr.responses[0].error_code == 0);
  CHECK(dr.responses[0].name == "created");
  CHECK(dr.responses[0].topic_id == tr.topic_id);
  c.Call(md, 12, &mr);
  CHECK(mr.topics[0].error_code == E(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
  // By name at v6 too, with the id in the answer.
  CreateTopic(c, "byname");
  del.topics = {{std::string("byname"), Uuid{}}};
  c.Call(del, 6, &dr);
  CHECK(dr.responses[0].error_code == 0);
  CHECK_FALSE(dr.responses[0].topic_id.is_zero());
}

TEST_CASE("FindCoordinator v6 refuses share-group keys and still finds group coordinators") {
  TestBroker b(GroupConfig());
  Client c(b.port);
  protocol::FindCoordinatorRequest req;
  req.key_type = 2;
  req.coordinator_keys = {"share"};
  protocol::FindCoordinatorResponse resp;
  c.Call(req, 6, &resp);
  REQUIRE(resp.coordinators.size() == 1);
  CHECK(resp.coordinators[0].error_code == E(ErrorCode::INVALID_REQUEST));
  req.key_type = 0;
  req.coordinator_keys = {"g"};
  c.Call(req, 6, &resp);
  REQUIRE(resp.coordinators.size() == 1);
  CHECK(resp.coordinators[0].error_code == 0);
  CHECK(resp.coordinators[0].port == b.port);
}

}  // namespace
}  // namespace silt::broker
