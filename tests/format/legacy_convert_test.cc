#include "format/legacy_convert.h"

#include <doctest/doctest.h>
#include <zlib.h>

#include <optional>
#include <string>
#include <vector>

#include "base/coding.h"
#include "format/compression.h"
#include "format/legacy.h"
#include "format/record_batch.h"
#include "format_test_util.h"
#include "legacy_builders.h"

using namespace silt;
using namespace silt::format;

namespace {

using Bytes = format::testing::LegacyBytes;

std::string Entry(int64_t offset, int8_t magic, int8_t attributes, int64_t timestamp,
                  const Bytes& key, const Bytes& value) {
  return format::testing::LegacyEntry(offset, magic, attributes, timestamp, key, value);
}

std::string Wrapper(int64_t offset, int8_t magic, Compression codec, int64_t timestamp,
                    const std::string& inner) {
  auto packed = Compress(codec, inner);
  REQUIRE(packed.ok());
  return Entry(offset, magic, static_cast<int8_t>(codec), timestamp, std::nullopt, *packed);
}

std::string FromHex(std::string_view h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(h.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

std::string Batch(int64_t base_offset, Compression codec, const std::vector<Record>& records,
                  bool control = false, bool log_append_time = false) {
  RecordBatchBuilder::Options o;
  o.base_offset = base_offset;
  o.compression = codec;
  o.control = control;
  o.log_append_time = log_append_time;
  RecordBatchBuilder b(o);
  for (const Record& r : records) b.Add(r);
  auto out = b.Finish();
  REQUIRE(out.ok());
  return *out;
}

Record Rec(std::string key, std::string value, int64_t ts) {
  Record r;
  r.key = std::move(key);
  r.value = std::move(value);
  r.timestamp = ts;
  return r;
}

struct Seen {
  int64_t offset;
  int64_t timestamp;
  Bytes key, value;
  int8_t magic;
  Compression codec;
};

std::vector<Seen> ReadLegacy(std::string_view set, Status* status = nullptr) {
  std::vector<Seen> out;
  Status s = ForEachLegacyMessage(set, LegacyOptions{}, [&](const LegacyMessage& m) {
    out.push_back(Seen{m.info.offset, m.info.timestamp,
                       m.key_null ? Bytes() : Bytes(std::string(m.key)),
                       m.value_null ? Bytes() : Bytes(std::string(m.value)), m.info.magic,
                       m.info.inner ? m.info.wrapper_codec : m.info.codec});
    return true;
  });
  if (status) *status = s;
  else REQUIRE_MESSAGE(s.ok(), s.ToString());
  return out;
}

std::vector<Record> BatchRecords(const std::string& batch, BatchHeader* header = nullptr) {
  auto view = RecordBatchView::Parse(batch);
  REQUIRE_MESSAGE(view.ok(), view.status().ToString());
  ValidateLimits strict;
  strict.contiguous_offsets = true;
  REQUIRE(view->Validate(strict).ok());
  if (header) *header = view->header();
  auto recs = view->Records();
  REQUIRE(recs.ok());
  return *recs;
}

}  // namespace

// ---- up-conversion ----

TEST_CASE("a magic 0 message set up-converts to one v2 batch with offsets 0..n-1 and no timestamps") {
  std::string set = Entry(7, 0, 0, 0, std::string("k"), std::string("v")) +
                    Entry(99, 0, 0, 0, std::nullopt, std::string("vv"));
  auto up = UpConvertMessageSet(set);
  REQUIRE_MESSAGE(up.ok(), up.status().ToString());
  CHECK(up->records == 2);
  CHECK(up->magic == 0);
  BatchHeader h;
  auto recs = BatchRecords(up->batch, &h);
  CHECK(h.base_offset == 0);
  CHECK(h.last_offset_delta == 1);
  CHECK(h.compression() == Compression::kNone);
  CHECK(h.producer_id == -1);
  CHECK(h.base_sequence == -1);
  CHECK(h.base_timestamp == -1);
  CHECK(h.max_timestamp == -1);
  CHECK_FALSE(h.log_append_time());
  REQUIRE(recs.size() == 2);
  CHECK(recs[0].offset == 0);
  CHECK(recs[0].timestamp == -1);
  CHECK(*recs[0].key == "k");
  CHECK(*recs[0].value == "v");
  CHECK(recs[1].offset == 1);
  CHECK_FALSE(recs[1].key.has_value());
  CHECK(*recs[1].value == "vv");
}

TEST_CASE("magic 1 timestamps survive up-conversion and set the batch's max timestamp") {
  std::string set = Entry(0, 1, 0, 2000, std::nullopt, std::string("a")) +
                    Entry(1, 1, 0, 1500, std::nullopt, std::nullopt);
  auto up = UpConvertMessageSet(set);
  REQUIRE(up.ok());
  BatchHeader h;
  auto recs = BatchRecords(up->batch, &h);
  REQUIRE(recs.size() == 2);
  CHECK(recs[0].timestamp == 2000);
  CHECK(recs[1].timestamp == 1500);
  CHECK_FALSE(recs[1].value.has_value());
  CHECK(h.base_timestamp == 2000);
  CHECK(h.max_timestamp == 2000);
}

TEST_CASE("compressed wrappers up-convert to one batch compressed with the wrappers' codec") {
  for (Compression c : {Compression::kGzip, Compression::kSnappy, Compression::kLz4}) {
    CAPTURE(static_cast<int>(c));
    // Magic 1 inner offsets are relative (0, 1); magic 0 ones absolute: both are ignored.
    std::string inner1 = Entry(0, 1, 0, 10, std::nullopt, std::string("a")) +
                         Entry(1, 1, 0, 11, std::nullopt, std::string("b"));
    std::string inner0 = Entry(40, 0, 0, 0, std::nullopt, std::string("c"));
    std::string set = Wrapper(1, 1, c, 11, inner1) + Wrapper(40, 0, c, 0, inner0);
    auto up = UpConvertMessageSet(set);
    REQUIRE_MESSAGE(up.ok(), up.status().ToString());
    BatchHeader h;
    auto recs = BatchRecords(up->batch, &h);
    CHECK(h.compression() == c);
    REQUIRE(recs.size() == 3);
    CHECK(*recs[0].value == "a");
    CHECK(recs[0].timestamp == 10);
    CHECK(*recs[2].value == "c");
    CHECK(recs[2].offset == 2);
    CHECK(recs[2].timestamp == -1);
  }
}

TEST_CASE("up-conversion refuses what Kafka refuses: bad CRC, partial tail, magic 2, zstd, empty") {
  std::string good = Entry(0, 1, 0, 5, std::nullopt, std::string("abc"));
  std::string bad_crc = good;
  bad_crc.back() ^= 1;
  CHECK(UpConvertMessageSet(bad_crc).status().IsCorruption());
  CHECK(UpConvertMessageSet(good + good.substr(0, good.size() - 1)).status().IsCorruption());
  CHECK(UpConvertMessageSet(Batch(0, Compression::kNone, {Rec("k", "v", 1)})).status().IsCorruption());
  CHECK(UpConvertMessageSet(Wrapper(0, 1, Compression::kZstd, 0, good)).status().IsCorruption());
  CHECK(UpConvertMessageSet("").status().IsCorruption());
  UpConvertOptions small;
  small.max_size = 16;
  CHECK(UpConvertMessageSet(good, small).status().IsTooLarge());
}

TEST_CASE("sarama's legacy wrappers up-convert with every inner message") {
  for (const char* name : {"emptyBulkGzipMessage", "emptyBulkLZ4Message", "emptyBulkSnappyMessage"}) {
    CAPTURE(std::string(name));
    auto bytes = silt::format::testing::ReadFixture(std::string("protocol/sarama/message__") + name + ".bin");
    if (!bytes) return;
    std::string set;
    ByteWriter w(&set);
    w.I64(10);
    w.I32(static_cast<int32_t>(bytes->size()));
    w.Raw(*bytes);
    size_t inner = 0;
    REQUIRE(ForEachLegacyMessage(set, LegacyOptions{}, [&](const LegacyMessage&) {
              ++inner;
              return true;
            }).ok());
    auto up = UpConvertMessageSet(set);
    REQUIRE_MESSAGE(up.ok(), up.status().ToString());
    CHECK(static_cast<size_t>(up->records) == inner);
    CHECK(BatchRecords(up->batch).size() == inner);
  }
}

// ---- down-conversion ----

TEST_CASE("an uncompressed v2 record down-converts to the documented magic 1 and magic 0 bytes") {
  std::string batch = Batch(5, Compression::kNone, {Rec("k", "v", 1000)});
  DownConvertOptions o;
  o.max_bytes = 1 << 20;
  o.magic = 1;
  DownConverted out;
  REQUIRE(DownConvert(batch, o, &out).ok());
  // offset 5, messageSize 24, crc, magic 1, attributes 0, timestamp 1000, key "k", value "v"
  CHECK(silt::format::testing::Hex(out.data) ==
        "000000000000000500000018e4e321bc010000000000000003e8000000016b0000000176");
  CHECK(out.messages == 1);
  CHECK(out.next_offset == 6);
  o.magic = 0;
  REQUIRE(DownConvert(batch, o, &out).ok());
  CHECK(silt::format::testing::Hex(out.data) == "0000000000000005000000101fecd70a0000000000016b0000000176");
  CHECK(out.data == FromHex("0000000000000005000000101fecd70a0000000000016b0000000176"));
}

TEST_CASE("down-conversion skips records below the fetch offset, control batches and headers") {
  Record with_header = Rec("k2", "v2", 20);
  with_header.headers.push_back(Header{"h", std::string("x")});
  std::string log = Batch(0, Compression::kNone, {Rec("k0", "v0", 10), Rec("k1", "v1", 11)}) +
                    Batch(2, Compression::kNone, {Rec("", "", 0)}, /*control=*/true) +
                    Batch(3, Compression::kNone, {with_header});
  DownConvertOptions o;
  o.max_bytes = 1 << 20;
  o.first_offset = 1;
  DownConverted out;
  REQUIRE(DownConvert(log, o, &out).ok());
  auto seen = ReadLegacy(out.data);
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].offset == 1);
  CHECK(*seen[0].key == "k1");
  CHECK(seen[0].timestamp == 11);
  CHECK(seen[1].offset == 3);
  CHECK(*seen[1].value == "v2");
  CHECK(seen[1].magic == 1);
}

