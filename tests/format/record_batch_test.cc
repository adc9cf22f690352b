#include "format/record_batch.h"

#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/coding.h"
#include "base/crc32c.h"
#include "format/compression.h"

using namespace silt;
using namespace silt::format;

namespace {

// prefix + decimal number (spelled out because GCC 12 warns falsely on "literal" + std::string).
std::string Cat(const char* prefix, int64_t n) {
  std::string s(prefix);
  s += std::to_string(n);
  return s;
}

const Compression kAllCodecs[] = {Compression::kNone, Compression::kGzip, Compression::kSnappy,
                                  Compression::kLz4, Compression::kZstd};

// A set of records covering the format's corners: null and empty keys and values, headers with
// null values, binary bytes, timestamps below the first one.
std::vector<Record> SampleRecords(int n) {
  std::vector<Record> out;
  for (int i = 0; i < n; ++i) {
    Record r;
    r.timestamp = 1700000000000 + (i % 7) * 1000 - (i % 3) * 5000;
    if (i % 5 != 0) r.key = Cat("key-", i);
    if (i % 11 == 3) r.key = "";
    if (i % 4 != 1) r.value = std::string(static_cast<size_t>(i % 50), static_cast<char>('a' + i % 26));
    if (i % 9 == 2) r.value = std::string("\0\xff\x01", 3);
    for (int h = 0; h < i % 3; ++h) {
      Header hd;
      hd.key = Cat("h", h);
      if ((i + h) % 2 == 0) hd.value = Cat("v", i);
      r.headers.push_back(hd);
    }
    out.push_back(r);
  }
  return out;
}

void CheckSame(const Record& want, const Record& got) {
  CHECK(got.timestamp == want.timestamp);
  CHECK(got.key == want.key);
  CHECK(got.value == want.value);
  REQUIRE(got.headers.size() == want.headers.size());
  for (size_t i = 0; i < want.headers.size(); ++i) {
    CHECK(got.headers[i].key == want.headers[i].key);
    CHECK(got.headers[i].value == want.headers[i].value);
  }
}

std::string Build(const std::vector<Record>& records, RecordBatchBuilder::Options o = {}) {
  RecordBatchBuilder b(o);
  for (const auto& r : records) b.Add(r);
  auto batch = b.Finish();
  REQUIRE(batch.ok());
  return *batch;
}

// Re-stamps the CRC after a test edits covered bytes on purpose.
void FixCrc(std::string* batch) {
  EncodeBE32(batch->data() + kCrcOffset, ComputeBatchCrc(*batch));
}
void SetBatchLength(std::string* batch) {
  EncodeBE32(batch->data() + kBatchLengthOffset, static_cast<uint32_t>(batch->size() - kLogOverhead));
}

// One hand-encoded record body with the given deltas, for batches the builder would never make.
std::string RawRecord(int32_t offset_delta, int64_t ts_delta, std::string_view value = "v") {
  std::string body;
  ByteWriter w(&body);
  w.I8(0);
  w.Varlong(ts_delta);
  w.Varint(offset_delta);
  w.Varint(-1);  // null key
  w.Varint(static_cast<int32_t>(value.size()));
  w.Raw(value);
  w.Varint(0);  // no headers
  std::string rec;
  ByteWriter rw(&rec);
  rw.Varint(static_cast<int32_t>(body.size()));
  rw.Raw(body);
  return rec;
}

std::string HandBatch(const std::string& records_block, int32_t count, int32_t last_offset_delta,
                      int64_t base_ts = 1000, int16_t attributes = 0) {
  BatchHeader h;
  h.base_offset = 100;
  h.attributes = attributes;
  h.last_offset_delta = last_offset_delta;
  h.base_timestamp = base_ts;
  h.max_timestamp = base_ts;
  h.records_count = count;
  std::string b(kBatchHeaderSize, '\0');
  b += records_block;
  h.batch_length = static_cast<int32_t>(b.size() - kLogOverhead);
  EncodeBatchHeader(h, b.data());
  FixCrc(&b);
  return b;
}

Status ValidateBytes(const std::string& b, ValidateLimits limits = {}) {
  auto v = RecordBatchView::Parse(b, limits);
  if (!v.ok()) return v.status();
  return v->Validate(limits);
}

}  // namespace

