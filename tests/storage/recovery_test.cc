// Recovery and faults: torn tails, bit flips, lost or damaged indexes, a full disk.
#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>

#include "base/file.h"
#include "storage/partition_log.h"
#include "storage/test_util.h"

using namespace silt;
using namespace silt::storage;
using namespace silt::storage::testing;

namespace {

Result<std::unique_ptr<PartitionLog>> Reopen(const std::string& dir, const LogConfig& cfg,
                                             bool clean = false, int64_t rp = 0,
                                             bool read_only = false) {
  PartitionLog::OpenOptions o;
  o.clean_shutdown = clean;
  o.recovery_point = rp;
  o.read_only = read_only;
  return PartitionLog::Open(dir, cfg, o);
}

LogConfig Cfg() {
  LogConfig c;
  c.segment_bytes = 3000;
  c.index_interval_bytes = 150;
  return c;
}

// Writes `n` batches of 2 records through a log and closes it; returns the batch sizes.
std::vector<int64_t> Fill(const std::string& dir, int n, const LogConfig& cfg = Cfg()) {
  auto log = PartitionLog::Open(dir, cfg, {});
  REQUIRE(log.ok());
  std::vector<int64_t> sizes;
  for (int i = 0; i < n; ++i) {
    std::string b = MakeBatch(2, 25 + static_cast<size_t>(i % 7), 1000 + i);
    REQUIRE((*log)->Append(&b).ok());
    sizes.push_back(static_cast<int64_t>(b.size()));
  }
  REQUIRE((*log)->Close().ok());
  return sizes;
}

// Ten batches through a log, then a bit flipped inside the records of the third (its CRC
// fails): the segment's path, its damaged bytes, and where the third batch starts.
struct DamagedThird {
  std::string path;
  std::string data;
  int64_t third = 0;
};
DamagedThird FillAndDamageThird(const TempDir& dir, const LogConfig& cfg) {
  auto sizes = Fill(dir.path(), 10, cfg);
  DamagedThird d;
  d.path = dir / SegName(0, ".log");
  d.data = Slurp(d.path);
  d.third = sizes[0] + sizes[1];
  d.data[static_cast<size_t>(d.third + 70)] ^= 0x10;
  WriteBytes(d.path, d.data);
  return d;
}

std::string ReadEverything(const PartitionLog& log) {
  auto r = log.Read(log.log_start_offset(), INT64_MAX, Offset(INT64_MAX));
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  auto b = r->ReadAll();
  REQUIRE(b.ok());
  return b.value();
}

// Every offset is found at the batch holding it.
void CheckLookups(const PartitionLog& log) {
  for (int64_t o = log.log_start_offset().value(); o < log.log_end_offset().value(); ++o) {
    auto r = log.Read(Offset(o), 1, Offset(INT64_MAX));
    REQUIRE(r.ok());
    auto spans = BatchSpans(r->ReadAll().value());
    REQUIRE(spans.size() == 1);
    CHECK(spans[0].base <= o);
    CHECK(spans[0].last >= o);
  }
}

}  // namespace

TEST_CASE("reopening after a clean close trusts the segments and keeps every record") {
  TempDir dir;
  Fill(dir.path(), 40);
  auto log = Reopen(dir.path(), Cfg(), /*clean=*/true, /*rp=*/80);
  REQUIRE(log.ok());
  CHECK((*log)->log_end_offset() == Offset(80));
  CHECK((*log)->recovery_point() == Offset(80));
  CHECK(BatchSpans(ReadEverything(**log)).size() == 40);
  CheckLookups(**log);
  // Appends continue where the log ended, into the same active segment.
  size_t segs = (*log)->Segments().size();
  std::string b = MakeBatch(1);
  auto r = (*log)->Append(&b);
  REQUIRE(r.ok());
  CHECK(r->base_offset == Offset(80));
  CHECK((*log)->Segments().size() == segs);
}

TEST_CASE("reopening after an unclean close rescans and keeps every record") {
  TempDir dir;
  {
    auto log = PartitionLog::Open(dir.path(), Cfg(), {});
    REQUIRE(log.ok());
    for (int i = 0; i < 30; ++i) {
      std::string b = MakeBatch(2);
      REQUIRE((*log)->Append(&b).ok());
    }
    // Dropped without Close(): no final flush, no final time index entry.
  }
  auto log = Reopen(dir.path(), Cfg());
  REQUIRE(log.ok());
  CHECK((*log)->log_end_offset() == Offset(60));
  CHECK(BatchSpans(ReadEverything(**log)).size() == 30);
  CheckLookups(**log);
}

