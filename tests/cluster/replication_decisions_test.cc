// The follower's truncation decisions and the leader's ISR decisions, as pure functions.
#include <doctest/doctest.h>

#include "base/file.h"
#include "broker/broker_test_util.h"
#include "cluster/replica_fetcher.h"
#include "cluster/replica_manager.h"
#include "storage/partition_log.h"

using namespace silt;
using namespace silt::cluster;
using broker::Partition;

namespace {

LeaderEpochEnd Leader(int32_t epoch, int64_t end) {
  return LeaderEpochEnd{protocol::ErrorCode::NONE, LeaderEpoch(epoch), Offset(end)};
}
std::optional<Partition::EpochEnd> Ours(int32_t epoch, int64_t end) {
  return Partition::EpochEnd{LeaderEpoch(epoch), Offset(end)};
}

Partition::FollowerState Follower(int32_t id, int64_t log_end, int64_t caught_up_ms) {
  Partition::FollowerState f;
  f.id = NodeId(id);
  f.log_end = Offset(log_end);
  f.log_start = Offset(0);
  f.last_caught_up_ms = caught_up_ms;
  f.last_fetch_ms = caught_up_ms;
  return f;
}

std::vector<NodeId> Ids(std::initializer_list<int32_t> ids) {
  std::vector<NodeId> out;
  for (int32_t i : ids) out.push_back(NodeId(i));
  return out;
}

}  // namespace

TEST_CASE("a follower with the leader's epoch truncates to where the leader's copy of it ends") {
  // Both know epoch 3; the leader's ends at 120, ours at 150 (we got records it never had).
  TruncationDecision d = DecideTruncation(Leader(3, 120), Ours(3, 150), Offset(150), Offset(100));
  CHECK(d.truncate_to == Offset(120));
  CHECK(d.done);
}

TEST_CASE("a follower behind the leader's end of the epoch keeps its whole log") {
  TruncationDecision d = DecideTruncation(Leader(3, 200), Ours(3, 150), Offset(150), Offset(100));
  CHECK(d.truncate_to == Offset(150));
  CHECK(d.done);
}

TEST_CASE("a follower never truncates to its high watermark while the leader has epochs") {
  // KIP-101's example: the HW (90) is below what both replicas hold of epoch 2 (100).
  TruncationDecision d = DecideTruncation(Leader(2, 100), Ours(2, 100), Offset(100), Offset(90));
  CHECK(d.truncate_to == Offset(100));
  CHECK(d.truncate_to != Offset(90));
}

TEST_CASE("when the leader answers an epoch the follower never had, it cuts there and asks again") {
  // KIP-279: we asked for our epoch 5; the leader never had 5 and answers its largest below it,
  // epoch 3 ending at 80. Our largest epoch <= 3 is 2, ending at 70: cut there, ask again with
  // whatever epoch is then our latest.
  TruncationDecision d = DecideTruncation(Leader(3, 80), Ours(2, 70), Offset(150), Offset(60));
  CHECK(d.truncate_to == Offset(70));
  CHECK_FALSE(d.done);
}

TEST_CASE("a follower with no epoch at or below the leader's truncates to the leader's end") {
  TruncationDecision d =
      DecideTruncation(Leader(1, 40), std::nullopt, Offset(150), Offset(30));
  CHECK(d.truncate_to == Offset(40));
  CHECK(d.done);
}

TEST_CASE("only a leader whose log has no epochs makes the follower truncate to its HW") {
  TruncationDecision d =
      DecideTruncation(LeaderEpochEnd{protocol::ErrorCode::NONE, kNoLeaderEpoch, kInvalidOffset},
                       Ours(2, 100), Offset(100), Offset(90));
  CHECK(d.truncate_to == Offset(90));
  CHECK(d.done);
  // An epoch-less answer with an end offset is taken as the end.
  TruncationDecision e = DecideTruncation(
      LeaderEpochEnd{protocol::ErrorCode::NONE, kNoLeaderEpoch, Offset(95)}, Ours(2, 100),
      Offset(100), Offset(90));
  CHECK(e.truncate_to == Offset(95));
}

TEST_CASE("out of range: a follower ahead of the leader truncates, one behind its start restarts") {
  CHECK(DecideOutOfRange(Offset(0), Offset(500)) == OutOfRangeAction::kTruncate);
  CHECK(DecideOutOfRange(Offset(500), Offset(500)) == OutOfRangeAction::kTruncate);
  CHECK(DecideOutOfRange(Offset(800), Offset(500)) == OutOfRangeAction::kRestartAtStart);
}

