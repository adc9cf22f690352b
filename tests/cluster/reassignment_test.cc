#include "cluster/reassignment.h"

#include <doctest/doctest.h>

#include "base/random.h"
#include "cluster/controller.h"

using namespace silt;
using namespace silt::cluster;
using namespace std::chrono_literals;

namespace {

const Uuid kTopic = *Uuid::Parse("AAAAAAAAAAAAAAAAAAAACA");

std::vector<NodeId> N(std::initializer_list<int> ids) {
  std::vector<NodeId> out;
  for (int i : ids) out.push_back(NodeId(i));
  return out;
}

// Brokers 1..`brokers`, unfenced, and topic "t" with one partition: replicas, ISR, leader.
MetadataImage Cluster(int brokers, std::vector<NodeId> replicas, std::vector<NodeId> isr,
                      int leader) {
  std::vector<MetadataRecord> r;
  for (int b = 1; b <= brokers; ++b) {
    r.push_back(RegisterBrokerRecord{NodeId(b), RandomUuid(), "h", 9092});
    r.push_back(UnfenceBrokerRecord{NodeId(b)});
  }
  r.push_back(TopicRecord{"t", kTopic});
  PartitionRecord p;
  p.partition_id = PartitionId(0);
  p.topic_id = kTopic;
  p.replicas = std::move(replicas);
  p.isr = std::move(isr);
  p.leader = NodeId(leader);
  r.push_back(p);
  auto img = MetadataImage().Apply(r);
  REQUIRE_MESSAGE(img.ok(), img.status().ToString());
  return std::move(img).value();
}

MetadataImage Apply(const MetadataImage& img, const std::vector<MetadataRecord>& records) {
  auto next = img.Apply(records);
  REQUIRE_MESSAGE(next.ok(), next.status().ToString());
  return std::move(next).value();
}

const PartitionImage& P(const MetadataImage& img) { return img.FindTopic("t")->partitions.at(0); }

MetadataImage Start(const MetadataImage& img, std::vector<NodeId> target) {
  auto change = StartReassignment(img, *img.FindTopic("t"), 0, target);
  REQUIRE_MESSAGE(change.ok(), change.status().ToString());
  return Apply(img, {*change});
}

// The leader's AlterPartition adding `n` to the ISR, as the replica manager proposes it.
MetadataImage JoinIsr(const MetadataImage& img, int n) {
  const PartitionImage& p = P(img);
  std::vector<NodeId> isr = p.isr;
  isr.push_back(NodeId(n));
  return Apply(img, {AlterPartitionRecord{PartitionId(0), kTopic, p.leader, p.leader_epoch,
                                          p.partition_epoch, isr}});
}

ControllerDecision Decide(Controller& c, const MetadataImage& img) {
  return c.Decide(img, 1, NodeId(1), Controller::Clock::now());
}

}  // namespace

TEST_CASE("starting a reassignment adds the target's new replicas and marks the ones to drop") {
  MetadataImage img = Cluster(4, N({1, 2, 3}), N({1, 2, 3}), 1);
  MetadataImage next = Start(img, N({4, 2, 3}));
  const PartitionImage& p = P(next);
  CHECK(p.replicas == N({4, 2, 3, 1}));
  CHECK(p.adding_replicas == N({4}));
  CHECK(p.removing_replicas == N({1}));
  CHECK(p.isr == N({1, 2, 3}));  // the new replica is not in sync yet
  CHECK(p.leader == NodeId(1));  // the leader stays until the move completes
  CHECK(p.partition_epoch == 1);
  // As in Kafka, the original replicas keep the order of the merged list.
  CHECK(OriginalReplicas(p) == N({2, 3, 1}));
  CHECK(TargetReplicas(p) == N({4, 2, 3}));
  CHECK(IsAddingReplica(p, NodeId(4)));
  CHECK_FALSE(IsAddingReplica(p, NodeId(2)));
  // The image's snapshot keeps the reassignment.
  auto restored = MetadataImage().Apply(next.ToRecords());
  REQUIRE(restored.ok());
  CHECK(*restored == next);
}

TEST_CASE("the controller completes a reassignment only once every target replica is in sync") {
  Controller c(ControllerConfig{});
  MetadataImage img = Start(Cluster(4, N({1, 2, 3}), N({1, 2, 3}), 1), N({4, 2, 3}));
  // Replica 4 still catching up: nothing to do.
  CHECK(Decide(c, img).empty());
  img = JoinIsr(img, 4);
  ControllerDecision d = Decide(c, img);
  REQUIRE(d.records.size() == 1);
  img = Apply(img, d.records);
  const PartitionImage& p = P(img);
  CHECK(p.replicas == N({4, 2, 3}));
  CHECK(p.isr == N({2, 3, 4}));
  CHECK(p.adding_replicas.empty());
  CHECK(p.removing_replicas.empty());
  // The old leader was dropped: leadership moved to the first target replica in the ISR, with
  // a new leader epoch.
  CHECK(p.leader == NodeId(4));
  CHECK(p.leader_epoch == LeaderEpoch(1));
  CHECK(Decide(c, img).empty());
  CHECK(OngoingReassignments(img).empty());
}

TEST_CASE("a completed reassignment keeps a leader that is in the target") {
  Controller c(ControllerConfig{});
  MetadataImage img = Start(Cluster(4, N({1, 2, 3}), N({1, 2, 3}), 2), N({2, 4}));
  CHECK(P(img).removing_replicas == N({1, 3}));
  img = JoinIsr(img, 4);
  img = Apply(img, Decide(c, img).records);
  CHECK(P(img).replicas == N({2, 4}));
  CHECK(P(img).isr == N({2, 4}));
  CHECK(P(img).leader == NodeId(2));
  CHECK(P(img).leader_epoch == LeaderEpoch(0));
}

