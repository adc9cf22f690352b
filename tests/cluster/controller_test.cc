#include "cluster/controller.h"

#include <doctest/doctest.h>

#include <map>
#include <set>

#include "base/random.h"
#include "cluster/controller_channel.h"
#include "cluster/placement.h"

using namespace silt;
using namespace silt::cluster;
using namespace std::chrono_literals;

namespace {

using Clock = Controller::Clock;

const Uuid kTopic = *Uuid::Parse("AAAAAAAAAAAAAAAAAAAABA");

std::vector<NodeId> N(std::initializer_list<int> ids) {
  std::vector<NodeId> out;
  for (int i : ids) out.push_back(NodeId(i));
  return out;
}

struct Part {
  std::vector<NodeId> replicas;
  std::vector<NodeId> isr;
  int leader;
};

// Brokers 1..`brokers` registered and unfenced (those in `fenced` fenced), and topic "t" with
// the given partitions (partition i = parts[i]).
MetadataImage Cluster(int brokers, const std::vector<Part>& parts,
                      std::initializer_list<int> fenced = {},
                      std::map<std::string, std::string> topic_configs = {}) {
  std::vector<MetadataRecord> r;
  std::set<int> f(fenced);
  for (int b = 1; b <= brokers; ++b) {
    r.push_back(RegisterBrokerRecord{NodeId(b), RandomUuid(), "h", 9092});
    if (!f.count(b)) r.push_back(UnfenceBrokerRecord{NodeId(b)});
  }
  r.push_back(TopicRecord{"t", kTopic});
  for (size_t i = 0; i < parts.size(); ++i) {
    r.push_back(PartitionRecord{PartitionId(static_cast<int32_t>(i)), kTopic, parts[i].replicas,
                                parts[i].isr, NodeId(parts[i].leader), LeaderEpoch(0), 0});
  }
  for (const auto& [k, v] : topic_configs) {
    r.push_back(ConfigRecord{ConfigResource::kTopic, "t", k, v});
  }
  auto img = MetadataImage().Apply(r);
  REQUIRE_MESSAGE(img.ok(), img.status().ToString());
  return std::move(img).value();
}

MetadataImage Apply(const MetadataImage& img, const std::vector<MetadataRecord>& records) {
  auto next = img.Apply(records);
  REQUIRE_MESSAGE(next.ok(), next.status().ToString());
  return std::move(next).value();
}

const PartitionImage& P(const MetadataImage& img, int p) {
  return img.FindTopic("t")->partitions.at(p);
}

ControllerConfig Config() {
  ControllerConfig c;
  c.session_timeout = 3000ms;
  c.imbalance_check_interval = 30000ms;
  return c;
}

// Runs the controller once at `now` and applies what it decides.
MetadataImage Step(Controller& c, const MetadataImage& img, Clock::time_point now,
                   ControllerDecision* out = nullptr) {
  ControllerDecision d = c.Decide(img, 1, NodeId(1), now);
  MetadataImage next = Apply(img, d.records);
  if (out) *out = std::move(d);
  return next;
}

// Brokers `alive` heartbeat at `now`.
void Beat(Controller& c, std::initializer_list<int> alive, Clock::time_point now) {
  for (int b : alive) c.Heard(NodeId(b), now);
}

}  // namespace

TEST_CASE("a fenced leader is replaced by the first in-sync replica in assignment order") {
  // Replicas 3,2,1 (leader 3); the ISR lists 1 before 2, but assignment order picks 2. Node 1
  // is the controller.
  MetadataImage img = Cluster(3, {{N({3, 2, 1}), N({3, 1, 2}), 3}});
  Controller c(Config());
  auto t0 = Clock::now();
  img = Step(c, img, t0);  // the first decision starts every session
  CHECK(P(img, 0).leader == NodeId(3));
  Beat(c, {2}, t0 + 2500ms);
  ControllerDecision d;
  img = Step(c, img, t0 + 3500ms, &d);  // 3 silent for more than a session
  CHECK(img.brokers().at(3).fenced);
  CHECK_FALSE(img.brokers().at(2).fenced);
  const PartitionImage& p = P(img, 0);
  CHECK(p.leader == NodeId(2));  // replicas order 3,2,1: 2 comes first
  CHECK(p.leader_epoch == LeaderEpoch(1));
  CHECK(p.partition_epoch == 1);
  CHECK(p.isr == N({1, 2}));  // the fenced broker left the ISR
  REQUIRE_FALSE(d.notes.empty());
  CHECK(d.unclean.empty());
}

