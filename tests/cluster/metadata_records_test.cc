#include "cluster/metadata_records.h"

#include <doctest/doctest.h>

#include <set>

#include "base/coding.h"
#include "base/random.h"

using namespace silt;
using namespace silt::cluster;

namespace {

std::vector<MetadataRecord> OneOfEach() {
  Uuid topic = RandomUuid();
  return {
      RegisterBrokerRecord{NodeId(1), RandomUuid(), "broker-1.example", 9092},
      TopicRecord{"orders", topic},
      PartitionRecord{PartitionId(0),
                      topic,
                      {NodeId(1), NodeId(2), NodeId(3)},
                      {NodeId(1), NodeId(2)},
                      NodeId(1),
                      LeaderEpoch(4),
                      7},
      ConfigRecord{ConfigResource::kTopic, "orders", "retention.ms", std::string("1000")},
      ConfigRecord{ConfigResource::kBroker, "1", "log.retention.hours", std::nullopt},
      PartitionChangeRecord{PartitionId(0), topic, std::vector<NodeId>{NodeId(1)},
                            NodeId(kNoLeaderChange), std::nullopt},
      PartitionChangeRecord{PartitionId(0), topic, std::nullopt, NodeId(2),
                            std::vector<NodeId>{NodeId(2), NodeId(1)}, 6},
      FenceBrokerRecord{NodeId(1)},
      UnfenceBrokerRecord{NodeId(1)},
      RemoveTopicRecord{topic},
      ProducerIdsRecord{NodeId(2), ProducerId(1000)},
      ProducerIdsRecord{NodeId(3), ProducerId(3000), ProducerId(2999)},
      ClusterIdRecord{"q8ZkLmNoPqRsTuVwXyZa0w"},
      AlterPartitionRecord{
          PartitionId(2), topic, NodeId(3), LeaderEpoch(5), 9, {NodeId(3), NodeId(1)}},
  };
}

}  // namespace

TEST_CASE("a ProducerIds record of version 0 decodes as a block with no reservation") {
  std::string v0;
  v0 += static_cast<char>(kRecordFrameVersion);
  v0 += std::string("\x00\x0f", 2);                          // type 15
  v0 += std::string("\x00\x00", 2);                          // version 0
  v0 += std::string("\x00\x00\x00\x02", 4);                  // broker_id 2
  v0 += std::string("\x00\x00\x00\x00\x00\x00\x03\xe8", 8);  // next_producer_id 1000
  auto r = DecodeRecord(v0);
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  CHECK(*r == MetadataRecord(ProducerIdsRecord{NodeId(2), ProducerId(1000), ProducerId(-1)}));
}

TEST_CASE("every metadata record round-trips through its encoding") {
  auto records = OneOfEach();
  std::set<RecordType> types;
  for (const auto& r : records) {
    INFO(RecordTypeName(TypeOf(r)));
    types.insert(TypeOf(r));
    std::string bytes = EncodeRecord(r);
    CHECK(static_cast<int8_t>(bytes[0]) == kRecordFrameVersion);
    CHECK(DecodeBE16(bytes.data() + 1) == static_cast<uint16_t>(TypeOf(r)));
    auto back = DecodeRecord(bytes);
    REQUIRE_MESSAGE(back.ok(), back.status().ToString());
    CHECK(*back == r);
  }
  CHECK(types.size() == std::variant_size_v<MetadataRecord>);
}

TEST_CASE("a record's type numbers are Kafka's apiKeys of the KRaft record of the same name") {
  CHECK(static_cast<int>(RecordType::kRegisterBroker) == 0);
  CHECK(static_cast<int>(RecordType::kTopic) == 2);
  CHECK(static_cast<int>(RecordType::kPartition) == 3);
  CHECK(static_cast<int>(RecordType::kConfig) == 4);
  CHECK(static_cast<int>(RecordType::kPartitionChange) == 5);
  CHECK(static_cast<int>(RecordType::kFenceBroker) == 7);
  CHECK(static_cast<int>(RecordType::kUnfenceBroker) == 8);
  CHECK(static_cast<int>(RecordType::kRemoveTopic) == 9);
  CHECK(static_cast<int>(RecordType::kProducerIds) == 15);
}

TEST_CASE("a topic record's bytes are the documented layout") {
  Uuid id = *Uuid::Parse("AAAAAAAAAAAAAAAAAAAAAg");
  std::string bytes = EncodeRecord(TopicRecord{"ab", id});
  std::string want(
      "\x01\x00\x02\x00\x00\x00\x02"
      "ab",
      9);
  want += std::string(15, '\0') + "\x02";
  CHECK(bytes == want);
}

TEST_CASE("a command of records round-trips and keeps their order") {
  auto records = OneOfEach();
  auto back = DecodeCommand(EncodeCommand(records));
  REQUIRE(back.ok());
  CHECK(*back == records);
  auto empty = DecodeCommand(EncodeCommand({}));
  REQUIRE(empty.ok());
  CHECK(empty->empty());
}

