// Log compaction: what survives a cleaning pass, offsets, tombstones, codecs, the swap protocol
// and its crash recovery, concurrency with appends, the background loop, and a Kafka fixture.
#include "storage/log_cleaner.h"

#include <doctest/doctest.h>

#include <atomic>
#include <map>
#include <optional>
#include <thread>

#include "base/clock.h"
#include "base/random.h"
#include "format/record_batch.h"
#include "storage/data_dir.h"
#include "storage/partition_log.h"
#include "storage/segment.h"
#include "storage/test_util.h"
#include "fixture_skip.h"

using namespace silt;
using namespace silt::storage;
using namespace silt::storage::testing;
using format::Compression;

namespace {

using KV = std::pair<std::string, std::optional<std::string>>;

// prefix + decimal number (spelled out because GCC 12 warns falsely on "literal" + std::string).
std::string Cat(const char* prefix, int64_t n) {
  std::string s(prefix);
  s += std::to_string(n);
  return s;
}

LogConfig CompactConfig() {
  LogConfig c;
  c.cleanup_policy = "compact";
  c.index_interval_bytes = 64;
  c.delete_retention_ms = 10'000;
  return c;
}

std::unique_ptr<PartitionLog> OpenLog(const std::string& dir, const LogConfig& cfg,
                                      bool read_only = false) {
  PartitionLog::OpenOptions o;
  o.read_only = read_only;
  auto r = PartitionLog::Open(dir, cfg, o);
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  return std::move(r).value();
}

struct BatchOpts {
  Compression codec = Compression::kNone;
  int64_t ts = 1000;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t base_sequence = -1;
};

std::string KeyedBatch(const std::vector<KV>& kvs, const BatchOpts& bo = {}) {
  format::RecordBatchBuilder::Options o;
  o.compression = bo.codec;
  o.producer_id = bo.producer_id;
  o.producer_epoch = bo.producer_epoch;
  o.base_sequence = bo.base_sequence;
  format::RecordBatchBuilder b(o);
  int64_t ts = bo.ts;
  for (const auto& [k, v] : kvs)
    b.Add(k, v ? std::optional<std::string_view>(*v) : std::nullopt, ts++);
  auto r = b.Finish();
  REQUIRE(r.ok());
  return r.value();
}

Offset Append(PartitionLog* log, const std::vector<KV>& kvs, const BatchOpts& bo = {}) {
  std::string b = KeyedBatch(kvs, bo);
  auto r = log->Append(&b);
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  return r->base_offset;
}

// Every batch of the log, from its start.
std::vector<std::string> AllBatches(const PartitionLog& log) {
  auto r = log.Read(log.log_start_offset(), INT64_MAX, Offset(INT64_MAX));
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  auto bytes = r->ReadAll();
  REQUIRE(bytes.ok());
  std::vector<std::string> out;
  std::string_view rest = bytes.value();
  while (!rest.empty()) {
    auto v = format::RecordBatchView::Parse(rest);
    REQUIRE_MESSAGE(v.ok(), v.status().ToString());
    out.emplace_back(v->bytes());
    rest.remove_prefix(v->bytes().size());
  }
  return out;
}

std::vector<format::Record> AllRecords(const PartitionLog& log) {
  std::vector<format::Record> out;
  for (const std::string& b : AllBatches(log)) {
    auto v = format::RecordBatchView::Parse(b);
    REQUIRE(v.ok());
    if (v->header().control()) continue;
    auto recs = v->Records();
    REQUIRE_MESSAGE(recs.ok(), recs.status().ToString());
    for (auto& r : recs.value()) out.push_back(std::move(r));
  }
  return out;
}

// key -> the last record written for it.
std::map<std::string, format::Record> LastByKey(const std::vector<format::Record>& recs) {
  std::map<std::string, format::Record> m;
  for (const auto& r : recs)
    if (r.key) m[*r.key] = r;
  return m;
}

bool SameRecord(const format::Record& a, const format::Record& b) {
  if (a.offset != b.offset || a.timestamp != b.timestamp || a.key != b.key ||
      a.value != b.value || a.headers.size() != b.headers.size())
    return false;
  for (size_t i = 0; i < a.headers.size(); ++i)
    if (a.headers[i].key != b.headers[i].key || a.headers[i].value != b.headers[i].value)
      return false;
  return true;
}

CleanStats Clean(LogCleaner& cleaner, PartitionLog* log, int64_t now = 1'000'000) {
  auto r = cleaner.CleanPartitionOnce(log, now);
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  return r.value();
}

void CopyDir(const std::string& from, const std::string& to) {
  REQUIRE(CreateDirs(to).ok());
  auto names = ListDir(from);
  REQUIRE(names.ok());
  for (const std::string& n : names.value()) WriteBytes(JoinPath(to, n), Slurp(JoinPath(from, n)));
}

bool HasFileEndingWith(const std::string& dir, std::string_view suffix) {
  auto names = ListDir(dir);
  REQUIRE(names.ok());
  for (const std::string& n : names.value())
    if (n.size() >= suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(),
                                               suffix.data(), suffix.size()) == 0)
      return true;
  return false;
}