TEST_CASE("recovery truncates a torn tail and keeps every whole batch before it") {
  TempDir dir;
  LogConfig cfg;  // one segment
  cfg.index_interval_bytes = 100;
  auto sizes = Fill(dir.path(), 11, cfg);
  {
    // A small last batch (2 records, 1-byte values) keeps the number of cuts modest.
    auto log = PartitionLog::Open(dir.path(), cfg, {});
    REQUIRE(log.ok());
    std::string b = MakeBatch(2, 1, 5000);
    REQUIRE((*log)->Append(&b).ok());
    sizes.push_back(static_cast<int64_t>(b.size()));
    REQUIRE((*log)->Close().ok());
  }
  std::string path = dir / SegName(0, ".log");
  const std::string full = Slurp(path);
  const int64_t last = sizes.back();
  const int64_t prefix = static_cast<int64_t>(full.size()) - last;
  const std::string index = Slurp(dir / SegName(0, ".index"));
  const std::string tindex = Slurp(dir / SegName(0, ".timeindex"));
  for (int64_t cut = 1; cut < last; ++cut) {
    CAPTURE(cut);
    WriteBytes(path, std::string_view(full).substr(0, static_cast<size_t>(prefix + cut)));
    WriteBytes(dir / SegName(0, ".index"), index);
    WriteBytes(dir / SegName(0, ".timeindex"), tindex);
    // Every cut recovers from an unclean shutdown; every few also after a "clean" one (the
    // tail scan catches it too) and then take appends again (fsync-heavy, hence not all).
    const bool full_check = cut % 8 == 1;
    for (bool clean : {false, true}) {
      if (clean && !full_check) continue;
      {
        auto log = Reopen(dir.path(), cfg, clean, clean ? 24 : 0);
        REQUIRE_MESSAGE(log.ok(), log.status().ToString());
        CHECK((*log)->log_end_offset() == Offset(22));
        CHECK(ReadEverything(**log) == full.substr(0, static_cast<size_t>(prefix)));
        CHECK(static_cast<int64_t>(Slurp(path).size()) == prefix);
        if (full_check) {
          std::string b = MakeBatch(2);
          auto r = (*log)->Append(&b);
          REQUIRE(r.ok());
          CHECK(r->base_offset == Offset(22));
        }
      }
      WriteBytes(path, std::string_view(full).substr(0, static_cast<size_t>(prefix + cut)));
      WriteBytes(dir / SegName(0, ".index"), index);
      WriteBytes(dir / SegName(0, ".timeindex"), tindex);
    }
  }
}

TEST_CASE("a zero-filled tail after the last batch is a torn tail") {
  TempDir dir;
  Fill(dir.path(), 5, LogConfig{});
  std::string path = dir / SegName(0, ".log");
  std::string data = Slurp(path);
  size_t good = data.size();
  WriteBytes(path, data + std::string(4096, '\0'));
  auto log = Reopen(dir.path(), LogConfig{});
  REQUIRE_MESSAGE(log.ok(), log.status().ToString());
  CHECK((*log)->log_end_offset() == Offset(10));
  CHECK(Slurp(path).size() == good);
}

TEST_CASE("a bit flip below the recovery point is Corruption naming the file and the position") {
  TempDir dir;
  LogConfig cfg;
  auto [path, data, third] = FillAndDamageThird(dir, cfg);
  // Offsets 0..5 were fsynced: damage there is not what a crash leaves.
  auto log = Reopen(dir.path(), cfg, false, /*rp=*/6);
  REQUIRE(!log.ok());
  CHECK(log.status().IsCorruption());
  CHECK(log.status().message().find(path) != std::string::npos);
  CHECK(log.status().message().find("position " + std::to_string(third)) != std::string::npos);
  // The file was not cut: nothing is silently dropped.
  CHECK(Slurp(path) == data);
  // Read-only opens report it too.
  CHECK(Reopen(dir.path(), cfg, false, 6, true).status().IsCorruption());
  // So does a clean shutdown, which trusts everything (the scan of the tail stops at it only
  // when the damage is in the last indexed stretch; here the index has no entry yet).
  CHECK(Reopen(dir.path(), cfg, true, 20).status().IsCorruption());
  CHECK(!PathExists(path + "." + std::to_string(third) + ".quarantined"));
}

