// Deterministic fuzzing of every decoder: random bodies and byte-flipped golden bodies must
// never crash (run under ASan/UBSan in CI), and a failed decode returns a Status.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "protocol/api_table.h"
#include "protocol/messages.h"
#include "protocol/messages_reassign.h"
#include "protocol/messages_describe.h"

using namespace silt;
using namespace silt::protocol;

namespace {

struct Target {
  const char* name;
  ApiKey key;
  std::function<Status(std::string_view, int16_t)> decode;
};

template <typename T>
Target Make(const char* name) {
  return Target{name, T::kApiKey, [](std::string_view bytes, int16_t v) {
                  T m;
                  ByteReader r(bytes);
                  Status s = m.Decode(r, v);
                  if (s.ok()) {
                    // Whatever decoded must encode again without trouble.
                    std::string out;
                    ByteWriter w(&out);
                    m.Encode(w, v);
                  }
                  return s;
                }};
}

std::vector<Target> Targets() {
  return {
      Make<ApiVersionsRequest>("ApiVersionsRequest"), Make<ApiVersionsResponse>("ApiVersionsResponse"),
      Make<MetadataRequest>("MetadataRequest"), Make<MetadataResponse>("MetadataResponse"),
      Make<ProduceRequest>("ProduceRequest"), Make<ProduceResponse>("ProduceResponse"),
      Make<FetchRequest>("FetchRequest"), Make<FetchResponse>("FetchResponse"),
      Make<ListOffsetsRequest>("ListOffsetsRequest"), Make<ListOffsetsResponse>("ListOffsetsResponse"),
      Make<FindCoordinatorRequest>("FindCoordinatorRequest"),
      Make<FindCoordinatorResponse>("FindCoordinatorResponse"),
      Make<JoinGroupRequest>("JoinGroupRequest"), Make<JoinGroupResponse>("JoinGroupResponse"),
      Make<SyncGroupRequest>("SyncGroupRequest"), Make<SyncGroupResponse>("SyncGroupResponse"),
      Make<HeartbeatRequest>("HeartbeatRequest"), Make<HeartbeatResponse>("HeartbeatResponse"),
      Make<LeaveGroupRequest>("LeaveGroupRequest"), Make<LeaveGroupResponse>("LeaveGroupResponse"),
      Make<OffsetCommitRequest>("OffsetCommitRequest"), Make<OffsetCommitResponse>("OffsetCommitResponse"),
      Make<OffsetFetchRequest>("OffsetFetchRequest"), Make<OffsetFetchResponse>("OffsetFetchResponse"),
      Make<InitProducerIdRequest>("InitProducerIdRequest"),
      Make<InitProducerIdResponse>("InitProducerIdResponse"),
      Make<CreateTopicsRequest>("CreateTopicsRequest"), Make<CreateTopicsResponse>("CreateTopicsResponse"),
      Make<DeleteTopicsRequest>("DeleteTopicsRequest"), Make<DeleteTopicsResponse>("DeleteTopicsResponse"),
      Make<DescribeGroupsRequest>("DescribeGroupsRequest"),
      Make<DescribeGroupsResponse>("DescribeGroupsResponse"),
      Make<ListGroupsRequest>("ListGroupsRequest"), Make<ListGroupsResponse>("ListGroupsResponse"),
      Make<DescribeConfigsRequest>("DescribeConfigsRequest"),
      Make<DescribeConfigsResponse>("DescribeConfigsResponse"),
      Make<AlterConfigsRequest>("AlterConfigsRequest"), Make<AlterConfigsResponse>("AlterConfigsResponse"),
      Make<IncrementalAlterConfigsRequest>("IncrementalAlterConfigsRequest"),
      Make<IncrementalAlterConfigsResponse>("IncrementalAlterConfigsResponse"),
      Make<DeleteGroupsRequest>("DeleteGroupsRequest"), Make<DeleteGroupsResponse>("DeleteGroupsResponse"),
      Make<CreatePartitionsRequest>("CreatePartitionsRequest"),
      Make<CreatePartitionsResponse>("CreatePartitionsResponse"),
      Make<DeleteRecordsRequest>("DeleteRecordsRequest"), Make<DeleteRecordsResponse>("DeleteRecordsResponse"),
      Make<OffsetForLeaderEpochRequest>("OffsetForLeaderEpochRequest"),
      Make<OffsetForLeaderEpochResponse>("OffsetForLeaderEpochResponse"),
      Make<DescribeQuorumRequest>("DescribeQuorumRequest"),
      Make<DescribeQuorumResponse>("DescribeQuorumResponse"),
      Make<SiltAppendBatchesRequest>("SiltAppendBatchesRequest"),
      Make<SiltAppendBatchesResponse>("SiltAppendBatchesResponse"),
      Make<ElectLeadersRequest>("ElectLeadersRequest"),
      Make<ElectLeadersResponse>("ElectLeadersResponse"),
      Make<AlterPartitionReassignmentsRequest>("AlterPartitionReassignmentsRequest"),
      Make<AlterPartitionReassignmentsResponse>("AlterPartitionReassignmentsResponse"),
      Make<ListPartitionReassignmentsRequest>("ListPartitionReassignmentsRequest"),
      Make<ListPartitionReassignmentsResponse>("ListPartitionReassignmentsResponse"),
      Make<DescribeLogDirsRequest>("DescribeLogDirsRequest"),
      Make<DescribeLogDirsResponse>("DescribeLogDirsResponse"),
      Make<OffsetDeleteRequest>("OffsetDeleteRequest"), Make<OffsetDeleteResponse>("OffsetDeleteResponse"),
      Make<DescribeClusterRequest>("DescribeClusterRequest"),
      Make<DescribeClusterResponse>("DescribeClusterResponse"),
      Make<DescribeProducersRequest>("DescribeProducersRequest"),
      Make<DescribeProducersResponse>("DescribeProducersResponse"),
  };
}

}  // namespace

