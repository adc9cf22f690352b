// Hand-checked bytes for the config-changing and group-deleting admin APIs: AlterConfigs (v0-1),
// IncrementalAlterConfigs (v0, and v1 in the flexible encoding) and DeleteGroups (v0-1), each
// laid out from Kafka's message schema of the same name. (Every version is also checked against
// bodies made outside silt in vectors_test.cc.)
#include <doctest/doctest.h>

#include <string>

#include "protocol/api_table.h"
#include "protocol/messages.h"

using namespace silt;
using namespace silt::protocol;

namespace {
std::string Bytes(std::initializer_list<int> v) {
  std::string s;
  for (int b : v) s.push_back(static_cast<char>(b));
  return s;
}

template <class M>
std::string Encode(const M& m, int16_t v) {
  std::string out;
  ByteWriter w(&out);
  m.Encode(w, v);
  return out;
}

template <class M>
void CheckRoundTripAndTruncation(const M& m, int16_t v) {
  std::string bytes = Encode(m, v);
  M back;
  ByteReader r(bytes);
  REQUIRE(back.Decode(r, v).ok());
  CHECK(back == m);
  CHECK(r.remaining() == 0);
  for (size_t n = 0; n < bytes.size(); ++n) {
    M cut;
    ByteReader rc(std::string_view(bytes).substr(0, n));
    CHECK_FALSE(cut.Decode(rc, v).ok());
  }
}
}  // namespace

TEST_CASE("DeleteGroups request and response follow Kafka's schema for v0 and v1") {
  DeleteGroupsRequest req;
  req.groups_names = {"g1"};
  CHECK(Encode(req, 0) == Bytes({0, 0, 0, 1, 0, 2, 'g', '1'}));
  DeleteGroupsResponse resp;
  resp.throttle_time_ms = 5;
  resp.results.push_back({"g1", 69});
  CHECK(Encode(resp, 1) == Bytes({0, 0, 0, 5, 0, 0, 0, 1, 0, 2, 'g', '1', 0, 69}));
  for (int16_t v : {0, 1}) {
    CheckRoundTripAndTruncation(req, v);
    CheckRoundTripAndTruncation(resp, v);
  }
}

TEST_CASE("IncrementalAlterConfigs v0 writes resources, operations and nullable values") {
  IncrementalAlterConfigsRequest req;
  IncrementalAlterConfigsRequest::Resource res;
  res.resource_type = 2;
  res.resource_name = "t";
  res.configs.push_back({"a", 0, std::string("1")});
  res.configs.push_back({"b", 1, std::nullopt});
  req.resources.push_back(res);
  CHECK(Encode(req, 0) == Bytes({0, 0, 0, 1,             // resources
                                 2, 0, 1, 't',           // type, name
                                 0, 0, 0, 2,             // configs
                                 0, 1, 'a', 0, 0, 1, '1',  // SET a=1
                                 0, 1, 'b', 1, 0xff, 0xff,  // DELETE b
                                 0}));                     // validate_only
  IncrementalAlterConfigsResponse resp;
  resp.responses.push_back({40, std::string("bad"), 2, "t"});
  CheckRoundTripAndTruncation(req, 0);
  CheckRoundTripAndTruncation(resp, 0);
}

TEST_CASE("IncrementalAlterConfigs v1 uses compact lengths and tagged fields") {
  CHECK(IsFlexibleVersion(static_cast<int16_t>(ApiKey::kIncrementalAlterConfigs), 1));
  CHECK_FALSE(IsFlexibleVersion(static_cast<int16_t>(ApiKey::kIncrementalAlterConfigs), 0));
  IncrementalAlterConfigsRequest req;
  IncrementalAlterConfigsRequest::Resource res;
  res.resource_type = kConfigResourceTopic;
  res.resource_name = "t";
  res.configs.push_back({"a", IncrementalAlterConfigsRequest::kAppend, std::string("1")});
  res.configs.push_back({"b", IncrementalAlterConfigsRequest::kDelete, std::nullopt});
  req.resources.push_back(res);
  req.validate_only = true;
  CHECK(Encode(req, 1) == Bytes({2,                    // resources: 1 (uvarint N+1)
                                 2, 2, 't',            // type, name
                                 3,                    // configs: 2
                                 2, 'a', 2, 2, '1', 0,  // APPEND a=1, no tagged fields
                                 2, 'b', 1, 0, 0,       // DELETE b (null value)
                                 0,                    // resource's tagged fields
                                 1,                    // validate_only
                                 0}));                 // request's tagged fields
  IncrementalAlterConfigsResponse resp;
  resp.throttle_time_ms = 7;
  resp.responses.push_back({40, std::string("bad"), 2, "t"});
  resp.responses.push_back({0, std::nullopt, 4, "0"});
  CHECK(Encode(resp, 1) == Bytes({0, 0, 0, 7, 3,                 // throttle, responses: 2
                                  0, 40, 4, 'b', 'a', 'd', 2, 2, 't', 0,
                                  0, 0, 0, 4, 2, '0', 0,
                                  0}));
  CheckRoundTripAndTruncation(req, 1);
  CheckRoundTripAndTruncation(resp, 1);
}

