// PartitionLog under injected file-system failures: a failed append leaves no trace (in memory,
// on disk, after a reopen) and a retry lands exactly once; a failed truncation fails loudly and
// never lets truncated records come back.
#include <doctest/doctest.h>

#include "storage/fault_util.h"
#include "storage/partition_log.h"
#include "storage/segment.h"
#include "storage/test_util.h"

using namespace silt;
using namespace silt::storage;
using namespace silt::storage::testing;

namespace {

std::unique_ptr<PartitionLog> OpenLog(const std::string& dir, const LogConfig& cfg) {
  auto r = PartitionLog::Open(dir, cfg, {});
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  return std::move(r).value();
}

std::string ReadAll(const PartitionLog& log) {
  auto r = log.Read(log.log_start_offset(), INT64_MAX, Offset(INT64_MAX));
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  auto bytes = r->ReadAll();
  REQUIRE(bytes.ok());
  return bytes.value();
}

void AppendOk(PartitionLog* log, int n, int32_t epoch = -1) {
  for (int i = 0; i < n; ++i) {
    std::string b = MakeBatch(2, 20, 1000 + i);
    auto r = log->Append(&b, epoch);
    REQUIRE_MESSAGE(r.ok(), r.status().ToString());
    REQUIRE(r->flush_error.ok());
  }
}

// The state a failed append must leave untouched.
struct Snapshot {
  Offset end;
  std::string bytes;
};
Snapshot Take(const PartitionLog& log) { return {log.log_end_offset(), ReadAll(log)}; }

// After a failed append of `batch`: nothing changed, in memory and (after a reopen as after a
// crash, without Close) on disk; then a retry of the same batch appends it exactly once.
void CheckNoTraceThenRetryOnce(std::unique_ptr<PartitionLog>* log, const std::string& dir,
                               const LogConfig& cfg, const Snapshot& before,
                               const std::string& batch, int32_t epoch = -1) {
  CHECK((*log)->log_end_offset() == before.end);
  CHECK(ReadAll(**log) == before.bytes);
  log->reset();  // a crash: no flush, no clean close
  *log = OpenLog(dir, cfg);
  CHECK((*log)->log_end_offset() == before.end);
  CHECK(ReadAll(**log) == before.bytes);
  std::string retry = batch;
  auto r = (*log)->Append(&retry, epoch);
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  CHECK(r->base_offset == before.end);
  REQUIRE((*log)->Close().ok());
  *log = OpenLog(dir, cfg);
  auto spans = BatchSpans(ReadAll(**log));
  REQUIRE(!spans.empty());
  CHECK(spans.back().base == before.end.value());
  CHECK((*log)->log_end_offset() == before.end + 2);
  CHECK(spans.size() == BatchSpans(before.bytes).size() + 1);
}

}  // namespace

TEST_CASE("a leader-epoch checkpoint that cannot be written fails the flush, not the append") {
  TempDir dir;
  LogConfig cfg;
  auto log = OpenLog(dir.path(), cfg);
  AppendOk(log.get(), 3, /*epoch=*/1);
  REQUIRE(log->Flush().ok());
  const std::string checkpoint = Slurp(dir / "leader-epoch-checkpoint");
  CHECK(checkpoint == "0\n1\n1 0\n");
  const Offset end = log->log_end_offset();
  {
    FailOp fail(FileOp::kWrite, "leader-epoch-checkpoint.tmp");
    AppendOk(log.get(), 1, /*epoch=*/2);  // no checkpoint write on the append path
    CHECK(fail.hits() == 0);
    CHECK(!log->Flush().ok());
    CHECK(fail.hits() == 1);
  }
  // The flush did not complete: the recovery point stays below the new epoch's batch.
  CHECK(log->recovery_point() == end);
  CHECK(Slurp(dir / "leader-epoch-checkpoint") == checkpoint);
  CHECK(!PathExists(dir / "leader-epoch-checkpoint.tmp"));
  REQUIRE(log->LeaderEpochs().size() == 2);
  // A crash now: the batch above the recovery point is rescanned and its epoch taken back.
  log.reset();
  PartitionLog::OpenOptions o;
  o.recovery_point = end.value();
  auto again = PartitionLog::Open(dir.path(), cfg, o);
  REQUIRE(again.ok());
  REQUIRE((*again)->LeaderEpochs().size() == 2);
  CHECK((*again)->LeaderEpochs()[1].epoch == 2);
  CHECK((*again)->LeaderEpochs()[1].start_offset == end);
  // ...and made durable by the open, with the records.
  CHECK(Slurp(dir / "leader-epoch-checkpoint") == "0\n2\n1 0\n2 " +
                                                       std::to_string(end.value()) + "\n");
}

