#include "cluster/metadata_image.h"

#include <doctest/doctest.h>

#include "base/random.h"
#include "cluster/quorum_harness.h"

using namespace silt;
using namespace silt::cluster;
using namespace std::chrono_literals;

namespace {

const Uuid kOrders = *Uuid::Parse("AAAAAAAAAAAAAAAAAAAAAw");

std::vector<MetadataRecord> ClusterWithOrders() {
  std::vector<MetadataRecord> out;
  for (int b = 1; b <= 3; ++b) {
    out.push_back(RegisterBrokerRecord{NodeId(b), RandomUuid(), "h" + std::to_string(b), 9092});
    out.push_back(UnfenceBrokerRecord{NodeId(b)});
  }
  out.push_back(TopicRecord{"orders", kOrders});
  for (int p = 0; p < 3; ++p) {
    std::vector<NodeId> replicas{NodeId(1 + p % 3), NodeId(1 + (p + 1) % 3)};
    out.push_back(PartitionRecord{PartitionId(p), kOrders, replicas, replicas, replicas[0],
                                  LeaderEpoch(0), 0});
  }
  out.push_back(
      ConfigRecord{ConfigResource::kTopic, "orders", "cleanup.policy", std::string("compact")});
  out.push_back(
      ConfigRecord{ConfigResource::kBroker, "2", "log.retention.ms", std::string("60000")});
  out.push_back(ProducerIdsRecord{NodeId(1), ProducerId(1000)});
  return out;
}

MetadataImage Build(const std::vector<MetadataRecord>& records) {
  auto img = MetadataImage().Apply(records);
  REQUIRE_MESSAGE(img.ok(), img.status().ToString());
  return std::move(img).value();
}

}  // namespace

TEST_CASE(
    "applying registrations, a topic, partitions and configs builds the image they describe") {
  MetadataImage img = Build(ClusterWithOrders());
  REQUIRE(img.brokers().size() == 3);
  CHECK_FALSE(img.brokers().at(2).fenced);
  CHECK(img.brokers().at(2).host == "h2");
  const TopicImage* t = img.FindTopic("orders");
  REQUIRE(t != nullptr);
  CHECK(img.FindTopic(kOrders) == t);
  CHECK(t->partitions.size() == 3);
  CHECK(t->partitions.at(1).leader == NodeId(2));
  CHECK(img.configs(ConfigResource::kTopic, "orders").at("cleanup.policy") == "compact");
  CHECK(img.configs(ConfigResource::kBroker, "2").at("log.retention.ms") == "60000");
  CHECK(img.configs(ConfigResource::kBroker, "3").empty());
  CHECK(img.next_producer_id() == ProducerId(1000));
}

TEST_CASE(
    "a partition change bumps the partition epoch, and the leader epoch only for a new leader") {
  MetadataImage img = Build(ClusterWithOrders());
  // Shrink the ISR of partition 0 (replicas 1, 2) to {1}: same leader.
  auto a = img.Apply({PartitionChangeRecord{PartitionId(0), kOrders, std::vector<NodeId>{NodeId(1)},
                                            NodeId(kNoLeaderChange), std::nullopt}});
  REQUIRE(a.ok());
  const PartitionImage& p = a->FindTopic(kOrders)->partitions.at(0);
  CHECK(p.isr == std::vector<NodeId>{NodeId(1)});
  CHECK(p.partition_epoch == 1);
  CHECK(p.leader_epoch == LeaderEpoch(0));
  // Grow it back and move the leader to 2.
  auto b = a->Apply(
      {PartitionChangeRecord{PartitionId(0), kOrders, std::vector<NodeId>{NodeId(1), NodeId(2)},
                             NodeId(2), std::nullopt}});
  REQUIRE(b.ok());
  const PartitionImage& q = b->FindTopic(kOrders)->partitions.at(0);
  CHECK(q.leader == NodeId(2));
  CHECK(q.leader_epoch == LeaderEpoch(1));
  CHECK(q.partition_epoch == 2);
  // The image it was applied to is unchanged.
  CHECK(img.FindTopic(kOrders)->partitions.at(0).partition_epoch == 0);
}

