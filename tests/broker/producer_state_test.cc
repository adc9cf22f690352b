// Producer-state snapshots (Kafka's .snapshot files) and rebuilding the producer table from a
// snapshot plus the log's tail.
#include "broker/producer_state.h"

#include <doctest/doctest.h>

#include "base/coding.h"
#include "base/crc32c.h"
#include "broker/producer_recovery.h"
#include "format/producer_snapshot.h"
#include "storage/partition_log.h"
#include "storage/test_util.h"

using namespace silt;
using namespace silt::broker;
using namespace silt::storage::testing;

namespace {

std::string IdempotentBatch(int64_t pid, int16_t epoch, int32_t seq, int records, int64_t ts) {
  BatchSpec spec;
  spec.records = records;
  spec.base_timestamp = ts;
  std::string b = MakeBatch(spec);
  format::BatchHeader h = format::DecodeBatchHeader(b);
  h.producer_id = pid;
  h.producer_epoch = epoch;
  h.base_sequence = seq;
  format::EncodeBatchHeader(h, b.data());
  h.crc = format::ComputeBatchCrc(b);
  format::EncodeBatchHeader(h, b.data());
  return b;
}

// What the broker does per produce: check, append, record; and a snapshot at each roll.
struct Partition {
  std::unique_ptr<storage::PartitionLog> log;
  ProducerStateTable table;
  int snapshots = 0;

  explicit Partition(const std::string& dir) {
    storage::LogConfig cfg;
    cfg.segment_bytes = 600;
    auto r = storage::PartitionLog::Open(dir, cfg, {});
    REQUIRE_MESSAGE(r.ok(), r.status().ToString());
    log = std::move(r).value();
    log->SetRollListener([this](Offset base) {
      REQUIRE(table.WriteSnapshot(log->dir(), base).ok());
      ++snapshots;
    });
  }

  void Produce(int64_t pid, int16_t epoch, int32_t seq, int records) {
    std::string b = IdempotentBatch(pid, epoch, seq, records, 1000 + seq);
    ProducerBatch original;
    REQUIRE(table.Check(ProducerId(pid), epoch, seq, seq + records - 1, &original) == SequenceCheck::kAppend);
    auto r = log->Append(&b);
    REQUIRE_MESSAGE(r.ok(), r.status().ToString());
    ProducerBatch pb;
    pb.first_seq = seq;
    pb.last_seq = seq + records - 1;
    pb.base_offset = r->base_offset.value();
    pb.last_offset = r->last_offset.value();
    pb.max_timestamp = 1000 + seq + records - 1;
    table.Record(ProducerId(pid), epoch, pb);
  }
};

// Several producers, epochs bumped part-way, over many segments.
void Fill(Partition* p, int rounds) {
  int32_t seq[4] = {0, 0, 0, 0};
  int16_t epoch[4] = {0, 0, 3, 0};
  for (int i = 0; i < rounds; ++i) {
    int k = i % 4;
    if (i == rounds / 2) {
      ++epoch[1];
      seq[1] = 0;
    }
    if (i == rounds / 3) {
      ++epoch[3];
      seq[3] = 0;
    }
    p->Produce(100 + k, epoch[k], seq[k], 1 + i % 3);
    seq[k] += 1 + i % 3;
  }
}

std::vector<Offset> Snapshots(const std::string& dir) { return ListProducerSnapshots(dir).value(); }

ProducerStateTable FullReplay(const storage::PartitionLog& log) {
  // Rebuild with every snapshot moved out of the way.
  std::vector<std::string> moved;
  for (Offset o : Snapshots(log.dir())) {
    std::string p = JoinPath(log.dir(), ProducerSnapshotFileName(o));
    REQUIRE(RenameFile(p, p + ".aside").ok());
    moved.push_back(p);
  }
  ProducerStateTable t;
  ProducerRecoveryReport report;
  REQUIRE(RebuildProducerState(log, &t, &report).ok());
  CHECK(!report.snapshot);
  for (const std::string& p : moved) REQUIRE(RenameFile(p + ".aside", p).ok());
  return t;
}

}  // namespace

