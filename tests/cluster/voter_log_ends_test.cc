// RaftQuorum::voter_log_ends (DescribeQuorum's LogEndOffset per voter): the leader reports every
// voter, caught up after its proposals commit; a follower knows only its own log end.
#include <doctest/doctest.h>

#include "cluster/quorum_harness.h"

using namespace silt;
using namespace silt::cluster;
using namespace silt::cluster::testing;

TEST_CASE("the leader reports each voter's log end and a follower only its own") {
  TestCluster c(3);
  int l = c.WaitForReadyLeader();
  REQUIRE(l >= 0);
  for (int i = 0; i < 5; ++i)
    REQUIRE(c.ProposeAndWait(l, RandomUuid(), "cmd" + std::to_string(i)).outcome ==
            ProposeOutcome::kApplied);
  const uint64_t committed = c.node(l)->committed_index().value();
  // Followers acknowledge on their next append round: wait until the leader has seen it.
  REQUIRE(WaitUntil(
      [&] {
        auto ends = c.node(l)->voter_log_ends();
        if (ends.size() != 3) return false;
        for (const auto& e : ends)
          if (e.log_end.value() < committed) return false;
        return true;
      },
      kElectionLimit));
  auto ends = c.node(l)->voter_log_ends();
  CHECK(ends[0].id == NodeId(1));
  CHECK(ends[1].id == NodeId(2));
  CHECK(ends[2].id == NodeId(3));
  const int f = (l + 1) % 3;
  auto mine = c.node(f)->voter_log_ends();
  REQUIRE(mine.size() == 1);
  CHECK(mine[0].id == c.voter(f).id);
  CHECK(mine[0].log_end.value() >= 1);
}
