#include "storage/partition_log.h"

#include <doctest/doctest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "base/clock.h"
#include "base/coding.h"
#include "base/crc32c.h"
#include "storage/segment.h"
#include "storage/test_util.h"

using namespace silt;
using namespace silt::storage;
using namespace silt::storage::testing;

namespace {

std::unique_ptr<PartitionLog> OpenLog(const std::string& dir, const LogConfig& cfg,
                                      PartitionLog::OpenOptions opts = {}) {
  auto r = PartitionLog::Open(dir, cfg, opts);
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  return std::move(r).value();
}

// Appends `n` batches of `records` records each; returns the batches' (base, last).
std::vector<Span> AppendBatches(PartitionLog* log, int n, int records, size_t value_size = 20,
                                int64_t ts = 1000) {
  std::vector<Span> spans;
  for (int i = 0; i < n; ++i) {
    std::string b = MakeBatch(records, value_size, ts + i);
    auto r = log->Append(&b);
    REQUIRE_MESSAGE(r.ok(), r.status().ToString());
    spans.push_back({r->base_offset.value(), r->last_offset.value()});
  }
  return spans;
}

std::string ReadAllFrom(const PartitionLog& log, int64_t start) {
  auto r = log.Read(Offset(start), INT64_MAX, Offset(INT64_MAX));
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  auto bytes = r->ReadAll();
  REQUIRE(bytes.ok());
  return bytes.value();
}

LogConfig SmallConfig() {
  LogConfig c;
  c.segment_bytes = 2000;
  c.index_interval_bytes = 200;
  return c;
}

}  // namespace

TEST_CASE("appends get consecutive offsets and read back byte for byte across segment rolls") {
  TempDir dir;
  auto log = OpenLog(dir.path(), SmallConfig());
  std::string expected;
  for (int i = 0; i < 60; ++i) {
    std::string b = MakeBatch(3, 20, 1000 + i);
    auto r = log->Append(&b);
    REQUIRE(r.ok());
    CHECK(r->base_offset == Offset(3 * i));
    CHECK(r->last_offset == Offset(3 * i + 2));
    expected += b;  // Append patched baseOffset in place
  }
  CHECK(log->log_end_offset() == Offset(180));
  CHECK(log->Segments().size() > 3);
  for (const SegmentInfo& s : log->Segments()) CHECK(s.size_bytes <= 2000);
  std::string all = ReadAllFrom(*log, 0);
  CHECK(all == expected);
  auto spans = BatchSpans(all);
  REQUIRE(spans.size() == 60);
  for (int i = 0; i < 60; ++i) CHECK(spans[static_cast<size_t>(i)] == Span{3 * i, 3 * i + 2});
  // The CRC was not touched by the offset assignment.
  CHECK(Slurp(dir / SegName(0, ".log")).substr(0, 10) == expected.substr(0, 10));
}

TEST_CASE("appending a batch in a caller's buffer patches it in place like the string form") {
  TempDir dir_a, dir_b;
  auto by_string = OpenLog(dir_a.path(), SmallConfig());
  auto by_buffer = OpenLog(dir_b.path(), SmallConfig());
  for (int i = 0; i < 10; ++i) {
    std::string a = MakeBatch(3, 20, 1000 + i);
    std::string b = a;
    auto ra = by_string->Append(&a);
    auto rb = by_buffer->Append(b.data(), b.size());
    REQUIRE(ra.ok());
    REQUIRE(rb.ok());
    CHECK(rb->base_offset == Offset(3 * i));
    CHECK(rb->base_offset == ra->base_offset);
    CHECK(rb->position == ra->position);
    // baseOffset was written into the caller's bytes, as into the string.
    CHECK(b == a);
    CHECK(static_cast<int64_t>(DecodeBE64(b.data())) == 3 * i);
  }
  CHECK(ReadAllFrom(*by_buffer, 0) == ReadAllFrom(*by_string, 0));
  char junk[] = "not a batch";
  CHECK(by_buffer->Append(junk, sizeof junk).status().code() == Status::Code::kInvalidArgument);
  CHECK(by_buffer->log_end_offset() == Offset(30));
}

TEST_CASE("a read from any offset starts at the batch holding it, found through the index") {
  TempDir dir;
  LogConfig cfg = SmallConfig();
  cfg.segment_bytes = 1 << 20;
  cfg.index_interval_bytes = 150;
  auto log = OpenLog(dir.path(), cfg);
  auto spans = AppendBatches(log.get(), 80, 2, 30);
  auto segs = log->Segments();
  REQUIRE(segs.size() == 1);
  REQUIRE(log->Flush().ok());  // index entries reach the file in groups, at the latest on flush
  // The index is sparse, non-empty, and every entry names a batch start and its last offset.
  std::string idx = Slurp(dir / SegName(0, ".index"));
  REQUIRE(idx.size() % 8 == 0);
  CHECK(idx.size() / 8 > 5);
  CHECK(idx.size() / 8 < 80);
  std::string logb = Slurp(dir / SegName(0, ".log"));
  for (size_t i = 0; i < idx.size(); i += 8) {
    int32_t rel = static_cast<int32_t>(DecodeBE32(idx.data() + i));
    int32_t pos = static_cast<int32_t>(DecodeBE32(idx.data() + i + 4));
    format::BatchHeader h = format::DecodeBatchHeader(std::string_view(logb).substr(pos));
    CHECK(h.base_offset + h.last_offset_delta == rel);
  }
  for (int64_t o = 0; o < 160; ++o) {
    auto r = log->Read(Offset(o), 1, Offset(INT64_MAX), /*min_one=*/true);
    REQUIRE(r.ok());
    auto got = BatchSpans(r->ReadAll().value());
    REQUIRE(got.size() == 1);
    CHECK(got[0].base <= o);
    CHECK(got[0].last >= o);
    CHECK(r->next_offset == Offset(got[0].last + 1));
  }
}