TEST_CASE("past the recovery point, recovery cuts at the first invalid batch and quarantines it") {
  TempDir dir;
  LogConfig cfg;
  auto [path, data, third] = FillAndDamageThird(dir, cfg);
  for (int64_t rp : {int64_t{0}, int64_t{4}}) {  // below the batch or at its first offset
    CAPTURE(rp);
    WriteBytes(path, data);
    auto log = Reopen(dir.path(), cfg, false, rp);
    REQUIRE_MESSAGE(log.ok(), log.status().ToString());
    // Kafka's rule: the log ends before the first batch that fails its checks.
    CHECK((*log)->log_end_offset() == Offset(4));
    CHECK(Slurp(path) == data.substr(0, static_cast<size_t>(third)));
    const std::string q = path + "." + std::to_string(third) + ".quarantined";
    CHECK(Slurp(q) == data.substr(static_cast<size_t>(third)));
    REQUIRE((*log)->recovery_cuts().size() == 1);
    const RecoveryCut& cut = (*log)->recovery_cuts()[0];
    CHECK(cut.file == path);
    CHECK(cut.position == third);
    CHECK(cut.bytes == static_cast<int64_t>(data.size()) - third);
    CHECK(cut.quarantine_path == q);
    CHECK(!cut.below_recovery_point);
    CHECK(cut.reason.find("crc") != std::string::npos);
    CheckLookups(**log);
    // The cut is made durable by the open: the next one needs none.
    REQUIRE((*log)->Close().ok());
    auto again = Reopen(dir.path(), cfg, false, 4);
    REQUIRE(again.ok());
    CHECK((*again)->recovery_cuts().empty());
    CHECK((*again)->log_end_offset() == Offset(4));
  }
}

TEST_CASE("a read-only open with stop_at_damage reads up to damage below the recovery point") {
  TempDir dir;
  LogConfig cfg;
  auto [path, data, third] = FillAndDamageThird(dir, cfg);
  PartitionLog::OpenOptions o;
  o.read_only = true;
  o.stop_at_damage = true;
  o.clean_shutdown = true;  // after a clean stop, as the issue's `silt consume -d` found it
  o.recovery_point = 20;
  auto log = PartitionLog::Open(dir.path(), cfg, o);
  REQUIRE_MESSAGE(log.ok(), log.status().ToString());
  CHECK((*log)->log_end_offset() == Offset(4));
  REQUIRE((*log)->recovery_cuts().size() == 1);
  CHECK((*log)->recovery_cuts()[0].below_recovery_point);
  CHECK((*log)->recovery_cuts()[0].quarantine_path.empty());
  CHECK(Slurp(path) == data);  // read-only: nothing changed
}

TEST_CASE("damage in the last batch is Corruption below the recovery point, a cut past it") {
  TempDir dir;
  auto sizes = Fill(dir.path(), 4, LogConfig{});
  std::string path = dir / SegName(0, ".log");
  std::string data = Slurp(path);
  data[data.size() - 3] ^= 0x01;
  WriteBytes(path, data);
  const int64_t last = sizes[0] + sizes[1] + sizes[2];
  for (bool clean : {false, true}) {
    CAPTURE(clean);
    auto log = Reopen(dir.path(), LogConfig{}, clean, /*rp=*/8);
    REQUIRE(!log.ok());
    CHECK(log.status().IsCorruption());
    CHECK(log.status().message().find("position " + std::to_string(last)) != std::string::npos);
  }
  // The torn write: a batch whose header reached the disk and whose tail did not.
  auto log = Reopen(dir.path(), LogConfig{}, false, /*rp=*/6);
  REQUIRE_MESSAGE(log.ok(), log.status().ToString());
  CHECK((*log)->log_end_offset() == Offset(6));
  CHECK(Slurp(path + "." + std::to_string(last) + ".quarantined") ==
        data.substr(static_cast<size_t>(last)));
}

TEST_CASE("a partial batch at the end of a segment that is not the last is Corruption") {
  TempDir dir;
  Fill(dir.path(), 40);
  std::string path = dir / SegName(0, ".log");
  std::string data = Slurp(path);
  WriteBytes(path, std::string_view(data).substr(0, data.size() - 5));
  auto log = Reopen(dir.path(), Cfg(), false, /*rp=*/80);
  REQUIRE(!log.ok());
  CHECK(log.status().IsCorruption());
  CHECK(log.status().message().find(path) != std::string::npos);
}