// Ten keys written five times over, in batches of four records across several segments,
// every segment closed. Returns the records as written.
std::vector<format::Record> WriteRounds(PartitionLog* log, int rounds = 5) {
  int n = 0;
  std::vector<KV> pending;
  for (int round = 0; round < rounds; ++round) {
    for (int k = 0; k < 10; ++k) {
      pending.push_back({Cat("key-", k), Cat("value-", round)});
      if (pending.size() == 4) {
        Append(log, pending);
        pending.clear();
        if (++n % 3 == 0) REQUIRE(log->Roll().ok());
      }
    }
  }
  if (!pending.empty()) Append(log, pending);
  REQUIRE(log->Roll().ok());
  return AllRecords(*log);
}

}  // namespace

TEST_CASE("compaction keeps the last record of every key at its original offset") {
  TempDir tmp;
  auto log = OpenLog(tmp / "t-0", CompactConfig());
  std::vector<format::Record> before = WriteRounds(log.get());
  auto expected = LastByKey(before);
  Offset end = log->log_end_offset();
  size_t segments_before = log->Segments().size();

  LogCleaner cleaner(tmp.path());
  CleanStats st = Clean(cleaner, log.get());
  CHECK(st.cleaned);
  CHECK(st.records_read == 50);
  CHECK(st.records_kept == 10);
  CHECK(st.end_offset == end);

  std::vector<format::Record> after = AllRecords(*log);
  REQUIRE(after.size() == expected.size());
  for (const auto& r : after) {
    REQUIRE(r.key);
    CHECK(SameRecord(r, expected.at(*r.key)));
  }
  CHECK(log->log_end_offset() == end);
  // The small segments were merged into one.
  CHECK(log->Segments().size() < segments_before);
  CHECK(log->Segments().size() == 2);
  CHECK_FALSE(HasFileEndingWith(log->dir(), ".deleted"));
  CHECK_FALSE(HasFileEndingWith(log->dir(), ".cleaned"));
  CHECK_FALSE(HasFileEndingWith(log->dir(), ".swap"));

  // And so it stays after a reopen: same records, same log end.
  REQUIRE(log->Close().ok());
  log = OpenLog(tmp / "t-0", CompactConfig());
  CHECK(log->log_end_offset() == end);
  std::vector<format::Record> reopened = AllRecords(*log);
  REQUIRE(reopened.size() == after.size());
  for (size_t i = 0; i < after.size(); ++i) CHECK(SameRecord(reopened[i], after[i]));
  // Reads from any offset of the compacted range land on the next surviving record.
  for (int64_t o = 0; o < end.value(); ++o) {
    auto r = log->Read(Offset(o), 1, Offset(INT64_MAX));
    REQUIRE(r.ok());
    CHECK(r->total_bytes > 0);
  }
}

TEST_CASE("the log end offset survives cleaning when the last batch loses all its records") {
  TempDir tmp;
  int64_t now = 5'000'000;
  SetFakeClockForTesting([&] { return now; });
  std::string dir = tmp / "t-0";
  auto log = OpenLog(dir, CompactConfig());
  Append(log.get(), {{"a", "1"}, {"b", "1"}});
  Append(log.get(), {{"a", std::nullopt}, {"b", std::nullopt}});  // the log's last batch
  REQUIRE(log->Roll().ok());
  Offset end = log->log_end_offset();
  LogCleaner cleaner(tmp.path());
  Clean(cleaner, log.get(), now);
  Clean(cleaner, log.get(), now + 10'000);  // both tombstones expire
  CHECK(AllRecords(*log).empty());
  // The last batch stays, empty, still ending at the old last offset.
  auto batches = AllBatches(*log);
  REQUIRE(batches.size() == 1);
  format::BatchHeader h = format::DecodeBatchHeader(batches[0]);
  CHECK(h.records_count == 0);
  CHECK(h.base_offset == 2);
  CHECK(h.last().value() == end.value() - 1);
  CHECK(log->log_end_offset() == end);
  REQUIRE(log->Close().ok());
  // Even without the (empty) active segment the reopened log ends where it did.
  REQUIRE(RemoveFile(JoinPath(dir, SegName(end.value(), ".log"))).ok());
  log = OpenLog(dir, CompactConfig());
  CHECK(log->log_end_offset() == end);
  SetFakeClockForTesting(nullptr);
}

TEST_CASE("each group of segments keeps its last batch, empty if need be") {
  TempDir tmp;
  LogConfig cfg = CompactConfig();
  cfg.segment_bytes = 100;  // no two segments fit together
  auto log = OpenLog(tmp / "t-0", cfg);
  Append(log.get(), {{"a", "1"}});
  REQUIRE(log->Roll().ok());
  Append(log.get(), {{"a", "2"}});
  REQUIRE(log->Roll().ok());
  LogCleaner cleaner(tmp.path());
  Clean(cleaner, log.get());
  CHECK(log->Segments().size() == 3);
  auto batches = AllBatches(*log);
  REQUIRE(batches.size() == 2);
  CHECK(format::DecodeBatchHeader(batches[0]).records_count == 0);
  CHECK(format::DecodeBatchHeader(batches[0]).base_offset == 0);
  auto recs = AllRecords(*log);
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].offset == 1);
}

