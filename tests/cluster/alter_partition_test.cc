// The AlterPartition checks in the metadata image's apply (metadata_records.h).
#include <doctest/doctest.h>

#include "base/random.h"
#include "cluster/metadata_image.h"

using namespace silt;
using namespace silt::cluster;

namespace {

const Uuid kTopic = *Uuid::Parse("AAAAAAAAAAAAAAAAAAAABw");

// Three unfenced brokers and one partition: replicas 1,2,3, ISR 1,2,3, leader 1 at epoch 2,
// partition epoch 4 (reached by changes, as in a real log).
MetadataImage Start() {
  std::vector<MetadataRecord> records;
  for (int b = 1; b <= 3; ++b) {
    records.push_back(RegisterBrokerRecord{NodeId(b), RandomUuid(), "h", 9092});
    records.push_back(UnfenceBrokerRecord{NodeId(b)});
  }
  std::vector<NodeId> all{NodeId(1), NodeId(2), NodeId(3)};
  records.push_back(TopicRecord{"t", kTopic});
  records.push_back(PartitionRecord{PartitionId(0), kTopic, all, all, NodeId(1), LeaderEpoch(2), 4});
  auto img = MetadataImage().Apply(records);
  REQUIRE(img.ok());
  return std::move(img).value();
}

const PartitionImage& Part(const MetadataImage& img) {
  return img.FindTopic(kTopic)->partitions.at(0);
}

AlterPartitionRecord Alter(std::vector<NodeId> isr) {
  return AlterPartitionRecord{PartitionId(0), kTopic, NodeId(1), LeaderEpoch(2), 4,
                              std::move(isr)};
}

std::string Refusal(const MetadataImage& img, const MetadataRecord& r) {
  auto next = img.Apply({r});
  REQUIRE_FALSE(next.ok());
  return next.status().message();
}

}  // namespace

TEST_CASE("an AlterPartition from the leader at its epoch sets the ISR and bumps the partition epoch") {
  MetadataImage img = Start();
  auto next = img.Apply({Alter({NodeId(1), NodeId(3)})});
  REQUIRE_MESSAGE(next.ok(), next.status().ToString());
  const PartitionImage& p = Part(*next);
  CHECK(p.isr == std::vector<NodeId>{NodeId(1), NodeId(3)});
  CHECK(p.partition_epoch == 5);
  CHECK(p.leader_epoch == LeaderEpoch(2));  // the leader stays; its epoch with it
  CHECK(p.leader == NodeId(1));
  // The next change must be based on the new partition epoch.
  CHECK(Refusal(*next, Alter({NodeId(1)})).find("INVALID_UPDATE_VERSION") != std::string::npos);
  AlterPartitionRecord again = Alter({NodeId(1), NodeId(2), NodeId(3)});
  again.partition_epoch = 5;
  CHECK(next->Apply({again}).ok());
}

TEST_CASE("an AlterPartition from a stale leader epoch or from a non-leader is fenced") {
  MetadataImage img = Start();
  AlterPartitionRecord stale = Alter({NodeId(1)});
  stale.leader_epoch = LeaderEpoch(1);
  CHECK(Refusal(img, stale).find("FENCED_LEADER_EPOCH") != std::string::npos);
  AlterPartitionRecord other = Alter({NodeId(2)});
  other.leader = NodeId(2);
  CHECK(Refusal(img, other).find("FENCED_LEADER_EPOCH") != std::string::npos);
  // Neither changed anything.
  CHECK(Part(img).isr.size() == 3);
}

TEST_CASE("an AlterPartition based on an older partition epoch is INVALID_UPDATE_VERSION") {
  MetadataImage img = Start();
  AlterPartitionRecord old = Alter({NodeId(1), NodeId(2)});
  old.partition_epoch = 3;
  CHECK(Refusal(img, old).find("INVALID_UPDATE_VERSION") != std::string::npos);
}

TEST_CASE("an AlterPartition ISR must be a non-empty subset of the replicas holding the leader") {
  MetadataImage img = Start();
  CHECK(Refusal(img, Alter({})).find("INVALID_REQUEST") != std::string::npos);
  CHECK(Refusal(img, Alter({NodeId(2), NodeId(3)})).find("INVALID_REQUEST") != std::string::npos);
  CHECK(Refusal(img, Alter({NodeId(1), NodeId(4)})).find("INELIGIBLE_REPLICA") !=
        std::string::npos);
  CHECK(Refusal(img, Alter({NodeId(1), NodeId(1)})).find("INVALID_REQUEST") != std::string::npos);
}

TEST_CASE("an AlterPartition may not add a fenced broker to the ISR, but may keep one") {
  MetadataImage img = Start();
  auto shrunk = img.Apply({Alter({NodeId(1), NodeId(2)}), FenceBrokerRecord{NodeId(3)}});
  REQUIRE(shrunk.ok());
  AlterPartitionRecord add = Alter({NodeId(1), NodeId(2), NodeId(3)});
  add.partition_epoch = 5;
  CHECK(Refusal(*shrunk, add).find("INELIGIBLE_REPLICA") != std::string::npos);
  auto fenced2 = img.Apply({FenceBrokerRecord{NodeId(2)}, Alter({NodeId(1), NodeId(2)})});
  CHECK(fenced2.ok());
}

TEST_CASE("the AlterPartition checks decide the same on every node: the image is the only input") {
  MetadataImage a = Start(), b = Start();
  AlterPartitionRecord r = Alter({NodeId(1), NodeId(2)});
  auto ra = a.Apply({r});
  auto rb = b.Apply({r});
  REQUIRE(ra.ok());
  REQUIRE(rb.ok());
  CHECK(Part(*ra) == Part(*rb));
}
