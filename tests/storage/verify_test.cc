// Offline verification and repair (storage/verify.h): repair keeps every valid batch and
// quarantines only the damaged bytes, index fallout is one problem per file, and the leader
// epochs that no CRC covers are checked along the log and against leader-epoch-checkpoint.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "base/coding.h"
#include "base/file.h"
#include "format/batch_header.h"
#include "format/layout.h"
#include "format/record_batch.h"
#include "storage/partition_log.h"
#include "storage/test_util.h"
#include "storage/verify.h"

using namespace silt;
using namespace silt::storage;
using namespace silt::storage::testing;

namespace {

// A partition directory "t-0" in a scratch data directory, with one segment of `batches`.
struct Partition {
  TempDir root;
  std::string dir = root / "t-0";
  std::string log = JoinPath(dir, SegName(0, ".log"));
  std::vector<std::string> batches;  // as written
  std::vector<int64_t> positions;

  explicit Partition(std::vector<std::string> b) : batches(std::move(b)) {
    REQUIRE(CreateDirs(dir).ok());
    std::string all;
    for (const auto& x : batches) {
      positions.push_back(static_cast<int64_t>(all.size()));
      all += x;
    }
    WriteBytes(log, all);
  }
  int64_t base(size_t i) const {
    return static_cast<int64_t>(DecodeBE64(batches[i].data()));
  }
  int records(size_t i) const {
    return static_cast<int32_t>(DecodeBE32(batches[i].data() + format::kBatchHeaderSize - 4));
  }
  void Flip(int64_t at, int bit = 0) const {
    std::string d = Slurp(log);
    d[static_cast<size_t>(at)] = static_cast<char>(d[static_cast<size_t>(at)] ^ (1 << bit));
    WriteBytes(log, d);
  }
};

// Ten uncompressed batches of five records each, offsets 0..49.
std::vector<std::string> TenBatches(int32_t epoch = -1) {
  std::vector<std::string> out;
  for (int i = 0; i < 10; ++i) {
    BatchSpec s;
    s.base_offset = i * 5;
    s.records = 5;
    s.value_size = 20 + static_cast<size_t>(i);
    s.leader_epoch = epoch;
    out.push_back(MakeBatch(s));
  }
  return out;
}

std::string CompressedBatch(format::Compression c, int64_t base, int n) {
  format::RecordBatchBuilder b({.compression = c, .base_offset = base});
  for (int i = 0; i < n; ++i)
    b.Add(std::string("k") + std::to_string(i), std::string(40 + i, static_cast<char>('a' + i % 26)),
          1000 + i);
  auto batch = b.Finish();
  REQUIRE(batch.ok());
  return *batch;
}

// The bytes a read at `offset` returns first: the whole batch holding it.
std::string BatchAt(const PartitionLog& log, int64_t offset, size_t size) {
  auto r = log.Read(Offset(offset), static_cast<int64_t>(size), log.log_end_offset());
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  auto bytes = r->ReadAll();
  REQUIRE(bytes.ok());
  return bytes->substr(0, size);
}

// Every batch in `keep` is readable after the repair, at its own offset, byte for byte.
void CheckKept(const Partition& p, const std::vector<size_t>& keep) {
  PartitionLog::OpenOptions oo;
  oo.read_only = true;
  auto log = PartitionLog::Open(p.dir, LogConfig{}, oo);
  REQUIRE_MESSAGE(log.ok(), log.status().ToString());
  for (size_t i : keep) {
    CAPTURE(i);
    CHECK(BatchAt(**log, p.base(i), p.batches[i].size()) == p.batches[i]);
  }
}

std::vector<Problem> Verify(const std::string& path) {
  VerifyReport r;
  Status s = VerifyPath(path, ScanOptions{}, &r);
  REQUIRE_MESSAGE(s.ok(), s.ToString());
  return r.problems;
}

}  // namespace

TEST_CASE("repair keeps every batch but the damaged one, wherever in the segment it is") {
  int64_t damaged = 0;
  SUBCASE("the first batch") { damaged = 0; }
  SUBCASE("a middle batch") { damaged = 5; }
  SUBCASE("the last batch") { damaged = 9; }
  CAPTURE(damaged);
  Partition p(TenBatches());
  const size_t d = static_cast<size_t>(damaged);
  p.Flip(p.positions[d] + 70);  // inside the records: a CRC mismatch

  auto problems = Verify(p.dir);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].kind == ProblemKind::kCorruption);
  CHECK(problems[0].position == p.positions[d]);

  auto r = RepairPartition(p.dir, ScanOptions{});
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  CHECK(r->records_kept == 45);
  CHECK(r->records_quarantined == 5);
  CHECK(r->bytes_quarantined == static_cast<int64_t>(p.batches[d].size()));
  const std::string q = p.log + "." + std::to_string(p.positions[d]) + ".quarantined";
  std::string flipped = p.batches[d];
  flipped[70] = static_cast<char>(flipped[70] ^ 1);
  CHECK(Slurp(q) == flipped);
  CHECK(Verify(p.dir).empty());
  std::vector<size_t> keep;
  for (size_t i = 0; i < 10; ++i)
    if (i != d) keep.push_back(i);
  CheckKept(p, keep);
  // Idempotent: a second repair finds nothing to do.
  auto again = RepairPartition(p.dir, ScanOptions{});
  REQUIRE(again.ok());
  CHECK(again->actions.empty());
}