TEST_CASE("a read stops at the byte limit and before the upper bound, whole batches only") {
  TempDir dir;
  LogConfig cfg = SmallConfig();
  cfg.segment_bytes = 1500;
  // A dense index (an entry per batch) lets reads skip header reads; a sparse one scans.
  SUBCASE("dense index") { cfg.index_interval_bytes = 0; }
  SUBCASE("sparse index") { cfg.index_interval_bytes = 4096; }
  auto log = OpenLog(dir.path(), cfg);
  AppendBatches(log.get(), 40, 2, 30);  // 2-record batches
  std::string one = MakeBatch(2, 30);
  int64_t bsize = static_cast<int64_t>(one.size());

  auto r = log->Read(Offset(0), 3 * bsize + 5, Offset(INT64_MAX));
  REQUIRE(r.ok());
  CHECK(r->total_bytes == 3 * bsize);
  CHECK(r->next_offset == Offset(6));

  r = log->Read(Offset(0), INT64_MAX, Offset(10));
  REQUIRE(r.ok());
  CHECK(BatchSpans(r->ReadAll().value()).back().last == 9);
  CHECK(r->next_offset == Offset(10));

  // Without min_one a too-small limit returns nothing; with it, one batch.
  r = log->Read(Offset(4), 10, Offset(INT64_MAX), false);
  CHECK(r->total_bytes == 0);
  r = log->Read(Offset(4), 10, Offset(INT64_MAX), true);
  CHECK(r->total_bytes == bsize);

  // Every start, limit and bound agrees with a model over the batch list.
  for (int64_t start = 0; start < 80; start += 3) {
    for (int64_t nb : {0, 1, 2, 5}) {
      for (int64_t ub : {start + 1, start + 4, start + 9, int64_t{80}}) {
        auto got = log->Read(Offset(start), nb * bsize + 3, Offset(ub));
        REQUIRE(got.ok());
        int64_t first = start / 2 * 2;  // batches hold [2k, 2k+1]
        int64_t want = 0;
        for (int64_t b = first; b + 1 < ub && b + 1 < 80 && want < std::max<int64_t>(nb, 1); b += 2) ++want;
        if (nb == 0 && want > 1) want = 1;
        auto spans = BatchSpans(got->ReadAll().value());
        CAPTURE(start);
        CAPTURE(nb);
        CAPTURE(ub);
        CHECK(static_cast<int64_t>(spans.size()) == want);
        if (!spans.empty()) {
          CHECK(spans.front().base == first);
          CHECK(got->next_offset == Offset(spans.back().last + 1));
        }
      }
    }
  }

  // Across segment boundaries, many slices, in order.
  r = log->Read(Offset(0), INT64_MAX, Offset(INT64_MAX));
  CHECK(r->slices.size() == log->Segments().size());
  CHECK(r->next_offset == Offset(80));
  CHECK(log->Read(Offset(80), 100, Offset(INT64_MAX))->total_bytes == 0);
  CHECK(log->Read(Offset(81), 100, Offset(INT64_MAX)).status().code() ==
        Status::Code::kOutOfRange);
}

TEST_CASE("offset for timestamp finds the first record at or after the time") {
  TempDir dir;
  LogConfig cfg = SmallConfig();
  cfg.index_interval_bytes = 100;
  auto log = OpenLog(dir.path(), cfg);
  // Batch i holds 4 records with timestamps 10000 + 100*i + {0, 10, 20, 30}.
  for (int i = 0; i < 30; ++i) {
    BatchSpec s;
    s.records = 4;
    s.base_timestamp = 10000 + 100 * i;
    s.timestamp_step = 10;
    std::string b = MakeBatch(s);
    REQUIRE(log->Append(&b).ok());
  }
  CHECK(log->Segments().size() > 1);
  CHECK(log->OffsetForTimestamp(0).value() == Offset(0));
  CHECK(log->OffsetForTimestamp(10000).value() == Offset(0));
  CHECK(log->OffsetForTimestamp(10001).value() == Offset(1));
  CHECK(log->OffsetForTimestamp(10030).value() == Offset(3));
  CHECK(log->OffsetForTimestamp(10031).value() == Offset(4));
  CHECK(log->OffsetForTimestamp(12520).value() == Offset(25 * 4 + 2));
  CHECK(log->OffsetForTimestamp(12900).value() == Offset(116));
  CHECK(log->OffsetForTimestamp(12930).value() == Offset(119));
  CHECK(log->OffsetForTimestamp(12931).status().IsNotFound());
}