TEST_CASE("a failed epoch checkpoint rename leaves no temp file; the reopened log writes it") {
  TempDir dir;
  LogConfig cfg;
  auto log = OpenLog(dir.path(), cfg);
  AppendOk(log.get(), 2, 0);
  const Offset rp = log->recovery_point();
  {
    FailOp fail(FileOp::kRename, "leader-epoch-checkpoint.tmp");
    AppendOk(log.get(), 1, 5);
    CHECK(fail.hits() == 0);
    CHECK(!log->Flush().ok());
    CHECK(fail.hits() == 1);
  }
  CHECK(!PathExists(dir / "leader-epoch-checkpoint.tmp"));
  // The failure sticks: the next flush, which the disk would now let through, is not tried,
  // nor is an append, and the recovery point stays where the last good flush left it.
  CHECK(log->failed());
  CHECK(!log->Flush().ok());
  std::string b = MakeBatch(1);
  CHECK(!log->Append(&b, 5).ok());
  CHECK(log->recovery_point() == rp);
  log.reset();  // as a restart after the error
  log = OpenLog(dir.path(), cfg);
  CHECK(!log->failed());
  CHECK(Slurp(dir / "leader-epoch-checkpoint") == "0\n2\n0 0\n5 4\n");
  CHECK(log->recovery_point() == Offset(6));
}

TEST_CASE("an append that fails records no epoch, in memory or in the checkpoint") {
  TempDir dir;
  LogConfig cfg;
  auto log = OpenLog(dir.path(), cfg);
  AppendOk(log.get(), 2, 0);
  Snapshot before = Take(*log);
  std::string batch = MakeBatch(2);
  {
    FailOp fail(FileOp::kWrite, ".log");
    std::string b = batch;
    CHECK(!log->Append(&b, 7).ok());
  }
  CHECK(log->LeaderEpochs().size() == 1);
  // A write the disk failed (not a full disk) sticks as a failed fsync does.
  CHECK(log->failed());
  CHECK(!log->Flush().ok());
  CHECK(!PathExists(dir / "leader-epoch-checkpoint"));  // no flush got as far as writing it
  CheckNoTraceThenRetryOnce(&log, dir.path(), cfg, before, batch, 7);
  REQUIRE(log->LeaderEpochs().size() == 2);
  CHECK(log->LeaderEpochs()[1].epoch == 7);
}

TEST_CASE("an append that finds the disk full cuts its partial bytes") {
  TempDir dir;
  LogConfig cfg;
  auto log = OpenLog(dir.path(), cfg);
  AppendOk(log.get(), 3);
  Snapshot before = Take(*log);
  std::string batch = MakeBatch(2);
  SetWriteBudgetForTesting(10);
  std::string b = batch;
  auto r = log->Append(&b);
  SetWriteBudgetForTesting(-1);
  CHECK(r.status().IsNoSpace());
  CheckNoTraceThenRetryOnce(&log, dir.path(), cfg, before, batch);
}