TEST_CASE("a partition change decided on an older partition epoch is refused") {
  MetadataImage img = Build(ClusterWithOrders());
  // A leader's ISR change lands first (partition epoch 0 -> 1) ...
  auto a = img.Apply({AlterPartitionRecord{PartitionId(0), kOrders, NodeId(1), LeaderEpoch(0), 0,
                                           {NodeId(1)}}});
  REQUIRE_MESSAGE(a.ok(), a.status().ToString());
  // ... then the controller's election, decided on epoch 0 with the old ISR {1, 2}, would put
  // node 2 back in the ISR and lead with it: refused, nothing changes.
  auto b = a->Apply({PartitionChangeRecord{PartitionId(0), kOrders,
                                           std::vector<NodeId>{NodeId(1), NodeId(2)}, NodeId(2),
                                           std::nullopt, 0}});
  REQUIRE_FALSE(b.ok());
  CHECK(b.status().message().find("INVALID_UPDATE_VERSION") != std::string::npos);
  CHECK(a->FindTopic(kOrders)->partitions.at(0).isr == std::vector<NodeId>{NodeId(1)});
  // Decided on the current epoch, it applies.
  auto c = a->Apply({PartitionChangeRecord{PartitionId(0), kOrders, std::nullopt, NodeId(kNoLeader),
                                           std::nullopt, 1}});
  CHECK(c.ok());
}

TEST_CASE("an invalid record changes nothing and says why") {
  MetadataImage img = Build(ClusterWithOrders());
  struct Case {
    const char* what;
    MetadataRecord rec;
    const char* needle;
  };
  Uuid unknown = *Uuid::Parse("AAAAAAAAAAAAAAAAAAAACQ");
  std::vector<Case> cases = {
      {"duplicate topic name", TopicRecord{"orders", RandomUuid()}, "exists"},
      {"bad topic name", TopicRecord{"no/slash", RandomUuid()}, "TopicRecord"},
      {"partition of an unknown topic",
       PartitionRecord{
           PartitionId(0), unknown, {NodeId(1)}, {NodeId(1)}, NodeId(1), LeaderEpoch(0), 0},
       "unknown topic"},
      {"empty ISR",
       PartitionChangeRecord{PartitionId(0), kOrders, std::vector<NodeId>{},
                             NodeId(kNoLeaderChange), std::nullopt},
       "empty ISR"},
      {"leader outside the ISR",
       PartitionChangeRecord{PartitionId(0), kOrders, std::nullopt, NodeId(3), std::nullopt},
       "not in the ISR"},
      {"fence of an unknown broker", FenceBrokerRecord{NodeId(9)}, "unknown broker"},
      {"remove of an unknown topic", RemoveTopicRecord{unknown}, "unknown topic"},
      {"config of an unknown topic",
       ConfigRecord{ConfigResource::kTopic, "nope", "retention.ms", std::string("1")},
       "unknown topic"},
      {"producer ids going back", ProducerIdsRecord{NodeId(1), ProducerId(10)}, "advance"},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    // Valid records before the invalid one are not applied either: all or nothing.
    auto r = img.Apply({FenceBrokerRecord{NodeId(1)}, c.rec});
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Status::Code::kInvalidArgument);
    CHECK(r.status().message().find(c.needle) != std::string::npos);
    CHECK(r.status().message().find("record 1 of 2") != std::string::npos);
  }
  CHECK_FALSE(img.brokers().at(1).fenced);
}

