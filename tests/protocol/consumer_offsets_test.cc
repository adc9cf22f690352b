// Tests for protocol/consumer_offsets.h: Kafka's __consumer_offsets records, the group-to-
// partition hash, and the records of a real Kafka 3.7 broker's __consumer_offsets-6.
#include "protocol/consumer_offsets.h"

#include <doctest/doctest.h>

#include <string>

#include "base/coding.h"
#include "format/record_batch.h"
#include "../format/format_test_util.h"

namespace silt::protocol {
namespace {

using format::testing::Hex;
using format::testing::ReadFixture;

TEST_CASE("group ids hash to Kafka's __consumer_offsets partition") {
  // Values of Java's String.hashCode() and abs(hash) % 50.
  CHECK(JavaStringHashCode("DEVSmileCDR") == 551467806);
  CHECK(OffsetsPartitionFor("DEVSmileCDR", 50) == 6);
  CHECK(OffsetsPartitionFor("console-consumer-73122", 50) == 36);
  CHECK(JavaStringHashCode("g") == 103);
  CHECK(JavaStringHashCode("") == 0);
  // Non-ASCII: hashed as UTF-16 code units, a supplementary character as a surrogate pair.
  CHECK(JavaStringHashCode("\xc3\xa9t\xc3\xa9") == 227742);
  CHECK(JavaStringHashCode("a\xf0\x9f\x98\x80") == 1866116);
  CHECK(OffsetsPartitionFor("a\xf0\x9f\x98\x80", 50) == 16);
  // A negative hash is made positive the way Kafka's Utils.abs does.
  int32_t h = JavaStringHashCode("polygenelubricants");
  CHECK(h == INT32_MIN);
  CHECK(OffsetsPartitionFor("polygenelubricants", 50) == 0);
  CHECK(JavaStringHashCode("zzzzzzzz") < 0);
  CHECK(OffsetsPartitionFor("zzzzzzzz", 7) == (-JavaStringHashCode("zzzzzzzz")) % 7);
}

TEST_CASE("offset commit keys and values encode in Kafka's byte layout") {
  std::string key = EncodeOffsetCommitKey({"g", "t", 3});
  CHECK(Hex(key) == "0001" "0001" "67" "0001" "74" "00000003");
  OffsetCommitValue v;
  v.offset = 42;
  v.leader_epoch = 5;
  v.metadata = "m";
  v.commit_timestamp = 1000;
  std::string value = EncodeOffsetCommitValue(v);
  CHECK(Hex(value) ==
        "0003" "000000000000002a" "00000005" "0001" "6d" "00000000000003e8");
  auto k = DecodeConsumerOffsetsKey(key);
  REQUIRE(k.ok());
  CHECK(k->kind == ConsumerOffsetsKey::Kind::kOffsetCommit);
  CHECK(k->offset == OffsetCommitKey{"g", "t", 3});
  auto back = DecodeOffsetCommitValue(value);
  REQUIRE(back.ok());
  CHECK(*back == v);
}

TEST_CASE("every value version round-trips and rejects damage") {
  for (int16_t version = 0; version <= 4; ++version) {
    CAPTURE(version);
    OffsetCommitValue v;
    v.version = version;
    v.offset = 7;
    v.metadata = "meta";
    v.commit_timestamp = 123;
    if (version >= 3) v.leader_epoch = 9;
    if (version == 1) v.expire_timestamp = 456;
    std::string b = EncodeOffsetCommitValue(v);
    auto back = DecodeOffsetCommitValue(b);
    REQUIRE_MESSAGE(back.ok(), back.status().ToString());
    CHECK(*back == v);
    Status cut = DecodeOffsetCommitValue(b.substr(0, b.size() - 1)).status();
    CHECK(!cut.ok());
    if (version < 4) CHECK(cut.code() == Status::Code::kTruncated);
    CHECK(DecodeOffsetCommitValue(b + "x").status().IsCorruption());

    GroupMetadataValue g;
    g.version = version;
    g.protocol_type = "consumer";
    g.generation = 4;
    g.protocol = "range";
    g.leader = "m-1";
    if (version >= 2) g.current_state_timestamp = 99;
    GroupMetadataValue::Member m;
    m.member_id = "m-1";
    if (version >= 3) m.group_instance_id = "i-1";
    m.client_id = "c";
    m.client_host = "/127.0.0.1";
    m.rebalance_timeout = version >= 1 ? 300000 : -1;
    m.session_timeout = 10000;
    m.subscription = std::string("\0\1sub", 5);
    m.assignment = "asg";
    g.members = {m, m};
    std::string gb = EncodeGroupMetadataValue(g);
    auto gback = DecodeGroupMetadataValue(gb);
    REQUIRE_MESSAGE(gback.ok(), gback.status().ToString());
    CHECK(*gback == g);
    CHECK(!DecodeGroupMetadataValue(gb.substr(0, gb.size() - 3)).ok());
  }
  CHECK(DecodeOffsetCommitValue(std::string("\x00\x05", 2)).status().IsCorruption());
  CHECK(DecodeGroupMetadataValue(std::string("\xff\xff", 2)).status().IsCorruption());
  CHECK(DecodeConsumerOffsetsKey(std::string("\x00", 1)).status().code() ==
        Status::Code::kTruncated);
  // A member count that the bytes left cannot hold fails before allocating.
  std::string hostile;
  ByteWriter w(&hostile);
  w.I16(3);
  w.I16(0);        // protocolType ""
  w.I32(1);        // generation
  w.I16(-1);       // protocol null
  w.I16(-1);       // leader null
  w.I64(0);        // currentStateTimestamp
  w.I32(1 << 30);  // members
  CHECK(DecodeGroupMetadataValue(hostile).status().IsCorruption());
}

TEST_CASE("keys of the newer consumer protocol are recognised and left undecoded") {
  std::string key("\x00\x03\x00\x01g", 5);
  auto k = DecodeConsumerOffsetsKey(key);
  REQUIRE(k.ok());
  CHECK(k->kind == ConsumerOffsetsKey::Kind::kOther);
  CHECK(k->version == 3);
  auto gk = DecodeConsumerOffsetsKey(EncodeGroupMetadataKey({"DEVSmileCDR"}));
  REQUIRE(gk.ok());
  CHECK(gk->kind == ConsumerOffsetsKey::Kind::kGroupMetadata);
  CHECK(gk->metadata.group == "DEVSmileCDR");
}

TEST_CASE("a Kafka 3.7 broker's __consumer_offsets-6 decodes: group DEVSmileCDR") {
  auto log = ReadFixture("kafka-data/kafka-3.7-kraft/__consumer_offsets-6/00000000000000000000.log");
  if (!log) return;
  std::string_view rest = *log;
  int records = 0, offset_commits = 0, group_records = 0;
  int64_t last_patient_offset = -1;
  GroupMetadataValue last_group;
  while (!rest.empty()) {
    auto batch = format::RecordBatchView::Parse(rest);
    REQUIRE_MESSAGE(batch.ok(), batch.status().ToString());
    rest.remove_prefix(batch->bytes().size());
    Status s = batch->ForEachRecord([&](const format::RecordView& r) {
      ++records;
      auto k = DecodeConsumerOffsetsKey(r.key);
      REQUIRE_MESSAGE(k.ok(), k.status().ToString());
      REQUIRE(!r.value_null);
      if (k->kind == ConsumerOffsetsKey::Kind::kOffsetCommit) {
        ++offset_commits;
        CHECK(k->version == 1);
        CHECK(k->offset.group == "DEVSmileCDR");
        auto v = DecodeOffsetCommitValue(r.value);
        REQUIRE_MESSAGE(v.ok(), v.status().ToString());
        CHECK(v->version == 3);
        CHECK(v->offset >= 0);
        CHECK(v->commit_timestamp > 1700000000000);
        if (k->offset.topic == "TestTopicPatient" && k->offset.partition == 0) {
          last_patient_offset = v->offset;
        }
      } else {
        REQUIRE(k->kind == ConsumerOffsetsKey::Kind::kGroupMetadata);
        ++group_records;
        CHECK(k->metadata.group == "DEVSmileCDR");
        auto v = DecodeGroupMetadataValue(r.value);
        REQUIRE_MESSAGE(v.ok(), v.status().ToString());
        CHECK(v->version == 3);
        CHECK(v->protocol_type == "consumer");
        last_group = *v;
      }
      return true;
    });
    REQUIRE_MESSAGE(s.ok(), s.ToString());
  }
  CHECK(records == 13);
  CHECK(offset_commits == 7);
  CHECK(group_records == 6);
  // The topic holds 3 records; the group's last commit is at its end.
  CHECK(last_patient_offset == 3);
  CHECK(last_group.generation > 0);
  REQUIRE(!last_group.members.empty());
  for (const auto& m : last_group.members) {
    CHECK(!m.member_id.empty());
    CHECK(m.client_host.rfind("/", 0) == 0);
    CHECK(m.session_timeout > 0);
    CHECK(m.rebalance_timeout > 0);
    // A consumer assignment starts with its int16 version.
    CHECK(m.assignment.size() >= 2);
  }
  REQUIRE(last_group.protocol.has_value());
  REQUIRE(last_group.leader.has_value());
}

}  // namespace
}  // namespace silt::protocol