TEST_CASE("a producer snapshot round-trips and is named by its 20-digit offset") {
  TempDir dir;
  ProducerStateTable t;
  for (int i = 0; i < 7; ++i)
    t.Record(ProducerId(5), 2, {i * 2, i * 2 + 1, 10 + i * 2, 11 + i * 2, -1, 50 + i});
  t.Record(ProducerId(9), 0, {0, 0, 30, 30, -1, 70});
  REQUIRE(t.WriteSnapshot(dir.path(), Offset(42)).ok());
  const std::string path = dir / "00000000000000000042.snapshot";
  REQUIRE(PathExists(path));
  CHECK(!PathExists(path + ".tmp"));
  // Five batches kept for producer 5, one for producer 9: six entries.
  CHECK(Slurp(path).size() == 6u + 4 + 6 * 46);
  auto loaded = ProducerStateTable::LoadSnapshot(path);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().ToString());
  CHECK(*loaded == t);
  CHECK(loaded->Find(ProducerId(5))->batches.size() == 5);
  ProducerBatch dup;
  CHECK(loaded->Check(ProducerId(5), 2, 4, 5, &dup) == SequenceCheck::kDuplicate);
  CHECK(dup.base_offset == 14);
  CHECK(loaded->Check(ProducerId(5), 2, 14, 14, nullptr) == SequenceCheck::kAppend);
  CHECK(loaded->Check(ProducerId(5), 1, 14, 14, nullptr) == SequenceCheck::kFenced);
}

TEST_CASE("a producer snapshot has Kafka's layout, field by field") {
  TempDir dir;
  ProducerStateTable t;
  t.Record(ProducerId(0x0102030405060708), 7, {10, 12, 100, 102, -1, 5555});
  REQUIRE(t.WriteSnapshot(dir.path(), Offset(103)).ok());
  std::string got = Slurp(dir / "00000000000000000103.snapshot");
  std::string body(4 + 46, '\0');
  char* p = body.data();
  EncodeBE32(p, 1);                                       // producer_entries count
  EncodeBE64(p + 4, 0x0102030405060708);                  // producer_id
  EncodeBE16(p + 12, 7);                                  // epoch
  EncodeBE32(p + 14, 12);                                 // last_sequence
  EncodeBE64(p + 18, 102);                                // last_offset
  EncodeBE32(p + 26, 2);                                  // offset_delta
  EncodeBE64(p + 30, 5555);                               // timestamp
  EncodeBE32(p + 38, static_cast<uint32_t>(-1));          // coordinator_epoch
  EncodeBE64(p + 42, static_cast<uint64_t>(int64_t{-1}));  // current_txn_first_offset
  std::string want(6, '\0');
  EncodeBE16(want.data(), 1);  // version
  EncodeBE32(want.data() + 2, crc32c::Value(body));
  CHECK(got == want + body);
}

TEST_CASE("a damaged producer snapshot is refused, whatever the damage") {
  TempDir dir;
  ProducerStateTable t;
  t.Record(ProducerId(1), 0, {0, 4, 0, 4, -1, 9});
  REQUIRE(t.WriteSnapshot(dir.path(), Offset(5)).ok());
  const std::string path = dir / "00000000000000000005.snapshot";
  const std::string good = Slurp(path);
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] ^= 0x10;
    WriteBytes(path, bad);
    CHECK_MESSAGE(ProducerStateTable::LoadSnapshot(path).status().IsCorruption(), "byte " << i);
  }
  WriteBytes(path, good.substr(0, good.size() - 1));
  CHECK(ProducerStateTable::LoadSnapshot(path).status().IsCorruption());
  WriteBytes(path, "");
  CHECK(ProducerStateTable::LoadSnapshot(path).status().IsCorruption());
}