TEST_CASE("builder and view round-trip null keys, null values, headers and timestamps with every codec") {
  auto records = SampleRecords(300);
  for (Compression c : kAllCodecs) {
    CAPTURE(std::string(CompressionName(c)));
    RecordBatchBuilder::Options o;
    o.compression = c;
    o.base_offset = 5000;
    o.partition_leader_epoch = 7;
    o.producer_id = 42;
    o.producer_epoch = 3;
    o.base_sequence = 10;
    std::string batch = Build(records, o);

    auto view = RecordBatchView::Parse(batch);
    REQUIRE_MESSAGE(view.ok(), view.status().ToString());
    const BatchHeader& h = view->header();
    CHECK(h.magic == 2);
    CHECK(h.size() == static_cast<int64_t>(batch.size()));
    CHECK(h.base_offset == 5000);
    CHECK(h.partition_leader_epoch == 7);
    CHECK(h.compression() == c);
    CHECK(h.records_count == 300);
    CHECK(h.last_offset_delta == 299);
    CHECK(h.base_timestamp == records[0].timestamp);
    int64_t max_ts = 0;
    for (const auto& r : records) max_ts = std::max(max_ts, r.timestamp);
    CHECK(h.max_timestamp == max_ts);
    CHECK(h.producer_id == 42);
    CHECK(h.producer_epoch == 3);
    CHECK(h.base_sequence == 10);
    CHECK(h.last_sequence() == 309);
    CHECK(h.crc == crc32c::Value(batch.data() + kAttributesOffset, batch.size() - kAttributesOffset));
    if (c != Compression::kNone) CHECK(batch.size() < 61 + Build(records).size() - 61);

    CHECK(view->Validate().ok());
    ValidateLimits strict;
    strict.contiguous_offsets = true;
    CHECK(view->Validate(strict).ok());
    auto got = view->Records();
    REQUIRE(got.ok());
    REQUIRE(got->size() == records.size());
    for (size_t i = 0; i < records.size(); ++i) {
      CAPTURE(i);
      CHECK((*got)[i].offset == 5000 + static_cast<int64_t>(i));
      CheckSame(records[i], (*got)[i]);
    }
  }
}

TEST_CASE("many records in one batch decode in order and the builder is reusable after Finish") {
  RecordBatchBuilder b({.compression = Compression::kLz4});
  for (int i = 0; i < 5000; ++i) b.Add(std::to_string(i), std::string(20, 'x'), 1000 + i);
  CHECK(b.record_count() == 5000);
  CHECK(b.uncompressed_size() > 5000 * 20);
  auto first = b.Finish();
  REQUIRE(first.ok());
  CHECK(b.empty());
  CHECK(b.uncompressed_size() == 0);
  b.Add(std::nullopt, "again", 5);
  auto second = b.Finish();
  REQUIRE(second.ok());

  auto v1 = RecordBatchView::Parse(*first);
  REQUIRE(v1.ok());
  int n = 0;
  REQUIRE(v1->ForEachRecord([&](const RecordView& r) {
    CHECK(r.offset == n);
    CHECK(r.key == std::to_string(n));
    CHECK(r.timestamp == 1000 + n);
    ++n;
    return true;
  }).ok());
  CHECK(n == 5000);

  auto v2 = RecordBatchView::Parse(*second);
  REQUIRE(v2.ok());
  CHECK(v2->header().records_count == 1);
  CHECK(v2->header().base_timestamp == 5);
  auto recs = v2->Records();
  REQUIRE(recs.ok());
  CHECK_FALSE((*recs)[0].key.has_value());
  CHECK((*recs)[0].value == "again");
}