TEST_CASE(
    "a producer-id reservation raises the reserved id and the next block, and survives a "
    "snapshot") {
  MetadataImage img = Build(ClusterWithOrders());  // next id 1000: the block [0, 1000) is out
  CHECK(img.reserved_producer_id() == ProducerId(-1));
  auto reserved = img.Apply({ProducerIdsRecord{NodeId(2), ProducerId(2000), ProducerId(1999)}});
  REQUIRE_MESSAGE(reserved.ok(), reserved.status().ToString());
  CHECK(reserved->reserved_producer_id() == ProducerId(1999));
  CHECK(reserved->next_producer_id() == ProducerId(2000));
  // Below the next id already granted: the reservation still counts, the next id stays.
  auto lower = img.Apply({ProducerIdsRecord{NodeId(2), ProducerId(1000), ProducerId(999)}});
  REQUIRE_MESSAGE(lower.ok(), lower.status().ToString());
  CHECK(lower->reserved_producer_id() == ProducerId(999));
  CHECK(lower->next_producer_id() == ProducerId(1000));
  // A reservation that does not raise the reserved id, or whose next id is not above it.
  auto again = reserved->Apply({ProducerIdsRecord{NodeId(1), ProducerId(2000), ProducerId(999)}});
  REQUIRE_FALSE(again.ok());
  CHECK(again.status().message().find("does not advance") != std::string::npos);
  auto inside = img.Apply({ProducerIdsRecord{NodeId(1), ProducerId(1500), ProducerId(1500)}});
  REQUIRE_FALSE(inside.ok());
  CHECK(inside.status().message().find("not above the reserved id") != std::string::npos);
  // Blocks go on above it.
  auto block = reserved->Apply({ProducerIdsRecord{NodeId(3), ProducerId(3000)}});
  REQUIRE(block.ok());
  CHECK(block->reserved_producer_id() == ProducerId(1999));
  MetadataImage restored = Build(block->ToRecords());
  CHECK(restored == *block);
}

TEST_CASE("removing a topic removes its partitions and configs, and its name can be reused") {
  MetadataImage img = Build(ClusterWithOrders());
  auto gone = img.Apply({RemoveTopicRecord{kOrders}});
  REQUIRE(gone.ok());
  CHECK(gone->FindTopic("orders") == nullptr);
  CHECK(gone->configs(ConfigResource::kTopic, "orders").empty());
  auto again = gone->Apply({TopicRecord{"orders", RandomUuid()}});
  REQUIRE(again.ok());
  CHECK(again->FindTopic("orders")->id != kOrders);
}

TEST_CASE("an image written as records and applied to an empty image is equal to it") {
  MetadataImage img = Build(ClusterWithOrders());
  auto changed = img.Apply(
      {FenceBrokerRecord{NodeId(3)},
       PartitionChangeRecord{PartitionId(2), kOrders, std::nullopt, NodeId(1), std::nullopt},
       ConfigRecord{ConfigResource::kTopic, "orders", "cleanup.policy", std::nullopt}});
  REQUIRE(changed.ok());
  MetadataImage restored = Build(changed->ToRecords());
  CHECK(restored == *changed);
  CHECK_FALSE(restored == img);

  MetadataStateMachine sm, other;
  CHECK(DecodeApplyResult(sm.Apply(EncodeCommand(ClusterWithOrders()))).ok());
  REQUIRE(other.Restore(sm.Snapshot()).ok());
  CHECK(*other.image() == *sm.image());
  CHECK(other.Snapshot() == sm.Snapshot());
}

TEST_CASE("the metadata state machine never fails an apply: bad commands leave the image alone") {
  MetadataStateMachine sm;
  auto before = sm.image();
  Status undecodable = DecodeApplyResult(sm.Apply("\x00\x00\x00\x01garbage"));
  CHECK(undecodable.code() == Status::Code::kCorruption);
  std::string newer = EncodeCommand({FenceBrokerRecord{NodeId(1)}});
  newer[4 + 4 + 4] = 3;  // FenceBrokerRecord version 3
  Status unknown_version = DecodeApplyResult(sm.Apply(newer));
  CHECK_FALSE(unknown_version.ok());
  CHECK(unknown_version.message().find("version 3") != std::string::npos);
  Status refused = DecodeApplyResult(sm.Apply(EncodeCommand({FenceBrokerRecord{NodeId(1)}})));
  CHECK(refused.code() == Status::Code::kInvalidArgument);
  CHECK(sm.image() == before);  // the same image object: nothing was swapped
  CHECK(DecodeApplyResult(sm.Apply(EncodeCommand(ClusterWithOrders()))).ok());
  CHECK(sm.image() != before);
  CHECK(before->topics().empty());  // a held image never changes
}

