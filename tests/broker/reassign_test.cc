// ElectLeaders, AlterPartitionReassignments and ListPartitionReassignments against a single
// node, which answers as Kafka does with one broker: its own replica is the only valid target,
// there is nothing to cancel or list, and no election is needed. (The cluster's answers are
// checked in tests/cluster/reassignment_test.cc and tests/interop/test_reassign.py.)
#include "broker_test_util.h"
#include "protocol/messages_reassign.h"

using namespace silt;
using namespace silt::broker;
using namespace silt::broker::testing;
using protocol::ErrorCode;

TEST_CASE("a single node accepts a reassignment only onto itself and has none to list") {
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "moves", 2);
  const int32_t self = b.config.node_id;
  protocol::AlterPartitionReassignmentsRequest req;
  req.topics.push_back({"moves", {{0, std::vector<int32_t>{self}},
                                  {1, std::vector<int32_t>{self, self + 1}},
                                  {0, std::nullopt}}});
  req.topics.push_back({"absent", {{0, std::vector<int32_t>{self}}}});
  protocol::AlterPartitionReassignmentsResponse resp;
  c.Call(req, 0, &resp);
  CHECK(resp.error_code == 0);
  REQUIRE(resp.responses.size() == 2);
  REQUIRE(resp.responses[0].partitions.size() == 3);
  CHECK(resp.responses[0].partitions[0].error_code == 0);
  CHECK(resp.responses[0].partitions[1].error_code ==
        protocol::ToWire(ErrorCode::INVALID_REPLICA_ASSIGNMENT));
  CHECK(resp.responses[0].partitions[2].error_code ==
        protocol::ToWire(ErrorCode::NO_REASSIGNMENT_IN_PROGRESS));
  CHECK(resp.responses[1].partitions[0].error_code ==
        protocol::ToWire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));

  protocol::ListPartitionReassignmentsRequest list;
  protocol::ListPartitionReassignmentsResponse listed;
  c.Call(list, 0, &listed);
  CHECK(listed.error_code == 0);
  CHECK(listed.topics.empty());
}

TEST_CASE("a single node answers ElectLeaders with ELECTION_NOT_NEEDED at every version") {
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "led", 1);
  for (int16_t v : {0, 1, 2}) {
    protocol::ElectLeadersRequest req;
    req.election_type = protocol::kElectPreferred;
    req.topic_partitions.emplace();
    req.topic_partitions->push_back({"led", {0, 5}});
    protocol::ElectLeadersResponse resp;
    c.Call(req, v, &resp);
    REQUIRE(resp.replica_election_results.size() == 1);
    const auto& parts = resp.replica_election_results[0].partition_result;
    REQUIRE(parts.size() == 2);
    CHECK(parts[0].error_code == protocol::ToWire(ErrorCode::ELECTION_NOT_NEEDED));
    CHECK(parts[1].error_code == protocol::ToWire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
    // Every partition (null): nothing needed an election, so nothing is answered.
    req.topic_partitions.reset();
    c.Call(req, v, &resp);
    CHECK(resp.replica_election_results.empty());
  }
}