TEST_CASE("a fenced broker leaves every ISR it is in, but never empties one") {
  MetadataImage img = Cluster(3, {{N({1, 2}), N({1, 2}), 1},    // 2 a follower in the ISR
                                  {N({2, 3}), N({2}), 2},       // 2 the last member
                                  {N({3, 1}), N({3, 1}), 3}});  // 2 not a replica
  Controller c(Config());
  auto t0 = Clock::now();
  img = Step(c, img, t0);
  Beat(c, {3}, t0 + 2500ms);
  img = Step(c, img, t0 + 3500ms);
  REQUIRE(img.brokers().at(2).fenced);
  CHECK(P(img, 0).isr == N({1}));
  CHECK(P(img, 0).leader == NodeId(1));
  CHECK(P(img, 0).leader_epoch == LeaderEpoch(0));  // the leader stayed: only the ISR changed
  CHECK(P(img, 0).partition_epoch == 1);
  CHECK(P(img, 1).isr == N({2}));  // the last member stays
  CHECK(P(img, 1).leader.value() == kNoLeader);
  CHECK(P(img, 1).leader_epoch == LeaderEpoch(1));
  CHECK(P(img, 2) == PartitionImage{N({3, 1}), N({3, 1}), NodeId(3), LeaderEpoch(0), 0});
}

TEST_CASE("with no in-sync replica alive the partition has no leader until an ISR member returns") {
  // Replica 3 is alive but out of the ISR: it must not lead (no unclean election by default).
  MetadataImage img = Cluster(3, {{N({2, 3}), N({2}), 2}});
  Controller c(Config());
  auto t0 = Clock::now();
  img = Step(c, img, t0);
  Beat(c, {3}, t0 + 2500ms);
  img = Step(c, img, t0 + 3500ms);
  CHECK(P(img, 0).leader.value() == kNoLeader);
  CHECK(P(img, 0).isr == N({2}));
  // Still nobody: deciding again changes nothing.
  ControllerDecision idle = c.Decide(img, 1, NodeId(1), t0 + 3600ms);
  CHECK(idle.empty());
  // Broker 2 is heard from again: unfenced, and leads again with a new epoch.
  Beat(c, {2, 3}, t0 + 4000ms);
  img = Step(c, img, t0 + 4100ms);
  CHECK_FALSE(img.brokers().at(2).fenced);
  CHECK(P(img, 0).leader == NodeId(2));
  CHECK(P(img, 0).leader_epoch == LeaderEpoch(2));
  CHECK(P(img, 0).isr == N({2}));
}

TEST_CASE("an unclean election takes the first live replica and an ISR of it alone") {
  Controller c(Config());
  auto t0 = Clock::now();
  SUBCASE("the topic allows it") {
    MetadataImage img =
        Cluster(3, {{N({2, 3, 1}), N({2}), 2}}, {}, {{kUncleanLeaderElectionKey, "true"}});
    img = Step(c, img, t0);
    Beat(c, {3}, t0 + 2500ms);
    ControllerDecision d;
    img = Step(c, img, t0 + 3500ms, &d);
    CHECK(P(img, 0).leader == NodeId(3));
    CHECK(P(img, 0).isr == N({3}));
    REQUIRE(d.unclean.size() == 1);
    CHECK(d.unclean[0].find("UNCLEAN") != std::string::npos);
    CHECK(d.unclean[0].find("t-0") != std::string::npos);
  }
  SUBCASE("the broker default allows it and the topic says nothing") {
    ControllerConfig cfg = Config();
    cfg.unclean_leader_election = true;
    Controller u(cfg);
    MetadataImage img = Cluster(3, {{N({2, 3, 1}), N({2}), 2}});
    img = Step(u, img, t0);
    Beat(u, {3}, t0 + 2500ms);
    img = Step(u, img, t0 + 3500ms);
    CHECK(P(img, 0).leader == NodeId(3));
  }
  SUBCASE("the topic refuses it although the broker default allows it") {
    ControllerConfig cfg = Config();
    cfg.unclean_leader_election = true;
    Controller u(cfg);
    MetadataImage img =
        Cluster(3, {{N({2, 3, 1}), N({2}), 2}}, {}, {{kUncleanLeaderElectionKey, "false"}});
    img = Step(u, img, t0);
    Beat(u, {3}, t0 + 2500ms);
    img = Step(u, img, t0 + 3500ms);
    CHECK(P(img, 0).leader.value() == kNoLeader);
    CHECK(P(img, 0).isr == N({2}));
  }
}