TEST_CASE("an append whose offset index write fails appends nothing") {
  TempDir dir;
  LogConfig cfg;
  cfg.index_interval_bytes = 0;  // an index entry for every batch after the first
  auto log = OpenLog(dir.path(), cfg);
  // The index reaches its file every 512 entries: fail the append that would write them.
  AppendOk(log.get(), 512);
  Snapshot before = Take(*log);
  std::string batch = MakeBatch(2);
  {
    FailOp fail(FileOp::kWrite, ".index");
    std::string b = batch;
    CHECK(!log->Append(&b).ok());
    CHECK(fail.hits() == 1);
  }
  CheckNoTraceThenRetryOnce(&log, dir.path(), cfg, before, batch);
}

TEST_CASE("an append whose segment roll fails appends nothing") {
  TempDir dir;
  LogConfig cfg;
  cfg.segment_bytes = 300;
  auto log = OpenLog(dir.path(), cfg);
  AppendOk(log.get(), 2);
  REQUIRE(log->Segments().size() == 1);
  Snapshot before = Take(*log);
  std::string batch = MakeBatch(2, 200);
  {
    // Rolling writes the closing segment's last time index entry (a new segment's files are
    // only opened, which cannot be made to fail here).
    FailOp fail(FileOp::kWrite, SegName(0, ".timeindex"));
    std::string b = batch;
    CHECK(!log->Append(&b).ok());
    CHECK(fail.hits() == 1);
  }
  CheckNoTraceThenRetryOnce(&log, dir.path(), cfg, before, batch);
  CHECK(log->Segments().size() == 2);
}

TEST_CASE("a failed fsync of the flush policy is reported beside a successful append") {
  TempDir dir;
  LogConfig cfg;
  cfg.flush_messages = 1;
  auto log = OpenLog(dir.path(), cfg);
  AppendOk(log.get(), 2);
  const Offset end = log->log_end_offset();
  CHECK(log->recovery_point() == end);
  std::string b = MakeBatch(2);
  Result<AppendResult> r = Status::Internal("not appended yet");
  {
    FailOp fail(FileOp::kSync, ".log");
    r = log->Append(&b);
    CHECK(fail.hits() == 1);
  }
  // The batch is in the log, once, at its offsets; only its durability is in doubt.
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  CHECK(!r->flush_error.ok());
  CHECK(r->base_offset == end);
  CHECK(log->log_end_offset() == end + 2);
  CHECK(log->recovery_point() == end);
  CHECK(BatchSpans(ReadAll(*log)).size() == 3);
  // Linux reports a failed fsync once: a second one "succeeds" over pages it may have dropped.
  // So no later flush may move the recovery point past the failed range, nor may the log take
  // more appends; a close writes no clean-shutdown state either.
  CHECK(log->failed());
  CHECK(!log->Flush().ok());
  CHECK(log->recovery_point() == end);
  std::string more = MakeBatch(1);
  CHECK(!log->Append(&more).ok());
  CHECK(log->log_end_offset() == end + 2);
  CHECK(!log->Close().ok());
  // The restart rescans from the recovery point and keeps what the disk really holds.
  log = OpenLog(dir.path(), cfg);
  CHECK(!log->failed());
  CHECK(BatchSpans(ReadAll(*log)).size() == 3);
  CHECK(log->recovery_point() == end + 2);
}

TEST_CASE("a failed directory fsync after a roll is reported beside a successful append") {
  TempDir dir;
  LogConfig cfg;
  cfg.flush_messages = 1;
  cfg.segment_bytes = 300;
  auto log = OpenLog(dir.path(), cfg);
  AppendOk(log.get(), 1);
  std::string b = MakeBatch(2, 300);
  Result<AppendResult> r = Status::Internal("not appended yet");
  {
    FailOp fail(FileOp::kSyncDir, "");
    r = log->Append(&b);
  }
  REQUIRE(r.ok());
  CHECK(!r->flush_error.ok());
  CHECK(log->log_end_offset() == Offset(4));
  CHECK(log->recovery_point() == Offset(2));
}