TEST_CASE("a cut past the recovery point in an older segment quarantines every later segment") {
  TempDir dir;
  Fill(dir.path(), 100);  // four segments
  std::vector<std::string> logs;
  auto names = ListDir(dir.path());
  REQUIRE(names.ok());
  for (const std::string& n : *names)
    if (n.size() > 4 && n.compare(n.size() - 4, 4, ".log") == 0) logs.push_back(n);
  REQUIRE(logs.size() >= 3);
  const std::string first = dir / logs[0];
  std::string data = Slurp(first);
  WriteBytes(first, std::string_view(data).substr(0, data.size() - 5));
  std::vector<std::string> later;
  for (size_t i = 1; i < logs.size(); ++i) later.push_back(Slurp(dir / logs[i]));
  auto log = Reopen(dir.path(), Cfg(), false, /*rp=*/0);
  REQUIRE_MESSAGE(log.ok(), log.status().ToString());
  REQUIRE((*log)->Segments().size() == 1);
  const Offset end = (*log)->log_end_offset();
  CHECK(end > Offset(0));
  CHECK((*log)->recovery_cuts().size() == logs.size());
  for (size_t i = 1; i < logs.size(); ++i) {
    CAPTURE(logs[i]);
    CHECK(!PathExists(dir / logs[i]));
    CHECK(Slurp(dir / (logs[i] + ".0.quarantined")) == later[i - 1]);
  }
  CheckLookups(**log);
  std::string b = MakeBatch(2);
  auto r = (*log)->Append(&b);
  REQUIRE(r.ok());
  CHECK(r->base_offset == end);
  REQUIRE((*log)->Close().ok());
  auto again = Reopen(dir.path(), Cfg(), false, end.value());
  REQUIRE(again.ok());
  CHECK((*again)->log_end_offset() == end + 2);
  CHECK((*again)->recovery_cuts().empty());
}

TEST_CASE("a missing or truncated index is rebuilt and lookups stay correct") {
  TempDir dir;
  Fill(dir.path(), 40);
  std::string idx0 = dir / SegName(0, ".index");
  const std::string good = Slurp(idx0);
  REQUIRE(good.size() >= 16);

  SUBCASE("missing, clean shutdown") {
    REQUIRE(RemoveFile(idx0).ok());
    REQUIRE(RemoveFile(dir / SegName(0, ".timeindex")).ok());
    auto log = Reopen(dir.path(), Cfg(), true, 80);
    REQUIRE(log.ok());
    CheckLookups(**log);
    CHECK(Slurp(idx0) == good);
  }
  SUBCASE("cut mid-entry, clean shutdown") {
    WriteBytes(idx0, std::string_view(good).substr(0, good.size() - 3));
    auto log = Reopen(dir.path(), Cfg(), true, 80);
    REQUIRE(log.ok());
    CheckLookups(**log);
    CHECK(Slurp(idx0) == good);
  }
  SUBCASE("garbage entries, unclean shutdown") {
    WriteBytes(idx0, std::string(good.size(), '\x7f'));
    auto log = Reopen(dir.path(), Cfg());
    REQUIRE(log.ok());
    CheckLookups(**log);
    CHECK(Slurp(idx0) == good);
  }
  SUBCASE("zero-padded as Kafka preallocates it, clean shutdown") {
    WriteBytes(idx0, good + std::string(4096, '\0'));
    auto log = Reopen(dir.path(), Cfg(), true, 80);
    REQUIRE(log.ok());
    CheckLookups(**log);
    CHECK(Slurp(idx0) == good);
  }
  SUBCASE("read-only: rebuilt in memory, files untouched") {
    REQUIRE(RemoveFile(idx0).ok());
    auto log = Reopen(dir.path(), Cfg(), false, 0, true);
    REQUIRE(log.ok());
    CheckLookups(**log);
    CHECK(!PathExists(idx0));
  }
}

TEST_CASE("a crash between the log write and the index write loses nothing") {
  TempDir dir;
  LogConfig cfg;
  cfg.index_interval_bytes = 100;
  Fill(dir.path(), 20, cfg);
  std::string logp = dir / SegName(0, ".log");
  std::string idxp = dir / SegName(0, ".index");
  std::string idx = Slurp(idxp);
  // Simulate: more batches reached the .log, their index entries never did.
  {
    auto log = Reopen(dir.path(), cfg, true, 40);
    REQUIRE(log.ok());
    for (int i = 0; i < 20; ++i) {
      std::string b = MakeBatch(2, 30);
      REQUIRE((*log)->Append(&b).ok());
    }
    REQUIRE((*log)->Close().ok());
  }
  std::string full_idx = Slurp(idxp);
  REQUIRE(full_idx.size() > idx.size());
  WriteBytes(idxp, idx);
  for (bool clean : {false, true}) {
    auto log = Reopen(dir.path(), cfg, clean, clean ? 80 : 0);
    REQUIRE(log.ok());
    CHECK((*log)->log_end_offset() == Offset(80));
    CheckLookups(**log);
    REQUIRE((*log)->Close().ok());
    CHECK(Slurp(idxp) == full_idx);
    WriteBytes(idxp, idx);
  }
}