TEST_CASE("a builder handed a used buffer builds the same bytes, in that buffer, without a copy") {
  const std::vector<Record> records = SampleRecords(300);
  auto build = [&](RecordBatchBuilder& b) {
    for (const Record& r : records) b.Add(r);
    auto batch = b.Finish();
    REQUIRE(batch.ok());
    return std::move(*batch);
  };
  RecordBatchBuilder fresh({.producer_id = 7, .producer_epoch = 1, .base_sequence = 3});
  const std::string want = build(fresh);

  std::string used(1 << 20, 'z');  // a finished batch's bytes, handed back
  const size_t capacity = used.capacity();
  RecordBatchBuilder reused({.producer_id = 7, .producer_epoch = 1, .base_sequence = 3},
                            std::move(used));
  const std::string got = build(reused);
  CHECK(got == want);
  // Uncompressed, the batch is the buffer the records were written into.
  CHECK(got.capacity() == capacity);

  auto view = RecordBatchView::Parse(got);
  REQUIRE(view.ok());
  auto decoded = view->Records();
  REQUIRE(decoded.ok());
  REQUIRE(decoded->size() == records.size());
  for (size_t i = 0; i < records.size(); ++i) CheckSame(records[i], (*decoded)[i]);
}

TEST_CASE("FinishInto trades buffers with the caller and builds the same bytes as Finish") {
  const std::vector<Record> records = SampleRecords(200);
  for (Compression c : {Compression::kNone, Compression::kLz4}) {
    CAPTURE(static_cast<int>(c));
    RecordBatchBuilder fresh({.compression = c});
    for (const Record& r : records) fresh.Add(r);
    auto want = fresh.Finish();
    REQUIRE(want.ok());

    RecordBatchBuilder b({.compression = c});
    std::string out(3 << 20, 'q');  // an old batch handed back, larger than any here
    const char* old_buffer = out.data();
    for (int round = 0; round < 3; ++round) {
      CAPTURE(round);
      for (const Record& r : records) b.Add(r);
      REQUIRE(b.FinishInto(&out).ok());
      CHECK(out == *want);
      CHECK(b.empty());
      // Uncompressed, round 0 gave the builder the caller's 3 MiB buffer and round 1 handed it
      // back with the records written in place: buffers alternate, none is grown or copied.
      if (c == Compression::kNone && round == 1) CHECK(out.data() == old_buffer);
    }
  }
}

TEST_CASE("ForEachRecord stops early when the visitor returns false") {
  std::string batch = Build(SampleRecords(10));
  auto v = RecordBatchView::Parse(batch);
  REQUIRE(v.ok());
  int seen = 0;
  CHECK(v->ForEachRecord([&](const RecordView&) { return ++seen < 3; }).ok());
  CHECK(seen == 3);
}

TEST_CASE("a record without a timestamp gets the current time") {
  RecordBatchBuilder b({});
  b.Add("k", "v");
  auto batch = b.Finish();
  REQUIRE(batch.ok());
  auto v = RecordBatchView::Parse(*batch);
  REQUIRE(v.ok());
  CHECK(v->header().base_timestamp > 1600000000000);
}

TEST_CASE("records of a LogAppendTime batch carry the batch's maxTimestamp") {
  RecordBatchBuilder::Options o;
  o.log_append_time = true;
  std::string batch = Build(SampleRecords(4), o);
  auto v = RecordBatchView::Parse(batch);
  REQUIRE(v.ok());
  CHECK(v->header().log_append_time());
  auto recs = v->Records();
  REQUIRE(recs.ok());
  for (const auto& r : *recs) CHECK(r.timestamp == v->header().max_timestamp);
}

