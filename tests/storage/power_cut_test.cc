// Power cuts at every step of a data dir's life (base/file.h's power-cut hooks): a topic
// created, batches appended with flush.messages=1 across segment rolls, checkpoints, a
// delete-records and the retention pass that removes segments, a clean close. After each cut,
// with the unsynced part of every file dropped, zeroed or garbled and undurable directory
// changes undone, the reopened directory must hold a prefix of what was written that keeps
// every acknowledged batch, invent nothing, and answer every lookup.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "base/file.h"
#include "base/random.h"
#include "storage/data_dir.h"
#include "storage/test_util.h"

using namespace silt;
using namespace silt::storage;
using namespace silt::storage::testing;

namespace {

constexpr int kBatches = 24;
constexpr int kRecords = 2;          // per batch
constexpr int64_t kDeleteBelow = 10;  // delete-records after batch 12

struct Outcome {
  int acked = 0;                  // batches 0..acked-1 were appended and fsynced
  bool delete_records_done = false;
  bool topic_created = false;
};

// The workload; stops at its first error (the simulated machine going down).
Outcome Workload(const std::string& path) {
  Outcome out;
  DataDir::Options o;
  o.create = true;
  auto dir = DataDir::Open(path, o);
  if (!dir.ok()) return out;
  std::map<std::string, std::string> configs = {
      {"segment.bytes", "400"}, {"flush.messages", "1"}, {"index.interval.bytes", "100"}};
  if (!(*dir)->CreateTopic("t", NewTopicId(), 1, configs).ok()) return out;
  out.topic_created = true;
  auto log = (*dir)->Partition("t", 0);
  if (!log.ok()) return out;
  for (int i = 0; i < kBatches; ++i) {
    BatchSpec spec;
    spec.records = kRecords;
    spec.base_timestamp = 1000 + i * 10;  // names the batch
    spec.value_size = 20;
    std::string b = MakeBatch(spec);
    auto r = (*log)->Append(&b);
    if (!r.ok() || !r->flush_error.ok()) return out;
    out.acked = i + 1;
    if (i % 5 == 4 && !(*dir)->Checkpoint().ok()) return out;
    if (i == 12) {
      if (!(*log)->AdvanceLogStart(Offset(kDeleteBelow)).ok()) return out;
      out.delete_records_done = true;
      if (!(*log)->ApplyRetention().ok()) return out;
    }
  }
  (void)(*dir)->Close();
  return out;
}

// Checks the reopened directory against what the workload did; returns a description of the
// first problem ("" when none).
std::string Check(const std::string& path, const Outcome& out) {
  DataDir::Options o;
  o.create = true;
  auto dir = DataDir::Open(path, o);
  if (!dir.ok()) return "reopen: " + dir.status().ToString();
  auto topic = (*dir)->GetTopic("t");
  if (!topic.ok()) {
    return out.acked > 0 ? "the topic is gone after " + std::to_string(out.acked) + " acks" : "";
  }
  auto log = (*dir)->Partition("t", 0);
  if (!log.ok()) return "partition: " + log.status().ToString();
  const int64_t start = (*log)->log_start_offset().value();
  const int64_t end = (*log)->log_end_offset().value();
  if (out.delete_records_done && start < kDeleteBelow)
    return "the log start went back to " + std::to_string(start) + " after delete-records";
  if (end < static_cast<int64_t>(out.acked) * kRecords)
    return "log end " + std::to_string(end) + " below the " + std::to_string(out.acked) +
           " acknowledged batches";
  if (end > static_cast<int64_t>(kBatches) * kRecords)
    return "log end " + std::to_string(end) + " past everything written";
  auto r = (*log)->Read(Offset(start), INT64_MAX, Offset(INT64_MAX));
  if (!r.ok()) return "read: " + r.status().ToString();
  auto bytes = r->ReadAll();
  if (!bytes.ok()) return "read: " + bytes.status().ToString();
  std::string_view rest = *bytes;
  int64_t expect = -1;
  while (!rest.empty()) {
    format::BatchHeader h;
    if (Status s = format::CheckBatchFraming(rest, {}, &h); !s.ok()) return "batch: " + s.ToString();
    // Batch i holds offsets 2i, 2i+1 and was stamped 1000 + 10i: nothing invented or moved.
    if (h.base_offset % kRecords != 0 || h.records_count != kRecords ||
        h.base_timestamp != 1000 + (h.base_offset / kRecords) * 10)
      return "batch at offset " + std::to_string(h.base_offset) + " is not the one written there";
    if (expect >= 0 && h.base_offset != expect)
      return "gap before offset " + std::to_string(h.base_offset);
    expect = h.base_offset + kRecords;
    rest.remove_prefix(static_cast<size_t>(h.size()));
  }
  if (end > start && expect != end) return "the batches end at " + std::to_string(expect);
  for (int64_t off = start; off < end; ++off) {
    auto one = (*log)->Read(Offset(off), 1, Offset(INT64_MAX));
    if (!one.ok() || one->slices.empty()) return "no batch found for offset " + std::to_string(off);
    auto b = one->ReadAll();
    format::BatchHeader h;
    if (!b.ok() || !format::CheckBatchFraming(*b, {}, &h).ok() || h.base_offset > off ||
        h.base_offset + h.last_offset_delta < off)
      return "the lookup of offset " + std::to_string(off) + " finds the wrong batch";
  }
  // Appends go on where the log ends.
  BatchSpec spec;
  spec.records = kRecords;
  std::string b = MakeBatch(spec);
  auto a = (*log)->Append(&b);
  if (!a.ok()) return "append after recovery: " + a.status().ToString();
  if (a->base_offset.value() != end) return "append after recovery landed elsewhere";
  return "";
}

}  // namespace