TEST_CASE("append with offsets that fails part-way takes back every batch of the call") {
  TempDir dir;
  LogConfig cfg;
  auto log = OpenLog(dir.path(), cfg);
  AppendOk(log.get(), 1);
  Snapshot before = Take(*log);
  std::string batches;
  for (int i = 0; i < 3; ++i) {
    BatchSpec s;
    s.base_offset = before.end.value() + 2 * i;
    s.records = 2;
    s.leader_epoch = 4;
    batches += MakeBatch(s);
  }
  {
    // The first batch of the call lands, the second one's write fails.
    FailOp fail(FileOp::kWrite, ".log", EIO, /*skip=*/1);
    CHECK(!log->AppendWithOffsets(batches).ok());
    CHECK(fail.hits() == 1);
  }
  CHECK(log->LeaderEpochs().empty());
  CHECK(log->log_end_offset() == before.end);
  CHECK(ReadAll(*log) == before.bytes);
  log.reset();
  log = OpenLog(dir.path(), cfg);
  CHECK(log->log_end_offset() == before.end);
  CHECK(ReadAll(*log) == before.bytes);
  CHECK(log->LeaderEpochs().empty());
  REQUIRE(log->AppendWithOffsets(batches).ok());
  CHECK(log->log_end_offset() == before.end + 6);
  CHECK(BatchSpans(ReadAll(*log)).size() == 4);
}

// ---- truncation ----------------------------------------------------------------------------

namespace {

LogConfig SmallSegments() {
  LogConfig c;
  c.segment_bytes = 400;
  c.index_interval_bytes = 100;
  return c;
}

}  // namespace

TEST_CASE("a truncation that cannot delete a segment fails and a reopen brings nothing back") {
  TempDir dir;
  LogConfig cfg = SmallSegments();
  auto log = OpenLog(dir.path(), cfg);
  AppendOk(log.get(), 20);
  auto segs = log->Segments();
  REQUIRE(segs.size() >= 4);
  // Truncate into the second segment; the unlink of the third one's .log fails.
  const Offset cut = segs[1].base_offset + 2;
  Status s;
  {
    FailOp fail(FileOp::kRemove, SegName(segs[2].base_offset.value(), ".log"));
    s = log->TruncateTo(cut);
    CHECK(fail.hits() == 1);
  }
  CHECK(!s.ok());
  // The log is consistent: it ends where its last remaining segment does, and that is what a
  // reopen (as after a crash) finds, byte for byte.
  const Offset end = log->log_end_offset();
  CHECK(end == segs[2].next_offset);
  const std::string bytes = ReadAll(*log);
  CHECK(BatchSpans(bytes).back().last == end.value() - 1);
  log.reset();
  log = OpenLog(dir.path(), cfg);
  CHECK(log->log_end_offset() == end);
  CHECK(ReadAll(*log) == bytes);
  // Retried without the fault, the truncation completes, and stays done after a reopen.
  REQUIRE(log->TruncateTo(cut).ok());
  CHECK(log->log_end_offset() == cut);
  log.reset();
  log = OpenLog(dir.path(), cfg);
  CHECK(log->log_end_offset() == cut);
  CHECK(log->Segments().size() == 2);
}

TEST_CASE("a truncation to the start that cannot delete the first segment fails loudly") {
  TempDir dir;
  LogConfig cfg = SmallSegments();
  auto log = OpenLog(dir.path(), cfg);
  AppendOk(log.get(), 10);
  auto segs = log->Segments();
  REQUIRE(segs.size() >= 2);
  {
    FailOp fail(FileOp::kRemove, SegName(segs.back().base_offset.value(), ".log"));
    CHECK(!log->TruncateTo(Offset(0)).ok());
  }
  const Offset end = log->log_end_offset();
  CHECK(end == segs.back().next_offset);
  log.reset();
  log = OpenLog(dir.path(), cfg);
  CHECK(log->log_end_offset() == end);
  REQUIRE(log->TruncateTo(Offset(0)).ok());
  log.reset();
  log = OpenLog(dir.path(), cfg);
  CHECK(log->log_end_offset() == Offset(0));
  CHECK(log->size_bytes() == 0);
}