TEST_CASE("a reassignment within the in-sync replicas completes at once") {
  MetadataImage img = Cluster(3, N({1, 2, 3}), N({1, 2, 3}), 1);
  img = Start(img, N({2, 3}));
  const PartitionImage& p = P(img);
  CHECK_FALSE(p.reassigning());
  CHECK(p.replicas == N({2, 3}));
  CHECK(p.isr == N({2, 3}));
  CHECK(p.leader == NodeId(2));
}

TEST_CASE("cancelling a reassignment goes back to the original replicas") {
  MetadataImage img = Start(Cluster(4, N({1, 2, 3}), N({1, 2, 3}), 1), N({4, 2, 3}));
  img = JoinIsr(img, 4);
  auto cancel = CancelReassignment(*img.FindTopic("t"), 0);
  REQUIRE(cancel.ok());
  img = Apply(img, {*cancel});
  const PartitionImage& p = P(img);
  CHECK_FALSE(p.reassigning());
  CHECK(p.replicas == N({2, 3, 1}));  // the original replicas, in the merged list's order
  CHECK(p.isr == N({1, 2, 3}));       // replica 4 left the ISR with the cancel
  CHECK(p.leader == NodeId(1));
  auto again = CancelReassignment(*img.FindTopic("t"), 0);
  REQUIRE_FALSE(again.ok());
  CHECK(again.status().message().rfind("NO_REASSIGNMENT_IN_PROGRESS", 0) == 0);
}

TEST_CASE("a new target for a partition being moved starts from its original replicas") {
  MetadataImage img = Start(Cluster(5, N({1, 2, 3}), N({1, 2, 3}), 1), N({4, 2, 3}));
  img = Start(img, N({5, 2, 3}));
  const PartitionImage& p = P(img);
  CHECK(p.replicas == N({5, 2, 3, 1}));
  CHECK(p.adding_replicas == N({5}));
  CHECK(p.removing_replicas == N({1}));
  auto ongoing = OngoingReassignments(img);
  REQUIRE(ongoing.size() == 1);
  CHECK(ongoing[0].topic == "t");
  CHECK(ongoing[0].adding_replicas == N({5}));
}

TEST_CASE("a target with an unknown broker or a replica listed twice is refused") {
  MetadataImage img = Cluster(3, N({1, 2, 3}), N({1, 2, 3}), 1);
  for (auto target : {N({1, 9}), N({1, 1}), N({})}) {
    auto r = StartReassignment(img, *img.FindTopic("t"), 0, target);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().rfind("INVALID_REPLICA_ASSIGNMENT", 0) == 0);
  }
  CHECK(StartReassignment(img, *img.FindTopic("t"), 7, N({1})).status().code() ==
        Status::Code::kNotFound);
}

TEST_CASE("the image refuses adding or removing replicas outside the replicas") {
  MetadataImage img = Cluster(4, N({1, 2, 3}), N({1, 2, 3}), 1);
  PartitionChangeRecord bad;
  bad.partition_id = PartitionId(0);
  bad.topic_id = kTopic;
  bad.adding_replicas = N({4});
  CHECK_FALSE(img.Apply({bad}).ok());
  bad.adding_replicas.reset();
  bad.removing_replicas = N({1, 2, 3});
  CHECK_FALSE(img.Apply({bad}).ok());
}

TEST_CASE("a preferred election gives the partition back to its first replica when it is in sync") {
  MetadataImage img = Cluster(3, N({1, 2, 3}), N({1, 2, 3}), 2);
  auto e = DecideElection(img, *img.FindTopic("t"), 0, /*unclean=*/false);
  REQUIRE(e.ok());
  img = Apply(img, {*e});
  CHECK(P(img).leader == NodeId(1));
  CHECK(P(img).leader_epoch == LeaderEpoch(1));
  auto again = DecideElection(img, *img.FindTopic("t"), 0, false);
  REQUIRE_FALSE(again.ok());
  CHECK(again.status().message().rfind("ELECTION_NOT_NEEDED", 0) == 0);
  // The preferred replica out of the ISR cannot take it.
  MetadataImage out = Cluster(3, N({1, 2, 3}), N({2, 3}), 2);
  auto no = DecideElection(out, *out.FindTopic("t"), 0, false);
  REQUIRE_FALSE(no.ok());
  CHECK(no.status().message().rfind("PREFERRED_LEADER_NOT_AVAILABLE", 0) == 0);
}

TEST_CASE("an unclean election on request takes a live replica only where no live leader is") {
  MetadataImage img = Cluster(3, N({1, 2, 3}), N({1}), 1);
  auto live = DecideElection(img, *img.FindTopic("t"), 0, /*unclean=*/true);
  REQUIRE_FALSE(live.ok());
  CHECK(live.status().message().rfind("ELECTION_NOT_NEEDED", 0) == 0);
  img = Apply(img, {FenceBrokerRecord{NodeId(1)}});
  auto e = DecideElection(img, *img.FindTopic("t"), 0, true);
  REQUIRE_MESSAGE(e.ok(), e.status().ToString());
  img = Apply(img, {*e});
  CHECK(P(img).leader == NodeId(2));
  CHECK(P(img).isr == N({2}));
  img = Apply(img, {FenceBrokerRecord{NodeId(2)}, FenceBrokerRecord{NodeId(3)}});
  auto none = DecideElection(img, *img.FindTopic("t"), 0, true);
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().message().rfind("ELIGIBLE_LEADERS_NOT_AVAILABLE", 0) == 0);
}