TEST_CASE("segments roll at segment.ms and when the index is full") {
  TempDir dir;
  int64_t now = 1'000'000;
  SetFakeClockForTesting([&] { return now; });
  LogConfig cfg;
  cfg.segment_ms = 1000;
  auto log = OpenLog(dir.path(), cfg);
  BatchSpec s;
  s.base_timestamp = now;
  std::string b = MakeBatch(s);
  REQUIRE(log->Append(&b).ok());
  s.base_timestamp = now + 500;
  b = MakeBatch(s);
  REQUIRE(log->Append(&b).ok());
  CHECK(log->Segments().size() == 1);
  s.base_timestamp = now + 1001;
  b = MakeBatch(s);
  REQUIRE(log->Append(&b).ok());
  CHECK(log->Segments().size() == 2);
  CHECK(log->Segments()[1].base_offset == Offset(2));
  SetFakeClockForTesting(nullptr);

  TempDir dir2;
  LogConfig small_index;
  small_index.index_interval_bytes = 0;   // an entry for every batch after the first
  small_index.segment_index_bytes = 8 * 4;
  auto log2 = OpenLog(dir2.path(), small_index);
  for (int i = 0; i < 12; ++i) {
    std::string same_ts = MakeBatch(1, 10, 1000);  // the time index gets one entry only
    REQUIRE(log2->Append(&same_ts).ok());
  }
  auto segs = log2->Segments();
  REQUIRE(segs.size() >= 2);
  CHECK(segs[0].next_offset == Offset(5));  // 4 index entries + the unindexed first batch
  // With growing timestamps the time index (12-byte entries: 2 fit) fills first.
  TempDir dir3;
  auto log3 = OpenLog(dir3.path(), small_index);
  AppendBatches(log3.get(), 12, 1);
  CHECK(log3->Segments()[0].next_offset == Offset(3));
}

TEST_CASE("message.timestamp.type=LogAppendTime stamps the batch and keeps its CRC valid") {
  TempDir dir;
  int64_t now = 5'000'000;
  SetFakeClockForTesting([&] { return now; });
  LogConfig cfg;
  REQUIRE(cfg.Set("message.timestamp.type", "LogAppendTime").ok());
  auto log = OpenLog(dir.path(), cfg);
  std::string b = MakeBatch(3, 10, 42);
  auto r = log->Append(&b);
  SetFakeClockForTesting(nullptr);
  REQUIRE(r.ok());
  CHECK(r->log_append_time == now);
  std::string all = ReadAllFrom(*log, 0);
  format::BatchHeader h;
  REQUIRE(format::CheckBatchFraming(all, {}, &h).ok());
  CHECK(h.max_timestamp == now);
  CHECK(h.log_append_time());
}

TEST_CASE("a batch above max.message.bytes is refused and the log is unchanged") {
  TempDir dir;
  LogConfig cfg;
  cfg.max_message_bytes = 200;
  auto log = OpenLog(dir.path(), cfg);
  std::string b = MakeBatch(1, 500);
  CHECK(log->Append(&b).status().IsTooLarge());
  CHECK(log->log_end_offset() == Offset(0));
  std::string junk = "not a batch";
  CHECK(log->Append(&junk).status().code() == Status::Code::kInvalidArgument);
}