TEST_CASE("two damaged ranges are quarantined apart and the batches between and after them kept") {
  Partition p(TenBatches());
  p.Flip(p.positions[2] + 30);
  p.Flip(p.positions[3] + 9);  // batch 3's length: runs into batch 2's range
  p.Flip(p.positions[7] + 50);
  auto problems = Verify(p.dir);
  REQUIRE(problems.size() == 2);
  CHECK(problems[0].position == p.positions[2]);
  CHECK(problems[1].position == p.positions[7]);

  auto r = RepairPartition(p.dir, ScanOptions{});
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  CHECK(r->records_kept == 35);
  CHECK(r->records_quarantined == 15);
  CHECK(r->bytes_quarantined ==
        static_cast<int64_t>(p.batches[2].size() + p.batches[3].size() + p.batches[7].size()));
  CHECK(PathExists(p.log + "." + std::to_string(p.positions[2]) + ".quarantined"));
  CHECK(PathExists(p.log + "." + std::to_string(p.positions[7]) + ".quarantined"));
  CHECK(Verify(p.dir).empty());
  CheckKept(p, {0, 1, 4, 5, 6, 8, 9});
}

TEST_CASE("damage in a compressed batch quarantines that batch and keeps the compressed ones after") {
  std::vector<std::string> b;
  int64_t next = 0;
  for (auto c : {format::Compression::kGzip, format::Compression::kZstd, format::Compression::kLz4,
                 format::Compression::kSnappy, format::Compression::kGzip}) {
    b.push_back(CompressedBatch(c, next, 8));
    next += 8;
  }
  Partition p(b);
  p.Flip(p.positions[1] + static_cast<int64_t>(p.batches[1].size()) - 5, 3);
  auto r = RepairPartition(p.dir, ScanOptions{});
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  CHECK(r->records_quarantined == 8);
  CHECK(r->records_kept == 32);
  CHECK(Verify(p.dir).empty());  // records decoded, not just the CRCs
  CheckKept(p, {0, 2, 3, 4});
}

TEST_CASE("a dry run changes nothing and counts what the repair then keeps and quarantines") {
  Partition p(TenBatches());
  p.Flip(p.positions[4] + 60);
  const std::string before = Slurp(p.log);
  auto plan = RepairPartition(p.dir, ScanOptions{}, /*dry_run=*/true);
  REQUIRE_MESSAGE(plan.ok(), plan.status().ToString());
  CHECK(Slurp(p.log) == before);
  CHECK(ListDir(p.dir).value().size() == 1);
  REQUIRE(plan->actions.size() == 1);
  CHECK(plan->actions[0].description.find("would quarantine") == 0);
  auto done = RepairPartition(p.dir, ScanOptions{});
  REQUIRE(done.ok());
  CHECK(done->records_kept == plan->records_kept);
  CHECK(done->records_quarantined == plan->records_quarantined);
  CHECK(done->bytes_kept == plan->bytes_kept);
  CHECK(done->bytes_quarantined == plan->bytes_quarantined);
  CHECK(plan->bytes_kept + plan->bytes_quarantined == static_cast<int64_t>(before.size()));
}