TEST_CASE("random bodies never crash any decoder at any served version") {
  std::mt19937 rng(20261129);
  std::vector<Target> targets = Targets();
  REQUIRE(targets.size() == 2 * SupportedApis().size());
  int failures = 0, total = 0;
  for (const Target& t : targets) {
    const ApiInfo* api = FindApi(t.key);
    REQUIRE(api != nullptr);
    for (int16_t v = api->min_version; v <= api->max_version; ++v) {
      for (int i = 0; i < 40; ++i) {
        std::string body(rng() % 64, '\0');
        // Mostly small bytes, so counts and lengths are often plausible.
        for (char& c : body) c = static_cast<char>(rng() % 4 == 0 ? rng() : rng() % 3);
        failures += t.decode(body, v).ok() ? 0 : 1;
        ++total;
      }
    }
  }
  CHECK(failures > 0);  // random input is mostly rejected ...
  CHECK(failures < total);  // ... but not all of it (small messages do decode)
}

TEST_CASE("byte-flipped golden bodies never crash their decoder") {
  std::filesystem::path dir = std::filesystem::path(SILT_TEST_DATA_DIR) / "protocol" / "schema";
  REQUIRE(std::filesystem::is_directory(dir));
  std::vector<Target> targets = Targets();
  std::mt19937 rng(7);
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::string file = entry.path().filename().string();
    size_t v = file.rfind("_v");
    std::string name = file.substr(0, v);
    int16_t version = static_cast<int16_t>(std::stoi(file.substr(v + 2)));
    const Target* target = nullptr;
    for (const Target& t : targets) {
      if (name == t.name) target = &t;
    }
    REQUIRE_MESSAGE(target != nullptr, file);
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    std::string golden = ss.str();
    ++files;
    if (golden.empty()) continue;
    for (int i = 0; i < 30; ++i) {
      std::string mutated = golden;
      for (int k = 0; k < 1 + i % 3; ++k) {
        mutated[rng() % mutated.size()] = static_cast<char>(rng());
      }
      (void)target->decode(mutated, version);
    }
  }
  CHECK(files > 100);
}