TEST_CASE("a batch whose records all go disappears and leaves a gap in the offsets") {
  TempDir tmp;
  auto log = OpenLog(tmp / "t-0", CompactConfig());
  Append(log.get(), {{"x", "1"}, {"y", "1"}});  // 0, 1: both superseded
  Append(log.get(), {{"z", "1"}});              // 2: kept
  Append(log.get(), {{"x", "2"}, {"y", "2"}});  // 3, 4: kept (last of the group)
  REQUIRE(log->Roll().ok());
  LogCleaner cleaner(tmp.path());
  CleanStats st = Clean(cleaner, log.get());
  CHECK(st.batches_removed == 1);
  auto batches = AllBatches(*log);
  REQUIRE(batches.size() == 2);
  CHECK(format::DecodeBatchHeader(batches[0]).base_offset == 2);
  CHECK(format::DecodeBatchHeader(batches[1]).base_offset == 3);
  // A batch that keeps all its records is copied byte for byte.
  CHECK(batches[0] == KeyedBatch({{"z", "1"}}).replace(0, 8, std::string("\0\0\0\0\0\0\0\x02", 8)));
}

TEST_CASE("a batch losing some records keeps its base and last offsets and producer fields") {
  TempDir tmp;
  auto log = OpenLog(tmp / "t-0", CompactConfig());
  BatchOpts bo;
  bo.producer_id = 77;
  bo.producer_epoch = 3;
  bo.base_sequence = 10;
  Append(log.get(), {{"a", "1"}, {"b", "1"}, {"c", "1"}, {"d", "1"}}, bo);  // 0..3
  Append(log.get(), {{"a", "2"}, {"d", "2"}});                              // 4, 5
  Append(log.get(), {{"e", "1"}});                                          // 6
  REQUIRE(log->Roll().ok());
  LogCleaner cleaner(tmp.path());
  Clean(cleaner, log.get());
  auto batches = AllBatches(*log);
  REQUIRE(batches.size() == 3);
  format::BatchHeader h = format::DecodeBatchHeader(batches[0]);
  CHECK(h.base_offset == 0);
  CHECK(h.last_offset_delta == 3);  // d's old offset 3 is gone, the batch still ends there
  CHECK(h.records_count == 2);
  CHECK(h.producer_id == 77);
  CHECK(h.producer_epoch == 3);
  CHECK(h.base_sequence == 10);
  auto v = format::RecordBatchView::Parse(batches[0]);
  REQUIRE(v.ok());
  auto recs = v->Records();
  REQUIRE(recs.ok());
  REQUIRE(recs->size() == 2);
  CHECK((*recs)[0].offset == 1);
  CHECK(*(*recs)[0].key == "b");
  CHECK((*recs)[1].offset == 2);
  CHECK(*(*recs)[1].key == "c");
}

TEST_CASE("the active segment is never cleaned and newer values in it do not count") {
  TempDir tmp;
  auto log = OpenLog(tmp / "t-0", CompactConfig());
  Append(log.get(), {{"a", "1"}, {"b", "1"}});
  Append(log.get(), {{"a", "2"}});
  REQUIRE(log->Roll().ok());
  Append(log.get(), {{"a", "3"}, {"b", "2"}});  // active
  Append(log.get(), {{"a", "4"}});              // active
  std::string active_path = log->Segments().back().log_path;
  std::string active_before = Slurp(active_path);

  LogCleaner cleaner(tmp.path());
  CleanStats st = Clean(cleaner, log.get());
  CHECK(st.end_offset == Offset(3));
  CHECK(Slurp(active_path) == active_before);
  auto recs = AllRecords(*log);
  // Closed: b=1 (offset 1) and a=2 (offset 2), though the active segment has newer values of
  // both; the active segment's three records are untouched.
  REQUIRE(recs.size() == 5);
  for (size_t i = 0; i < recs.size(); ++i) CHECK(recs[i].offset == static_cast<int64_t>(i + 1));
}

