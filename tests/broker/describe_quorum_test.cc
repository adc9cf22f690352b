// DescribeQuorum (KIP-595) against a single node, which has no metadata quorum: the metadata
// partition is unknown there, as it is for any other topic named. (The three-node answers are
// checked through `silt cluster` in tests/interop/test_cluster.py.)
#include "broker_test_util.h"

using namespace silt;
using namespace silt::broker;
using namespace silt::broker::testing;

TEST_CASE("a single node answers DescribeQuorum with UNKNOWN_TOPIC_OR_PARTITION at every version") {
  TestBroker b;
  Client c(b.port);
  for (int16_t v : {0, 1}) {
    protocol::DescribeQuorumRequest req;
    req.topics.push_back({protocol::kClusterMetadataTopic, {{0}}});
    req.topics.push_back({"other", {{0}, {3}}});
    protocol::DescribeQuorumResponse resp;
    c.Call(req, v, &resp);
    CHECK(resp.error_code == 0);
    REQUIRE(resp.topics.size() == 2);
    CHECK(resp.topics[0].topic_name == protocol::kClusterMetadataTopic);
    REQUIRE(resp.topics[1].partitions.size() == 2);
    CHECK(resp.topics[1].partitions[1].partition_index == 3);
    for (const auto& t : resp.topics)
      for (const auto& p : t.partitions) {
        CHECK(p.error_code == protocol::ToWire(protocol::ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
        CHECK(p.current_voters.empty());
      }
  }
}