TEST_CASE("AlterConfigs v0 and v1 carry full config sets with nullable values") {
  AlterConfigsRequest req;
  AlterConfigsRequest::Resource res;
  res.resource_type = kConfigResourceTopic;
  res.resource_name = "t";
  res.configs.push_back({"a", std::string("1")});
  res.configs.push_back({"b", std::nullopt});
  req.resources.push_back(res);
  req.validate_only = true;
  for (int16_t v : {0, 1}) {
    CHECK(Encode(req, v) == Bytes({0, 0, 0, 1,              // resources
                                   2, 0, 1, 't',            // type, name
                                   0, 0, 0, 2,              // configs
                                   0, 1, 'a', 0, 1, '1',    // a=1
                                   0, 1, 'b', 0xff, 0xff,   // b=null
                                   1}));                    // validate_only
  }
  AlterConfigsResponse resp;
  resp.throttle_time_ms = 3;
  resp.responses.push_back({40, std::string("x"), 2, "t"});
  CHECK(Encode(resp, 1) == Bytes({0, 0, 0, 3, 0, 0, 0, 1, 0, 40, 0, 1, 'x', 2, 0, 1, 't'}));
  for (int16_t v : {0, 1}) {
    CheckRoundTripAndTruncation(req, v);
    CheckRoundTripAndTruncation(resp, v);
  }
}

TEST_CASE("DescribeQuorum is flexible from v0 and adds the replicas' timestamps in v1") {
  DescribeQuorumRequest req;
  req.topics.push_back({"m", {{0}}});
  // compact array of 1 (2), compact string "m" (2, 'm'), partitions (2), index, tags x3
  CHECK(Encode(req, 0) == Bytes({2, 2, 'm', 2, 0, 0, 0, 0, 0, 0, 0}));
  DescribeQuorumResponse resp;
  DescribeQuorumResponse::Partition p;
  p.leader_id = 2;
  p.leader_epoch = 7;
  p.high_watermark = 42;
  p.current_voters.push_back(
      {.replica_id = 1, .log_end_offset = 40, .last_fetch_timestamp = 1000,
       .last_caught_up_timestamp = 900});
  p.current_voters.push_back(
      {.replica_id = 2, .log_end_offset = 42, .last_fetch_timestamp = -1,
       .last_caught_up_timestamp = 1100});
  resp.topics.push_back({"m", {p}});
  std::string v0 = Encode(resp, 0);
  std::string v1 = Encode(resp, 1);
  CHECK(v1.size() == v0.size() + 2 * 16);  // two int64 timestamps per voter
  CHECK(v0.substr(0, 11) == Bytes({0, 0, 2, 2, 'm', 2, 0, 0, 0, 0, 0}));
  for (int16_t v : {0, 1}) {
    CheckRoundTripAndTruncation(req, v);
    DescribeQuorumResponse want = resp;
    if (v == 0)
      for (auto& r : want.topics[0].partitions[0].current_voters)
        r.last_fetch_timestamp = r.last_caught_up_timestamp = -1;
    std::string bytes = Encode(resp, v);
    DescribeQuorumResponse back;
    ByteReader r(bytes);
    REQUIRE(back.Decode(r, v).ok());
    CHECK(back == want);
    CheckRoundTripAndTruncation(want, v);
  }
}