TEST_CASE("Elect keeps a leader that can lead and prefers assignment order over ISR order") {
  PartitionImage p{N({1, 2, 3}), N({3, 2, 1}), NodeId(1), LeaderEpoch(4), 7};
  auto all = [](NodeId) { return true; };
  Election e = Elect(p, all, false);
  CHECK(e.leader == NodeId(1));
  CHECK(e.isr == p.isr);
  auto not1 = [](NodeId n) { return n.value() != 1; };
  e = Elect(p, not1, false);
  CHECK(e.leader == NodeId(2));
  CHECK(e.isr == N({3, 2}));
  CHECK_FALSE(e.unclean);
  auto none = [](NodeId) { return false; };
  e = Elect(p, none, true);
  CHECK(e.leader.value() == kNoLeader);
  CHECK(e.isr == N({1}));  // the leader is the member kept
}

TEST_CASE("a fenced broker heard from again is unfenced, but a new controller does not unfence") {
  MetadataImage img = Cluster(3, {{N({2}), N({2}), -1}}, {2});
  Controller c(Config());
  auto t0 = Clock::now();
  // A new term: broker 2 is fenced in the image and not heard from, so it stays fenced and
  // does not get its leaderless partition back.
  ControllerDecision d = c.Decide(img, 5, NodeId(1), t0);
  CHECK(d.empty());
  c.Heard(NodeId(2), t0 + 100ms);
  d = c.Decide(img, 5, NodeId(1), t0 + 200ms);
  img = Apply(img, d.records);
  CHECK_FALSE(img.brokers().at(2).fenced);
  CHECK(P(img, 0).leader == NodeId(2));
}

TEST_CASE("a new controller gives every unfenced broker a full session from its election") {
  MetadataImage img = Cluster(3, {{N({2, 3}), N({2, 3}), 2}});
  Controller c(Config());
  auto t0 = Clock::now();
  CHECK(c.Decide(img, 1, NodeId(1), t0).empty());
  // Term 2 starts at t0 + 10 s: broker 2, silent since t0, has until t0 + 13 s.
  CHECK(c.Decide(img, 2, NodeId(1), t0 + 10s).empty());
  CHECK(c.Decide(img, 2, NodeId(1), t0 + 12s).empty());
  c.Heard(NodeId(3), t0 + 12s);
  ControllerDecision d = c.Decide(img, 2, NodeId(1), t0 + 13500ms);
  img = Apply(img, d.records);
  CHECK(img.brokers().at(2).fenced);
  CHECK(P(img, 0).leader == NodeId(3));
}

TEST_CASE("a new controller runs the session of the controller it replaced from its last message") {
  MetadataImage img = Cluster(3, {{N({2, 3}), N({2, 3}), 2}});
  Controller c(Config());
  auto t0 = Clock::now();
  // Node 1 wins term 2 at t0 + 1 s; broker 2 led term 1 and was last heard from at t0.
  Controller::PreviousLeader prev{NodeId(2), t0};
  CHECK(c.Decide(img, 2, NodeId(1), t0 + 1s, prev).empty());
  c.Heard(NodeId(3), t0 + 2s);
  // A session after its last message, not after the election (which would be t0 + 4 s).
  ControllerDecision d = c.Decide(img, 2, NodeId(1), t0 + 3100ms, prev);
  img = Apply(img, d.records);
  CHECK(img.brokers().at(2).fenced);
  CHECK_FALSE(img.brokers().at(3).fenced);
  CHECK(P(img, 0).leader == NodeId(3));

  // The seed is for the new term only: a later decision in the term does not reapply it, and a
  // heartbeat keeps the previous controller like any broker.
  MetadataImage img2 = Cluster(3, {{N({2, 3}), N({2, 3}), 2}});
  Controller c2(Config());
  CHECK(c2.Decide(img2, 2, NodeId(1), t0 + 1s, prev).empty());
  c2.Heard(NodeId(2), t0 + 1500ms);
  c2.Heard(NodeId(3), t0 + 1500ms);
  CHECK(c2.Decide(img2, 2, NodeId(1), t0 + 3100ms, prev).empty());
}