TEST_CASE("a truncation whose cut inside the last segment fails keeps that segment whole") {
  TempDir dir;
  LogConfig cfg;
  auto log = OpenLog(dir.path(), cfg);
  AppendOk(log.get(), 5);
  const std::string before = ReadAll(*log);
  {
    FailOp fail(FileOp::kTruncate, ".log");
    CHECK(!log->TruncateTo(Offset(4)).ok());
  }
  CHECK(log->log_end_offset() == Offset(10));
  CHECK(ReadAll(*log) == before);
  REQUIRE(log->TruncateTo(Offset(4)).ok());
  CHECK(log->log_end_offset() == Offset(4));
}

TEST_CASE("a truncation is fsynced before it returns, and a failed fsync is reported") {
  TempDir dir;
  LogConfig cfg = SmallSegments();
  auto log = OpenLog(dir.path(), cfg);
  AppendOk(log.get(), 20);
  REQUIRE(log->Flush().ok());
  {
    FailOp fail(FileOp::kSyncDir, "");
    CHECK(!log->TruncateTo(Offset(6)).ok());
    CHECK(fail.hits() == 1);
  }
  CHECK(log->log_end_offset() == Offset(6));
  {
    FailOp fail(FileOp::kSync, ".log");
    CHECK(!log->TruncateTo(Offset(4)).ok());
    CHECK(fail.hits() == 1);
  }
  CHECK(log->log_end_offset() == Offset(4));
}

TEST_CASE("retention that cannot delete a segment stops there, keeping the log contiguous") {
  TempDir dir;
  LogConfig cfg = SmallSegments();
  auto log = OpenLog(dir.path(), cfg);
  AppendOk(log.get(), 20);
  auto segs = log->Segments();
  REQUIRE(segs.size() >= 4);
  {
    FailOp fail(FileOp::kRemove, SegName(segs[1].base_offset.value(), ".log"));
    CHECK(!log->AdvanceLogStart(segs[3].base_offset).ok());
  }
  // The first segment went; the second, whose unlink failed, stays and is still readable.
  auto now = log->Segments();
  CHECK(now.front().base_offset == segs[1].base_offset);
  CHECK(log->log_start_offset() == segs[3].base_offset);
  CHECK(log->Read(segs[3].base_offset, INT64_MAX, Offset(INT64_MAX)).ok());
}

// ---- producer-state snapshot files and the roll listener ----------------------------------

namespace {

void TouchSnapshot(const TempDir& dir, int64_t offset) {
  WriteBytes(dir / SegName(offset, ".snapshot"), "not read by storage");
}

std::vector<int64_t> SnapshotsIn(const TempDir& dir) {
  std::vector<int64_t> out;
  const std::vector<std::string> names = ListDir(dir.path()).value();
  for (const std::string& n : names) {
    int64_t o;
    if (ParseSegmentFileName(n, ".snapshot", &o)) out.push_back(o);
  }
  return out;
}

}  // namespace

TEST_CASE("the roll listener hears each new segment's base offset, with the log unlocked") {
  TempDir dir;
  LogConfig cfg = SmallSegments();
  auto log = OpenLog(dir.path(), cfg);
  std::vector<Offset> heard;
  std::vector<Offset> end_seen;
  log->SetRollListener([&](Offset base) {
    heard.push_back(base);
    // The log is usable from the callback: the rolling batch is already in, at `base`.
    end_seen.push_back(log->log_end_offset());
    CHECK(log->Segments().back().base_offset == base);
    CHECK(log->Flush().ok());
  });
  AppendOk(log.get(), 20);
  auto segs = log->Segments();
  REQUIRE(segs.size() >= 3);
  REQUIRE(heard.size() == segs.size() - 1);
  for (size_t i = 0; i < heard.size(); ++i) {
    CHECK(heard[i] == segs[i + 1].base_offset);
    CHECK(end_seen[i] == heard[i] + 2);
  }
  REQUIRE(log->Roll().ok());
  CHECK(heard.back() == log->log_end_offset());
  REQUIRE(log->Roll().ok());  // an empty active segment is not rolled again
  CHECK(heard.size() == segs.size());
}