TEST_CASE("control batches round-trip and their records must have a version and type key") {
  RecordBatchBuilder::Options o;
  o.control = true;
  o.transactional = true;
  o.producer_id = 9;
  RecordBatchBuilder b(o);
  b.Add(std::string("\0\0\0\1", 4), std::string("\0\0\0\0\0\0", 6), 77);  // COMMIT
  auto batch = b.Finish();
  REQUIRE(batch.ok());
  auto v = RecordBatchView::Parse(*batch);
  REQUIRE(v.ok());
  CHECK(v->header().control());
  CHECK(v->header().transactional());
  auto recs = v->Records();
  REQUIRE(recs.ok());
  CHECK(ParseControlType(*(*recs)[0].key) == ControlType::kCommit);
  CHECK(ParseControlType("\0") == ControlType::kUnknown);

  RecordBatchBuilder bad(o);
  bad.Add(std::string("\0", 1), std::nullopt, 77);
  auto bad_batch = bad.Finish();
  REQUIRE(bad_batch.ok());
  CHECK(ValidateBytes(*bad_batch).IsCorruption());
}

TEST_CASE("an empty batch is valid and has no records") {
  std::string batch = Build({});
  CHECK(batch.size() == static_cast<size_t>(kBatchHeaderSize));
  auto v = RecordBatchView::Parse(batch);
  REQUIRE(v.ok());
  CHECK(v->header().records_count == 0);
  auto recs = v->Records();
  REQUIRE(recs.ok());
  CHECK(recs->empty());
}

TEST_CASE("a flipped bit in the CRC-covered bytes is Corruption") {
  std::string batch = Build(SampleRecords(20), {.compression = Compression::kGzip});
  for (size_t pos : {size_t{kAttributesOffset}, size_t{kRecordsCountOffset}, batch.size() / 2,
                     batch.size() - 1}) {
    CAPTURE(pos);
    std::string bad = batch;
    bad[pos] = static_cast<char>(bad[pos] ^ 0x10);
    auto v = RecordBatchView::Parse(bad);
    CHECK(v.status().IsCorruption());
    CHECK(v.status().message().find("crc") != std::string::npos);
  }
  // baseOffset and partitionLeaderEpoch are outside the CRC, so the broker can patch them.
  std::string moved = batch;
  EncodeBE64(moved.data(), 123456);
  EncodeBE32(moved.data() + kPartitionLeaderEpochOffset, 9);
  auto v = RecordBatchView::Parse(moved);
  REQUIRE(v.ok());
  CHECK(v->header().base_offset == 123456);
  CHECK(v->Validate().ok());
}

TEST_CASE("a CRC mismatch can be tolerated for dump tools when verify_crc is off") {
  std::string batch = Build(SampleRecords(3));
  batch[batch.size() - 1] ^= 1;
  ValidateLimits lenient;
  lenient.verify_crc = false;
  auto v = RecordBatchView::Parse(batch, lenient);
  REQUIRE(v.ok());
  CHECK(v->header().crc != ComputeBatchCrc(batch));
}

TEST_CASE("a magic other than 2 is Corruption") {
  std::string batch = Build(SampleRecords(2));
  for (int8_t magic : {0, 1, 3, -1}) {
    std::string bad = batch;
    bad[kMagicOffset] = static_cast<char>(magic);
    CHECK(RecordBatchView::Parse(bad).status().IsCorruption());
  }
}

TEST_CASE("a batch cut short anywhere is Truncated, not Corruption") {
  std::string batch = Build(SampleRecords(5));
  for (size_t n : {size_t{0}, size_t{5}, size_t{16}, size_t{17}, size_t{60}, batch.size() - 1}) {
    CAPTURE(n);
    CHECK(RecordBatchView::Parse(std::string_view(batch).substr(0, n)).status().IsTruncated());
  }
}