TEST_CASE("a silent broker whose listener refuses connections is fenced before its session ends") {
  MetadataImage img = Cluster(3, {{N({2, 3}), N({2, 3}), 2}});
  Controller c(Config());
  auto t0 = Clock::now();
  Beat(c, {2, 3}, t0);
  img = Step(c, img, t0);
  Beat(c, {3}, t0 + 500ms);
  // Silent for 600 ms: broker 2 is one to probe, broker 3 (heard 100 ms ago) and the
  // controller itself are not.
  auto silent = c.Silent(img, NodeId(1), t0 + 600ms, 500ms);
  CHECK(silent == std::vector<int32_t>{2});
  // Refused with no heartbeat since the probe began: fenced now, 2.4 s before its session ends.
  c.Refused(NodeId(2), t0 + 600ms);
  ControllerDecision d;
  img = Step(c, img, t0 + 700ms, &d);
  CHECK(img.brokers().at(2).fenced);
  CHECK(P(img, 0).leader == NodeId(3));
  REQUIRE_FALSE(d.notes.empty());
  CHECK(d.notes[0].find("refuses connections") != std::string::npos);
  // A fenced broker is not probed, and it is not unfenced by the clock: its last heartbeat
  // (700 ms ago, well inside a session) no longer counts, only a new one does.
  CHECK(c.Silent(img, NodeId(1), t0 + 800ms, 500ms).empty());
  img = Step(c, img, t0 + 900ms);
  CHECK(img.brokers().at(2).fenced);
  Beat(c, {2, 3}, t0 + 1s);
  img = Step(c, img, t0 + 1100ms);
  CHECK_FALSE(img.brokers().at(2).fenced);

  // A heartbeat after the probe began wins over the refusal (a restarted broker, say).
  MetadataImage img2 = Cluster(3, {{N({2, 3}), N({2, 3}), 2}});
  Controller c2(Config());
  Beat(c2, {2, 3}, t0);
  img2 = Step(c2, img2, t0);
  c2.Refused(NodeId(2), t0 + 600ms);
  Beat(c2, {2, 3}, t0 + 650ms);
  img2 = Step(c2, img2, t0 + 700ms);
  CHECK_FALSE(img2.brokers().at(2).fenced);
  // ...and the refusal is spent: later silence gets the full session again.
  img2 = Step(c2, img2, t0 + 3000ms);
  CHECK_FALSE(img2.brokers().at(2).fenced);
}

TEST_CASE("a broker that registers again after a restart is not fenced for its old silence") {
  MetadataImage img = Cluster(3, {{N({2, 3}), N({2, 3}), 2}});
  Controller c(Config());
  auto t0 = Clock::now();
  Beat(c, {2, 3}, t0);
  img = Step(c, img, t0);
  // Broker 2 goes quiet and is fenced; it restarts and registers (unfenced by its own
  // registration) before its first heartbeat reaches the controller.
  Beat(c, {3}, t0 + 3s);
  img = Step(c, img, t0 + 3500ms);
  REQUIRE(img.brokers().at(2).fenced);
  img = Apply(img, {RegisterBrokerRecord{NodeId(2), RandomUuid(), "h", 9092},
                    UnfenceBrokerRecord{NodeId(2)}});
  Beat(c, {3}, t0 + 4s);
  ControllerDecision d = c.Decide(img, 1, NodeId(1), t0 + 4s);
  for (const MetadataRecord& r : d.records) {
    CHECK_FALSE(std::holds_alternative<FenceBrokerRecord>(r));
  }
  // ...and is fenced again only a whole session later.
  Beat(c, {3}, t0 + 7500ms);
  img = Step(c, Apply(img, d.records), t0 + 7500ms);
  CHECK(img.brokers().at(2).fenced);
}