TEST_CASE("a metadata state machine restored from a damaged snapshot reports it") {
  MetadataStateMachine sm;
  CHECK_FALSE(sm.Restore("\x00\x00\x00\x02").ok());
  std::string bad = EncodeCommand({PartitionRecord{
      PartitionId(0), kOrders, {NodeId(1)}, {NodeId(1)}, NodeId(1), LeaderEpoch(0), 0}});
  CHECK(sm.Restore(bad).code() == Status::Code::kCorruption);
}

TEST_CASE("three quorum nodes apply metadata commands into equal images") {
  using namespace silt::cluster::testing;
  char tmpl[] = "/tmp/silt-raft-meta-XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  ExecutorThread exec;
  std::vector<Voter> voters;
  for (int i = 1; i <= 3; ++i) voters.push_back(Voter{NodeId(i), "127.0.0.1", FreePort()});
  MetadataStateMachine sms[3];
  std::vector<std::unique_ptr<RaftQuorum>> nodes;
  for (int i = 0; i < 3; ++i) {
    RaftQuorumOptions o;
    o.node_id = voters[i].id;
    o.voters = voters;
    o.raft_dir = dir + "/n" + std::to_string(i + 1);
    o.state_machine = &sms[i];
    o.executor = exec.executor();
    o.election_timeout_ms = 500;
    o.heartbeat_timeout_ms = 50;
    auto q = RaftQuorum::Start(std::move(o));
    REQUIRE(q.ok());
    nodes.push_back(std::move(q).value());
  }
  auto propose = [&](std::vector<MetadataRecord> recs) {
    ProposeResult last;
    RequestId id = RandomUuid();
    WaitUntil(
        [&] {
          for (auto& n : nodes) {
            if (!n->IsReadyLeader()) continue;
            auto p = std::make_shared<std::promise<ProposeResult>>();
            n->Propose(id, EncodeCommand(recs), [p](ProposeResult r) { p->set_value(r); });
            auto f = p->get_future();
            if (f.wait_for(10s) != std::future_status::ready) return false;
            last = f.get();
            return last.outcome == ProposeOutcome::kApplied;
          }
          return false;
        },
        15s);
    return last;
  };
  ProposeResult ok = propose(ClusterWithOrders());
  REQUIRE(ok.outcome == ProposeOutcome::kApplied);
  CHECK(DecodeApplyResult(ok.result).ok());
  ProposeResult refused = propose({TopicRecord{"orders", RandomUuid()}});
  REQUIRE(refused.outcome == ProposeOutcome::kApplied);  // committed, and refused by the image
  CHECK(DecodeApplyResult(refused.result).code() == Status::Code::kInvalidArgument);
  REQUIRE(WaitUntil(
      [&] {
        for (auto& sm : sms) {
          if (sm.image()->FindTopic("orders") == nullptr) return false;
        }
        return true;
      },
      5s));
  CHECK(*sms[0].image() == *sms[1].image());
  CHECK(*sms[1].image() == *sms[2].image());
  nodes.clear();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

TEST_CASE("the cluster id is set once, kept by snapshots, and a different one is refused") {
  MetadataImage img = Build({ClusterIdRecord{"alpha"}});
  CHECK(img.cluster_id() == "alpha");
  CHECK(MetadataImage().Apply({ClusterIdRecord{""}}).status().code() == Status::Code::kInvalidArgument);
  auto same = img.Apply({ClusterIdRecord{"alpha"}});
  REQUIRE(same.ok());
  CHECK(same->cluster_id() == "alpha");
  auto other = img.Apply({ClusterIdRecord{"beta"}, TopicRecord{"orders", kOrders}});
  REQUIRE_FALSE(other.ok());
  CHECK(other.status().message().find("beta") != std::string::npos);
  MetadataImage rebuilt = Build(img.ToRecords());
  CHECK(rebuilt.cluster_id() == "alpha");
}

TEST_CASE("broker config records keep the cluster default and each broker's own, in snapshots too") {
  MetadataImage img = Build(ClusterWithOrders());
  auto changed = img.Apply(
      {ConfigRecord{ConfigResource::kBroker, "", "log.retention.ms", std::string("70000")},
       ConfigRecord{ConfigResource::kBroker, "", "log.segment.bytes", std::string("2097152")},
       ConfigRecord{ConfigResource::kBroker, "3", "log.retention.ms", std::string("80000")},
       ConfigRecord{ConfigResource::kBroker, "2", "log.retention.ms", std::nullopt}});
  REQUIRE_MESSAGE(changed.ok(), changed.status().ToString());
  const std::map<std::string, std::string> defaults{{"log.retention.ms", "70000"},
                                                    {"log.segment.bytes", "2097152"}};
  CHECK(changed->configs(ConfigResource::kBroker, "") == defaults);
  CHECK(changed->configs(ConfigResource::kBroker, "3").at("log.retention.ms") == "80000");
  // Broker 2's only entry was deleted; broker 1 never had one.
  CHECK(changed->configs(ConfigResource::kBroker, "2").empty());
  CHECK(changed->configs(ConfigResource::kBroker, "1").empty());
  // A topic and a broker of the same name are apart.
  CHECK(changed->configs(ConfigResource::kTopic, "").empty());
  MetadataImage restored = Build(changed->ToRecords());
  CHECK(restored == *changed);
  CHECK(restored.configs(ConfigResource::kBroker, "") == defaults);
}

TEST_CASE("a broker config record for a name that is no broker id is refused") {
  MetadataImage img = Build(ClusterWithOrders());
  for (const char* name : {"orders", "-1", "1x", "12345678901"}) {
    CAPTURE(name);
    auto r = img.Apply(
        {ConfigRecord{ConfigResource::kBroker, name, "log.retention.ms", std::string("1")}});
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("not a broker id") != std::string::npos);
  }
  CHECK(img.configs(ConfigResource::kBroker, "orders").empty());
}