TEST_CASE("rebuilding from the latest snapshot and the tail equals a full replay") {
  TempDir dir;
  Partition p(dir.path());
  Fill(&p, 60);
  REQUIRE(p.snapshots >= 3);
  ProducerStateTable rebuilt;
  ProducerRecoveryReport report;
  REQUIRE(RebuildProducerState(*p.log, &rebuilt, &report).ok());
  REQUIRE(report.snapshot);
  CHECK(*report.snapshot == Snapshots(dir.path()).back());
  CHECK(report.ignored.empty());
  CHECK(rebuilt == p.table);
  CHECK(FullReplay(*p.log) == p.table);
  // Only the batches after the snapshot were read.
  CHECK(report.replayed_from == *report.snapshot);
  CHECK(report.batches_replayed < 60 / 3);
  CHECK(report.batches_replayed > 0);
}

TEST_CASE("rebuilding never reads the log below the snapshot") {
  TempDir dir;
  Partition p(dir.path());
  Fill(&p, 60);
  auto segs = p.log->Segments();
  REQUIRE(segs.size() >= 3);
  // Wipe the batches of every segment but the last two: a replay from the start would read
  // garbage (and find no producers in it), one from the snapshot does not look there.
  for (size_t i = 0; i + 2 < segs.size(); ++i)
    WriteBytes(segs[i].log_path, std::string(static_cast<size_t>(segs[i].size_bytes), '\0'));
  ProducerStateTable rebuilt;
  ProducerRecoveryReport report;
  REQUIRE(RebuildProducerState(*p.log, &rebuilt, &report).ok());
  CHECK(rebuilt == p.table);
  CHECK(report.replayed_from >= segs[segs.size() - 2].base_offset);
  // Without the snapshots the same rebuild goes through the wiped bytes and cannot match.
  for (Offset o : Snapshots(dir.path()))
    REQUIRE(RemoveFile(JoinPath(dir.path(), ProducerSnapshotFileName(o))).ok());
  ProducerStateTable full;
  Status s = RebuildProducerState(*p.log, &full, &report);
  CHECK((!s.ok() || !(full == p.table)));
}

TEST_CASE("a damaged snapshot is reported and the previous one is used instead") {
  TempDir dir;
  Partition p(dir.path());
  Fill(&p, 60);
  auto snaps = Snapshots(dir.path());
  REQUIRE(snaps.size() >= 2);
  const std::string latest = JoinPath(dir.path(), ProducerSnapshotFileName(snaps.back()));
  std::string bytes = Slurp(latest);
  bytes[bytes.size() - 3] ^= 1;
  WriteBytes(latest, bytes);
  ProducerStateTable rebuilt;
  ProducerRecoveryReport report;
  REQUIRE(RebuildProducerState(*p.log, &rebuilt, &report).ok());
  REQUIRE(report.ignored.size() == 1);
  CHECK(report.ignored[0].IsCorruption());
  CHECK(report.ignored[0].ToString().find(ProducerSnapshotFileName(snaps.back())) !=
        std::string::npos);
  REQUIRE(report.snapshot);
  CHECK(*report.snapshot == snaps[snaps.size() - 2]);
  CHECK(rebuilt == p.table);
  // With every snapshot damaged, the whole log is replayed.
  for (Offset o : snaps) WriteBytes(JoinPath(dir.path(), ProducerSnapshotFileName(o)), "junk");
  REQUIRE(RebuildProducerState(*p.log, &rebuilt, &report).ok());
  CHECK(!report.snapshot);
  CHECK(report.ignored.size() == snaps.size());
  CHECK(rebuilt == p.table);
}

TEST_CASE("after a truncation the later snapshots are gone and a rebuild matches the log") {
  TempDir dir;
  Partition p(dir.path());
  Fill(&p, 60);
  auto snaps = Snapshots(dir.path());
  REQUIRE(snaps.size() >= 3);
  const Offset cut = snaps[1] + 1;
  REQUIRE(p.log->TruncateTo(cut).ok());
  for (Offset o : Snapshots(dir.path())) CHECK(o <= p.log->log_end_offset());
  ProducerStateTable rebuilt;
  ProducerRecoveryReport report;
  REQUIRE(RebuildProducerState(*p.log, &rebuilt, &report).ok());
  CHECK(report.snapshot == snaps[1]);
  CHECK(rebuilt == FullReplay(*p.log));
  CHECK(!(rebuilt == p.table));  // the table from before the truncation is stale
}