TEST_CASE("leadership goes back to the preferred replica once it is in the ISR again") {
  // Partitions preferring 1, 2, 3; broker 1 lost t-0 to 2 and is back in the ISR.
  MetadataImage img = Cluster(3, {{N({1, 2, 3}), N({1, 2, 3}), 2},
                                  {N({2, 3, 1}), N({2, 3, 1}), 2},
                                  {N({3, 1, 2}), N({3, 1, 2}), 3}});
  Controller c(Config());
  auto t0 = Clock::now();
  auto beat_all = [&](Clock::time_point at) { Beat(c, {2, 3}, at); };
  beat_all(t0);
  CHECK(c.Decide(img, 1, NodeId(1), t0).empty());
  beat_all(t0 + 29s);
  CHECK(c.Decide(img, 1, NodeId(1), t0 + 29s).empty());  // not yet: the check is every 30 s
  beat_all(t0 + 30s);
  ControllerDecision d;
  img = Step(c, img, t0 + 30s, &d);
  CHECK(P(img, 0).leader == NodeId(1));
  CHECK(P(img, 0).leader_epoch == LeaderEpoch(1));
  CHECK(P(img, 1).leader == NodeId(2));
  REQUIRE(d.notes.size() == 1);
  CHECK(d.notes[0].find("preferred") != std::string::npos);

  SUBCASE("not while the preferred replica is out of the ISR") {
    MetadataImage out = Cluster(3, {{N({1, 2, 3}), N({2, 3}), 2}});
    Controller c2(Config());
    Beat(c2, {2, 3}, t0);
    CHECK(c2.Decide(out, 1, NodeId(1), t0).empty());
    Beat(c2, {2, 3}, t0 + 31s);
    CHECK(c2.Decide(out, 1, NodeId(1), t0 + 31s).empty());
  }
  SUBCASE("not when auto.leader.rebalance.enable is false") {
    ControllerConfig cfg = Config();
    cfg.auto_leader_rebalance = false;
    Controller c2(cfg);
    MetadataImage moved = Cluster(3, {{N({1, 2, 3}), N({1, 2, 3}), 2}});
    Beat(c2, {2, 3}, t0);
    CHECK(c2.Decide(moved, 1, NodeId(1), t0).empty());
    Beat(c2, {2, 3}, t0 + 31s);
    CHECK(c2.Decide(moved, 1, NodeId(1), t0 + 31s).empty());
  }
}

TEST_CASE("a preferred-leader check that falls on other changes is made at the next decision") {
  MetadataImage img = Cluster(3, {{N({1, 2}), N({1, 2}), 2}, {N({3}), N({3}), 3}});
  Controller c(Config());
  auto t0 = Clock::now();
  Beat(c, {2, 3}, t0);
  CHECK(c.Decide(img, 1, NodeId(1), t0).empty());
  Beat(c, {2}, t0 + 30s);  // 3 silent since t0: fenced at the check
  ControllerDecision d;
  img = Step(c, img, t0 + 30s, &d);
  CHECK(img.brokers().at(3).fenced);
  CHECK(P(img, 0).leader == NodeId(2));
  Beat(c, {2}, t0 + 30100ms);
  img = Step(c, img, t0 + 30100ms);
  CHECK(P(img, 0).leader == NodeId(1));
}

TEST_CASE("preferred leaders move only past leader.imbalance.per.broker.percentage") {
  // Broker 1 prefers 10 partitions and leads 9 of them: 10% imbalance, not above 10%.
  std::vector<Part> parts;
  for (int i = 0; i < 10; ++i) parts.push_back({N({1, 2}), N({1, 2}), i == 0 ? 2 : 1});
  MetadataImage img = Cluster(2, parts);
  auto can_lead = [](NodeId) { return true; };
  CHECK(PreferredLeaderChanges(img, can_lead, 10, nullptr).empty());
  auto moves = PreferredLeaderChanges(img, can_lead, 9, nullptr);
  REQUIRE(moves.size() == 1);
  CHECK(moves[0].partition_id == PartitionId(0));
  CHECK(moves[0].leader == NodeId(1));
  CHECK_FALSE(moves[0].isr.has_value());
  // Not to a broker that cannot lead.
  auto not1 = [](NodeId n) { return n.value() != 1; };
  CHECK(PreferredLeaderChanges(img, not1, 0, nullptr).empty());
}

