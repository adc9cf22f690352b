// AlterConfigs, IncrementalAlterConfigs and DeleteGroups over the wire against an in-process
// broker: Kafka's error for each bad request, the happy paths as DescribeConfigs, ListGroups
// and OffsetFetch then see them, config changes reaching the live partition logs, and both
// kinds of change surviving a restart.
#include <chrono>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "broker/broker_test_util.h"
#include "protocol/consumer_offsets.h"
#include "protocol/errors.h"

namespace silt::broker {
namespace {

using protocol::ErrorCode;
using protocol::kConfigResourceBroker;
using protocol::kConfigResourceTopic;
using testing::Client;
using testing::TestBroker;
using Iac = protocol::IncrementalAlterConfigsRequest;

int16_t E(ErrorCode c) { return protocol::ToWire(c); }

Iac::Resource TopicOps(const std::string& topic, std::vector<Iac::Config> ops) {
  return Iac::Resource{kConfigResourceTopic, topic, std::move(ops)};
}

std::vector<protocol::IncrementalAlterConfigsResponse::Result> Incremental(
    Client& c, std::vector<Iac::Resource> resources, int16_t version = 1,
    bool validate_only = false) {
  Iac req;
  req.resources = resources;
  req.validate_only = validate_only;
  protocol::IncrementalAlterConfigsResponse resp;
  c.Call(req, version, &resp);
  REQUIRE(resp.responses.size() == resources.size());
  for (size_t i = 0; i < resources.size(); ++i) {
    CHECK(resp.responses[i].resource_type == resources[i].resource_type);
    CHECK(resp.responses[i].resource_name == resources[i].resource_name);
    // A message with every error, none without.
    CHECK(resp.responses[i].error_message.has_value() == (resp.responses[i].error_code != 0));
  }
  return resp.responses;
}

// One resource, one answer.
protocol::IncrementalAlterConfigsResponse::Result IncrementalOne(Client& c, Iac::Resource r,
                                                                  int16_t version = 1,
                                                                  bool validate_only = false) {
  return Incremental(c, {std::move(r)}, version, validate_only)[0];
}

std::vector<protocol::AlterConfigsResponse::Result> Alter(
    Client& c, std::vector<protocol::AlterConfigsRequest::Resource> resources, int16_t version,
    bool validate_only = false) {
  protocol::AlterConfigsRequest req;
  req.resources = resources;
  req.validate_only = validate_only;
  protocol::AlterConfigsResponse resp;
  c.Call(req, version, &resp);
  REQUIRE(resp.responses.size() == resources.size());
  for (size_t i = 0; i < resources.size(); ++i) {
    CHECK(resp.responses[i].resource_name == resources[i].resource_name);
    CHECK(resp.responses[i].error_message.has_value() == (resp.responses[i].error_code != 0));
  }
  return resp.responses;
}

struct Described {
  std::string value;
  int8_t source = -1;  // 1 DYNAMIC_TOPIC_CONFIG, 5 DEFAULT_CONFIG
};

// DescribeConfigs v1 of a topic: key -> value and source.
std::map<std::string, Described> Describe(Client& c, const std::string& topic) {
  protocol::DescribeConfigsRequest req;
  req.resources.push_back({kConfigResourceTopic, topic, std::nullopt});
  protocol::DescribeConfigsResponse resp;
  c.Call(req, 1, &resp);
  REQUIRE(resp.results.size() == 1);
  REQUIRE(resp.results[0].error_code == 0);
  std::map<std::string, Described> out;
  for (const auto& cfg : resp.results[0].configs) {
    out[cfg.name] = {cfg.value.value_or("<null>"), cfg.config_source};
  }
  return out;
}

std::string Contents(const std::string& path) {
  auto text = ReadFile(path);
  REQUIRE(text.ok());
  return *text;
}

int16_t ProduceError(Client& c, const std::string& topic, const std::string& batch) {
  protocol::ProduceResponse r;
  c.Call(testing::MakeProduce(topic, 0, batch), 8, &r);
  REQUIRE(r.responses.size() == 1);
  REQUIRE(r.responses[0].partition_responses.size() == 1);
  return r.responses[0].partition_responses[0].error_code;
}

const std::string kDefaultRetention = std::to_string(storage::LogConfig{}.retention_ms);

}  // namespace

TEST_CASE("ApiVersions advertises AlterConfigs 0-2, IncrementalAlterConfigs 0-1, DeleteGroups 0-2") {
  TestBroker b;
  Client c(b.port);
  protocol::ApiVersionsResponse resp;
  c.Call(protocol::ApiVersionsRequest{}, 2, &resp);
  std::map<int16_t, std::pair<int16_t, int16_t>> got;
  for (const auto& a : resp.api_keys) got[a.api_key] = {a.min_version, a.max_version};
  CHECK(got[33] == std::make_pair<int16_t, int16_t>(0, 2));
  CHECK(got[44] == std::make_pair<int16_t, int16_t>(0, 1));
  CHECK(got[42] == std::make_pair<int16_t, int16_t>(0, 2));
}

TEST_CASE("IncrementalAlterConfigs sets, appends, subtracts and deletes topic configs durably") {
  TestBroker b;
  Client c(b.port);
  testing::CreateTopic(c, "cfg");
  for (int16_t v : {0, 1}) {
    CAPTURE(v);
    auto r = IncrementalOne(c, TopicOps("cfg", {{"retention.ms", Iac::kSet, "3600000"},
                                                {"cleanup.policy", Iac::kSet, "compact"}}), v);
    CHECK(r.error_code == 0);
    auto d = Describe(c, "cfg");
    CHECK(d["retention.ms"].value == "3600000");
    CHECK(d["retention.ms"].source == 1);
    CHECK(d["cleanup.policy"].value == "compact");
    CHECK(d["segment.bytes"].source == 5);

    CHECK(IncrementalOne(c, TopicOps("cfg", {{"cleanup.policy", Iac::kAppend, "delete"}}), v)
              .error_code == 0);
    CHECK(Describe(c, "cfg")["cleanup.policy"].value == "compact,delete");
    CHECK(IncrementalOne(c, TopicOps("cfg", {{"cleanup.policy", Iac::kSubtract, "compact"}}), v)
              .error_code == 0);
    CHECK(Describe(c, "cfg")["cleanup.policy"].value == "delete");
    // DELETE ignores the value, and takes the key back to its default.
    CHECK(IncrementalOne(c, TopicOps("cfg", {{"retention.ms", Iac::kDelete, "ignored"},
                                             {"cleanup.policy", Iac::kDelete, std::nullopt}}),
                         v)
              .error_code == 0);
    d = Describe(c, "cfg");
    CHECK(d["retention.ms"].value == kDefaultRetention);
    CHECK(d["retention.ms"].source == 5);
    CHECK(d["cleanup.policy"].source == 5);
  }

  // APPEND without an override starts from the default ("delete").
  CHECK(IncrementalOne(c, TopicOps("cfg", {{"cleanup.policy", Iac::kAppend, "compact"}}))
            .error_code == 0);
  // (Stored as "delete,compact"; the effective value reads in the usual order.)
  CHECK(Describe(c, "cfg")["cleanup.policy"].value == "compact,delete");
  CHECK(b.server->broker().metadata().GetTopic("cfg")->configs.at("cleanup.policy") == "delete,compact");

  // validate_only checks and changes nothing.
  auto r = IncrementalOne(c, TopicOps("cfg", {{"retention.ms", Iac::kSet, "1000"}}), 1, true);
  CHECK(r.error_code == 0);
  r = IncrementalOne(c, TopicOps("cfg", {{"retention.ms", Iac::kSet, "-7"}}), 1, true);
  CHECK(r.error_code == E(ErrorCode::INVALID_CONFIG));
  CHECK(Describe(c, "cfg")["retention.ms"].source == 5);

  // Stored where `silt topic alter-config` stores it, and there after a restart.
  CHECK(IncrementalOne(c, TopicOps("cfg", {{"retention.ms", Iac::kSet, "120000"}})).error_code ==
        0);
  std::string props = Contents(JoinPath(b.data_dir, "silt-topics/cfg.properties"));
  CHECK(props.find("retention.ms=120000\n") != std::string::npos);
  CHECK(props.find("cleanup.policy=delete,compact\n") != std::string::npos);
  b.Restart();
  Client c2(b.port);
  auto d = Describe(c2, "cfg");
  CHECK(d["retention.ms"].value == "120000");
  CHECK(d["retention.ms"].source == 1);
  CHECK(d["cleanup.policy"].value == "compact,delete");
}

TEST_CASE("IncrementalAlterConfigs answers each bad resource with Kafka's error, alone") {
  TestBroker b;
  Client c(b.port);
  testing::CreateTopic(c, "cfg");
  auto check = [&](Iac::Resource res, ErrorCode want, const std::string& in_message) {
    CAPTURE(res.resource_name);
    auto r = IncrementalOne(c, res);
    CHECK(r.error_code == E(want));
    if (r.error_message) {
      CHECK_MESSAGE(r.error_message->find(in_message) != std::string::npos, *r.error_message);
    }
  };
  check(TopicOps("nope", {{"retention.ms", Iac::kSet, "1"}}), ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
        "nope");
  check(TopicOps("cfg", {{"retention.mss", Iac::kSet, "1"}}), ErrorCode::INVALID_CONFIG,
        "retention.mss");
  check(TopicOps("cfg", {{"retention.ms", Iac::kSet, "soon"}}), ErrorCode::INVALID_CONFIG,
        "retention.ms");
  check(TopicOps("cfg", {{"segment.bytes", Iac::kSet, "1"}}), ErrorCode::INVALID_CONFIG,
        "segment.bytes");
  check(TopicOps("cfg", {{"retention.ms", Iac::kAppend, "1"}}), ErrorCode::INVALID_CONFIG,
        "append is not allowed for config key: retention.ms");
  check(TopicOps("cfg", {{"max.message.bytes", Iac::kSubtract, "1"}}), ErrorCode::INVALID_CONFIG,
        "max.message.bytes");
  // Subtracting the only policy leaves an empty list, which cleanup.policy does not take.
  check(TopicOps("cfg", {{"cleanup.policy", Iac::kSubtract, "delete"}}), ErrorCode::INVALID_CONFIG,
        "cleanup.policy");
  check(TopicOps("cfg", {{"cleanup.policy", Iac::kAppend, "shred"}}), ErrorCode::INVALID_CONFIG,
        "cleanup.policy");
  check(TopicOps("cfg", {{"retention.ms", Iac::kSet, "1"}, {"retention.ms", Iac::kDelete, {}}}),
        ErrorCode::INVALID_REQUEST, "duplicate config keys");
  check(TopicOps("cfg", {{"retention.ms", Iac::kSet, std::nullopt}}), ErrorCode::INVALID_REQUEST,
        "retention.ms");
  check(TopicOps("cfg", {{"retention.ms", 7, "1"}}), ErrorCode::INVALID_REQUEST, "retention.ms");
  check(TopicOps("", {{"retention.ms", Iac::kSet, "1"}}), ErrorCode::INVALID_REQUEST,
        "Default topic");
  check(Iac::Resource{8, "0", {{"kafka.server", Iac::kSet, "DEBUG"}}}, ErrorCode::INVALID_REQUEST,
        "resource type 8");
  // BROKER: read-only keys are refused, and only this node's id (or "" for the cluster) is
  // known (the dynamic keys: dynamic_config_test.cc).
  check(Iac::Resource{kConfigResourceBroker, "0", {{"log.dirs", Iac::kSet, "/x"}}},
        ErrorCode::INVALID_REQUEST, "Cannot update these configs dynamically: log.dirs");
  check(Iac::Resource{kConfigResourceBroker, "", {{"num.partitions", Iac::kSet, "3"}}},
        ErrorCode::INVALID_REQUEST, "num.partitions");
  check(Iac::Resource{kConfigResourceBroker, "7", {}}, ErrorCode::INVALID_REQUEST, "7");
  CHECK(IncrementalOne(c, Iac::Resource{kConfigResourceBroker, "0", {}}).error_code == 0);
  CHECK(Describe(c, "cfg")["retention.ms"].source == 5);

  // A resource named twice fails both times; the others in the request go through.
  auto rs = Incremental(c, {TopicOps("cfg", {{"retention.ms", Iac::kSet, "1"}}),
                            TopicOps("cfg", {{"retention.ms", Iac::kSet, "2"}})});
  CHECK(rs[0].error_code == E(ErrorCode::INVALID_REQUEST));
  CHECK(rs[1].error_code == E(ErrorCode::INVALID_REQUEST));
  testing::CreateTopic(c, "other");
  rs = Incremental(c, {TopicOps("cfg", {{"bogus", Iac::kSet, "1"}}),
                       TopicOps("other", {{"retention.ms", Iac::kSet, "5000"}})},
                   0);
  CHECK(rs[0].error_code == E(ErrorCode::INVALID_CONFIG));
  CHECK(rs[1].error_code == 0);
  CHECK(Describe(c, "other")["retention.ms"].value == "5000");
  CHECK(Describe(c, "cfg")["retention.ms"].source == 5);
}

TEST_CASE("AlterConfigs replaces a topic's whole override set, with Kafka's errors") {
  TestBroker b;
  Client c(b.port);
  testing::CreateTopic(c, "legacy");
  for (int16_t v : {0, 1}) {
    CAPTURE(v);
    REQUIRE(IncrementalOne(c, TopicOps("legacy", {{"retention.ms", Iac::kSet, "60000"},
                                                  {"segment.bytes", Iac::kSet, "100000"}}))
                .error_code == 0);
    auto r = Alter(c, {{kConfigResourceTopic, "legacy", {{"max.message.bytes", "2000"},
                                                         {"segment.bytes", "200000"}}}},
                   v);
    CHECK(r[0].error_code == 0);
    auto d = Describe(c, "legacy");
    CHECK(d["max.message.bytes"].value == "2000");
    CHECK(d["segment.bytes"].value == "200000");
    // Left out of the new set: back to the default.
    CHECK(d["retention.ms"].value == kDefaultRetention);
    CHECK(d["retention.ms"].source == 5);

    // validate_only, and every error leaves the set as it is.
    CHECK(Alter(c, {{kConfigResourceTopic, "legacy", {}}}, v, true)[0].error_code == 0);
    CHECK(Alter(c, {{kConfigResourceTopic, "legacy", {{"retention.ms", std::nullopt}}}}, v)[0]
              .error_code == E(ErrorCode::INVALID_REQUEST));
    auto bad = Alter(c, {{kConfigResourceTopic, "legacy", {{"retention.ms", "x"}}}}, v)[0];
    CHECK(bad.error_code == E(ErrorCode::INVALID_CONFIG));
    CHECK(bad.error_message->find("retention.ms") != std::string::npos);
    bad = Alter(c, {{kConfigResourceTopic, "legacy", {{"no.such.key", "1"}}}}, v)[0];
    CHECK(bad.error_code == E(ErrorCode::INVALID_CONFIG));
    CHECK(bad.error_message->find("no.such.key") != std::string::npos);
    CHECK(Alter(c, {{kConfigResourceTopic, "legacy", {{"a", "1"}, {"a", "2"}}}}, v)[0]
              .error_code == E(ErrorCode::INVALID_REQUEST));
    CHECK(Alter(c, {{kConfigResourceTopic, "gone", {}}}, v)[0].error_code ==
          E(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
    CHECK(Alter(c, {{kConfigResourceBroker, "0", {{"num.io.threads", "1"}}}}, v)[0]
              .error_code == E(ErrorCode::INVALID_REQUEST));
    CHECK(Alter(c, {{1, "x", {}}}, v)[0].error_code == E(ErrorCode::INVALID_REQUEST));
    d = Describe(c, "legacy");
    CHECK(d["max.message.bytes"].value == "2000");
    CHECK(d["segment.bytes"].value == "200000");

    // An empty set removes every override.
    CHECK(Alter(c, {{kConfigResourceTopic, "legacy", {}}}, v)[0].error_code == 0);
    for (const auto& kx : Describe(c, "legacy")) CHECK_MESSAGE(kx.second.source == 5, kx.first);
  }
}

TEST_CASE("config changes reach the live partition log without a restart") {
  BrokerConfig cfg;
  cfg.retention_check_interval_ms = 50;
  TestBroker b(cfg);
  Client c(b.port);
  testing::CreateTopic(c, "live");
  std::string batch = testing::MakeBatch(3);
  REQUIRE(ProduceError(c, "live", batch) == 0);

  // max.message.bytes: the next produce is refused, then accepted again.
  auto set = [&](const std::string& k, const std::string& v) {
    REQUIRE(IncrementalOne(c, TopicOps("live", {{k, Iac::kSet, v}})).error_code == 0);
  };
  set("max.message.bytes", std::to_string(batch.size() - 1));
  CHECK(ProduceError(c, "live", batch) == E(ErrorCode::MESSAGE_TOO_LARGE));
  REQUIRE(IncrementalOne(c, TopicOps("live", {{"max.message.bytes", Iac::kDelete, {}}}))
              .error_code == 0);
  CHECK(ProduceError(c, "live", batch) == 0);

  // cleanup.policy=compact: keyless records are refused from now on.
  format::RecordBatchBuilder keyless_builder(format::RecordBatchBuilder::Options{});
  keyless_builder.Add(std::nullopt, std::string_view("v"));
  std::string keyless = *keyless_builder.Finish();
  set("cleanup.policy", "compact");
  CHECK(ProduceError(c, "live", keyless) == E(ErrorCode::INVALID_RECORD));
  set("cleanup.policy", "delete");
  CHECK(ProduceError(c, "live", keyless) == 0);

  // segment.bytes: each batch now rolls a new segment.
  auto state = b.server->broker().partitions().Get("live", PartitionId(0));
  REQUIRE(state.ok());
  auto segments = [&] {
    size_t n = 0;
    auto files = ListDir(JoinPath(b.data_dir, "live-0"));
    REQUIRE(files.ok());
    for (const std::string& f : *files) {
      if (f.size() > 4 && f.substr(f.size() - 4) == ".log") ++n;
    }
    return n;
  };
  size_t segments_before = segments();
  set("segment.bytes", "200");
  for (int i = 0; i < 4; ++i) REQUIRE(ProduceError(c, "live", batch) == 0);
  CHECK(segments() >= segments_before + 3);
  CHECK((*state)->config().segment_bytes == 200);

  // retention.bytes: the maintenance thread deletes the old segments.
  set("retention.bytes", "300");
  int64_t earliest = 0;
  for (int i = 0; i < 200 && earliest == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    earliest = (*state)->log_start_offset().value();
  }
  CHECK(earliest > 0);
}

TEST_CASE("DeleteGroups over the wire: Kafka's errors, then the group stays gone after a restart") {
  BrokerConfig cfg;
  cfg.group_initial_rebalance_delay_ms = 0;
  cfg.offsets_topic_num_partitions = 3;
  TestBroker b(cfg);
  Client c(b.port);
  testing::CreateTopic(c, "t", 2);

  // "idle" only committed offsets; "busy" has a member.
  protocol::OffsetCommitRequest commit;
  commit.group_id = "idle";
  commit.generation_id_or_member_epoch = -1;
  commit.topics.push_back({"t", {{0, 5, -1, -1, std::string("")}, {1, 6, -1, -1, std::string("")}}});
  protocol::OffsetCommitResponse cr;
  c.Call(commit, 2, &cr);
  REQUIRE(cr.topics[0].partitions[0].error_code == 0);
  protocol::JoinGroupRequest join;
  join.group_id = "busy";
  join.session_timeout_ms = 30000;
  join.protocol_type = "consumer";
  join.protocols = {{"range", "md"}};
  protocol::JoinGroupResponse jr;
  c.Call(join, 0, &jr);
  REQUIRE(jr.error_code == 0);

  auto fetch_idle = [](Client& cl) {
    protocol::OffsetFetchRequest f;
    f.group_id = "idle";
    f.topics.emplace();
    f.topics->push_back({"t", {0, 1}});
    protocol::OffsetFetchResponse fr;
    cl.Call(f, 1, &fr);
    REQUIRE(fr.topics.size() == 1);
    return std::make_pair(fr.topics[0].partitions[0].committed_offset,
                          fr.topics[0].partitions[1].committed_offset);
  };
  auto list = [](Client& cl) {
    protocol::ListGroupsResponse lr;
    cl.Call(protocol::ListGroupsRequest{}, 2, &lr);
    REQUIRE(lr.error_code == 0);
    std::set<std::string> ids;
    for (const auto& g : lr.groups) ids.insert(g.group_id);
    return ids;
  };
  REQUIRE(fetch_idle(c) == std::make_pair<int64_t, int64_t>(5, 6));
  REQUIRE(list(c) == std::set<std::string>{"busy", "idle"});

  protocol::DeleteGroupsResponse dr;
  c.Call(protocol::DeleteGroupsRequest{{"busy"}}, 0, &dr);
  REQUIRE(dr.results.size() == 1);
  CHECK(dr.results[0].error_code == E(ErrorCode::NON_EMPTY_GROUP));
  c.Call(protocol::DeleteGroupsRequest{{"idle", "never", ""}}, 1, &dr);
  REQUIRE(dr.results.size() == 3);
  CHECK(dr.results[0].group_id == "idle");
  CHECK(dr.results[0].error_code == 0);
  CHECK(dr.results[1].error_code == E(ErrorCode::GROUP_ID_NOT_FOUND));
  CHECK(dr.results[2].error_code == E(ErrorCode::INVALID_GROUP_ID));
  CHECK(list(c) == std::set<std::string>{"busy"});
  CHECK(fetch_idle(c) == std::make_pair<int64_t, int64_t>(-1, -1));

  // The tombstones are in the group's __consumer_offsets partition, under Kafka's keys.
  int32_t p = protocol::OffsetsPartitionFor("idle", 3);
  protocol::FetchResponse f;
  c.Call(testing::MakeFetch(std::string(protocol::kConsumerOffsetsTopic), p, 0), 11, &f);
  REQUIRE(f.responses[0].partitions[0].error_code == 0);
  std::string_view records = f.responses[0].partitions[0].records.bytes.value_or("");
  std::set<std::string> tombstones;
  while (!records.empty()) {
    auto batch = format::RecordBatchView::Parse(records);
    REQUIRE(batch.ok());
    REQUIRE(batch->ForEachRecord([&](const format::RecordView& r) {
                   if (r.value_null) tombstones.insert(std::string(r.key));
                   return true;
                 }).ok());
    records.remove_prefix(batch->bytes().size());
  }
  CHECK(tombstones == std::set<std::string>{protocol::EncodeGroupMetadataKey({"idle"}),
                                            protocol::EncodeOffsetCommitKey({"idle", "t", 0}),
                                            protocol::EncodeOffsetCommitKey({"idle", "t", 1})});

  b.Restart();
  Client c2(b.port);
  CHECK(fetch_idle(c2) == std::make_pair<int64_t, int64_t>(-1, -1));
  CHECK(list(c2).count("idle") == 0);
  c2.Call(protocol::DeleteGroupsRequest{{"idle"}}, 1, &dr);
  CHECK(dr.results[0].error_code == E(ErrorCode::GROUP_ID_NOT_FOUND));
}

}  // namespace silt::broker