TEST_CASE("truncation deletes the snapshots above the new log end, before cutting the log") {
  TempDir dir;
  LogConfig cfg = SmallSegments();
  auto log = OpenLog(dir.path(), cfg);
  AppendOk(log.get(), 20);
  for (int64_t o : {0, 10, 20, 30, 40}) TouchSnapshot(dir, o);
  REQUIRE(log->TruncateTo(Offset(21)).ok());  // inside the batch [20, 21]: the end becomes 20
  CHECK(log->log_end_offset() == Offset(20));
  CHECK(SnapshotsIn(dir) == std::vector<int64_t>{0, 10, 20});
  // A snapshot that cannot be deleted stops the truncation before any record goes.
  {
    FailOp fail(FileOp::kRemove, SegName(20, ".snapshot"));
    CHECK(!log->TruncateTo(Offset(12)).ok());
  }
  CHECK(log->log_end_offset() == Offset(20));
  REQUIRE(log->TruncateTo(Offset(12)).ok());
  CHECK(SnapshotsIn(dir) == std::vector<int64_t>{0, 10});
  REQUIRE(log->TruncateTo(Offset(0)).ok());
  CHECK(SnapshotsIn(dir) == std::vector<int64_t>{0});
}

TEST_CASE("open deletes snapshots above the log end, and nothing reads them as segments") {
  TempDir dir;
  LogConfig cfg;
  {
    auto log = OpenLog(dir.path(), cfg);
    AppendOk(log.get(), 3);
    REQUIRE(log->Close().ok());
  }
  TouchSnapshot(dir, 4);
  TouchSnapshot(dir, 6);
  TouchSnapshot(dir, 9);
  WriteBytes(dir / (SegName(6, ".snapshot") + ".tmp"), "half written");
  auto log = OpenLog(dir.path(), cfg);
  CHECK(log->log_end_offset() == Offset(6));
  CHECK(SnapshotsIn(dir) == std::vector<int64_t>{4, 6});
  CHECK(!PathExists(dir / (SegName(6, ".snapshot") + ".tmp")));
  CHECK(log->Segments().size() == 1);
}

TEST_CASE("retention deletes snapshots below the oldest segment but the newest at the log start") {
  TempDir dir;
  LogConfig cfg = SmallSegments();
  auto log = OpenLog(dir.path(), cfg);
  AppendOk(log.get(), 20);
  auto segs = log->Segments();
  REQUIRE(segs.size() >= 4);
  for (const SegmentInfo& s : segs) TouchSnapshot(dir, s.base_offset.value());
  // Delete-records into the third segment: the first two segments go, and so do their
  // snapshots except the newest one at or below the new log start.
  const Offset start = segs[2].base_offset + 2;
  REQUIRE(log->AdvanceLogStart(start).ok());
  std::vector<int64_t> want;
  for (size_t i = 2; i < segs.size(); ++i) want.push_back(segs[i].base_offset.value());
  CHECK(SnapshotsIn(dir) == want);
  // With no snapshot at the oldest kept segment, the newest one below the log start stays:
  // the state can still be rebuilt from it.
  REQUIRE(RemoveFile(dir / SegName(segs[3].base_offset.value(), ".snapshot")).ok());
  const int64_t between = segs[2].base_offset.value() + 1;
  TouchSnapshot(dir, between);
  REQUIRE(log->AdvanceLogStart(segs[3].base_offset + 1).ok());
  want = {between};
  for (size_t i = 4; i < segs.size(); ++i) want.push_back(segs[i].base_offset.value());
  CHECK(SnapshotsIn(dir) == want);
}