TEST_CASE("a full disk fails the append with NoSpace and leaves a valid, usable log") {
  TempDir dir;
  LogConfig cfg;
  cfg.index_interval_bytes = 50;
  auto log = PartitionLog::Open(dir.path(), cfg, {});
  REQUIRE(log.ok());
  for (int i = 0; i < 5; ++i) {
    std::string b = MakeBatch(2, 40);
    REQUIRE((*log)->Append(&b).ok());
  }
  const std::string before = ReadEverything(**log);
  const std::string logp = dir / SegName(0, ".log");
  std::string b = MakeBatch(2, 40);
  for (int64_t budget : {int64_t{0}, int64_t{1}, int64_t{30}, static_cast<int64_t>(b.size()) - 1}) {
    CAPTURE(budget);
    SetWriteBudgetForTesting(budget);
    std::string copy = b;
    auto r = (*log)->Append(&copy);
    SetWriteBudgetForTesting(-1);
    REQUIRE(!r.ok());
    CHECK(r.status().IsNoSpace());
    CHECK((*log)->log_end_offset() == Offset(10));
    CHECK(ReadEverything(**log) == before);
    CHECK(Slurp(logp) == before);
  }
  // Space is back: appends work and land at the right offsets.
  std::string again = MakeBatch(2, 40);
  auto r = (*log)->Append(&again);
  REQUIRE(r.ok());
  CHECK(r->base_offset == Offset(10));
  // A flush that cannot write the pending index entries fails and keeps the recovery point.
  Offset rp = (*log)->recovery_point();
  SetWriteBudgetForTesting(0);
  Status fs = (*log)->Flush();
  SetWriteBudgetForTesting(-1);
  CHECK(fs.IsNoSpace());
  CHECK((*log)->recovery_point() == rp);
  CheckLookups(**log);
  REQUIRE((*log)->Close().ok());
  auto reopened = Reopen(dir.path(), cfg);
  REQUIRE(reopened.ok());
  CHECK((*reopened)->log_end_offset() == Offset(12));
  CheckLookups(**reopened);
}

TEST_CASE("a read-only open never writes, even over a torn tail") {
  TempDir dir;
  Fill(dir.path(), 6, LogConfig{});
  std::string path = dir / SegName(0, ".log");
  std::string data = Slurp(path);
  WriteBytes(path, std::string_view(data).substr(0, data.size() - 7));
  REQUIRE(RemoveFile(dir / SegName(0, ".index")).ok());
  auto log = Reopen(dir.path(), LogConfig{}, false, 0, true);
  REQUIRE(log.ok());
  CHECK((*log)->log_end_offset() == Offset(10));
  CHECK(Slurp(path).size() == data.size() - 7);
  CHECK(!PathExists(dir / SegName(0, ".index")));
  std::string b = MakeBatch(1);
  CHECK(!(*log)->Append(&b).ok());
}

TEST_CASE("orphan index files without a log are removed on a writable open") {
  TempDir dir;
  Fill(dir.path(), 3, LogConfig{});
  WriteBytes(dir / SegName(500, ".index"), std::string(8, '\0'));
  auto log = Reopen(dir.path(), LogConfig{});
  REQUIRE(log.ok());
  CHECK(!PathExists(dir / SegName(500, ".index")));
  CHECK((*log)->log_end_offset() == Offset(6));
}

TEST_CASE("offsets going backwards inside a segment are Corruption") {
  TempDir dir;
  BatchSpec s;
  s.base_offset = 0;
  s.records = 3;
  std::string data = MakeBatch(s);
  s.base_offset = 2;  // overlaps the first batch
  data += MakeBatch(s);
  s.base_offset = 5;
  data += MakeBatch(s);
  WriteBytes(dir / SegName(0, ".log"), data);
  auto log = Reopen(dir.path(), LogConfig{}, false, /*rp=*/8);
  REQUIRE(!log.ok());
  CHECK(log.status().IsCorruption());
  CHECK(log.status().message().find("position " + std::to_string(MakeBatch(s).size())) !=
        std::string::npos);
}

TEST_CASE("a segment overlapping the one before it is Corruption") {
  TempDir dir;
  BatchSpec s;
  s.records = 5;
  WriteBytes(dir / SegName(0, ".log"), MakeBatch(s));
  s.base_offset = 3;
  WriteBytes(dir / SegName(3, ".log"), MakeBatch(s));
  auto log = Reopen(dir.path(), LogConfig{});
  REQUIRE(!log.ok());
  CHECK(log.status().IsCorruption());
  CHECK(log.status().message().find(SegName(3, ".log")) != std::string::npos);
}

