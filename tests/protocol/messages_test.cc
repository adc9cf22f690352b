// Round trips for every request and response at every version in the API table, and
// truncation of every encoding at every byte.
#include <doctest/doctest.h>

#include <string>

#include "protocol/api_table.h"
#include "protocol/errors.h"
#include "protocol/messages.h"

using namespace silt;
using namespace silt::protocol;

namespace {

template <typename T>
std::string EncodeAt(const T& m, int16_t v) {
  std::string out;
  ByteWriter w(&out);
  m.Encode(w, v);
  return out;
}

// Encodes `m` at `v`, decodes it, re-encodes the result and checks that the bytes match, that
// the whole input was consumed, that decoding twice gives equal structs, and that every strict
// prefix of the encoding fails to decode. Returns the decoded message.
template <typename T>
T RoundTrip(const T& m, int16_t v) {
  INFO("api " << ApiName(static_cast<int16_t>(T::kApiKey)) << " version " << v);
  std::string bytes = EncodeAt(m, v);
  T decoded;
  ByteReader r(bytes);
  Status s = decoded.Decode(r, v);
  REQUIRE_MESSAGE(s.ok(), s.ToString());
  CHECK(r.remaining() == 0);
  CHECK(EncodeAt(decoded, v) == bytes);
  T again;
  ByteReader r2(bytes);
  REQUIRE(again.Decode(r2, v).ok());
  CHECK(again == decoded);
  for (size_t n = 0; n < bytes.size(); ++n) {
    T cut;
    ByteReader rc(std::string_view(bytes).substr(0, n));
    Status cs = cut.Decode(rc, v);
    if (cs.ok()) FAIL_CHECK("a " << n << "-byte prefix of " << bytes.size() << " decoded");
  }
  return decoded;
}

// Round-trips `m` at every version the table serves; at `whole` (default: the highest version),
// where every field of `m` is on the wire, the decoded message must equal `m`.
template <typename T>
void RoundTripAllVersions(const T& m, int16_t whole = -1) {
  const ApiInfo* api = FindApi(T::kApiKey);
  REQUIRE(api != nullptr);
  if (whole < 0) whole = api->max_version;
  for (int16_t v = api->min_version; v <= api->max_version; ++v) {
    T decoded = RoundTrip(m, v);
    if (v == whole) CHECK(decoded == m);
  }
}

// A topic id for the by-id versions (Fetch v13+, DeleteTopics v6).
const silt::Uuid kTopicId(silt::Uuid::Bytes{0xb1, 0xf2, 0xc3, 0xd4, 0, 0, 0x40, 0, 0x80, 0, 0, 0,
                                            0, 0, 0, 0x0a});

std::string_view kBatch = "\x00\x00\x00\x00\x00\x00\x00\x00 pretend record batch bytes";

}  // namespace

TEST_CASE("ApiVersions request and response round-trip at every served version") {
  ApiVersionsRequest req;
  req.client_software_name = "silt-test";
  req.client_software_version = "0.1.0";
  RoundTripAllVersions(req);

  ApiVersionsResponse resp = MakeApiVersionsResponse();
  resp.throttle_time_ms = 5;
  RoundTripAllVersions(resp);
  CHECK(resp.api_keys.size() == SupportedApis().size());
}