TEST_CASE("random damage, repaired, leaves every batch that was valid readable at its offset") {
  std::mt19937 rng(20261201);
  const format::Compression codecs[] = {format::Compression::kNone, format::Compression::kGzip,
                                        format::Compression::kZstd, format::Compression::kLz4};
  for (int iter = 0; iter < 150; ++iter) {
    CAPTURE(iter);
    std::vector<std::string> b;
    int64_t next = 0;
    const int n = 4 + static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) {
      const int records = 1 + static_cast<int>(rng() % 6);
      if (rng() % 3 == 0) {
        b.push_back(CompressedBatch(codecs[rng() % 4], next, records));
      } else {
        BatchSpec s;
        s.base_offset = next;
        s.records = records;
        s.value_size = rng() % 60;
        b.push_back(MakeBatch(s));
      }
      next += records;
    }
    Partition p(b);
    std::vector<bool> hit(b.size(), false);
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int f = 0; f < flips; ++f) {
      // Any bit but those of baseOffset and partitionLeaderEpoch: no CRC covers them, and they
      // are checked as offsets and epochs, not repaired as damage.
      size_t i = rng() % b.size();
      int64_t at;
      do {
        at = static_cast<int64_t>(rng() % b[i].size());
      } while (at < 8 || (at >= 12 && at < 16));
      p.Flip(p.positions[i] + at, static_cast<int>(rng() % 8));
      hit[i] = true;
    }
    std::vector<size_t> keep;
    int64_t kept_records = 0;
    for (size_t i = 0; i < b.size(); ++i)
      if (!hit[i]) {
        keep.push_back(i);
        kept_records += p.records(i);
      }
    auto r = RepairPartition(p.dir, ScanOptions{});
    REQUIRE_MESSAGE(r.ok(), r.status().ToString());
    CHECK(r->records_kept == kept_records);
    // The records a damaged range held are counted from the offsets around it; after the last
    // good batch only the damaged header can tell, and a flip there can make it say less.
    if (!hit.back()) CHECK(r->records_kept + r->records_quarantined == next);
    for (const auto& problem : Verify(p.dir))
      FAIL_CHECK(problem.file << ":" << problem.position << ": " << problem.detail);
    CheckKept(p, keep);
  }
}

TEST_CASE("index entries that do not match the log are one problem per index file") {
  TempDir root;
  const std::string dir = root / "t-0";
  LogConfig config;
  config.index_interval_bytes = 1;  // an entry per batch
  {
    auto log = PartitionLog::Open(dir, config, {});
    REQUIRE(log.ok());
    for (int i = 0; i < 40; ++i) {
      std::string b = MakeBatch(3);
      REQUIRE((*log)->Append(&b).ok());
    }
    REQUIRE((*log)->Close().ok());
  }
  // Every entry one byte past its batch's start.
  const std::string idx = JoinPath(dir, SegName(0, ".index"));
  std::string d = Slurp(idx);
  REQUIRE(d.size() >= 30 * format::kIndexEntrySize);
  for (size_t at = 0; at + format::kIndexEntrySize <= d.size(); at += format::kIndexEntrySize)
    EncodeBE32(d.data() + at + 4, DecodeBE32(d.data() + at + 4) + 1);
  WriteBytes(idx, d);
  auto problems = Verify(dir);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].kind == ProblemKind::kIndex);
  CHECK(problems[0].detail.find(" entries do not match the log") != std::string::npos);
}

TEST_CASE("a partitionLeaderEpoch that goes down along the log is an epoch problem") {
  std::vector<std::string> b;
  for (int i = 0; i < 6; ++i) {
    BatchSpec s;
    s.base_offset = i;
    s.leader_epoch = i < 3 ? 1 : 2;
    b.push_back(MakeBatch(s));
  }
  Partition p(b);
  CHECK(Verify(p.dir).empty());
  // Bit 2 of the epoch's low byte in batch 1: 1 -> 5, and batch 2 (epoch 1) then goes down.
  p.Flip(p.positions[1] + 15, 2);
  auto problems = Verify(p.dir);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].kind == ProblemKind::kEpoch);
  CHECK(problems[0].position == p.positions[2]);
}

TEST_CASE("batch epochs must agree with leader-epoch-checkpoint below the recovery point") {
  std::vector<std::string> b;
  for (int i = 0; i < 6; ++i) {
    BatchSpec s;
    s.base_offset = i;
    s.leader_epoch = i < 3 ? 0 : 1;
    b.push_back(MakeBatch(s));
  }
  Partition p(b);
  WriteBytes(JoinPath(p.dir, "leader-epoch-checkpoint"), "0\n2\n0 0\n1 3\n");
  CHECK(Verify(p.dir).empty());

  SUBCASE("a wrong start offset in the checkpoint") {
    WriteBytes(JoinPath(p.dir, "leader-epoch-checkpoint"), "0\n2\n0 0\n1 4\n");
    auto problems = Verify(p.dir);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].kind == ProblemKind::kEpoch);
    CHECK(problems[0].position == p.positions[3]);
  }
  SUBCASE("the last batch's epoch raised by a flip, which a checkpoint lagging could explain") {
    p.Flip(p.positions[5] + 15, 1);  // 1 -> 3
    CHECK(Verify(p.dir).empty());    // no recovery point: the checkpoint may lag the log
    WriteBytes(p.root / "recovery-point-offset-checkpoint", "0\n1\nt 0 6\n");
    auto problems = Verify(p.dir);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].kind == ProblemKind::kEpoch);
    CHECK(problems[0].position == p.positions[5]);
  }
}