TEST_CASE("a compressed batch down-converts to one wrapper of its codec with the right offsets") {
  for (int8_t magic : {0, 1}) {
    for (Compression c : {Compression::kGzip, Compression::kSnappy, Compression::kLz4}) {
      CAPTURE(static_cast<int>(c));
      CAPTURE(static_cast<int>(magic));
      std::string batch =
          Batch(100, c, {Rec("a", "1", 50), Rec("b", "2", 70), Rec("c", "3", 60)});
      DownConvertOptions o;
      o.magic = magic;
      o.max_bytes = 1 << 20;
      o.first_offset = 101;  // a fetch inside the batch
      DownConverted out;
      REQUIRE(DownConvert(batch, o, &out).ok());
      CHECK(out.messages == 1);
      CHECK(out.next_offset == 103);
      LegacyOptions lo;
      lo.include_wrappers = true;
      std::vector<LegacyMessageInfo> infos;
      REQUIRE(ForEachLegacyMessage(out.data, lo, [&](const LegacyMessage& m) {
                infos.push_back(m.info);
                return true;
              }).ok());
      REQUIRE(infos.size() == 3);
      CHECK(infos[0].codec == c);
      CHECK(infos[0].offset == 102);  // a wrapper carries its last inner offset
      if (magic == 1) CHECK(infos[0].timestamp == 70);
      CHECK(infos[1].offset == 101);
      CHECK(infos[2].offset == 102);
      CHECK(infos[2].magic == magic);
    }
  }
}