TEST_CASE("a broker shutting down hands its leaderships to other ISR members and leaves ISRs") {
  MetadataImage img = Cluster(3, {{N({2, 3, 1}), N({2, 3, 1}), 2},  // moves to 3
                                  {N({2, 1}), N({2}), 2},           // 2 is the last member
                                  {N({3, 2}), N({3, 2}), 3}});      // 2 only leaves the ISR
  Controller c(Config());
  auto t0 = Clock::now();
  Beat(c, {2, 3}, t0);
  img = Step(c, img, t0);
  Uuid incarnation = img.brokers().at(2).incarnation_id;
  c.WantShutDown(NodeId(2), incarnation);
  CHECK(c.ShuttingDown(NodeId(2)));
  Beat(c, {2, 3}, t0 + 100ms);
  img = Step(c, img, t0 + 100ms);
  CHECK_FALSE(img.brokers().at(2).fenced);  // it still serves while it shuts down
  CHECK(P(img, 0).leader == NodeId(3));
  CHECK(P(img, 0).isr == N({3, 1}));
  CHECK(P(img, 1).leader.value() == kNoLeader);
  CHECK(P(img, 1).isr == N({2}));
  CHECK(P(img, 2).leader == NodeId(3));
  CHECK(P(img, 2).isr == N({3}));
  // It is not given anything back while it shuts down, even at a preferred-leader check.
  Beat(c, {2, 3}, t0 + 31s);
  CHECK(c.Decide(img, 1, NodeId(1), t0 + 31s).empty());
  // Registered again (a new incarnation, as a restart does): the request is forgotten and the
  // partition whose ISR it is gets it back.
  img = Apply(img, {RegisterBrokerRecord{NodeId(2), RandomUuid(), "h", 9092},
                    UnfenceBrokerRecord{NodeId(2)}});
  Beat(c, {2, 3}, t0 + 32s);
  img = Step(c, img, t0 + 32s);
  CHECK_FALSE(c.ShuttingDown(NodeId(2)));
  CHECK(P(img, 1).leader == NodeId(2));
}

TEST_CASE("offline replicas are the replicas on fenced or unregistered brokers") {
  MetadataImage img = Cluster(3, {{N({1, 2, 3, 4}), N({1}), 1}}, {3});
  CHECK(OfflineReplicas(img, P(img, 0)) == N({3, 4}));
}

TEST_CASE("placement of replication factor 3 over 3 and 4 brokers spreads leaders and replicas") {
  for (int brokers : {3, 4}) {
    CAPTURE(brokers);
    MetadataImage img = Cluster(brokers, {});
    const int partitions = 12;
    auto placed = PlaceReplicas(img, partitions, 3);
    REQUIRE(placed.ok());
    std::map<int, int> leads, holds, second;
    for (const auto& r : *placed) {
      REQUIRE(r.size() == 3);
      CHECK(std::set<NodeId>(r.begin(), r.end()).size() == 3);
      ++leads[r[0].value()];
      ++second[r[1].value()];
      for (NodeId n : r) ++holds[n.value()];
    }
    for (int b = 1; b <= brokers; ++b) {
      CHECK(leads[b] == partitions / brokers);
      CHECK(holds[b] == partitions * 3 / brokers);
      // Where leadership goes first when a leader fails is spread too.
      CHECK(second[b] == partitions / brokers);
    }
  }
}

TEST_CASE("placement counts preferred leaders, not the leaders of the moment") {
  // Broker 2 leads t-0 only because broker 1 failed over to it; 1 is its preferred leader.
  MetadataImage img = Cluster(2, {{N({1, 2}), N({1, 2}), 2}});
  auto placed = PlaceReplicas(img, 1, 2);
  REQUIRE(placed.ok());
  CHECK((*placed)[0][0] == NodeId(2));
}