TEST_CASE("batchLength below the header size or above the limit is Corruption") {
  std::string batch = Build(SampleRecords(5));
  std::string small = batch;
  EncodeBE32(small.data() + kBatchLengthOffset, 10);
  CHECK(RecordBatchView::Parse(small).status().IsCorruption());
  ValidateLimits limits;
  limits.max_batch_size = 100;
  CHECK(RecordBatchView::Parse(batch, limits).status().IsCorruption());
}

TEST_CASE("the view covers exactly one batch when more bytes follow it") {
  std::string a = Build(SampleRecords(3));
  std::string b = Build(SampleRecords(4), {.base_offset = 3});
  std::string both = a + b;
  auto v = RecordBatchView::Parse(both);
  REQUIRE(v.ok());
  CHECK(v->bytes().size() == a.size());
  CHECK(v->Validate().ok());
  auto w = RecordBatchView::Parse(std::string_view(both).substr(v->bytes().size()));
  REQUIRE(w.ok());
  CHECK(w->header().base_offset == 3);
}

TEST_CASE("recordsCount that disagrees with the records present is Corruption") {
  std::string block = RawRecord(0, 0) + RawRecord(1, 0) + RawRecord(2, 0);
  CHECK(ValidateBytes(HandBatch(block, 3, 2)).ok());
  // Claims one more record than is there.
  CHECK(ValidateBytes(HandBatch(block, 4, 3)).IsCorruption());
  // Claims one fewer: the third record becomes trailing bytes.
  Status s = ValidateBytes(HandBatch(block, 2, 2));
  CHECK(s.IsCorruption());
  CHECK(s.message().find("follow") != std::string::npos);
  // More records than lastOffsetDelta allows.
  CHECK(ValidateBytes(HandBatch(block, 3, 1)).IsCorruption());
  // A count no records block could hold is refused before any work.
  CHECK(ValidateBytes(HandBatch(block, 1000000000, 1000000000)).IsCorruption());
}

TEST_CASE("trailing garbage after the last record is Corruption") {
  std::string block = RawRecord(0, 0) + "\x01\x02";
  CHECK(ValidateBytes(HandBatch(block, 1, 0)).IsCorruption());
  // Also when it hides inside one record's length.
  std::string rec = RawRecord(0, 0);
  std::string padded = rec;
  padded[0] = static_cast<char>(ZigZagEncode32(static_cast<int32_t>(rec.size() - 1 + 1)));
  padded += '\0';
  CHECK(ValidateBytes(HandBatch(padded, 1, 0)).IsCorruption());
}

TEST_CASE("offset deltas must increase strictly within lastOffsetDelta") {
  CHECK(ValidateBytes(HandBatch(RawRecord(0, 0) + RawRecord(0, 0), 2, 1)).IsCorruption());
  CHECK(ValidateBytes(HandBatch(RawRecord(1, 0) + RawRecord(0, 0), 2, 1)).IsCorruption());
  CHECK(ValidateBytes(HandBatch(RawRecord(0, 0) + RawRecord(5, 0), 2, 4)).IsCorruption());
  CHECK(ValidateBytes(HandBatch(RawRecord(-1, 0), 1, 0)).IsCorruption());

  // Gaps are what compaction leaves: fine by default, refused for produce validation.
  std::string compacted = HandBatch(RawRecord(1, 0) + RawRecord(4, 0), 2, 5);
  CHECK(ValidateBytes(compacted).ok());
  ValidateLimits strict;
  strict.contiguous_offsets = true;
  CHECK(ValidateBytes(compacted, strict).IsCorruption());
  CHECK(ValidateBytes(HandBatch(RawRecord(0, 0) + RawRecord(1, 0), 2, 2), strict).IsCorruption());
  auto v = RecordBatchView::Parse(compacted);
  REQUIRE(v.ok());
  auto recs = v->Records();
  REQUIRE(recs.ok());
  CHECK((*recs)[0].offset == 101);
  CHECK((*recs)[1].offset == 104);
}