TEST_CASE("an unknown record version or type is reported as unsupported, naming it") {
  std::string bytes = EncodeRecord(FenceBrokerRecord{NodeId(3)});
  std::string v1 = bytes;
  v1[4] = 1;  // version 1 of FenceBrokerRecord
  auto r = DecodeRecord(v1);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Status::Code::kUnsupported);
  CHECK(r.status().message().find("FenceBrokerRecord version 1") != std::string::npos);
  std::string t = bytes;
  t[2] = 99;
  CHECK(DecodeRecord(t).status().code() == Status::Code::kUnsupported);
  std::string frame = bytes;
  frame[0] = 2;
  CHECK(DecodeRecord(frame).status().code() == Status::Code::kUnsupported);
  // Inside a command, the whole command is unsupported.
  std::string cmd = EncodeCommand({FenceBrokerRecord{NodeId(3)}});
  cmd[4 + 4 + 4] = 1;
  CHECK(DecodeCommand(cmd).status().code() == Status::Code::kUnsupported);
}

TEST_CASE("a cut-short or overlong record is corruption, never a crash") {
  for (const auto& rec : OneOfEach()) {
    std::string bytes = EncodeRecord(rec);
    for (size_t n = 0; n < bytes.size(); ++n) {
      auto r = DecodeRecord(bytes.substr(0, n));
      CHECK_FALSE(r.ok());
    }
    CHECK(DecodeRecord(bytes + "x").status().code() == Status::Code::kCorruption);
  }
  std::string huge("\x01\x00\x03\x00\x00\x00\x00\x00\x00", 9);
  huge += std::string(16, '\0') + std::string("\x7f\xff\xff\xff", 4);  // 2^31 replicas claimed
  CHECK(DecodeRecord(huge).status().code() == Status::Code::kCorruption);
}

TEST_CASE("a PartitionChange of version 0 or 1 (no reassignment fields) still decodes") {
  Uuid topic = *Uuid::Parse("AAAAAAAAAAAAAAAAAAAAAQ");
  PartitionChangeRecord rec{PartitionId(3), topic, std::vector<NodeId>{NodeId(1)}, NodeId(1),
                            std::nullopt, 5};
  std::string v2 = EncodeRecord(rec);
  CHECK(DecodeBE16(v2.data() + 3) == 2);
  // Version 1 is the same body without the two nullable arrays (4 bytes each when null).
  std::string v1 = v2.substr(0, v2.size() - 8);
  EncodeBE16(v1.data() + 3, 1);
  auto back1 = DecodeRecord(v1);
  REQUIRE_MESSAGE(back1.ok(), back1.status().ToString());
  auto* got1 = std::get_if<PartitionChangeRecord>(&*back1);
  REQUIRE(got1 != nullptr);
  CHECK(got1->expected_partition_epoch == 5);
  CHECK_FALSE(got1->adding_replicas.has_value());
  CHECK_FALSE(got1->removing_replicas.has_value());
  // Version 0 is version 1 without its last field.
  std::string v0 = v1.substr(0, v1.size() - 4);
  EncodeBE16(v0.data() + 3, 0);
  auto back = DecodeRecord(v0);
  REQUIRE_MESSAGE(back.ok(), back.status().ToString());
  auto* got = std::get_if<PartitionChangeRecord>(&*back);
  REQUIRE(got != nullptr);
  CHECK(got->expected_partition_epoch == -1);
  CHECK(got->isr == rec.isr);
  // A version from a newer build is refused, not misread.
  EncodeBE16(v2.data() + 3, 3);
  CHECK(DecodeRecord(v2).status().code() == Status::Code::kUnsupported);
}

TEST_CASE("a reassignment's adding and removing replicas survive encoding in both records") {
  Uuid topic = *Uuid::Parse("AAAAAAAAAAAAAAAAAAAAAQ");
  PartitionChangeRecord change{PartitionId(1), topic, std::nullopt, NodeId(kNoLeaderChange),
                               std::vector<NodeId>{NodeId(4), NodeId(2), NodeId(1)}, 3,
                               std::vector<NodeId>{NodeId(1)}, std::vector<NodeId>{NodeId(4)}};
  auto c = DecodeRecord(EncodeRecord(change));
  REQUIRE(c.ok());
  CHECK(std::get<PartitionChangeRecord>(*c) == change);
  PartitionRecord part{PartitionId(1), topic, {NodeId(4), NodeId(2), NodeId(1)},
                       {NodeId(2), NodeId(1)}, NodeId(2), LeaderEpoch(1), 3,
                       {NodeId(1)}, {NodeId(4)}};
  std::string bytes = EncodeRecord(part);
  CHECK(DecodeBE16(bytes.data() + 3) == 1);
  auto p = DecodeRecord(bytes);
  REQUIRE(p.ok());
  CHECK(std::get<PartitionRecord>(*p) == part);
  // Version 0 (written before reassignments) has neither list: both decode empty.
  std::string v0 = bytes.substr(0, bytes.size() - 16);
  EncodeBE16(v0.data() + 3, 0);
  auto old = DecodeRecord(v0);
  REQUIRE_MESSAGE(old.ok(), old.status().ToString());
  CHECK(std::get<PartitionRecord>(*old).adding_replicas.empty());
  CHECK(std::get<PartitionRecord>(*old).removing_replicas.empty());
  CHECK(std::get<PartitionRecord>(*old).replicas == part.replicas);
}
