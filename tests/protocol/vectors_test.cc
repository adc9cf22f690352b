// Golden vectors made outside silt's codec (tests/data/protocol, see its README):
//  - kafka-python/: bodies encoded by kafka-python, an independent client implementation;
//  - schema/: bodies encoded straight from Kafka's JSON message schemas by a small script, for
//    every API and version in the table, with every field set to a distinct value.
// Every body must decode at its version, consume every byte and re-encode identically.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "protocol/api_table.h"
#include "protocol/messages.h"
#include "protocol/messages_reassign.h"
#include "protocol/messages_describe.h"

using namespace silt;
using namespace silt::protocol;

namespace {

using Check = std::function<void(const std::string& bytes, int16_t version)>;

template <typename T>
Check Golden() {
  return [](const std::string& bytes, int16_t version) {
    T m;
    ByteReader r(bytes);
    Status s = m.Decode(r, version);
    CHECK_MESSAGE(s.ok(), s.ToString());
    if (!s.ok()) return;
    CHECK(r.remaining() == 0);
    std::string again;
    ByteWriter w(&again);
    m.Encode(w, version);
    CHECK(again == bytes);
  };
}

// kafka-python class name or Kafka schema name (without _v<N>) -> silt codec.
const std::map<std::string, Check>& Codecs() {
  static const std::map<std::string, Check> m = {
      // Kafka's names
      {"ApiVersionsRequest", Golden<ApiVersionsRequest>()},
      {"ApiVersionsResponse", Golden<ApiVersionsResponse>()},
      {"ListOffsetsRequest", Golden<ListOffsetsRequest>()},
      {"ListOffsetsResponse", Golden<ListOffsetsResponse>()},
      {"FindCoordinatorRequest", Golden<FindCoordinatorRequest>()},
      {"FindCoordinatorResponse", Golden<FindCoordinatorResponse>()},
      {"InitProducerIdRequest", Golden<InitProducerIdRequest>()},
      {"InitProducerIdResponse", Golden<InitProducerIdResponse>()},
      {"DeleteRecordsRequest", Golden<DeleteRecordsRequest>()},
      {"DeleteRecordsResponse", Golden<DeleteRecordsResponse>()},
      {"OffsetForLeaderEpochRequest", Golden<OffsetForLeaderEpochRequest>()},
      {"OffsetForLeaderEpochResponse", Golden<OffsetForLeaderEpochResponse>()},
      {"IncrementalAlterConfigsRequest", Golden<IncrementalAlterConfigsRequest>()},
      {"IncrementalAlterConfigsResponse", Golden<IncrementalAlterConfigsResponse>()},
      {"DescribeQuorumRequest", Golden<DescribeQuorumRequest>()},
      {"DescribeQuorumResponse", Golden<DescribeQuorumResponse>()},
      {"ElectLeadersRequest", Golden<ElectLeadersRequest>()},
      {"ElectLeadersResponse", Golden<ElectLeadersResponse>()},
      {"AlterPartitionReassignmentsRequest", Golden<AlterPartitionReassignmentsRequest>()},
      {"AlterPartitionReassignmentsResponse", Golden<AlterPartitionReassignmentsResponse>()},
      {"ListPartitionReassignmentsRequest", Golden<ListPartitionReassignmentsRequest>()},
      {"ListPartitionReassignmentsResponse", Golden<ListPartitionReassignmentsResponse>()},
      {"DescribeLogDirsRequest", Golden<DescribeLogDirsRequest>()},
      {"DescribeLogDirsResponse", Golden<DescribeLogDirsResponse>()},
      {"OffsetDeleteRequest", Golden<OffsetDeleteRequest>()},
      {"OffsetDeleteResponse", Golden<OffsetDeleteResponse>()},
      {"DescribeClusterRequest", Golden<DescribeClusterRequest>()},
      {"DescribeClusterResponse", Golden<DescribeClusterResponse>()},
      {"DescribeProducersRequest", Golden<DescribeProducersRequest>()},
      {"DescribeProducersResponse", Golden<DescribeProducersResponse>()},
      // kafka-python's names for the same APIs
      {"ApiVersionRequest", Golden<ApiVersionsRequest>()},
      {"ApiVersionResponse", Golden<ApiVersionsResponse>()},
      {"OffsetRequest", Golden<ListOffsetsRequest>()},
      {"OffsetResponse", Golden<ListOffsetsResponse>()},
      {"GroupCoordinatorRequest", Golden<FindCoordinatorRequest>()},
      {"GroupCoordinatorResponse", Golden<FindCoordinatorResponse>()},
      // names both use
      {"MetadataRequest", Golden<MetadataRequest>()},
      {"MetadataResponse", Golden<MetadataResponse>()},
      {"ProduceRequest", Golden<ProduceRequest>()},
      {"ProduceResponse", Golden<ProduceResponse>()},
      {"FetchRequest", Golden<FetchRequest>()},
      {"FetchResponse", Golden<FetchResponse>()},
      {"JoinGroupRequest", Golden<JoinGroupRequest>()},
      {"JoinGroupResponse", Golden<JoinGroupResponse>()},
      {"SyncGroupRequest", Golden<SyncGroupRequest>()},
      {"SyncGroupResponse", Golden<SyncGroupResponse>()},
      {"HeartbeatRequest", Golden<HeartbeatRequest>()},
      {"HeartbeatResponse", Golden<HeartbeatResponse>()},
      {"LeaveGroupRequest", Golden<LeaveGroupRequest>()},
      {"LeaveGroupResponse", Golden<LeaveGroupResponse>()},
      {"OffsetCommitRequest", Golden<OffsetCommitRequest>()},
      {"OffsetCommitResponse", Golden<OffsetCommitResponse>()},
      {"OffsetFetchRequest", Golden<OffsetFetchRequest>()},
      {"OffsetFetchResponse", Golden<OffsetFetchResponse>()},
      {"CreateTopicsRequest", Golden<CreateTopicsRequest>()},
      {"CreateTopicsResponse", Golden<CreateTopicsResponse>()},
      {"DeleteTopicsRequest", Golden<DeleteTopicsRequest>()},
      {"DeleteTopicsResponse", Golden<DeleteTopicsResponse>()},
      {"DescribeGroupsRequest", Golden<DescribeGroupsRequest>()},
      {"DescribeGroupsResponse", Golden<DescribeGroupsResponse>()},
      {"ListGroupsRequest", Golden<ListGroupsRequest>()},
      {"ListGroupsResponse", Golden<ListGroupsResponse>()},
      {"DescribeConfigsRequest", Golden<DescribeConfigsRequest>()},
      {"DescribeConfigsResponse", Golden<DescribeConfigsResponse>()},
      {"CreatePartitionsRequest", Golden<CreatePartitionsRequest>()},
      {"CreatePartitionsResponse", Golden<CreatePartitionsResponse>()},
      {"AlterConfigsRequest", Golden<AlterConfigsRequest>()},
      {"AlterConfigsResponse", Golden<AlterConfigsResponse>()},
      {"DeleteGroupsRequest", Golden<DeleteGroupsRequest>()},
      {"DeleteGroupsResponse", Golden<DeleteGroupsResponse>()},
  };
  return m;
}

// Checks every <Name>_v<N>.bin in `dir`; returns how many, and the names seen.
int CheckDir(const std::filesystem::path& dir, std::set<std::string>* seen) {
  REQUIRE(std::filesystem::is_directory(dir));
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::string file = entry.path().filename().string();
    size_t v = file.rfind("_v");
    REQUIRE(v != std::string::npos);
    std::string name = file.substr(0, v);
    int16_t version = static_cast<int16_t>(std::stoi(file.substr(v + 2)));
    auto it = Codecs().find(name);
    REQUIRE_MESSAGE(it != Codecs().end(), "no codec for " << file);
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    INFO(file);
    it->second(ss.str(), version);
    seen->insert(name);
    ++checked;
  }
  return checked;
}

std::filesystem::path DataDir() { return std::filesystem::path(SILT_TEST_DATA_DIR) / "protocol"; }

}  // namespace

TEST_CASE("bodies encoded by kafka-python decode and re-encode byte for byte") {
  std::set<std::string> seen;
  CHECK(CheckDir(DataDir() / "kafka-python", &seen) == 134);
  CHECK(seen.size() == 40);
}

TEST_CASE("bodies encoded from Kafka's message schemas decode and re-encode at every served version") {
  std::set<std::string> seen;
  int checked = CheckDir(DataDir() / "schema", &seen);
  int expected = 0;
  int kafka_apis = 0;
  for (const ApiInfo& api : SupportedApis()) {
    // silt's own APIs have no Kafka schema (messages_silt_test.cc checks their bytes).
    if (api.key == ApiKey::kSiltAppendBatches) continue;
    expected += 2 * (api.max_version - api.min_version + 1);
    ++kafka_apis;
  }
  CHECK(checked == expected);
  CHECK(seen.size() == 2 * static_cast<size_t>(kafka_apis));
}