TEST_CASE("a power cut at any step loses no acknowledged batch and leaves a consistent log") {
  // The whole run's tracked operations, without a cut.
  int64_t total = 0;
  {
    TempDir d;
    StartPowerCutTrackingForTesting(d.path());
    Outcome all = Workload(d.path() + "/data");
    total = PowerCutOpsForTesting();
    REQUIRE(SimulatePowerCutForTesting(PowerCutMode::kDrop).ok());
    REQUIRE(all.acked == kBatches);
  }
  REQUIRE(total > 100);
  MESSAGE("power cuts at each of " << total << " file operations");
  int failures = 0;
  for (int64_t cut = 0; cut <= total && failures < 5; ++cut) {
    // The unsynced bytes dropped after every operation; zeroed or garbled after every other.
    const PowerCutMode other = cut % 2 == 0 ? PowerCutMode::kZero : PowerCutMode::kGarble;
    for (PowerCutMode mode : {PowerCutMode::kDrop, other}) {
      TempDir d;
      const std::string path = d.path() + "/data";
      StartPowerCutTrackingForTesting(d.path(), cut);
      Outcome out = Workload(path);
      REQUIRE(SimulatePowerCutForTesting(mode, static_cast<uint64_t>(cut) + 1).ok());
      std::string problem = Check(path, out);
      if (!problem.empty()) {
        ++failures;
        FAIL_CHECK("cut after " << cut << " operations, mode " << static_cast<int>(mode) << ", "
                                << out.acked << " acked: " << problem);
      }
    }
  }
}

TEST_CASE("the power-cut hooks drop unsynced bytes and undo undurable directory changes") {
  TempDir d;
  const std::string a = d.path() + "/a", b = d.path() + "/b";
  {
    auto f = File::Open(a, File::kCreate);
    REQUIRE(f.ok());
    REQUIRE(f->PWrite(0, "durable").ok());
    REQUIRE(f->Sync().ok());
  }
  REQUIRE(SyncDir(d.path()).ok());
  StartPowerCutTrackingForTesting(d.path());
  {
    auto f = File::Open(a, File::kReadWrite);
    REQUIRE(f.ok());
    REQUIRE(f->PWrite(7, " and not").ok());  // never fsynced
    auto g = File::Open(b, File::kCreate);   // created, synced, but its directory never
    REQUIRE(g.ok());
    REQUIRE(g->PWrite(0, "new").ok());
    REQUIRE(g->Sync().ok());
  }
  REQUIRE(SimulatePowerCutForTesting(PowerCutMode::kDrop).ok());
  CHECK(Slurp(a) == "durable");
  CHECK(!PathExists(b));

  StartPowerCutTrackingForTesting(d.path());
  REQUIRE(WriteFileAtomic(b, "b1").ok());  // durable: file and directory fsynced
  REQUIRE(ReplaceFile(b, "b2").ok());      // the rename over it never made durable
  REQUIRE(RemoveFile(a).ok());             // nor this removal
  {
    auto f = File::Open(b, File::kReadWrite);
    REQUIRE(f.ok());
    REQUIRE(f->PWrite(2, "-tail").ok());
  }
  REQUIRE(SimulatePowerCutForTesting(PowerCutMode::kZero).ok());
  CHECK(Slurp(b) == "b1");
  CHECK(Slurp(a) == "durable");
  CHECK(!PathExists(b + ".tmp"));

  // A machine that stops: every tracked operation after the given count fails.
  StartPowerCutTrackingForTesting(d.path(), 1);
  {
    auto f = File::Open(a, File::kReadWrite);
    REQUIRE(f.ok());
    CHECK(f->PWrite(0, "x").ok());
    CHECK(!f->PWrite(1, "y").ok());
    CHECK(!f->Sync().ok());
  }
  CHECK(PowerCutOpsForTesting() == 1);
  REQUIRE(SimulatePowerCutForTesting(PowerCutMode::kGarble).ok());
  CHECK(Slurp(a) == "durable");
}