TEST_CASE("the ISR drops a follower not caught up for replica.lag.time.max.ms, never the leader") {
  const int64_t now = 100000;
  std::vector<Partition::FollowerState> fs{Follower(2, 50, now - 11000),
                                           Follower(3, 90, now - 2000)};
  auto next = ShrinkIsr(Ids({1, 2, 3}), NodeId(1), fs, Offset(100), now, 10000);
  REQUIRE(next.has_value());
  CHECK(*next == Ids({1, 3}));
  // Within the lag, nobody goes.
  CHECK_FALSE(ShrinkIsr(Ids({1, 2, 3}), NodeId(1), fs, Offset(100), now, 20000).has_value());
}

TEST_CASE("a follower at the leader's log end stays in the ISR however long ago it caught up") {
  // Kafka's isCaughtUp: an idle partition does not shrink.
  const int64_t now = 100000;
  std::vector<Partition::FollowerState> fs{Follower(2, 100, now - 60000)};
  CHECK_FALSE(ShrinkIsr(Ids({1, 2}), NodeId(1), fs, Offset(100), now, 10000).has_value());
}

TEST_CASE("the ISR takes back a follower at or past the HW and the leader epoch's start") {
  std::vector<Partition::FollowerState> fs{Follower(2, 100, 0), Follower(3, 99, 0)};
  auto next = ExpandIsr(Ids({1}), Ids({1, 2, 3}), fs, Offset(100), Offset(80));
  REQUIRE(next.has_value());
  CHECK(*next == Ids({1, 2}));
  // Past the HW but not yet at the epoch's start: not yet (it may still hold a stale suffix).
  CHECK_FALSE(ExpandIsr(Ids({1}), Ids({1, 2, 3}), fs, Offset(90), Offset(120)).has_value());
  // A follower that has not fetched in this epoch (log end unknown) is not added.
  std::vector<Partition::FollowerState> unknown{Follower(2, -1, 0)};
  CHECK_FALSE(ExpandIsr(Ids({1}), Ids({1, 2}), unknown, Offset(0), Offset(0)).has_value());
  // A node that is not a replica is never added.
  std::vector<Partition::FollowerState> stranger{Follower(4, 500, 0)};
  CHECK_FALSE(ExpandIsr(Ids({1}), Ids({1, 2}), stranger, Offset(0), Offset(0)).has_value());
}

TEST_CASE("a follower asks about the latest epoch its log holds, not the one it now follows") {
  std::string root = broker::testing::TempDir();
  auto log = storage::PartitionLog::Open(root + "/r-0", storage::LogConfig{}, {});
  REQUIRE_MESSAGE(log.ok(), log.status().ToString());
  std::shared_ptr<storage::PartitionLog> shared = std::move(log).value();
  auto opened = Partition::Open("r", PartitionId(0), shared, NodeId(1), LeaderEpoch(0));
  REQUIRE(opened.ok());
  std::shared_ptr<Partition> p = *opened;
  // An empty log knows no epoch.
  REQUIRE(p->BecomeLeader(LeaderEpoch(0), 0, {NodeId(1)}, {NodeId(1)}).ok());
  auto produce = [&](int n) {
    std::string batch = broker::testing::MakeBatch(n);
    REQUIRE(p->AppendFromProducer(batch.data(), batch.size(), p->config()).error ==
            protocol::ErrorCode::NONE);
  };
  produce(3);
  REQUIRE(p->BecomeLeader(LeaderEpoch(4), 1, {NodeId(1)}, {NodeId(1)}).ok());
  produce(2);
  // Now it follows epoch 9 of another node: its log's latest epoch is still 4, ending at 5.
  REQUIRE(p->BecomeFollower(LeaderEpoch(9), 2, NodeId(2)).ok());
  auto latest = LatestEpoch(*p);
  REQUIRE_MESSAGE(latest.ok(), latest.status().ToString());
  CHECK(latest->epoch == LeaderEpoch(4));
  CHECK(latest->end_offset == Offset(5));
  p->Shutdown();
  REQUIRE(shared->Close().ok());
  (void)RemoveAll(root);
}

TEST_CASE("a follower the controller dropped from the ISR may join again only once it fetches again") {
  const int64_t now = 50000;
  // Node 2 fetched 1 s ago; the leader saw it leave the ISR (a controlled shutdown) 0.5 s ago.
  std::vector<Partition::FollowerState> fs{Follower(2, 100, now - 1000), Follower(3, 100, now - 10)};
  std::map<int32_t, int64_t> left{{2, now - 500}};
  auto c = IsrCandidates(fs, {2, 3}, left, now, 10000);
  REQUIRE(c.size() == 1);
  CHECK(c[0].id == NodeId(3));
  // A fetch after it left makes it a candidate again.
  fs[0].last_fetch_ms = now - 100;
  CHECK(IsrCandidates(fs, {2, 3}, left, now, 10000).size() == 2);
  // Fenced brokers and followers silent past the lag never are.
  CHECK(IsrCandidates(fs, {3}, left, now, 10000).size() == 1);
  CHECK(IsrCandidates(fs, {2, 3}, {}, now + 20000, 10000).empty());
}