TEST_CASE("a replica reported offline leaves its ISR and leadership; the broker's others stay") {
  // Partition 0 led by 2 (its disk fails there), partition 1 led by 2 too (healthy), partition 2
  // with 2 as its only in-sync replica.
  MetadataImage img = Cluster(3, {{N({2, 3, 1}), N({2, 3, 1}), 2},
                                  {N({2, 1, 3}), N({2, 1, 3}), 2},
                                  {N({2, 3}), N({2}), 2}});
  Controller c(Config());
  auto t0 = Clock::now();
  img = Step(c, img, t0);
  const Uuid inc2 = img.brokers().at(2).incarnation_id;
  c.ReportOffline(NodeId(2), inc2, {{kTopic, 0}, {kTopic, 2}});
  Beat(c, {1, 2, 3}, t0 + 100ms);
  ControllerDecision d;
  img = Step(c, img, t0 + 100ms, &d);
  CHECK_FALSE(img.brokers().at(2).fenced);  // the broker itself is healthy
  CHECK(P(img, 0).leader == NodeId(3));      // the next in-sync replica in assignment order
  CHECK(P(img, 0).isr == N({3, 1}));
  CHECK(P(img, 1).leader == NodeId(2));      // untouched
  CHECK(P(img, 1).isr == N({2, 1, 3}));
  // The only in-sync replica is offline: no leader (the ISR never empties), as Kafka does.
  CHECK(P(img, 2).leader == NodeId(kNoLeader));
  CHECK(P(img, 2).isr == N({2}));
  // Decisions are level-triggered: nothing more while the report stands.
  ControllerDecision again;
  img = Step(c, img, t0 + 200ms, &again);
  CHECK(again.empty());
  // A report without the replica (or a new incarnation, after a restart) lets it lead again.
  c.ReportOffline(NodeId(2), inc2, {});
  img = Step(c, img, t0 + 300ms);
  CHECK(P(img, 2).leader == NodeId(2));
  c.ReportOffline(NodeId(2), inc2, {{kTopic, 2}});
  img = Step(c, img, t0 + 400ms);
  CHECK(P(img, 2).leader == NodeId(kNoLeader));
  img = Apply(img, {RegisterBrokerRecord{NodeId(2), RandomUuid(), "h", 9092},
                    UnfenceBrokerRecord{NodeId(2)}});
  Beat(c, {1, 2, 3}, t0 + 500ms);
  img = Step(c, img, t0 + 500ms);
  CHECK(P(img, 2).leader == NodeId(2));
}

TEST_CASE("a heartbeat carries the offline replicas and the applied index; a damaged one is "
          "refused") {
  const Uuid inc = RandomUuid();
  std::set<std::pair<Uuid, int32_t>> offline = {{kTopic, 0}, {kTopic, 7}};
  std::string body = EncodeHeartbeat(inc, offline, RaftIndex(4242));
  auto back = DecodeHeartbeat(body);
  REQUIRE(back.ok());
  CHECK(back->incarnation == inc);
  CHECK(back->offline == offline);
  REQUIRE(back->applied.has_value());
  CHECK(*back->applied == RaftIndex(4242));
  // Nothing offline: the incarnation and the index all the same.
  auto none = DecodeHeartbeat(EncodeHeartbeat(inc, {}, RaftIndex(7)));
  REQUIRE(none.ok());
  CHECK(none->offline.empty());
  CHECK(none->incarnation == inc);
  CHECK(none->applied == std::optional<RaftIndex>(RaftIndex(7)));
  // A node of an earlier version: an empty command, or no index after the offline replicas.
  REQUIRE(DecodeHeartbeat("").ok());
  CHECK(DecodeHeartbeat("").value().offline.empty());
  CHECK(!DecodeHeartbeat("").value().applied.has_value());
  auto older = DecodeHeartbeat(body.substr(0, body.size() - 8));
  REQUIRE(older.ok());
  CHECK(older->offline == offline);
  CHECK(!older->applied.has_value());
  CHECK(DecodeHeartbeat(body.substr(0, body.size() - 1)).status().IsCorruption());
  CHECK(DecodeHeartbeat(body + "x").status().IsCorruption());
  std::string negative = body.substr(0, body.size() - 8) + std::string(8, '\xff');
  CHECK(DecodeHeartbeat(negative).status().IsCorruption());
  std::string huge = body.substr(0, 16) + std::string("\x7f\xff\xff\xff", 4);
  CHECK(DecodeHeartbeat(huge).status().IsCorruption());
}

TEST_CASE("an await-applied command carries an index and a timeout") {
  auto back = DecodeAwaitApplied(EncodeAwaitApplied(RaftIndex(99), 1500));
  REQUIRE(back.ok());
  CHECK(back->first == RaftIndex(99));
  CHECK(back->second == 1500);
  CHECK(DecodeAwaitApplied("").status().IsCorruption());
  CHECK(DecodeAwaitApplied(EncodeAwaitApplied(RaftIndex(1), 1) + "x").status().IsCorruption());
  CHECK(DecodeAwaitApplied(EncodeAwaitApplied(RaftIndex(1), -1)).status().IsCorruption());
}