TEST_CASE("applying a change copies the topic it changes and shares every other topic") {
  const Uuid other_id = *Uuid::Parse("AAAAAAAAAAAAAAAAAAAAOQ");
  std::vector<MetadataRecord> records = ClusterWithOrders();
  records.push_back(TopicRecord{"other", other_id});
  records.push_back(PartitionRecord{PartitionId(0), other_id, {NodeId(1)}, {NodeId(1)}, NodeId(1),
                                    LeaderEpoch(0), 0});
  const MetadataImage before = Build(records);
  auto after = before.Apply({PartitionChangeRecord{PartitionId(1), kOrders,
                                                   std::vector<NodeId>{NodeId(2)}}});
  REQUIRE_MESSAGE(after.ok(), after.status().ToString());
  // The untouched topic is the very same object in both images; the changed one is a copy.
  CHECK(after->FindTopic("other") == before.FindTopic("other"));
  CHECK(after->FindTopic("orders") != before.FindTopic("orders"));
  // The old image is as it was; the new one has the change (and the partition epoch bumped).
  CHECK(before.FindTopic("orders")->partitions.at(1).isr.size() == 2);
  CHECK(after->FindTopic("orders")->partitions.at(1).isr == std::vector<NodeId>{NodeId(2)});
  CHECK(after->FindTopic("orders")->partitions.at(1).partition_epoch == 1);
  CHECK_FALSE(*after == before);
  // Equality is by content: an image rebuilt from the new one's records equals it.
  CHECK(Build(after->ToRecords()) == *after);
  // Several changes to one topic in one Apply: one copy, all of them in it.
  auto twice = before.Apply({PartitionChangeRecord{PartitionId(0), kOrders},
                             PartitionChangeRecord{PartitionId(2), kOrders}});
  REQUIRE(twice.ok());
  CHECK(twice->FindTopic("orders")->partitions.at(0).partition_epoch == 1);
  CHECK(twice->FindTopic("orders")->partitions.at(2).partition_epoch == 1);
  CHECK(before.FindTopic("orders")->partitions.at(0).partition_epoch == 0);
}