TEST_CASE("Metadata request and response round-trip at every served version") {
  MetadataRequest req;
  req.topics = std::vector<MetadataRequest::Topic>{{.name = "alpha"}, {.name = "beta"}};
  (*req.topics)[1].topic_id = Uuid(Uuid::Bytes{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
  req.allow_auto_topic_creation = false;
  req.include_topic_authorized_operations = true;
  RoundTripAllVersions(req);
  // IncludeClusterAuthorizedOperations is on the wire in v8-10 only.
  req.include_cluster_authorized_operations = true;
  CHECK(RoundTrip(req, 10) == req);
  CHECK_FALSE(RoundTrip(req, 11).include_cluster_authorized_operations);
  // Topic ids from v10 on: below, only names travel.
  CHECK(RoundTrip(req, 9).topics->at(1).topic_id.is_zero());
  // v10+: a topic asked for by id alone has a null name.
  MetadataRequest by_id;
  by_id.topics = std::vector<MetadataRequest::Topic>{{.topic_id = (*req.topics)[1].topic_id}};
  CHECK(RoundTrip(by_id, 12) == by_id);

  MetadataRequest all;  // null topics: every topic
  for (int16_t v = 0; v <= 12; ++v) CHECK_FALSE(RoundTrip(all, v).topics.has_value());
  // v0 has no null array: null goes out as an empty array (which also means "all").
  CHECK(EncodeAt(all, 0) == std::string("\x00\x00\x00\x00", 4));
  CHECK(EncodeAt(all, 1) == std::string("\xff\xff\xff\xff", 4));

  MetadataResponse resp;
  resp.throttle_time_ms = 7;
  resp.brokers = {{1, "host-a", 9092, "rack-a"}, {2, "host-b", 9093, std::nullopt}};
  resp.cluster_id = "cluster";
  resp.controller_id = 1;
  MetadataResponse::Topic t;
  t.error_code = 0;
  t.name = "alpha";
  t.is_internal = true;
  t.partitions.push_back({0, 0, 1, 4, {1, 2}, {1}, {2}});
  t.partitions.push_back({ToWire(ErrorCode::LEADER_NOT_AVAILABLE), 1, -1, 3, {2, 1}, {}, {}});
  t.topic_authorized_operations = 0x0f;
  t.topic_id = Uuid(Uuid::Bytes{9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6});
  resp.topics.push_back(t);
  RoundTripAllVersions(resp);
  // ClusterAuthorizedOperations: v8-10 only.
  resp.cluster_authorized_operations = 0x10;
  CHECK(RoundTrip(resp, 10) == resp);
  CHECK(RoundTrip(resp, 11).cluster_authorized_operations == MetadataResponse{}.cluster_authorized_operations);
  CHECK(RoundTrip(resp, 9).topics[0].topic_id.is_zero());
  // v0 drops rack, cluster id, controller, is_internal, epochs and offline replicas.
  MetadataResponse v0 = RoundTrip(resp, 0);
  CHECK_FALSE(v0.brokers[0].rack.has_value());
  CHECK_FALSE(v0.cluster_id.has_value());
  CHECK(v0.controller_id == -1);
  CHECK(v0.topics[0].partitions[0].leader_epoch == -1);
  CHECK(v0.topics[0].partitions[0].offline_replicas.empty());
  CHECK(v0.topics[0].partitions[0].replica_nodes == std::vector<int32_t>{1, 2});
}

TEST_CASE("Produce request and response round-trip at every served version") {
  ProduceRequest req;
  req.transactional_id = "txn";
  req.acks = -1;
  req.timeout_ms = 30000;
  req.topic_data.push_back({"alpha", {{0, {kBatch, std::nullopt}}, {1, {std::nullopt, std::nullopt}}}});
  ProduceRequest decoded = RoundTrip(req, 3);
  CHECK(decoded == req);
  // Records are a view into the input, not a copy.
  std::string bytes = EncodeAt(req, 3);
  ProduceRequest view;
  ByteReader r(bytes);
  REQUIRE(view.Decode(r, 3).ok());
  const char* p = view.topic_data[0].partition_data[0].records.bytes->data();
  CHECK(p >= bytes.data());
  CHECK(p < bytes.data() + bytes.size());
  CHECK(view.topic_data[0].partition_data[1].records.is_null());
  RoundTripAllVersions(req);

  ProduceResponse resp;
  ProduceResponse::PartitionResponse p0;
  p0.index = 0;
  p0.error_code = ToWire(ErrorCode::INVALID_RECORD);
  p0.base_offset = 42;
  p0.log_append_time_ms = 1700000000000;
  p0.log_start_offset = 3;
  p0.record_errors = {{2, "bad"}, {3, std::nullopt}};
  p0.error_message = "one bad record";
  resp.responses.push_back({"alpha", {p0}});
  resp.throttle_time_ms = 9;
  RoundTripAllVersions(resp);
  ProduceResponse v4 = RoundTrip(resp, 4);
  CHECK(v4.responses[0].partition_responses[0].log_append_time_ms == 1700000000000);
  CHECK(v4.responses[0].partition_responses[0].log_start_offset == -1);
  CHECK(v4.responses[0].partition_responses[0].record_errors.empty());
}

TEST_CASE("Fetch request and response round-trip at every served version") {
  FetchRequest req;
  req.replica_id = 2;
  req.max_wait_ms = 500;
  req.min_bytes = 1;
  req.max_bytes = 1 << 20;
  req.isolation_level = 1;
  req.session_id = 12;
  req.session_epoch = 3;
  req.topics.push_back({.topic = "alpha",
                        .partitions = {{.partition = 0, .current_leader_epoch = 5,
                                        .fetch_offset = 100, .log_start_offset = 7,
                                        .partition_max_bytes = 65536},
                                       {.partition = 1, .current_leader_epoch = 5,
                                        .fetch_offset = 0, .log_start_offset = 0,
                                        .partition_max_bytes = 65536}}});
  req.forgotten_topics_data.push_back({.topic = "beta", .partitions = {0, 2}});
  req.rack_id = "rack-a";
  RoundTripAllVersions(req, 12);  // topics by name up to v12
  FetchRequest v4 = RoundTrip(req, 4);
  CHECK(v4.session_epoch == -1);
  CHECK(v4.topics[0].partitions[0].log_start_offset == -1);
  CHECK(v4.topics[0].partitions[0].fetch_offset == 100);
  CHECK(v4.rack_id.empty());
  // v13+ name topics by id (KIP-516); v15+ carry the replica in the tagged ReplicaState.
  FetchRequest by_id = req;
  for (auto* t : {&by_id.topics[0]}) {
    t->topic.clear();
    t->topic_id = kTopicId;
  }
  by_id.forgotten_topics_data[0].topic.clear();
  by_id.forgotten_topics_data[0].topic_id = by_id.topics[0].topic_id;
  by_id.cluster_id = "c1";
  by_id.replica_id = -1;
  by_id.replica_state.replica_id = 3;
  by_id.replica_state.replica_epoch = 7;
  CHECK(RoundTrip(by_id, 17) == by_id);
  CHECK(RoundTrip(by_id, 13).replica_state == FetchRequest::ReplicaState{});

  FetchResponse resp;
  resp.throttle_time_ms = 1;
  resp.error_code = 0;
  resp.session_id = 12;
  FetchResponse::Partition p;
  p.partition_index = 0;
  p.high_watermark = 10;
  p.last_stable_offset = 9;
  p.log_start_offset = 0;
  p.aborted_transactions = std::vector<FetchResponse::AbortedTransaction>{{7, 3}};
  p.preferred_read_replica = 2;
  p.records.bytes = kBatch;
  FetchResponse::Partition empty;
  empty.partition_index = 1;
  empty.error_code = ToWire(ErrorCode::OFFSET_OUT_OF_RANGE);
  resp.responses.push_back({.topic = "alpha", .partitions = {p, empty}});
  RoundTripAllVersions(resp, 12);
  // Tagged fields round-trip in flexible versions; NodeEndpoints only from v16.
  FetchResponse tagged = resp;
  tagged.responses[0].topic.clear();
  tagged.responses[0].topic_id = kTopicId;
  tagged.responses[0].partitions[1].error_code = ToWire(ErrorCode::NOT_LEADER_OR_FOLLOWER);
  tagged.responses[0].partitions[1].current_leader = {.leader_id = 2, .leader_epoch = 9};
  tagged.responses[0].partitions[0].diverging_epoch = {.epoch = 3, .end_offset = 40};
  tagged.node_endpoints.push_back({.node_id = 2, .host = "h2", .port = 9093, .rack = std::nullopt});
  CHECK(RoundTrip(tagged, 16) == tagged);
  CHECK(RoundTrip(tagged, 15).node_endpoints.empty());
  FetchResponse v4r = RoundTrip(resp, 4);
  CHECK(v4r.responses[0].partitions[0].records.bytes == kBatch);
  CHECK(v4r.responses[0].partitions[0].log_start_offset == -1);
  CHECK(v4r.responses[0].partitions[1].records.is_null());
  CHECK_FALSE(v4r.responses[0].partitions[1].aborted_transactions.has_value());
}

TEST_CASE("ListOffsets request and response round-trip at every served version") {
  ListOffsetsRequest req;
  req.replica_id = -1;
  req.isolation_level = 1;
  req.topics.push_back({"alpha", {{0, 4, -1, 1}, {1, 4, -2, 1}}});
  RoundTripAllVersions(req);
  ListOffsetsRequest v0req = req;
  v0req.topics[0].partitions[0].max_num_offsets = 3;
  CHECK(RoundTrip(v0req, 0).topics[0].partitions[0].max_num_offsets == 3);

  ListOffsetsResponse resp;
  resp.throttle_time_ms = 2;
  resp.topics.push_back({"alpha", {{0, 0, {}, 1700000000000, 55, 4}}});
  RoundTripAllVersions(resp);
  ListOffsetsResponse v0 = resp;
  v0.topics[0].partitions[0].old_style_offsets = {55, 0};
  ListOffsetsResponse v0d = RoundTrip(v0, 0);
  CHECK(v0d.topics[0].partitions[0].old_style_offsets == std::vector<int64_t>{55, 0});
  CHECK(v0d.topics[0].partitions[0].offset == -1);
}

TEST_CASE("FindCoordinator, JoinGroup, SyncGroup and Heartbeat round-trip at every served version") {
  // v0-3 name one key; v4 batches them (KIP-699) and answers one coordinator per key.
  for (int16_t v = 0; v <= 3; ++v) {
    CHECK(RoundTrip(FindCoordinatorRequest{"group-1", v >= 1 ? int8_t{1} : int8_t{0}, {}}, v) ==
          FindCoordinatorRequest{"group-1", v >= 1 ? int8_t{1} : int8_t{0}, {}});
  }
  CHECK(RoundTrip(FindCoordinatorRequest{"", 0, {"g1", "g2"}}, 4) ==
        FindCoordinatorRequest{"", 0, {"g1", "g2"}});
  FindCoordinatorResponse fc;
  fc.throttle_time_ms = 1;
  fc.error_code = 0;
  fc.error_message = "fine";
  fc.node_id = 3;
  fc.host = "broker-3";
  fc.port = 9092;
  for (int16_t v = 1; v <= 3; ++v) CHECK(RoundTrip(fc, v) == fc);
  FindCoordinatorResponse fc4;
  fc4.throttle_time_ms = 1;
  fc4.error_code = 0;
  fc4.node_id = 0;
  fc4.port = 0;
  fc4.coordinators = {{"g1", 2, "broker-2", 9092, 0, std::nullopt},
                      {"g2", -1, "", -1, ToWire(ErrorCode::COORDINATOR_NOT_AVAILABLE), "none"}};
  CHECK(RoundTrip(fc4, 4) == fc4);

  JoinGroupRequest jg;
  jg.group_id = "g";
  jg.session_timeout_ms = 10000;
  jg.rebalance_timeout_ms = 30000;
  jg.member_id = "";
  jg.group_instance_id = "instance-1";
  jg.protocol_type = "consumer";
  jg.protocols = {{"range", std::string("\x00\x01\x00", 3)}, {"roundrobin", ""}};
  RoundTripAllVersions(jg);
  JoinGroupResponse jr;
  jr.throttle_time_ms = 3;
  jr.error_code = ToWire(ErrorCode::MEMBER_ID_REQUIRED);
  jr.generation_id = 4;
  jr.protocol_name = "range";
  jr.leader = "m-1";
  jr.member_id = "m-2";
  jr.members = {{"m-1", "instance-1", "meta"}, {"m-2", std::nullopt, ""}};
  RoundTripAllVersions(jr);

  SyncGroupRequest sg;
  sg.group_id = "g";
  sg.generation_id = 4;
  sg.member_id = "m-1";
  sg.group_instance_id = "instance-1";
  sg.assignments = {{"m-1", "assign-1"}, {"m-2", ""}};
  RoundTripAllVersions(sg);
  RoundTripAllVersions(SyncGroupResponse{2, 0, "assign-1"});

  RoundTripAllVersions(HeartbeatRequest{"g", 4, "m-1", "instance-1"});
  RoundTripAllVersions(HeartbeatResponse{1, ToWire(ErrorCode::REBALANCE_IN_PROGRESS)});
}

TEST_CASE("LeaveGroup carries one member id before v3 and a members array from v3") {
  LeaveGroupRequest lg;
  lg.group_id = "g";
  lg.members = {{"m-1", "instance-1"}, {"m-2", std::nullopt}};
  RoundTripAllVersions(lg);
  LeaveGroupRequest old;
  old.group_id = "g";
  old.member_id = "m-1";
  for (int16_t v = 0; v <= 2; ++v) CHECK(RoundTrip(old, v).member_id == "m-1");
  CHECK(RoundTrip(old, 3).member_id.empty());
  CHECK(RoundTrip(lg, 2).members.empty());

  LeaveGroupResponse lr;
  lr.throttle_time_ms = 1;
  lr.error_code = 0;
  lr.members = {{"m-1", "instance-1", 0}, {"m-2", std::nullopt, ToWire(ErrorCode::UNKNOWN_MEMBER_ID)}};
  RoundTripAllVersions(lr);
}

TEST_CASE("OffsetCommit and OffsetFetch round-trip at every served version") {
  OffsetCommitRequest oc;
  oc.group_id = "g";
  oc.generation_id_or_member_epoch = 4;
  oc.member_id = "m-1";
  oc.group_instance_id = "instance-1";
  OffsetCommitRequest::Partition p;
  p.partition_index = 0;
  p.committed_offset = 100;
  p.committed_leader_epoch = 2;
  p.committed_metadata = "meta";
  OffsetCommitRequest::Partition q = p;
  q.partition_index = 1;
  q.committed_metadata.reset();
  oc.topics.push_back({"alpha", {p, q}});
  RoundTripAllVersions(oc);
  OffsetCommitRequest old = oc;
  old.retention_time_ms = 86400000;
  old.topics[0].partitions[0].commit_timestamp = 1700000000000;
  CHECK(RoundTrip(old, 1).topics[0].partitions[0].commit_timestamp == 1700000000000);
  CHECK(RoundTrip(old, 2).topics[0].partitions[0].commit_timestamp == -1);
  CHECK(RoundTrip(old, 2).retention_time_ms == 86400000);
  CHECK(RoundTrip(old, 5).retention_time_ms == -1);

  OffsetCommitResponse ocr;
  ocr.throttle_time_ms = 1;
  ocr.topics.push_back({"alpha", {{0, 0}, {1, ToWire(ErrorCode::ILLEGAL_GENERATION)}}});
  RoundTripAllVersions(ocr);

  OffsetFetchRequest of;
  of.group_id = "g";
  of.topics = std::vector<OffsetFetchRequest::Topic>{{"alpha", {0, 1, 2}}};
  RoundTripAllVersions(of, 7);  // one group up to v7, a batch of groups from v8
  OffsetFetchRequest batch;
  batch.require_stable = true;
  batch.groups.push_back({.group_id = "g1", .member_id = "m", .member_epoch = 4,
                          .topics = std::vector<OffsetFetchRequest::GroupTopic>{
                              {.name = "alpha", .partition_indexes = {0, 1}}}});
  batch.groups.push_back({.group_id = "g2", .member_id = std::nullopt, .member_epoch = -1,
                          .topics = std::nullopt});
  CHECK(RoundTrip(batch, 9) == batch);
  OffsetFetchRequest all;
  all.group_id = "g";
  CHECK_FALSE(RoundTrip(all, 2).topics.has_value());

  OffsetFetchResponse ofr;
  ofr.throttle_time_ms = 1;
  ofr.topics.push_back({"alpha", {{0, 100, 2, "meta", 0}, {1, -1, -1, std::nullopt, 0}}});
  ofr.error_code = ToWire(ErrorCode::GROUP_AUTHORIZATION_FAILED);
  RoundTripAllVersions(ofr, 7);
  OffsetFetchResponse batch_r;
  batch_r.groups.push_back(
      {.group_id = "g1",
       .topics = {{.name = "alpha",
                   .partitions = {{.partition_index = 0, .committed_offset = 5,
                                   .committed_leader_epoch = 1, .metadata = "m",
                                   .error_code = 0}}}},
       .error_code = 0});
  CHECK(RoundTrip(batch_r, 8) == batch_r);
}

TEST_CASE("DescribeGroups, ListGroups and InitProducerId round-trip at every served version") {
  RoundTripAllVersions(DescribeGroupsRequest{{"g1", "g2"}, true});
  DescribeGroupsResponse dg;
  dg.throttle_time_ms = 1;
  DescribeGroupsResponse::Group g;
  g.error_code = 0;
  g.group_id = "g1";
  g.group_state = "Stable";
  g.protocol_type = "consumer";
  g.protocol_data = "range";
  g.members = {{"m-1", "instance-1", "client", "/127.0.0.1", "meta", "assign"}};
  g.authorized_operations = 0x1f;
  dg.groups = {g};
  RoundTripAllVersions(dg);

  // ListGroups requests have an empty body before the flexible versions.
  for (int16_t v = 0; v <= 2; ++v) CHECK(EncodeAt(ListGroupsRequest{}, v).empty());
  RoundTripAllVersions(ListGroupsRequest{});
  ListGroupsResponse lg;
  lg.throttle_time_ms = 1;
  lg.groups = {{"g1", "consumer"}, {"g2", ""}};
  RoundTripAllVersions(lg);

  RoundTripAllVersions(InitProducerIdRequest{std::nullopt, 60000});
  RoundTripAllVersions(InitProducerIdRequest{"txn-1", 60000});
  RoundTripAllVersions(InitProducerIdResponse{1, 0, 4000, 2});
}

TEST_CASE("CreateTopics, DeleteTopics and CreatePartitions round-trip at every served version") {
  CreateTopicsRequest ct;
  CreateTopicsRequest::Topic t;
  t.name = "alpha";
  t.num_partitions = -1;
  t.replication_factor = -1;
  t.assignments = {{0, {1, 2}}, {1, {2, 1}}};
  t.configs = {{"cleanup.policy", "compact"}, {"retention.ms", std::nullopt}};
  ct.topics = {t};
  ct.timeout_ms = 5000;
  ct.validate_only = true;
  RoundTripAllVersions(ct);

  CreateTopicsResponse ctr;
  ctr.throttle_time_ms = 1;
  ctr.topics = {{.name = "alpha", .error_code = ToWire(ErrorCode::TOPIC_ALREADY_EXISTS),
                 .error_message = "exists"},
                {.name = "beta", .error_code = 0, .error_message = std::nullopt}};
  RoundTripAllVersions(ctr);

  RoundTripAllVersions(DeleteTopicsRequest{.topics = {}, .topic_names = {"alpha", "beta"},
                                           .timeout_ms = 5000}, 5);
  DeleteTopicsRequest by_id;
  by_id.topics.push_back({.name = std::nullopt,
                          .topic_id = kTopicId});
  by_id.topics.push_back({.name = "beta", .topic_id = {}});
  by_id.timeout_ms = 100;
  CHECK(RoundTrip(by_id, 6) == by_id);
  DeleteTopicsResponse dtr;
  dtr.throttle_time_ms = 1;
  dtr.responses = {{.name = "alpha", .error_code = 0, .error_message = std::nullopt},
                   {.name = "beta", .error_code = ToWire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION),
                    .error_message = "gone"}};
  RoundTripAllVersions(dtr);

  CreatePartitionsRequest cp;
  cp.topics.push_back({"alpha", 4, std::vector<CreatePartitionsRequest::Assignment>{{{1, 2}}, {{2, 1}}}});
  cp.topics.push_back({"beta", 2, std::nullopt});
  cp.timeout_ms = 5000;
  cp.validate_only = false;
  RoundTripAllVersions(cp);
  CreatePartitionsResponse cpr;
  cpr.throttle_time_ms = 1;
  cpr.results = {{"alpha", 0, std::nullopt}, {"beta", ToWire(ErrorCode::INVALID_PARTITIONS), "fewer"}};
  RoundTripAllVersions(cpr);
}

TEST_CASE("DescribeConfigs round-trips at every served version, IsDefault only in v0") {
  DescribeConfigsRequest dc;
  dc.resources.push_back({2, "alpha", std::vector<std::string>{"retention.ms", "cleanup.policy"}});
  dc.resources.push_back({4, "1", std::nullopt});
  dc.include_synonyms = true;
  dc.include_documentation = true;
  RoundTripAllVersions(dc);

  DescribeConfigsResponse dcr;
  dcr.throttle_time_ms = 1;
  DescribeConfigsResponse::Config c;
  c.name = "retention.ms";
  c.value = "604800000";
  c.read_only = false;
  c.config_source = 5;
  c.is_sensitive = false;
  c.synonyms = {{"log.retention.ms", std::nullopt, 4}};
  c.config_type = 5;
  c.documentation = "how long";
  DescribeConfigsResponse::Config secret = c;
  secret.name = "sasl.jaas.config";
  secret.value.reset();
  secret.is_sensitive = true;
  secret.documentation.reset();
  dcr.results.push_back({0, std::nullopt, 2, "alpha", {c, secret}});
  RoundTripAllVersions(dcr);
  DescribeConfigsResponse v0 = dcr;
  v0.results[0].configs[0].is_default = true;
  CHECK(RoundTrip(v0, 0).results[0].configs[0].is_default);
  CHECK_FALSE(RoundTrip(v0, 1).results[0].configs[0].is_default);
  CHECK(RoundTrip(v0, 0).results[0].configs[0].synonyms.empty());
}

TEST_CASE("AlterConfigs, IncrementalAlterConfigs and DeleteGroups round-trip at every served version") {
  AlterConfigsRequest ac;
  ac.resources.push_back({kConfigResourceTopic, "alpha", {{"retention.ms", "1000"}, {"x", std::nullopt}}});
  ac.resources.push_back({kConfigResourceBroker, "0", {}});
  ac.validate_only = true;
  RoundTripAllVersions(ac);
  AlterConfigsResponse acr;
  acr.throttle_time_ms = 1;
  acr.responses = {{0, std::nullopt, kConfigResourceTopic, "alpha"},
                   {ToWire(ErrorCode::INVALID_REQUEST), "no", kConfigResourceBroker, "0"}};
  RoundTripAllVersions(acr);

  IncrementalAlterConfigsRequest iac;
  iac.resources.push_back({kConfigResourceTopic, "alpha",
                           {{"cleanup.policy", IncrementalAlterConfigsRequest::kAppend, "compact"},
                            {"retention.ms", IncrementalAlterConfigsRequest::kDelete, std::nullopt}}});
  iac.validate_only = true;
  RoundTripAllVersions(iac);
  IncrementalAlterConfigsResponse iacr;
  iacr.throttle_time_ms = 2;
  iacr.responses = {{ToWire(ErrorCode::INVALID_CONFIG), "bad", kConfigResourceTopic, "alpha"}};
  RoundTripAllVersions(iacr);

  RoundTripAllVersions(DeleteGroupsRequest{{"g1", "g2"}});
  DeleteGroupsResponse dgr;
  dgr.throttle_time_ms = 3;
  dgr.results = {{"g1", 0}, {"g2", ToWire(ErrorCode::NON_EMPTY_GROUP)}};
  RoundTripAllVersions(dgr);
}

TEST_CASE("DeleteRecords and OffsetForLeaderEpoch round-trip at every served version") {
  DeleteRecordsRequest dr;
  dr.topics.push_back({"alpha", {{0, 10}, {1, -1}}});
  dr.timeout_ms = 5000;
  RoundTripAllVersions(dr);
  DeleteRecordsResponse drr;
  drr.throttle_time_ms = 1;
  drr.topics.push_back({"alpha", {{0, 10, 0}, {1, -1, ToWire(ErrorCode::OFFSET_OUT_OF_RANGE)}}});
  RoundTripAllVersions(drr);

  OffsetForLeaderEpochRequest oe;
  oe.replica_id = 2;
  oe.topics.push_back({"alpha", {{0, 5, 4}, {1, 5, 3}}});
  RoundTripAllVersions(oe);
  CHECK(RoundTrip(oe, 2).replica_id == -2);
  OffsetForLeaderEpochResponse oer;
  oer.throttle_time_ms = 1;
  oer.topics.push_back({"alpha", {{0, 0, 4, 1000}, {ToWire(ErrorCode::FENCED_LEADER_EPOCH), 1, -1, -1}}});
  RoundTripAllVersions(oer);
  CHECK(RoundTrip(oer, 0).topics[0].partitions[0].leader_epoch == -1);
  CHECK(RoundTrip(oer, 0).topics[0].partitions[0].end_offset == 1000);
}