TEST_CASE("a LogAppendTime batch down-converts to magic 1 messages marked LogAppendTime") {
  std::string batch = Batch(0, Compression::kNone, {Rec("k", "v", 5)}, false, true);
  DownConvertOptions o;
  o.max_bytes = 1 << 20;
  DownConverted out;
  REQUIRE(DownConvert(batch, o, &out).ok());
  LegacyOptions lo;
  bool lat = false;
  REQUIRE(ForEachLegacyMessage(out.data, lo, [&](const LegacyMessage& m) {
            lat = m.info.log_append_time;
            return true;
          }).ok());
  CHECK(lat);
}

TEST_CASE("down-conversion writes whole messages only, within max_bytes") {
  std::string log = Batch(0, Compression::kNone, {Rec("k", "v", 1), Rec("k", "v", 2), Rec("k", "v", 3)});
  const int64_t one = 12 + 22 + 2;  // a magic 1 message with one-byte key and value
  DownConvertOptions o;
  o.max_bytes = 2 * one + 5;
  DownConverted out;
  REQUIRE(DownConvert(log, o, &out).ok());
  CHECK(static_cast<int64_t>(out.data.size()) == 2 * one);
  CHECK(out.messages == 2);
  CHECK(out.next_offset == 2);
  CHECK_FALSE(out.partial);

  SUBCASE("below one message: nothing, the first whole (v3), or its prefix (v0-2)") {
    o.max_bytes = one - 4;
    REQUIRE(DownConvert(log, o, &out).ok());
    CHECK(out.data.empty());
    o.min_one_message = true;
    REQUIRE(DownConvert(log, o, &out).ok());
    CHECK(static_cast<int64_t>(out.data.size()) == one);
    CHECK(out.messages == 1);
    o.min_one_message = false;
    o.allow_partial = true;
    REQUIRE(DownConvert(log, o, &out).ok());
    CHECK(static_cast<int64_t>(out.data.size()) == one - 4);
    CHECK(out.partial);
    CHECK(out.messages == 0);
    Status s;
    CHECK(ReadLegacy(out.data, &s).empty());
    CHECK(s.IsTruncated());  // what an old consumer sees: a partial message
  }
}