TEST_CASE("tombstones survive until delete.retention.ms after their first cleaning, then vanish") {
  TempDir tmp;
  int64_t now = 5'000'000;
  SetFakeClockForTesting([&] { return now; });
  LogConfig cfg = CompactConfig();
  cfg.delete_retention_ms = 10'000;
  auto log = OpenLog(tmp / "t-0", cfg);
  Append(log.get(), {{"k1", "v1"}, {"k2", "v2"}});
  Append(log.get(), {{"k1", std::nullopt}});  // tombstone for k1, offset 2
  Append(log.get(), {{"k3", "v3"}});
  REQUIRE(log->Roll().ok());
  Offset end = log->log_end_offset();
  LogCleaner cleaner(tmp.path());

  // First pass: k1's value goes, its tombstone stays and is stamped with a delete horizon.
  Clean(cleaner, log.get(), now);
  auto recs = AllRecords(*log);
  REQUIRE(recs.size() == 3);
  CHECK(*recs[0].key == "k2");
  CHECK(*recs[1].key == "k1");
  CHECK_FALSE(recs[1].value.has_value());
  CHECK(recs[1].offset == 2);
  CHECK(recs[1].timestamp == 1000);  // the record's own timestamp is kept
  auto batches = AllBatches(*log);
  format::BatchHeader th = format::DecodeBatchHeader(batches[1]);
  CHECK(th.has_delete_horizon());
  CHECK(th.base_timestamp == now + 10'000);

  // Just before the horizon it is still there.
  Clean(cleaner, log.get(), now + 9'999);
  recs = AllRecords(*log);
  REQUIRE(recs.size() == 3);
  CHECK(*recs[1].key == "k1");

  // At the horizon it goes; the other keys and the log end stay.
  CleanStats st = Clean(cleaner, log.get(), now + 10'000);
  CHECK(st.tombstones_removed == 1);
  recs = AllRecords(*log);
  REQUIRE(recs.size() == 2);
  CHECK(*recs[0].key == "k2");
  CHECK(*recs[1].key == "k3");
  CHECK(log->log_end_offset() == end);
  SetFakeClockForTesting(nullptr);
}

TEST_CASE("compressed batches stay compressed with their codec and read back") {
  TempDir tmp;
  auto log = OpenLog(tmp / "t-0", CompactConfig());
  const Compression codecs[] = {Compression::kGzip, Compression::kSnappy, Compression::kLz4,
                                Compression::kZstd};
  for (Compression c : codecs) {
    BatchOpts bo;
    bo.codec = c;
    std::string tag = format::CompressionName(c);
    Append(log.get(), {{tag + "-old", "x"}, {tag + "-keep", std::string(300, 'k')},
                       {tag + "-old", "y"}}, bo);
  }
  Append(log.get(), {{"gzip-old", "z"}, {"snappy-old", "z"}, {"lz4-old", "z"},
                     {"zstd-old", "z"}});
  REQUIRE(log->Roll().ok());
  LogCleaner cleaner(tmp.path());
  Clean(cleaner, log.get());
  auto batches = AllBatches(*log);
  REQUIRE(batches.size() == 5);
  for (size_t i = 0; i < 4; ++i) {
    auto v = format::RecordBatchView::Parse(batches[i]);
    REQUIRE(v.ok());
    CHECK(v->header().compression() == codecs[i]);
    auto recs = v->Records();
    REQUIRE_MESSAGE(recs.ok(), recs.status().ToString());
    REQUIRE(recs->size() == 1);
    CHECK(*(*recs)[0].key == std::string(format::CompressionName(codecs[i])) + "-keep");
    CHECK(*(*recs)[0].value == std::string(300, 'k'));
    CHECK((*recs)[0].offset == static_cast<int64_t>(i * 3 + 1));
  }
}

TEST_CASE("headers and timestamps of surviving records are kept") {
  TempDir tmp;
  auto log = OpenLog(tmp / "t-0", CompactConfig());
  format::RecordBatchBuilder b({});
  b.Add(std::string_view("gone"), std::string_view("1"), 111);
  b.Add(std::string_view("kept"), std::string_view("2"), 222,
        {{"h1", std::string_view("one")}, {"h2", std::nullopt}, {"h1", std::string_view("")}});
  b.Add(std::string_view("also"), std::string_view("3"), 99);
  std::string batch = b.Finish().value();
  REQUIRE(log->Append(&batch).ok());
  Append(log.get(), {{"gone", "later"}});
  REQUIRE(log->Roll().ok());
  auto before = AllRecords(*log);
  LogCleaner cleaner(tmp.path());
  Clean(cleaner, log.get());
  auto after = AllRecords(*log);
  REQUIRE(after.size() == 3);
  CHECK(SameRecord(after[0], before[1]));
  CHECK(SameRecord(after[1], before[2]));
  CHECK(after[0].headers.size() == 3);
  CHECK_FALSE(after[0].headers[1].value.has_value());
  CHECK(after[0].timestamp == 222);
  CHECK(after[1].timestamp == 99);
  // The rebuilt batch's max timestamp comes from what is left.
  CHECK(format::DecodeBatchHeader(AllBatches(*log)[0]).max_timestamp == 222);
}

TEST_CASE("records without a key are kept by the cleaner and refused at produce time") {
  TempDir tmp;
  auto log = OpenLog(tmp / "t-0", CompactConfig());
  std::string keyless = MakeBatch(2);  // null keys
  REQUIRE(log->Append(&keyless).ok());
  Append(log.get(), {{"a", "1"}});
  Append(log.get(), {{"a", "2"}});
  REQUIRE(log->Roll().ok());
  LogCleaner cleaner(tmp.path());
  Clean(cleaner, log.get());
  auto recs = AllRecords(*log);
  REQUIRE(recs.size() == 3);
  CHECK_FALSE(recs[0].key.has_value());
  CHECK_FALSE(recs[1].key.has_value());
  CHECK(recs[2].offset == 3);

  LogConfig compact = CompactConfig();
  LogConfig del;
  Status s = CheckKeysForCompaction(compact, MakeBatch(1));
  CHECK(s.code() == Status::Code::kInvalidArgument);
  CHECK(s.message().find("without key") != std::string::npos);
  CHECK(CheckKeysForCompaction(del, MakeBatch(1)).ok());
  CHECK(CheckKeysForCompaction(compact, KeyedBatch({{"k", "v"}})).ok());
  compact.cleanup_policy = "compact,delete";
  CHECK_FALSE(CheckKeysForCompaction(compact, MakeBatch(1)).ok());
}

TEST_CASE("a log without compact in its cleanup.policy is refused and retention spares compact") {
  TempDir tmp;
  LogConfig del;
  auto log = OpenLog(tmp / "d-0", del);
  LogCleaner cleaner(tmp.path());
  CHECK(cleaner.CleanPartitionOnce(log.get(), 0).status().code() ==
        Status::Code::kInvalidArgument);

  // cleanup.policy=compact: retention.ms does not delete segments; compact,delete does.
  LogConfig c = CompactConfig();
  c.retention_ms = 1;
  auto clog = OpenLog(tmp / "c-0", c);
  Append(clog.get(), {{"a", "1"}}, {});
  REQUIRE(clog->Roll().ok());
  Append(clog.get(), {{"a", "2"}}, {});
  auto n = clog->ApplyRetention();
  REQUIRE(n.ok());
  CHECK(n.value() == 0);
  c.cleanup_policy = "compact,delete";
  clog->UpdateConfig(c);
  n = clog->ApplyRetention();
  REQUIRE(n.ok());
  CHECK(n.value() == 1);
}

TEST_CASE("segments newer than min.compaction.lag.ms are not cleaned") {
  TempDir tmp;
  LogConfig cfg = CompactConfig();
  cfg.min_compaction_lag_ms = 1000;
  auto log = OpenLog(tmp / "t-0", cfg);
  Append(log.get(), {{"a", "1"}}, {Compression::kNone, 10'000});
  REQUIRE(log->Roll().ok());
  Append(log.get(), {{"a", "2"}}, {Compression::kNone, 20'000});
  REQUIRE(log->Roll().ok());
  LogCleaner cleaner(tmp.path());
  // At 20'500 only the first segment is old enough: a=1 has no newer value there.
  CleanStats st = Clean(cleaner, log.get(), 20'500);
  CHECK(st.end_offset == Offset(1));
  CHECK(AllRecords(*log).size() == 2);
  st = Clean(cleaner, log.get(), 21'000);
  CHECK(st.end_offset == Offset(2));
  auto recs = AllRecords(*log);
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].offset == 1);
}

TEST_CASE("the cleaner checkpoint is written in Kafka's format and sets the dirty ratio") {
  TempDir tmp;
  auto log = OpenLog(tmp / "topic.x-3", CompactConfig());
  WriteRounds(log.get(), 2);
  Offset end = log->log_end_offset();
  {
    LogCleaner cleaner(tmp.path());
    Cleanability c = cleaner.Measure(*log, 0);
    CHECK(c.clean_bytes == 0);
    CHECK(c.dirty_bytes > 0);
    CHECK(c.ratio() == doctest::Approx(1.0));
    Clean(cleaner, log.get());
    CHECK(Slurp(tmp / kCleanerCheckpointFile) ==
          "0\n1\ntopic.x 3 " + std::to_string(end.value()) + "\n");
    c = cleaner.Measure(*log, 0);
    CHECK(c.first_dirty == end);
    CHECK(c.dirty_bytes == 0);
    CHECK(c.ratio() == 0.0);
  }
  // A new cleaner (a restart) reads it back.
  LogCleaner again(tmp.path());
  CHECK(again.CheckpointFor("topic.x", 3) == end);
  Append(log.get(), {{"key-1", "new"}});
  REQUIRE(log->Roll().ok());
  Cleanability c = again.Measure(*log, 0);
  CHECK(c.first_dirty == end);
  CHECK(c.dirty_bytes > 0);
  CHECK(c.clean_bytes > 0);
  CHECK(c.ratio() > 0.0);
  CHECK(c.ratio() < 1.0);
}

TEST_CASE("leftover .cleaned files of an uncommitted pass are dropped on open, losing nothing") {
  TempDir tmp;
  std::string dir = tmp / "t-0";
  std::vector<format::Record> before;
  {
    auto log = OpenLog(dir, CompactConfig());
    before = WriteRounds(log.get());
    REQUIRE(log->Close().ok());
  }
  WriteBytes(JoinPath(dir, SegName(0, ".log.cleaned")), "half a segment");
  WriteBytes(JoinPath(dir, SegName(0, ".index.cleaned")), std::string(8, '\0'));
  WriteBytes(JoinPath(dir, SegName(0, ".timeindex.cleaned")), std::string(12, '\0'));
  auto log = OpenLog(dir, CompactConfig());
  CHECK_FALSE(HasFileEndingWith(dir, ".cleaned"));
  auto after = AllRecords(*log);
  REQUIRE(after.size() == before.size());
  for (size_t i = 0; i < after.size(); ++i) CHECK(SameRecord(after[i], before[i]));
}

TEST_CASE("a crash after the swap committed is finished on open with no key lost") {
  TempDir tmp;
  std::string dir = tmp / "t-0";
  std::string cleaned_dir = JoinPath(tmp / "copy", "t-0");
  std::vector<format::Record> before;
  Offset end;
  {
    auto log = OpenLog(dir, CompactConfig());
    before = WriteRounds(log.get());
    end = log->log_end_offset();
    REQUIRE(log->Close().ok());
  }
  // Clean a copy to get the segment a real pass writes.
  CopyDir(dir, cleaned_dir);
  std::vector<format::Record> cleaned;
  {
    auto copy = OpenLog(cleaned_dir, CompactConfig());
    LogCleaner cleaner(tmp / "copy");
    Clean(cleaner, copy.get());
    cleaned = AllRecords(*copy);
    REQUIRE(copy->Close().ok());
  }
  REQUIRE(cleaned.size() == 10);
  auto old_names = ListDir(dir);
  REQUIRE(old_names.ok());
  std::vector<std::string> old_logs;
  for (const std::string& n : old_names.value())
    if (n.size() > 4 && n.substr(n.size() - 4) == ".log" && n != SegName(end.value(), ".log"))
      old_logs.push_back(n);
  REQUIRE(old_logs.size() > 2);

  SUBCASE("with the old segments part renamed aside") {
    // Step c stopped half-way: the swap file is in place, the first old segment is aside.
    WriteBytes(JoinPath(dir, SegName(0, ".log.swap")),
               Slurp(JoinPath(cleaned_dir, SegName(0, ".log"))));
    WriteBytes(JoinPath(dir, SegName(0, ".index.cleaned")),
               Slurp(JoinPath(cleaned_dir, SegName(0, ".index"))));
    REQUIRE(RenameFile(JoinPath(dir, old_logs[0]), JoinPath(dir, old_logs[0] + ".deleted")).ok());
  }
  SUBCASE("with every old segment still in place") {
    WriteBytes(JoinPath(dir, SegName(0, ".log.swap")),
               Slurp(JoinPath(cleaned_dir, SegName(0, ".log"))));
  }
  auto log = OpenLog(dir, CompactConfig());
  CHECK_FALSE(HasFileEndingWith(dir, ".swap"));
  CHECK_FALSE(HasFileEndingWith(dir, ".deleted"));
  CHECK_FALSE(HasFileEndingWith(dir, ".cleaned"));
  CHECK(log->log_end_offset() == end);
  auto after = AllRecords(*log);
  REQUIRE(after.size() == cleaned.size());
  for (size_t i = 0; i < after.size(); ++i) CHECK(SameRecord(after[i], cleaned[i]));
  auto last = LastByKey(before);
  for (const auto& r : after) CHECK(SameRecord(r, last.at(*r.key)));
  CHECK(log->Segments().size() == 2);
}

TEST_CASE("a crash after the swap finished leaves only .deleted files, removed on open") {
  TempDir tmp;
  std::string dir = tmp / "t-0";
  std::vector<format::Record> cleaned;
  {
    auto log = OpenLog(dir, CompactConfig());
    WriteRounds(log.get());
    LogCleaner cleaner(tmp.path());
    Clean(cleaner, log.get());
    cleaned = AllRecords(*log);
    REQUIRE(log->Close().ok());
  }
  WriteBytes(JoinPath(dir, SegName(8, ".log.deleted")), "old bytes");
  auto log = OpenLog(dir, CompactConfig());
  CHECK_FALSE(HasFileEndingWith(dir, ".deleted"));
  auto after = AllRecords(*log);
  REQUIRE(after.size() == cleaned.size());
  for (size_t i = 0; i < after.size(); ++i) CHECK(SameRecord(after[i], cleaned[i]));
}

TEST_CASE("readers holding slices of swapped-out segments keep reading the old bytes") {
  TempDir tmp;
  auto log = OpenLog(tmp / "t-0", CompactConfig());
  WriteRounds(log.get());
  auto held = log->Read(Offset(0), INT64_MAX, Offset(INT64_MAX));
  REQUIRE(held.ok());
  auto bytes_before = held->ReadAll();
  REQUIRE(bytes_before.ok());
  LogCleaner cleaner(tmp.path());
  Clean(cleaner, log.get());
  auto bytes_after = held->ReadAll();
  REQUIRE_MESSAGE(bytes_after.ok(), bytes_after.status().ToString());
  CHECK(bytes_after.value() == bytes_before.value());
}

TEST_CASE("appends concurrent with cleaning passes all land and stay readable") {
  TempDir tmp;
  LogConfig cfg = CompactConfig();
  cfg.segment_bytes = 4096;  // the appender rolls often
  auto log = OpenLog(tmp / "t-0", cfg);
  constexpr int kAppends = 600;
  std::map<std::string, std::pair<int64_t, std::string>> last;  // key -> (offset, value)
  std::atomic<bool> done{false};
  std::atomic<int> failed{0};
  std::vector<std::string> batches;
  for (int i = 0; i < kAppends; ++i)
    batches.push_back(KeyedBatch({{Cat("k", i % 37), Cat("v", i)}}));
  std::thread appender([&] {
    for (int i = 0; i < kAppends; ++i) {
      auto r = log->Append(&batches[static_cast<size_t>(i)]);
      if (!r.ok()) {
        ++failed;
        continue;
      }
      last[Cat("k", i % 37)] = {r->base_offset.value(), Cat("v", i)};
    }
    done = true;
  });
  LogCleaner cleaner(tmp.path());
  int passes = 0;
  while (!done) {
    auto r = cleaner.CleanPartitionOnce(log.get(), 1'000'000);
    REQUIRE_MESSAGE(r.ok(), r.status().ToString());
    ++passes;
  }
  appender.join();
  CHECK(failed == 0);
  REQUIRE(log->Roll().ok());
  Clean(cleaner, log.get());
  CHECK(passes > 0);
  CHECK(log->log_end_offset() == Offset(kAppends));
  auto recs = AllRecords(*log);
  REQUIRE(recs.size() == last.size());
  for (const auto& r : recs) {
    auto& [off, value] = last.at(*r.key);
    CHECK(r.offset == off);
    CHECK(*r.value == value);
  }
}

TEST_CASE("the background cleaner picks compacted partitions over the dirty ratio") {
  TempDir tmp;
  DataDir::Options o;
  auto dd = DataDir::Open(tmp.path(), o);
  REQUIRE(dd.ok());
  REQUIRE((*dd)->CreateTopic("compacted", NewTopicId(), 1, {{"cleanup.policy", "compact"}}).ok());
  REQUIRE((*dd)->CreateTopic("plain", NewTopicId(), 1, {}).ok());
  auto c = (*dd)->Partition("compacted", 0);
  auto p = (*dd)->Partition("plain", 0);
  REQUIRE(c.ok());
  REQUIRE(p.ok());
  WriteRounds(*c);
  WriteRounds(*p);
  std::string plain_before = Slurp(JoinPath((*p)->dir(), SegName(0, ".log")));

  CleanerOptions co;
  co.backoff_ms = 5;
  LogCleaner cleaner(tmp.path(), co);
  REQUIRE(cleaner.Start(dd->get()).ok());
  for (int i = 0; i < 500 && cleaner.passes() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  cleaner.Stop();
  CHECK(cleaner.last_error().ok());
  REQUIRE(cleaner.passes() >= 1);
  CHECK(AllRecords(**c).size() == 10);
  CHECK(AllRecords(**p).size() == 50);
  CHECK(Slurp(JoinPath((*p)->dir(), SegName(0, ".log"))) == plain_before);
  CHECK(cleaner.CheckpointFor("compacted", 0) == (*c)->log_end_offset());
  // Nothing is dirty now: a round finds nothing to do.
  auto again = cleaner.CleanDirtiestOnce(dd->get(), NowMs().value());
  REQUIRE(again.ok());
  CHECK_FALSE(again.value());
  // A deleted topic's checkpoint goes with it.
  REQUIRE((*dd)->DeleteTopic("compacted").ok());
  REQUIRE(cleaner.CleanDirtiestOnce(dd->get(), NowMs().value()).ok());
  CHECK(cleaner.CheckpointFor("compacted", 0) == kInvalidOffset);
  CHECK(Slurp(tmp / kCleanerCheckpointFile) == "0\n0\n");
  REQUIRE((*dd)->Close().ok());
}

TEST_CASE("a cleaning round takes the dirtiest partition and skips those under the ratio") {
  TempDir tmp;
  auto dd = DataDir::Open(tmp.path(), {});
  REQUIRE(dd.ok());
  REQUIRE((*dd)->CreateTopic("a", NewTopicId(), 1, {{"cleanup.policy", "compact"}}).ok());
  REQUIRE((*dd)->CreateTopic("b", NewTopicId(), 1, {{"cleanup.policy", "compact,delete"}}).ok());
  PartitionLog* a = (*dd)->Partition("a", 0).value();
  PartitionLog* b = (*dd)->Partition("b", 0).value();
  std::string big(400, 'x');
  for (PartitionLog* log : {a, b}) {
    for (int i = 0; i < 20; ++i) Append(log, {{Cat("k", i), big}});
    REQUIRE(log->Roll().ok());
  }
  LogCleaner cleaner(tmp.path());
  Clean(cleaner, a);
  Clean(cleaner, b);
  // a: most of the log is new (dirty); b: a small new tail.
  for (int i = 0; i < 40; ++i) Append(a, {{Cat("k", i % 20), big}});
  REQUIRE(a->Roll().ok());
  Append(b, {{"k0", big}});
  REQUIRE(b->Roll().ok());
  CHECK(cleaner.Measure(*a, 0).ratio() > 0.5);
  CHECK(cleaner.Measure(*b, 0).ratio() < 0.5);
  Offset b_checkpoint = cleaner.CheckpointFor("b", 0);

  auto r = cleaner.CleanDirtiestOnce(dd->get(), 0);
  REQUIRE(r.ok());
  CHECK(r.value());
  CHECK(cleaner.CheckpointFor("a", 0) == a->log_end_offset());
  CHECK(AllRecords(*a).size() == 20);
  r = cleaner.CleanDirtiestOnce(dd->get(), 0);
  REQUIRE(r.ok());
  CHECK_FALSE(r.value());
  CHECK(cleaner.CheckpointFor("b", 0) == b_checkpoint);
  REQUIRE((*dd)->Close().ok());
}

TEST_CASE("a Kafka __consumer_offsets segment compacts to the last record of each key") {
  std::string src = JoinPath(SILT_FIXTURES_DIR,
                             "kafka-data/kafka-3.7-kraft/__consumer_offsets-6");
  if (!IsDirectory(src)) {
    SILT_SKIP_MISSING_FIXTURE("Kafka fixture directory "
                              << src << " is absent; these checks did not run");
    return;
  }
  TempDir tmp;
  std::string dir = tmp / "__consumer_offsets-6";
  REQUIRE(CreateDirs(dir).ok());
  WriteBytes(JoinPath(dir, SegName(0, ".log")), Slurp(JoinPath(src, SegName(0, ".log"))));
  auto log = OpenLog(dir, CompactConfig());
  REQUIRE(log->Roll().ok());  // the fixture's segment becomes a closed one
  auto before = AllRecords(*log);
  REQUIRE(before.size() == 13);
  auto last = LastByKey(before);
  REQUIRE(last.size() < before.size());
  Offset end = log->log_end_offset();

  LogCleaner cleaner(tmp.path());
  Clean(cleaner, log.get());
  auto after = AllRecords(*log);
  CHECK(after.size() == last.size());
  std::map<std::string, int> seen;
  for (const auto& r : after) {
    REQUIRE(r.key);
    CHECK(++seen[*r.key] == 1);
    CHECK(SameRecord(r, last.at(*r.key)));
  }
  CHECK(log->log_end_offset() == end);
  REQUIRE(log->Close().ok());
  log = OpenLog(dir, CompactConfig());
  CHECK(log->log_end_offset() == end);
  CHECK(AllRecords(*log).size() == last.size());
}