TEST_CASE("retention by time deletes whole closed segments but never the active one") {
  TempDir dir;
  int64_t now = 100'000'000;
  SetFakeClockForTesting([&] { return now; });
  LogConfig cfg = SmallConfig();
  cfg.segment_bytes = 800;
  cfg.retention_ms = 10'000;
  auto log = OpenLog(dir.path(), cfg);
  AppendBatches(log.get(), 20, 3, 20, now - 50'000);  // old records
  AppendBatches(log.get(), 20, 3, 20, now);           // fresh records
  size_t before = log->Segments().size();
  REQUIRE(before > 3);
  auto n = log->ApplyRetention();
  REQUIRE(n.ok());
  CHECK(n.value() > 0);
  auto segs = log->Segments();
  CHECK(segs.size() == before - static_cast<size_t>(n.value()));
  for (const SegmentInfo& s : segs) CHECK(s.largest_timestamp >= now - 10'000);
  CHECK(log->log_start_offset() == segs.front().base_offset);
  CHECK(!PathExists(dir / SegName(0, ".log")));
  CHECK(!PathExists(dir / SegName(0, ".index")));
  // Reading below the new start is out of range; from it, everything is there.
  CHECK(log->Read(Offset(0), 100, Offset(INT64_MAX)).status().code() ==
        Status::Code::kOutOfRange);
  CHECK(BatchSpans(ReadAllFrom(*log, log->log_start_offset().value())).back().last == 119);

  // Everything expired: all closed segments go, the active one stays.
  now += 1'000'000;
  REQUIRE(log->ApplyRetention().ok());
  CHECK(log->Segments().size() == 1);
  CHECK(log->log_end_offset() == Offset(120));
  SetFakeClockForTesting(nullptr);
}

TEST_CASE("retention by bytes keeps the newest segments within retention.bytes") {
  TempDir dir;
  LogConfig cfg = SmallConfig();
  cfg.retention_ms = -1;
  cfg.retention_bytes = 5000;
  auto log = OpenLog(dir.path(), cfg);
  AppendBatches(log.get(), 100, 3, 20);
  REQUIRE(log->size_bytes() > 5000);
  auto n = log->ApplyRetention();
  REQUIRE(n.ok());
  CHECK(n.value() > 0);
  // Kafka's rule: a segment goes only if what remains is still at least retention.bytes.
  CHECK(log->size_bytes() >= 5000);
  int64_t first = log->Segments().front().size_bytes;
  CHECK(log->size_bytes() - first < 5000);
  CHECK(log->ApplyRetention().value() == 0);
}

TEST_CASE("a segment retention cannot remove stays in the log, readable, and goes later") {
  TempDir dir;
  LogConfig cfg = SmallConfig();
  cfg.retention_ms = -1;
  cfg.retention_bytes = 5000;
  auto log = OpenLog(dir.path(), cfg);
  AppendBatches(log.get(), 100, 3, 20);
  const std::vector<SegmentInfo> before = log->Segments();
  REQUIRE(before.size() > 3);
  const std::string from_second = ReadAllFrom(*log, before[1].base_offset.value());
  REQUIRE_FALSE(from_second.empty());
  // The second-oldest segment's .log cannot be unlinked (a directory stands at its path; the
  // log keeps reading the file through its open descriptor).
  const std::string second = before[1].log_path;
  REQUIRE(RenameFile(second, second + ".moved").ok());
  REQUIRE(CreateDirs(second + "/blocker").ok());
  auto n = log->ApplyRetention();
  CHECK_FALSE(n.ok());
  // The oldest went; the second and everything after it are back in the list, readable.
  const std::vector<SegmentInfo> after = log->Segments();
  REQUIRE(after.size() == before.size() - 1);
  CHECK(after.front().base_offset == before[1].base_offset);
  CHECK(log->log_start_offset() == before[1].base_offset);
  CHECK(ReadAllFrom(*log, before[1].base_offset.value()) == from_second);
  // Once the path can be removed, the next pass takes it.
  REQUIRE(RemoveAll(second).ok());
  REQUIRE(RenameFile(second + ".moved", second).ok());
  auto again = log->ApplyRetention();
  REQUIRE(again.ok());
  CHECK(again.value() > 0);
  CHECK(log->Segments().front().base_offset > before[1].base_offset);
}

TEST_CASE("cleanup.policy=compact alone turns off time and size retention") {
  TempDir dir;
  LogConfig cfg = SmallConfig();
  REQUIRE(cfg.Set("cleanup.policy", "compact").ok());
  cfg.retention_bytes = 0;
  cfg.retention_ms = 0;
  auto log = OpenLog(dir.path(), cfg);
  AppendBatches(log.get(), 40, 3, 20, 1);
  REQUIRE(log->Segments().size() > 1);
  CHECK(log->ApplyRetention().value() == 0);
  REQUIRE(cfg.Set("cleanup.policy", "compact,delete").ok());
  log->UpdateConfig(cfg);
  CHECK(log->ApplyRetention().value() > 0);
}

TEST_CASE("a read result keeps a deleted segment's bytes readable") {
  TempDir dir;
  LogConfig cfg = SmallConfig();
  cfg.retention_bytes = 0;
  auto log = OpenLog(dir.path(), cfg);
  AppendBatches(log.get(), 40, 3, 20);
  auto r = log->Read(Offset(0), INT64_MAX, Offset(INT64_MAX));
  REQUIRE(r.ok());
  REQUIRE(log->ApplyRetention().value() > 0);
  CHECK(!PathExists(dir / SegName(0, ".log")));
  auto bytes = r->ReadAll();
  REQUIRE(bytes.ok());
  CHECK(BatchSpans(bytes.value()).size() == 40);
}

TEST_CASE("advancing the log start hides records below it and deletes whole segments") {
  TempDir dir;
  auto log = OpenLog(dir.path(), SmallConfig());
  AppendBatches(log.get(), 60, 3, 20);
  auto segs = log->Segments();
  REQUIRE(segs.size() > 3);
  Offset mid = segs[2].base_offset + 1;
  REQUIRE(log->AdvanceLogStart(mid).ok());
  CHECK(log->log_start_offset() == mid);
  CHECK(log->Segments().front().base_offset == segs[2].base_offset);
  CHECK(!PathExists(segs[0].log_path));
  CHECK(!PathExists(segs[1].log_path));
  CHECK(log->Read(mid - 1, 100, Offset(INT64_MAX)).status().code() ==
        Status::Code::kOutOfRange);
  auto r = log->Read(mid, 1, Offset(INT64_MAX));
  REQUIRE(r.ok());
  CHECK(BatchSpans(r->ReadAll().value())[0].last >= mid.value());
  CHECK(log->AdvanceLogStart(Offset(10'000)).code() == Status::Code::kOutOfRange);
  CHECK(log->AdvanceLogStart(Offset(1)).ok());  // backwards: no-op
  CHECK(log->log_start_offset() == mid);
  // Up to the end: only an empty active segment remains, appends continue.
  REQUIRE(log->AdvanceLogStart(Offset(180)).ok());
  CHECK(log->Segments().size() == 1);
  CHECK(log->size_bytes() == 0);
  auto more = AppendBatches(log.get(), 1, 1);
  CHECK(more[0].base == 180);
  // The start survives a reopen through the data dir's checkpoint.
  REQUIRE(log->Close().ok());
  PartitionLog::OpenOptions o;
  o.log_start_offset = 180;
  auto again = OpenLog(dir.path(), SmallConfig(), o);
  CHECK(again->log_start_offset() == Offset(180));
  CHECK(again->log_end_offset() == Offset(181));
}

TEST_CASE("truncation drops every record at and after the offset, across segments") {
  TempDir dir;
  auto log = OpenLog(dir.path(), SmallConfig());
  AppendBatches(log.get(), 60, 3, 20);
  size_t segs_before = log->Segments().size();
  REQUIRE(log->TruncateTo(Offset(90)).ok());
  CHECK(log->log_end_offset() == Offset(90));
  CHECK(log->Segments().size() < segs_before);
  CHECK(BatchSpans(ReadAllFrom(*log, 0)).back().last == 89);
  // A truncation point inside a batch drops the whole batch.
  REQUIRE(log->TruncateTo(Offset(44)).ok());
  CHECK(log->log_end_offset() == Offset(42));
  // Appends continue from the new end, and lookups stay right after a reopen.
  auto spans = AppendBatches(log.get(), 10, 3, 20);
  CHECK(spans[0].base == 42);
  REQUIRE(log->Close().ok());
  log = OpenLog(dir.path(), SmallConfig());
  CHECK(log->log_end_offset() == Offset(72));
  auto all = BatchSpans(ReadAllFrom(*log, 0));
  for (size_t i = 0; i < all.size(); ++i) CHECK(all[i].base == static_cast<int64_t>(3 * i));
  REQUIRE(log->TruncateTo(Offset(0)).ok());
  CHECK(log->log_end_offset() == Offset(0));
  CHECK(log->size_bytes() == 0);
}

TEST_CASE("flush.messages fsyncs and advances the recovery point") {
  TempDir dir;
  LogConfig cfg;
  cfg.flush_messages = 10;
  auto log = OpenLog(dir.path(), cfg);
  AppendBatches(log.get(), 3, 3);
  CHECK(log->recovery_point() == Offset(0));
  AppendBatches(log.get(), 1, 3);  // 12 messages
  CHECK(log->recovery_point() == Offset(12));
  AppendBatches(log.get(), 1, 3);
  CHECK(log->recovery_point() == Offset(12));
  REQUIRE(log->Flush().ok());
  CHECK(log->recovery_point() == Offset(15));
}

TEST_CASE("flush.ms flushes once the interval has passed") {
  TempDir dir;
  int64_t now = 1'000'000;
  SetFakeClockForTesting([&] { return now; });
  LogConfig cfg;
  cfg.flush_ms = 100;
  auto log = OpenLog(dir.path(), cfg);
  AppendBatches(log.get(), 1, 2);
  CHECK(log->recovery_point() == Offset(0));
  now += 50;
  REQUIRE(log->MaybeFlush().ok());
  CHECK(log->recovery_point() == Offset(0));
  now += 60;
  REQUIRE(log->MaybeFlush().ok());
  CHECK(log->recovery_point() == Offset(2));
  AppendBatches(log.get(), 1, 2);
  now += 200;
  AppendBatches(log.get(), 1, 2);  // the append itself notices the interval
  CHECK(log->recovery_point() == Offset(6));
  SetFakeClockForTesting(nullptr);
}

TEST_CASE("append with offsets keeps the given offsets, allows gaps and refuses going back") {
  TempDir dir;
  auto log = OpenLog(dir.path(), SmallConfig());
  BatchSpec s;
  s.base_offset = 5;
  s.records = 3;
  std::string two = MakeBatch(s);
  s.base_offset = 20;
  two += MakeBatch(s);
  auto r = log->AppendWithOffsets(two);
  REQUIRE(r.ok());
  CHECK(r->base_offset == Offset(5));
  CHECK(r->last_offset == Offset(22));
  CHECK(log->log_end_offset() == Offset(23));
  // An empty log starts where the first batch given to it does.
  CHECK(log->log_start_offset() == Offset(5));
  CHECK(log->Segments().front().base_offset == Offset(5));
  CHECK(!PathExists(dir / SegName(0, ".log")));
  CHECK(ReadAllFrom(*log, 5) == two);
  s.base_offset = 22;
  std::string back = MakeBatch(s);
  CHECK(log->AppendWithOffsets(back).status().code() == Status::Code::kInvalidArgument);
  std::string bad = MakeBatch(s);
  bad[40] ^= 1;
  CHECK(log->AppendWithOffsets(bad).status().IsCorruption());
  CHECK(log->log_end_offset() == Offset(23));
  // A huge gap starts a new segment so that relative offsets fit in 32 bits.
  s.base_offset = 23 + (1LL << 32);
  std::string far = MakeBatch(s);
  REQUIRE(log->AppendWithOffsets(far).ok());
  CHECK(log->Segments().back().base_offset == Offset(s.base_offset));
}

namespace {

// Flips the lowest bit of the byte at `at` of `file`.
void FlipByte(const std::string& file, int64_t at) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(at);
  char c = 0;
  f.read(&c, 1);
  c ^= 1;
  f.seekp(at);
  f.write(&c, 1);
  REQUIRE(f.good());
}

}  // namespace

TEST_CASE(
    "batches copied from another log's files land byte for byte, indexed, rolling "
    "segments as appends do") {
  TempDir src_dir, dst_dir;
  auto src = OpenLog(src_dir.path(), LogConfig{});
  AppendBatches(src.get(), 40, 5);
  auto dst = OpenLog(dst_dir.path(), SmallConfig());
  auto r = src->Read(Offset(0), INT64_MAX, Offset(INT64_MAX));
  REQUIRE(r.ok());
  int64_t batches = 0, records = 0;
  auto a = dst->AppendCopiedWithOffsets(r->slices, &batches, &records);
  REQUIRE_MESSAGE(a.ok(), a.status().ToString());
  CHECK(batches == 40);
  CHECK(records == 200);
  CHECK(a->base_offset == Offset(0));
  CHECK(a->last_offset == Offset(199));
  CHECK(dst->log_end_offset() == Offset(200));
  CHECK(ReadAllFrom(*dst, 0) == ReadAllFrom(*src, 0));
  CHECK(dst->Segments().size() > 3);
  for (const SegmentInfo& s : dst->Segments()) CHECK(s.size_bytes <= 2000);
  // Reads from the middle find their batch through the indexes.
  CHECK(ReadAllFrom(*dst, 101) == ReadAllFrom(*src, 101));
  CHECK(*dst->OffsetForTimestamp(1020) == *src->OffsetForTimestamp(1020));
  // More batches later continue the copy; a copy below the log end is refused.
  AppendBatches(src.get(), 3, 5, 20, 2000);
  auto more = src->Read(Offset(200), INT64_MAX, Offset(INT64_MAX));
  REQUIRE(more.ok());
  REQUIRE(dst->AppendCopiedWithOffsets(more->slices, &batches, &records).ok());
  CHECK(batches == 3);
  CHECK(dst->AppendCopiedWithOffsets(more->slices, nullptr, nullptr).status().code() ==
        Status::Code::kInvalidArgument);
  // A full scan after a reopen finds the same log.
  std::string before = ReadAllFrom(*dst, 0);
  REQUIRE(dst->Close().ok());
  dst.reset();
  auto again = OpenLog(dst_dir.path(), SmallConfig());
  CHECK(again->log_end_offset() == Offset(215));
  CHECK(ReadAllFrom(*again, 0) == before);
  CHECK(before == ReadAllFrom(*src, 0));
}

TEST_CASE("a copied batch that fails its check where it landed is not appended") {
  TempDir src_dir, dst_dir;
  auto src = OpenLog(src_dir.path(), LogConfig{});
  AppendBatches(src.get(), 3, 5);
  auto one = src->Read(Offset(0), 1, Offset(INT64_MAX));  // the first batch alone
  REQUIRE(one.ok());
  const int64_t first_size = one->total_bytes;
  // One bit of the second batch's records flipped in the source file.
  FlipByte(src_dir / SegName(0, ".log"), first_size + 70);
  auto dst = OpenLog(dst_dir.path(), LogConfig{});
  auto r = src->Read(Offset(0), INT64_MAX, Offset(INT64_MAX));
  REQUIRE(r.ok());
  auto a = dst->AppendCopiedWithOffsets(r->slices, nullptr, nullptr);
  CHECK(a.status().IsCorruption());
  CHECK(a.status().ToString().find("copied batch at byte " + std::to_string(first_size)) !=
        std::string::npos);
  CHECK(dst->log_end_offset() == Offset(0));
  CHECK(ReadAllFrom(*dst, 0).empty());
  // Nothing staged stays behind in the file.
  CHECK(std::filesystem::file_size(dst_dir / SegName(0, ".log")) == 0);
  // A first batch without a valid header decides nothing (no roll, no new log start).
  {
    std::fstream f(src_dir / SegName(0, ".log"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(16);  // magic
    f.put(1);
  }
  a = dst->AppendCopiedWithOffsets(r->slices, nullptr, nullptr);
  CHECK(a.status().IsCorruption());
  CHECK(dst->Segments().size() == 1);
  CHECK(dst->log_end_offset() == Offset(0));
}

TEST_CASE(
    "a copy of several MiB, checked a piece at a time, lands whole and byte for byte, or, with "
    "a damaged batch deep inside, not at all") {
  TempDir src_dir, dst_dir;
  auto src = OpenLog(src_dir.path(), LogConfig{});
  AppendBatches(src.get(), 400, 10, 2000);  // about 8 MiB in batches of about 20 KiB
  auto r = src->Read(Offset(0), INT64_MAX, Offset(INT64_MAX));
  REQUIRE(r.ok());
  REQUIRE(r->total_bytes > (6 << 20));
  {
    auto dst = OpenLog(dst_dir.path(), LogConfig{});
    int64_t batches = 0, records = 0;
    auto a = dst->AppendCopiedWithOffsets(r->slices, &batches, &records);
    REQUIRE_MESSAGE(a.ok(), a.status().ToString());
    CHECK(batches == 400);
    CHECK(records == 4000);
    CHECK(dst->log_end_offset() == Offset(4000));
    CHECK(ReadAllFrom(*dst, 0) == ReadAllFrom(*src, 0));
  }
  // One byte of a batch about 5 MiB in flipped in the source file.
  auto mid = src->Read(Offset(2500), 1, Offset(INT64_MAX));
  REQUIRE(mid.ok());
  const int64_t at = mid->slices.front().position + 100;
  FlipByte(src_dir / SegName(0, ".log"), at);
  TempDir dst2_dir;
  auto dst2 = OpenLog(dst2_dir.path(), LogConfig{});
  auto a = dst2->AppendCopiedWithOffsets(r->slices, nullptr, nullptr);
  CHECK(a.status().IsCorruption());
  CHECK(a.status().ToString().find("copied batch at byte " +
                                   std::to_string(mid->slices.front().position)) !=
        std::string::npos);
  CHECK(dst2->log_end_offset() == Offset(0));
  CHECK(std::filesystem::file_size(dst2_dir / SegName(0, ".log")) == 0);
}

namespace {

// A one-record batch of exactly `size` bytes (at least 8300: past that its length fields keep
// their width).
std::string BatchOfSize(int64_t size) {
  for (size_t v = static_cast<size_t>(size) - 80; v < static_cast<size_t>(size); ++v) {
    std::string b = MakeBatch(1, v);
    if (static_cast<int64_t>(b.size()) == size) return b;
  }
  FAIL("no batch of " << size << " bytes");
  return {};
}

}  // namespace

TEST_CASE(
    "a copy is checked as it streams by: batches larger than a read-back piece and headers cut "
    "by a piece's end are checked whole, and damage in either is found") {
  // The copy is read back a fixed piece at a time (a power of two of 64 KiB or more): a batch
  // header is made to start just before each multiple of 64 KiB from 448 KiB to 1.9 MiB, so
  // that a piece's end cuts it after 1, 17, 30 or 60 bytes, just after it or just before it,
  // after a batch of 400 KiB and before one of 300 KiB.
  TempDir src_dir;
  auto src = OpenLog(src_dir.path(), LogConfig{});
  const int64_t kBoundary = 64 << 10;
  const int64_t cuts[] = {1, 17, 30, 60, 61, 62};
  int64_t pos = 0;
  std::vector<int64_t> starts;
  auto append = [&](int64_t size) {
    std::string b = BatchOfSize(size);
    REQUIRE(src->Append(&b).ok());
    starts.push_back(pos);
    pos += size;
  };
  append(400 << 10);  // over several pieces
  for (int j = 7; j <= 30; ++j) {
    const int64_t target = j * kBoundary - cuts[(j / 2) % 6];
    while (target - pos >= 2 * 40000) append(40000);
    append(target - pos);
    REQUIRE(pos == target);
  }
  append(300 << 10);
  auto r = src->Read(Offset(0), INT64_MAX, Offset(INT64_MAX));
  REQUIRE(r.ok());
  REQUIRE(r->total_bytes == pos);
  {
    TempDir dst_dir;
    auto dst = OpenLog(dst_dir.path(), LogConfig{});
    int64_t batches = 0;
    auto a = dst->AppendCopiedWithOffsets(r->slices, &batches, nullptr);
    REQUIRE_MESSAGE(a.ok(), a.status().ToString());
    CHECK(batches == static_cast<int64_t>(starts.size()));
    CHECK(ReadAllFrom(*dst, 0) == ReadAllFrom(*src, 0));
  }
  // A flipped byte: 200 KiB into the last batch (past its first piece), or in the part of a
  // header that comes after a piece's end.
  const int64_t last = starts.back();
  int64_t cut_header = -1;
  for (int64_t s : starts)
    if (s % (2 * kBoundary) >= 2 * kBoundary - 40 && s % (2 * kBoundary) <= 2 * kBoundary - 17)
      cut_header = s;
  REQUIRE(cut_header > 0);
  for (auto cut : {std::pair{last + (200 << 10), last}, std::pair{cut_header + 40, cut_header}}) {
    const int64_t at = cut.first;  // not a binding: CAPTURE takes it into a lambda
    const int64_t batch = cut.second;
    CAPTURE(at);
    FlipByte(src_dir / SegName(0, ".log"), at);
    TempDir dst_dir;
    auto dst = OpenLog(dst_dir.path(), LogConfig{});
    auto a = dst->AppendCopiedWithOffsets(r->slices, nullptr, nullptr);
    CHECK(a.status().IsCorruption());
    CHECK(a.status().ToString().find("copied batch at byte " + std::to_string(batch) + ":") !=
          std::string::npos);
    CHECK(dst->log_end_offset() == Offset(0));
    CHECK(std::filesystem::file_size(dst_dir / SegName(0, ".log")) == 0);
    FlipByte(src_dir / SegName(0, ".log"), at);  // put back
  }
}

TEST_CASE("leader epochs are recorded, checkpointed, truncated and answered") {
  TempDir dir;
  auto log = OpenLog(dir.path(), LogConfig{});
  std::string b = MakeBatch(2);
  REQUIRE(log->Append(&b, 0).ok());
  b = MakeBatch(2);
  REQUIRE(log->Append(&b, 0).ok());
  b = MakeBatch(2);
  REQUIRE(log->Append(&b, 3).ok());
  // The checkpoint is written by the flush (appends only record the epochs in memory).
  CHECK(!PathExists(dir / "leader-epoch-checkpoint"));
  REQUIRE(log->Flush().ok());
  CHECK(Slurp(dir / "leader-epoch-checkpoint") == "0\n2\n0 0\n3 4\n");
  CHECK(log->EndOffsetForEpoch(0)->start_offset == Offset(4));
  CHECK(log->EndOffsetForEpoch(2)->epoch == 0);
  CHECK(log->EndOffsetForEpoch(3)->start_offset == Offset(6));
  REQUIRE(log->TruncateTo(Offset(4)).ok());
  CHECK(Slurp(dir / "leader-epoch-checkpoint") == "0\n1\n0 0\n");
  REQUIRE(log->Close().ok());
  auto again = OpenLog(dir.path(), LogConfig{});
  REQUIRE(again->LeaderEpochs().size() == 1);
  CHECK(again->LeaderEpochs()[0].epoch == 0);
}

TEST_CASE("readers see whole batches only while a writer appends and rolls") {
  TempDir dir;
  LogConfig cfg = SmallConfig();
  cfg.retention_bytes = 20'000;
  auto log = OpenLog(dir.path(), cfg);
  std::atomic<bool> stop{false};
  std::atomic<int64_t> reads{0};
  std::atomic<int> bad{0};
  std::thread reader([&] {
    while (!stop.load()) {
      Offset start = log->log_start_offset();
      auto r = log->Read(start, 4000, Offset(INT64_MAX));
      if (!r.ok()) {
        // Retention may move the start between the two calls.
        if (r.status().code() != Status::Code::kOutOfRange) ++bad;
        continue;
      }
      auto bytes = r->ReadAll();
      if (!bytes.ok()) continue;
      std::string_view v = bytes.value();
      int64_t expect = -1;
      while (!v.empty()) {
        format::BatchHeader h;
        if (!format::CheckBatchFraming(v, {}, &h).ok() ||
            (expect >= 0 && h.base_offset != expect)) {
          ++bad;
          break;
        }
        expect = h.base_offset + h.last_offset_delta + 1;
        v.remove_prefix(static_cast<size_t>(h.size()));
      }
      ++reads;
    }
  });
  for (int i = 0; i < 600; ++i) {
    std::string b = MakeBatch(3, 20);
    REQUIRE(log->Append(&b).ok());
    if (i % 50 == 0) REQUIRE(log->ApplyRetention().ok());
  }
  stop = true;
  reader.join();
  CHECK(bad.load() == 0);
  CHECK(reads.load() > 0);
  CHECK(log->log_end_offset() == Offset(1800));
}

TEST_CASE("the append listener hears the new log end after each append") {
  TempDir dir;
  auto log = OpenLog(dir.path(), LogConfig{});
  std::vector<int64_t> heard;
  log->SetAppendListener([&](Offset end) { heard.push_back(end.value()); });
  AppendBatches(log.get(), 3, 2);
  std::string two = MakeBatch(BatchSpec{6, 1});
  REQUIRE(log->AppendWithOffsets(two).ok());
  CHECK(heard == std::vector<int64_t>{2, 4, 6, 7});
}

TEST_CASE("Roll starts a new segment at the log end, and not twice for an empty one") {
  TempDir dir;
  auto log = OpenLog(dir.path(), LogConfig{});
  AppendBatches(log.get(), 2, 2);
  REQUIRE(log->Roll().ok());
  REQUIRE(log->Roll().ok());
  auto segs = log->Segments();
  REQUIRE(segs.size() == 2);
  CHECK(segs[1].base_offset == Offset(4));
  CHECK(segs[0].next_offset == Offset(4));
  CHECK(PathExists(dir / SegName(4, ".log")));
  AppendBatches(log.get(), 1, 2);
  CHECK(log->Segments().back().size_bytes > 0);
}

TEST_CASE("a log's first flush of data writes its leader-epoch checkpoint, even with no epochs") {
  TempDir dir;
  auto log = OpenLog(dir.path(), LogConfig{});
  REQUIRE(log->Flush().ok());  // nothing yet: no file
  CHECK(!PathExists(dir / "leader-epoch-checkpoint"));
  std::string b = MakeBatch(2);
  REQUIRE(log->Append(&b).ok());  // no leader epoch
  REQUIRE(log->Flush().ok());
  CHECK(Slurp(dir / "leader-epoch-checkpoint") == "0\n0\n");
  // A log that lost it gets it back from its next writable open.
  REQUIRE(log->Close().ok());
  REQUIRE(RemoveFile(dir / "leader-epoch-checkpoint").ok());
  PartitionLog::OpenOptions o;
  o.clean_shutdown = true;
  o.recovery_point = 2;
  auto again = PartitionLog::Open(dir.path(), LogConfig{}, o);
  REQUIRE(again.ok());
  CHECK(Slurp(dir / "leader-epoch-checkpoint") == "0\n0\n");
}