TEST_CASE("time lookups are the same after a clean reopen, an unclean one and a lost time index") {
  TempDir dir;
  LogConfig cfg = Cfg();
  cfg.index_interval_bytes = 100;
  {
    auto log = PartitionLog::Open(dir.path(), cfg, {});
    REQUIRE(log.ok());
    for (int i = 0; i < 40; ++i) {
      BatchSpec s;
      s.records = 3;
      s.base_timestamp = 50'000 + 100 * i;
      s.timestamp_step = 7;
      std::string b = MakeBatch(s);
      REQUIRE((*log)->Append(&b).ok());
    }
    REQUIRE((*log)->Close().ok());
  }
  auto expected = [](int64_t ts) -> int64_t {
    for (int i = 0; i < 40; ++i)
      for (int r = 0; r < 3; ++r)
        if (50'000 + 100 * i + 7 * r >= ts) return 3 * i + r;
    return -1;
  };
  auto check_all = [&](const PartitionLog& log) {
    for (int64_t ts = 49'990; ts < 54'020; ts += 13) {
      CAPTURE(ts);
      auto o = log.OffsetForTimestamp(ts);
      if (expected(ts) < 0) {
        CHECK(o.status().IsNotFound());
      } else {
        REQUIRE(o.ok());
        CHECK(o->value() == expected(ts));
      }
    }
  };
  {
    auto log = Reopen(dir.path(), cfg, true, 120);
    REQUIRE(log.ok());
    check_all(**log);
  }
  {
    auto log = Reopen(dir.path(), cfg);
    REQUIRE(log.ok());
    check_all(**log);
  }
  for (const SegmentInfo& s : (*Reopen(dir.path(), cfg, true, 120))->Segments())
    REQUIRE(RemoveFile(s.log_path.substr(0, s.log_path.size() - 4) + ".timeindex").ok());
  auto log = Reopen(dir.path(), cfg, true, 120);
  REQUIRE(log.ok());
  check_all(**log);
}

namespace {

// Descriptors this process holds on files inside `dir`.
int OpenFilesIn(const std::string& dir) {
  int n = 0;
  auto fds = ListDir("/proc/self/fd");
  REQUIRE(fds.ok());
  for (const std::string& fd : *fds) {
    char target[4096];
    ssize_t len = ::readlink(("/proc/self/fd/" + fd).c_str(), target, sizeof target - 1);
    if (len <= 0) continue;
    std::string t(target, static_cast<size_t>(len));
    if (t.rfind(dir + "/", 0) == 0) ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("a partition at rest holds only its active .log open, its indexes written all the same") {
  TempDir dir;
  LogConfig cfg;
  cfg.index_interval_bytes = 0;  // an index entry for every batch
  cfg.segment_bytes = 1 << 30;
  auto log = PartitionLog::Open(dir.path(), cfg, {});
  REQUIRE(log.ok());
  CHECK(OpenFilesIn(dir.path()) == 1);
  // A new partition creates neither index file before it holds data.
  CHECK(!PathExists(dir / SegName(0, ".index")));
  CHECK(!PathExists(dir / SegName(0, ".timeindex")));
  // More entries than one group write (OffsetIndex::kWriteBatch) so that some reach the file
  // while appending, with the file opened just for that write.
  const int n = 1300;
  for (int i = 0; i < n; ++i) {
    std::string b = MakeBatch(1, 10, 1000 + i);
    REQUIRE((*log)->Append(&b).ok());
  }
  CHECK(OpenFilesIn(dir.path()) == 1);
  CHECK(Slurp(dir / SegName(0, ".index")).size() >= 512 * 8);
  REQUIRE((*log)->Flush().ok());
  CHECK(OpenFilesIn(dir.path()) == 1);
  // The first batch gets no entry (none is due before index.interval.bytes have gone by).
  CHECK(Slurp(dir / SegName(0, ".index")).size() == static_cast<size_t>(n - 1) * 8);
  CHECK(Slurp(dir / SegName(0, ".timeindex")).size() == static_cast<size_t>(n - 1) * 12);
  // A crash now: the entries on disk are trusted after a reopen at the recovery point.
  const std::string idx = Slurp(dir / SegName(0, ".index"));
  const int64_t rp = (*log)->recovery_point().value();
  log->reset();
  auto again = Reopen(dir.path(), cfg, /*clean=*/true, rp);
  REQUIRE(again.ok());
  CHECK(OpenFilesIn(dir.path()) == 1);
  CHECK((*again)->log_end_offset() == Offset(n));
  CheckLookups(**again);
  CHECK((*again)->OffsetForTimestamp(1000 + 700).value() == Offset(700));
  // Appends after the reopen extend the same files, which the clean close completes.
  for (int i = 0; i < 10; ++i) {
    std::string b = MakeBatch(1, 10, 5000 + i);
    REQUIRE((*again)->Append(&b).ok());
  }
  REQUIRE((*again)->Close().ok());
  CHECK(OpenFilesIn(dir.path()) == 1);  // Close() keeps the .log for readers still holding it
  again->reset();
  CHECK(OpenFilesIn(dir.path()) == 0);
  const std::string idx2 = Slurp(dir / SegName(0, ".index"));
  CHECK(idx2.size() == static_cast<size_t>(n + 10 - 1) * 8);
  CHECK(idx2.substr(0, idx.size()) == idx);
  auto third = Reopen(dir.path(), cfg, /*clean=*/true, n + 10);
  REQUIRE(third.ok());
  CheckLookups(**third);
}

TEST_CASE("a rolled segment's indexes are complete on disk and hold no descriptor") {
  TempDir dir;
  LogConfig cfg = Cfg();
  auto log = PartitionLog::Open(dir.path(), cfg, {});
  REQUIRE(log.ok());
  for (int i = 0; i < 200; ++i) {
    std::string b = MakeBatch(2, 25, 1000 + i);
    REQUIRE((*log)->Append(&b).ok());
  }
  auto segs = (*log)->Segments();
  REQUIRE(segs.size() > 3);
  // Every segment's .log stays open for reads; no index file is open.
  CHECK(OpenFilesIn(dir.path()) == static_cast<int>(segs.size()));
  // A closed segment's index files were written when it stopped being active.
  for (size_t i = 0; i + 1 < segs.size(); ++i) {
    CHECK(PathExists(dir / SegName(segs[i].base_offset.value(), ".index")));
    CHECK(Slurp(dir / SegName(segs[i].base_offset.value(), ".timeindex")).size() % 12 == 0);
    CHECK(!Slurp(dir / SegName(segs[i].base_offset.value(), ".timeindex")).empty());
  }
  log->reset();  // a crash: recovery rebuilds and checks everything
  auto again = Reopen(dir.path(), cfg);
  REQUIRE(again.ok());
  CHECK((*again)->log_end_offset() == Offset(400));
  CheckLookups(**again);
}

namespace {

// Counts the file operations that cost the disk something (the fault hook sees every one).
struct OpCounter {
  std::atomic<int> syncs{0}, renames{0}, truncates{0}, writes{0};
  OpCounter() {
    SetFileFaultHookForTesting([this](FileOp op, const std::string&) {
      if (op == FileOp::kSync || op == FileOp::kSyncDir) syncs++;
      if (op == FileOp::kRename) renames++;
      if (op == FileOp::kTruncate) truncates++;
      if (op == FileOp::kWrite) writes++;
      return Status::OK();
    });
  }
  ~OpCounter() { SetFileFaultHookForTesting(nullptr); }
};

std::vector<PartitionLog::EpochEntry> Epochs(const std::string& dir, int64_t rp,
                                             int64_t* end = nullptr) {
  auto log = Reopen(dir, LogConfig{}, /*clean=*/false, rp);
  REQUIRE_MESSAGE(log.ok(), log.status().ToString());
  if (end != nullptr) *end = (*log)->log_end_offset().value();
  return (*log)->LeaderEpochs();
}

}  // namespace

TEST_CASE("opening a new partition and its first append neither fsync, rename nor truncate") {
  TempDir dir;
  OpCounter ops;
  auto log = PartitionLog::Open(dir.path(), LogConfig{}, {});
  REQUIRE(log.ok());
  std::string b = MakeBatch(2);
  REQUIRE((*log)->Append(&b, /*leader_epoch=*/0).ok());
  CHECK(ops.syncs == 0);
  CHECK(ops.renames == 0);
  CHECK(ops.truncates == 0);
  CHECK(ops.writes == 1);  // the batch
  // Reopening the empty segment of a partition never written to costs nothing either.
  TempDir dir2;
  REQUIRE(PartitionLog::Open(dir2.path(), LogConfig{}, {}).ok());
  int before = ops.syncs + ops.truncates + ops.writes;
  REQUIRE(PartitionLog::Open(dir2.path(), LogConfig{}, {}).ok());
  CHECK(ops.syncs + ops.truncates + ops.writes == before);
}

TEST_CASE("a new partition's first append survives a crash at any point") {
  // A crash right after the append: the checkpoint was never written; the rescan finds the
  // epoch in the batch and the open makes both durable.
  {
    TempDir dir;
    {
      auto log = PartitionLog::Open(dir.path(), LogConfig{}, {});
      REQUIRE(log.ok());
      std::string b = MakeBatch(2);
      REQUIRE((*log)->Append(&b, 3).ok());
      CHECK(!PathExists(dir / "leader-epoch-checkpoint"));
    }  // no Close: a crash
    int64_t end = 0;
    auto e = Epochs(dir.path(), 0, &end);
    CHECK(end == 2);
    REQUIRE(e.size() == 1);
    CHECK(e[0].epoch == 3);
    CHECK(e[0].start_offset == Offset(0));
    CHECK(Slurp(dir / "leader-epoch-checkpoint") == "0\n1\n3 0\n");
  }
  // A crash before the batch reached the disk: nothing is left, no epoch either.
  {
    TempDir dir;
    {
      auto log = PartitionLog::Open(dir.path(), LogConfig{}, {});
      REQUIRE(log.ok());
      std::string b = MakeBatch(2);
      REQUIRE((*log)->Append(&b, 3).ok());
    }
    REQUIRE(::truncate((dir / SegName(0, ".log")).c_str(), 0) == 0);
    int64_t end = -1;
    CHECK(Epochs(dir.path(), 0, &end).empty());
    CHECK(end == 0);
  }
  // A crash with the batch half written: the torn tail is cut, no epoch survives it.
  {
    TempDir dir;
    {
      auto log = PartitionLog::Open(dir.path(), LogConfig{}, {});
      REQUIRE(log.ok());
      std::string b = MakeBatch(2);
      REQUIRE((*log)->Append(&b, 3).ok());
    }
    std::string bytes = Slurp(dir / SegName(0, ".log"));
    WriteBytes(dir / SegName(0, ".log"), bytes.substr(0, bytes.size() / 2));
    int64_t end = -1;
    CHECK(Epochs(dir.path(), 0, &end).empty());
    CHECK(end == 0);
  }
}

TEST_CASE("a lost, emptied or torn leader-epoch checkpoint is rebuilt from the batches") {
  TempDir dir;
  {
    auto log = PartitionLog::Open(dir.path(), Cfg(), {});
    REQUIRE(log.ok());
    for (int i = 0; i < 60; ++i) {  // several segments, epochs 1, 4 and 9
      std::string b = MakeBatch(2, 25, 1000 + i);
      REQUIRE((*log)->Append(&b, i < 20 ? 1 : i < 45 ? 4 : 9).ok());
    }
    REQUIRE((*log)->Segments().size() > 2);
    REQUIRE((*log)->Close().ok());
  }
  const std::string good = Slurp(dir / "leader-epoch-checkpoint");
  CHECK(good == "0\n3\n1 0\n4 40\n9 90\n");
  for (const char* damage : {"delete", "empty", "torn"}) {
    CAPTURE(damage);
    std::string p = dir / "leader-epoch-checkpoint";
    if (std::string(damage) == "delete") REQUIRE(::unlink(p.c_str()) == 0);
    if (std::string(damage) == "empty") WriteBytes(p, "");
    if (std::string(damage) == "torn") WriteBytes(p, "0\n3\n1 0\n4");
    // Everything below the recovery point: the segments are trusted, not rescanned.
    auto e = Epochs(dir.path(), 120);
    REQUIRE(e.size() == 3);
    CHECK(e[0].epoch == 1);
    CHECK(e[1].start_offset == Offset(40));
    CHECK(e[2].epoch == 9);
    CHECK(e[2].start_offset == Offset(90));
    CHECK(Slurp(p) == good);
  }
  // A checkpoint behind the log (the newest epoch missing) after a crash: taken from the
  // rescanned batches above the recovery point.
  WriteBytes(dir / "leader-epoch-checkpoint", "0\n2\n1 0\n4 40\n");
  auto e = Epochs(dir.path(), 80);
  REQUIRE(e.size() == 3);
  CHECK(e[2].epoch == 9);
  CHECK(e[2].start_offset == Offset(90));
}

TEST_CASE("a leader epoch that goes backwards is damage: Corruption below the recovery point") {
  TempDir dir;
  BatchSpec s;
  s.records = 2;
  std::string data;
  for (int32_t epoch : {1, 3, 2, 4}) {  // the third batch's epoch is below the second's
    s.leader_epoch = epoch;
    data += MakeBatch(s);
    s.base_offset += 2;
  }
  const std::string path = dir / SegName(0, ".log");
  WriteBytes(path, data);
  const int64_t third = static_cast<int64_t>(2 * MakeBatch(s).size());
  auto log = Reopen(dir.path(), LogConfig{}, false, /*rp=*/8);
  REQUIRE(!log.ok());
  CHECK(log.status().IsCorruption());
  CHECK(log.status().message().find("position " + std::to_string(third)) != std::string::npos);
  CHECK(log.status().message().find("partitionLeaderEpoch 2") != std::string::npos);
  // Past the recovery point the same batch ends the log, its bytes kept in quarantine.
  auto cut = Reopen(dir.path(), LogConfig{}, false, /*rp=*/0);
  REQUIRE_MESSAGE(cut.ok(), cut.status().ToString());
  CHECK((*cut)->log_end_offset() == Offset(4));
  CHECK(Slurp(path + "." + std::to_string(third) + ".quarantined") ==
        data.substr(static_cast<size_t>(third)));
  CHECK(!PathExists(path + "." + std::to_string(third) + ".quarantined.tmp"));
}