TEST_CASE("timestamp deltas that overflow or go below -1 are Corruption") {
  CHECK(ValidateBytes(HandBatch(RawRecord(0, -5), 1, 0, 1000)).ok());
  CHECK(ValidateBytes(HandBatch(RawRecord(0, 1), 1, 0, INT64_MAX)).IsCorruption());
  CHECK(ValidateBytes(HandBatch(RawRecord(0, -2000), 1, 0, 1000)).IsCorruption());
  CHECK(ValidateBytes(HandBatch(RawRecord(0, 0), 1, 0, -1)).ok());  // no timestamp at all
}

TEST_CASE("malformed records are Corruption: overrunning lengths, bad varints, huge header counts") {
  std::string rec = RawRecord(0, 0, "value");
  // Record length larger than the block.
  std::string longer = rec;
  longer[0] = static_cast<char>(ZigZagEncode32(100));
  CHECK(ValidateBytes(HandBatch(longer, 1, 0)).IsCorruption());
  // Negative record length.
  std::string negative = rec;
  negative[0] = static_cast<char>(ZigZagEncode32(-3));
  CHECK(ValidateBytes(HandBatch(negative, 1, 0)).IsCorruption());
  // A varint that never ends.
  CHECK(ValidateBytes(HandBatch(std::string(12, '\xff'), 1, 0)).IsCorruption());

  // Value length past the record's end, and a header count no record could hold.
  auto body_with = [](auto fill) {
    std::string body;
    ByteWriter w(&body);
    w.I8(0);
    w.Varlong(0);
    w.Varint(0);
    fill(w);
    std::string rec;
    ByteWriter rw(&rec);
    rw.Varint(static_cast<int32_t>(body.size()));
    rw.Raw(body);
    return rec;
  };
  CHECK(ValidateBytes(HandBatch(body_with([](ByteWriter& w) {
          w.Varint(-1);
          w.Varint(50);
          w.Raw("short");
          w.Varint(0);
        }), 1, 0)).IsCorruption());
  CHECK(ValidateBytes(HandBatch(body_with([](ByteWriter& w) {
          w.Varint(-1);
          w.Varint(-1);
          w.Varint(1 << 30);
        }), 1, 0)).IsCorruption());
  // A null header key.
  CHECK(ValidateBytes(HandBatch(body_with([](ByteWriter& w) {
          w.Varint(-1);
          w.Varint(-1);
          w.Varint(1);
          w.Varint(-1);
          w.Varint(-1);
        }), 1, 0)).IsCorruption());
  // A key length below -1.
  CHECK(ValidateBytes(HandBatch(body_with([](ByteWriter& w) {
          w.Varint(-2);
          w.Varint(-1);
          w.Varint(0);
        }), 1, 0)).IsCorruption());
}

TEST_CASE("a compressed batch that inflates past the limit is TooLarge") {
  RecordBatchBuilder b({.compression = Compression::kZstd});
  for (int i = 0; i < 64; ++i) b.Add(std::nullopt, std::string(32 * 1024, 'z'), 1);
  auto batch = b.Finish();
  REQUIRE(batch.ok());
  CHECK(batch->size() < 64 * 1024);
  ValidateLimits limits;
  limits.max_uncompressed_size = 1 << 20;
  auto v = RecordBatchView::Parse(*batch, limits);
  REQUIRE(v.ok());
  CHECK(v->Validate(limits).IsTooLarge());
  CHECK(v->Validate().ok());
}

TEST_CASE("an unknown compression codec or a damaged compressed block is Corruption") {
  std::string batch = Build(SampleRecords(5), {.compression = Compression::kSnappy});
  std::string unknown = batch;
  EncodeBE16(unknown.data() + kAttributesOffset, 5);
  FixCrc(&unknown);
  CHECK(ValidateBytes(unknown).IsCorruption());

  std::string damaged = batch.substr(0, batch.size() - 4);
  SetBatchLength(&damaged);
  FixCrc(&damaged);
  CHECK(ValidateBytes(damaged).IsCorruption());
}
