// Golden vectors encoded by kafka-python, an independent client implementation
// (tests/data/protocol/kafka-python, made by tests/data/protocol/make_kafka_python_vectors.py):
// every body must decode at its version, consume every byte and re-encode identically.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "protocol/messages.h"

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

// kafka-python class name (without _v<N>) -> silt codec.
const std::map<std::string, Check>& Codecs() {
  static const std::map<std::string, Check> m = {
      {"ApiVersionRequest", Golden<ApiVersionsRequest>()},
      {"ApiVersionResponse", Golden<ApiVersionsResponse>()},
      {"MetadataRequest", Golden<MetadataRequest>()},
      {"MetadataResponse", Golden<MetadataResponse>()},
      {"ProduceRequest", Golden<ProduceRequest>()},
      {"ProduceResponse", Golden<ProduceResponse>()},
      {"FetchRequest", Golden<FetchRequest>()},
      {"FetchResponse", Golden<FetchResponse>()},
      {"OffsetRequest", Golden<ListOffsetsRequest>()},
      {"OffsetResponse", Golden<ListOffsetsResponse>()},
      {"GroupCoordinatorRequest", Golden<FindCoordinatorRequest>()},
      {"GroupCoordinatorResponse", Golden<FindCoordinatorResponse>()},
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
  };
  return m;
}

}  // namespace

TEST_CASE("bodies encoded by kafka-python decode and re-encode byte for byte") {
  std::filesystem::path dir = std::filesystem::path(SILT_TEST_DATA_DIR) / "protocol" / "kafka-python";
  REQUIRE(std::filesystem::is_directory(dir));
  int checked = 0;
  std::set<std::string> seen;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::string file = entry.path().filename().string();
    size_t v = file.rfind("_v");
    REQUIRE(v != std::string::npos);
    std::string cls = file.substr(0, v);
    int16_t version = static_cast<int16_t>(std::stoi(file.substr(v + 2)));
    auto it = Codecs().find(cls);
    REQUIRE_MESSAGE(it != Codecs().end(), "no codec for " << file);
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    INFO(file);
    it->second(ss.str(), version);
    seen.insert(cls);
    ++checked;
  }
  CHECK(checked == 126);
  CHECK(seen.size() == Codecs().size());
}