TEST_CASE("zstd cannot go below magic 2: Unsupported first, the end of the output later") {
  std::string zstd = Batch(1, Compression::kZstd, {Rec("k", "v", 1)});
  DownConvertOptions o;
  o.max_bytes = 1 << 20;
  DownConverted out;
  CHECK(DownConvert(zstd, o, &out).code() == Status::Code::kUnsupported);
  std::string log = Batch(0, Compression::kNone, {Rec("k", "v", 1)}) + zstd;
  REQUIRE(DownConvert(log, o, &out).ok());
  CHECK(out.messages == 1);
  CHECK(out.next_offset == 1);
}

TEST_CASE("legacy entries already in the log pass through or are rewritten for magic 0") {
  std::string log = Entry(0, 1, 0, 33, std::nullopt, std::string("x")) +
                    Batch(1, Compression::kNone, {Rec("k", "v", 34)});
  DownConvertOptions o;
  o.max_bytes = 1 << 20;
  DownConverted out;
  REQUIRE(DownConvert(log, o, &out).ok());
  CHECK(out.data.compare(0, 12 + 22 + 1, log, 0, 12 + 22 + 1) == 0);  // as stored
  o.magic = 0;
  REQUIRE(DownConvert(log, o, &out).ok());
  auto seen = ReadLegacy(out.data);
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].magic == 0);
  CHECK(*seen[0].value == "x");
  CHECK(seen[1].offset == 1);
}

TEST_CASE("down-converted records up-convert back to the same keys, values and timestamps") {
  std::vector<Record> recs = {Rec("a", "1", 100), Rec("b", "", 101), Rec("c", "333", 99)};
  for (Compression c : {Compression::kNone, Compression::kGzip, Compression::kLz4}) {
    DownConvertOptions o;
    o.max_bytes = 1 << 20;
    DownConverted out;
    REQUIRE(DownConvert(Batch(0, c, recs), o, &out).ok());
    auto up = UpConvertMessageSet(out.data);
    REQUIRE(up.ok());
    auto back = BatchRecords(up->batch);
    REQUIRE(back.size() == recs.size());
    for (size_t i = 0; i < recs.size(); ++i) {
      CHECK(back[i].key == recs[i].key);
      CHECK(back[i].value == recs[i].value);
      CHECK(back[i].timestamp == recs[i].timestamp);
    }
  }
}

TEST_CASE("every prefix and every flipped byte of converter input is rejected or converted, never overrun") {
  std::string inner = Entry(0, 1, 0, 10, std::string("k"), std::string("a")) +
                      Entry(1, 1, 0, 11, std::nullopt, std::string("b"));
  std::string first = Entry(0, 0, 0, 0, std::string("x"), std::string("y"));
  std::string set = first + Wrapper(1, 1, Compression::kGzip, 11, inner);
  std::string log = Batch(0, Compression::kNone, {Rec("a", "1", 1)}) +
                    Batch(1, Compression::kLz4, {Rec("b", "2", 2), Rec("c", "3", 3)});
  DownConvertOptions o;
  o.max_bytes = 1 << 20;
  for (size_t n = 0; n < set.size(); ++n) {
    // Only the cut after the first whole message leaves a valid set.
    CHECK(UpConvertMessageSet(set.substr(0, n)).ok() == (n == first.size()));
  }
  for (size_t i = 0; i < set.size(); ++i) {
    std::string bad = set;
    bad[i] ^= 0x41;
    auto up = UpConvertMessageSet(bad);
    // Only the producer's offsets are outside the CRC (and ignored); anything else is caught.
    if (up.ok()) CHECK((i < 8 || (i >= first.size() && i < first.size() + 8)));
  }
  for (size_t n = 0; n <= log.size(); ++n) {
    DownConverted out;
    Status s = DownConvert(log.substr(0, n), o, &out);
    CHECK(s.ok());  // a partial entry at the end is the end of the data
    CHECK(ReadLegacy(out.data).size() <= 3);
  }
  for (size_t i = 0; i < log.size(); ++i) {
    std::string bad = log;
    bad[i] ^= 0x41;
    DownConverted out;
    (void)DownConvert(bad, o, &out);
    Status s;
    (void)ReadLegacy(out.data, &s);
    CHECK((s.ok() || s.IsTruncated()));
  }
}
