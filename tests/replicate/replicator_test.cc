// The replicator's decisions over in-memory ends: resume, crash leftovers, divergence, gaps.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "format/batch_header.h"
#include "replicate/replicator.h"
#include "storage/test_util.h"

using namespace silt;
using namespace silt::replicate;
using silt::storage::testing::BatchSpec;
using silt::storage::testing::MakeBatch;

namespace {

std::string Batch(int64_t base, int records, char fill = 'v') {
  BatchSpec s;
  s.base_offset = base;
  s.records = records;
  s.fill = fill;
  s.base_timestamp = 1000 + base;
  return MakeBatch(s);
}

Offset NextOf(const std::string& batch) { return format::DecodeBatchHeader(batch).next(); }
Offset BaseOf(const std::string& batch) { return format::DecodeBatchHeader(batch).base(); }

struct FakeLog {
  std::vector<std::string> batches;
  Offset log_start{0};
  Offset End() const { return batches.empty() ? log_start : NextOf(batches.back()); }
  // Batches from the one holding `from`, at least one, about max_bytes.
  std::string From(Offset from, int64_t max_bytes) const {
    std::string out;
    for (const auto& b : batches) {
      if (NextOf(b) <= from) continue;
      if (!out.empty() && static_cast<int64_t>(out.size() + b.size()) > max_bytes) break;
      out += b;
    }
    return out;
  }
};

using Logs = std::map<std::string, std::vector<FakeLog>>;

class FakeSource : public Source {
 public:
  Logs logs;
  Result<std::vector<TopicDesc>> ListTopics() override {
    std::vector<TopicDesc> out;
    for (const auto& [t, parts] : logs) out.push_back({t, static_cast<int32_t>(parts.size()), {}});
    return out;
  }
  Result<Bounds> GetBounds(const std::string& topic, int32_t partition) override {
    const FakeLog& l = logs.at(topic).at(partition);
    return Bounds{l.log_start, l.End()};
  }
  Result<Chunk> Read(const std::string& topic, int32_t partition, Offset from, int64_t max_bytes,
                     int) override {
    const FakeLog& l = logs.at(topic).at(partition);
    if (from < l.log_start) return Status::OutOfRange("below the log start");
    if (from > l.End()) return Status::OutOfRange("past the end");
    Chunk c;
    c.bounds = {l.log_start, l.End()};
    c.batches = l.From(from, max_bytes);
    c.next_offset = from;
    std::string_view v = c.batches;
    while (!v.empty()) {
      auto h = format::DecodeBatchHeader(v);
      c.next_offset = h.next();
      v.remove_prefix(h.size());
    }
    return c;
  }
  Result<Offset> OffsetForTime(const std::string& topic, int32_t partition, int64_t ts) override {
    const FakeLog& l = logs.at(topic).at(partition);
    for (const auto& b : l.batches)
      if (format::DecodeBatchHeader(b).max_timestamp >= ts) return BaseOf(b);
    return l.End();
  }
  Result<std::vector<GroupOffsets>> ListGroupOffsets() override { return groups; }
  std::vector<GroupOffsets> groups;
};

class FakeSink : public Sink {
 public:
  Logs logs;
  std::vector<CheckpointEntry> checkpoint;
  int flushes = 0;
  int appends = 0;
  int fail_at_append = -1;  // the n-th append (from 0) fails, as a crash would
  std::vector<GroupOffsets> committed;
  std::map<std::pair<std::string, int32_t>, size_t> durable;  // batches flushed, per partition
  std::vector<std::vector<CheckpointEntry>> stored;            // every checkpoint, in order

  Placement placement() const override { return Placement::kPreservesOffsets; }
  Result<std::vector<TopicDesc>> ListTopics() override { return std::vector<TopicDesc>{}; }
  Status EnsureTopic(const TopicDesc& t, bool) override {
    auto& parts = logs[t.name];
    if (static_cast<int32_t>(parts.size()) < t.partitions) parts.resize(t.partitions);
    return Status::OK();
  }
  Result<Offset> LogEnd(const std::string& topic, int32_t partition) override {
    return logs.at(topic).at(partition).End();
  }
  Result<std::string> ReadBack(const std::string& topic, int32_t partition, Offset from,
                               int64_t max_bytes) override {
    return logs.at(topic).at(partition).From(from, max_bytes);
  }
  Result<AppendOutcome> Append(const std::string& topic, int32_t partition, Offset expected,
                               std::string_view batches) override {
    FakeLog& l = logs.at(topic).at(partition);
    AppendOutcome out;
    out.log_end = l.End();
    if (expected != l.End()) return out;
    if (appends++ == fail_at_append) return Status::IOError("disk gone");
    while (!batches.empty()) {
      auto h = format::DecodeBatchHeader(batches);
      if (l.batches.empty()) l.log_start = h.base();
      l.batches.emplace_back(batches.substr(0, h.size()));
      batches.remove_prefix(h.size());
    }
    out.appended = true;
    out.log_end = l.End();
    return out;
  }
  Result<Offset> LogStart(const std::string& topic, int32_t partition) override {
    return logs.at(topic).at(partition).log_start;
  }
  Status Flush() override {
    ++flushes;
    for (const auto& [topic, parts] : logs)
      for (size_t p = 0; p < parts.size(); ++p)
        durable[{topic, static_cast<int32_t>(p)}] = parts[p].batches.size();
    return Status::OK();
  }
  // Where the last Flush left each partition (nothing durable before the first).
  Result<Offset> DurableEnd(const std::string& topic, int32_t partition) override {
    const FakeLog& l = logs.at(topic).at(partition);
    auto it = durable.find({topic, partition});
    if (it == durable.end() || it->second == 0) return l.log_start;
    return NextOf(l.batches[it->second - 1]);
  }
  // A crash of the machine: every batch appended since the last Flush is lost (a partition
  // that loses all of them loses its start too: its first segment file never made it).
  void Crash() {
    for (auto& [topic, parts] : logs)
      for (size_t p = 0; p < parts.size(); ++p) {
        const size_t keep = durable[{topic, static_cast<int32_t>(p)}];
        parts[p].batches.resize(std::min(parts[p].batches.size(), keep));
        if (parts[p].batches.empty()) parts[p].log_start = Offset(0);
      }
  }
  Status TruncateTo(const std::string& topic, int32_t partition, Offset offset) override {
    FakeLog& l = logs.at(topic).at(partition);
    while (!l.batches.empty() && NextOf(l.batches.back()) > offset) l.batches.pop_back();
    return Status::OK();
  }
  Result<std::vector<CheckpointEntry>> LoadCheckpoint(const std::string&) override {
    return checkpoint;
  }
  Status StoreCheckpoint(const std::string&, const std::vector<CheckpointEntry>& e) override {
    checkpoint = e;
    stored.push_back(e);
    return Status::OK();
  }
  Result<Offset> TranslateOffset(const std::string& topic, int32_t partition,
                                 Offset source) override {
    if (source > logs.at(topic).at(partition).End()) return Status::NotFound("not copied");
    return source;
  }
  Result<bool> GroupActive(const std::string& group) override { return group == "busy"; }
  Status CommitGroupOffsets(const GroupOffsets& g) override {
    committed.push_back(g);
    return Status::OK();
  }
  Status Promote(const std::string&) override { return Status::OK(); }
};

// A source with topic "t", one partition, batches of 3 records at 0, 3, 6, ... (n of them).
FakeSource SourceOf(int n, const std::string& topic = "t") {
  FakeSource s;
  FakeLog l;
  for (int i = 0; i < n; ++i) l.batches.push_back(Batch(i * 3, 3));
  s.logs[topic].push_back(l);
  return s;
}

ReplicatorOptions SmallSteps() {
  ReplicatorOptions o;
  o.source_id = "src";
  o.chunk_bytes = 1;  // one batch per read
  o.step_bytes = 1;   // a checkpoint after every batch
  return o;
}

Offset CheckpointOf(const FakeSink& sink, const std::string& topic, int32_t p) {
  for (const auto& e : sink.checkpoint)
    if (e.topic == topic && e.partition == p) return e.source_next;
  return kInvalidOffset;
}

}  // namespace

TEST_CASE("the replicator copies every batch byte for byte and checkpoints the end") {
  FakeSource src = SourceOf(5);
  FakeSink sink;
  Replicator r(&src, &sink, SmallSteps());
  REQUIRE(r.Run().ok());
  CHECK(sink.logs["t"][0].batches == src.logs["t"][0].batches);
  CHECK(CheckpointOf(sink, "t", 0) == Offset(15));
  CHECK(r.summary().records == 15);
  CHECK(r.summary().batches == 5);
  CHECK(sink.flushes >= 5);
}

TEST_CASE("a second run with nothing new copies nothing") {
  FakeSource src = SourceOf(3);
  FakeSink sink;
  REQUIRE(Replicator(&src, &sink, SmallSteps()).Run().ok());
  Replicator again(&src, &sink, SmallSteps());
  REQUIRE(again.Run().ok());
  CHECK(again.summary().records == 0);
  CHECK(sink.logs["t"][0].batches.size() == 3);
}

TEST_CASE("a run cut short by a failed append resumes with no gap and no duplicate") {
  FakeSource src = SourceOf(6);
  FakeSink sink;
  sink.fail_at_append = 3;
  Replicator first(&src, &sink, SmallSteps());
  CHECK_FALSE(first.Run().ok());
  CHECK(sink.logs["t"][0].batches.size() == 3);
  CHECK(CheckpointOf(sink, "t", 0) == Offset(9));
  sink.fail_at_append = -1;
  REQUIRE(Replicator(&src, &sink, SmallSteps()).Run().ok());
  CHECK(sink.logs["t"][0].batches == src.logs["t"][0].batches);
}

TEST_CASE("a destination ahead of its checkpoint goes on after its own end once its bytes match") {
  FakeSource src = SourceOf(6);
  FakeSink sink;
  sink.logs["t"].resize(1);
  // Four batches landed, but the checkpoint (a crash before storing it) says only two.
  for (int i = 0; i < 4; ++i) sink.logs["t"][0].batches.push_back(src.logs["t"][0].batches[i]);
  sink.checkpoint = {{"t", 0, Offset(6)}};
  Replicator r(&src, &sink, SmallSteps());
  REQUIRE(r.Run().ok());
  CHECK(sink.logs["t"][0].batches == src.logs["t"][0].batches);
  CHECK(r.summary().batches == 2);  // only the two missing ones
  CHECK(CheckpointOf(sink, "t", 0) == Offset(18));
}

TEST_CASE("a destination behind its checkpoint (bytes a crash lost) goes on at its own end") {
  FakeSource src = SourceOf(6);
  FakeSink sink;
  REQUIRE(Replicator(&src, &sink, SmallSteps()).Run().ok());
  CHECK(CheckpointOf(sink, "t", 0) == Offset(18));
  // The last two batches are gone (the disk lost them); the checkpoint still says 18.
  sink.logs["t"][0].batches.resize(4);
  Replicator r(&src, &sink, SmallSteps());
  REQUIRE(r.Run().ok());
  CHECK(sink.logs["t"][0].batches == src.logs["t"][0].batches);
  CHECK(r.summary().batches == 2);
  CHECK(CheckpointOf(sink, "t", 0) == Offset(18));
}

TEST_CASE(
    "without an fsync at each step, a partition with nothing durable is checkpointed at its "
    "destination's start, so a crash that loses its whole copy starts it again without a gap") {
  FakeSource src = SourceOf(6);
  src.logs["t"][0].batches.erase(src.logs["t"][0].batches.begin());  // starts at 3
  src.logs["t"][0].log_start = Offset(3);
  FakeSink sink;
  ReplicatorOptions o = SmallSteps();
  o.fsync = FsyncMode::kNever;
  Replicator r(&src, &sink, o);
  REQUIRE(r.Run().ok());
  CHECK(sink.flushes == 0);
  CHECK(sink.logs["t"][0].batches == src.logs["t"][0].batches);
  REQUIRE_FALSE(sink.stored.empty());
  for (const auto& cp : sink.stored) CHECK(cp.at(0).source_next == Offset(3));
  sink.Crash();
  REQUIRE(sink.logs["t"][0].batches.empty());
  Replicator again(&src, &sink, o);
  REQUIRE(again.Run().ok());
  CHECK(sink.logs["t"][0].batches == src.logs["t"][0].batches);
  CHECK(again.summary().batches == 5);
}

TEST_CASE(
    "without an fsync at each step, a partition with durable records keeps its checkpoint, and "
    "a crash that cuts the copy back resumes at the destination's end") {
  FakeSource src = SourceOf(3);
  FakeSink sink;
  REQUIRE(Replicator(&src, &sink, SmallSteps()).Run().ok());  // durable: 0..8
  for (int i = 3; i < 7; ++i) src.logs["t"][0].batches.push_back(Batch(i * 3, 3));
  ReplicatorOptions o = SmallSteps();
  o.fsync = FsyncMode::kNever;
  const int flushes = sink.flushes;
  REQUIRE(Replicator(&src, &sink, o).Run().ok());
  CHECK(sink.flushes == flushes);
  CHECK(CheckpointOf(sink, "t", 0) == Offset(21));
  sink.Crash();  // back to 0..8, the checkpoint ahead at 21
  REQUIRE(sink.logs["t"][0].batches.size() == 3);
  Replicator again(&src, &sink, o);
  REQUIRE(again.Run().ok());
  CHECK(sink.logs["t"][0].batches == src.logs["t"][0].batches);
  CHECK(again.summary().batches == 4);
}

TEST_CASE("with an fsync at the end only, one flush comes before the last checkpoint") {
  FakeSource src = SourceOf(5);
  FakeSink sink;
  ReplicatorOptions o = SmallSteps();
  o.fsync = FsyncMode::kEnd;
  Replicator r(&src, &sink, o);
  REQUIRE(r.Run().ok());
  CHECK(sink.flushes == 1);
  CHECK(sink.logs["t"][0].batches == src.logs["t"][0].batches);
  REQUIRE(sink.stored.size() >= 2);
  for (size_t i = 0; i + 1 < sink.stored.size(); ++i)
    CHECK(sink.stored[i].at(0).source_next == Offset(0));
  CHECK(CheckpointOf(sink, "t", 0) == Offset(15));
  // Stopped in the middle: the flush and the checkpoint of where the copy stopped.
  FakeSource more = SourceOf(8);
  FakeSink half;
  std::atomic<bool> stop{false};
  o.stop = &stop;
  o.on_progress = [&](const Progress& pr) {
    if (pr.partitions.at(0).next >= Offset(9)) stop = true;
  };
  o.progress_ms = 0;
  Replicator s(&more, &half, o);
  REQUIRE(s.Run().ok());
  CHECK(s.summary().stopped);
  CHECK(half.flushes == 1);
  CHECK(CheckpointOf(half, "t", 0) == NextOf(half.logs["t"][0].batches.back()));
  CHECK(CheckpointOf(half, "t", 0) < Offset(24));
}

TEST_CASE("a destination whose records after the checkpoint differ from the source's stops the copy") {
  FakeSource src = SourceOf(4);
  FakeSink sink;
  sink.logs["t"].resize(1);
  auto& dest = sink.logs["t"][0].batches;
  dest.push_back(src.logs["t"][0].batches[0]);
  dest.push_back(Batch(3, 3, 'x'));  // other bytes at the same offsets
  sink.checkpoint = {{"t", 0, Offset(3)}};
  Replicator r(&src, &sink, SmallSteps());
  Status st = r.Run();
  REQUIRE_FALSE(st.ok());
  CHECK(r.summary().mismatch);
  CHECK(st.message().find("t/0") != std::string::npos);
  CHECK(st.message().find("offset 3") != std::string::npos);
  CHECK(dest.size() == 2);  // left as it was
}

TEST_CASE("truncate_destination cuts a diverged destination at the difference and copies again") {
  FakeSource src = SourceOf(4);
  FakeSink sink;
  sink.logs["t"].resize(1);
  auto& dest = sink.logs["t"][0].batches;
  dest.push_back(src.logs["t"][0].batches[0]);
  dest.push_back(Batch(3, 3, 'x'));
  ReplicatorOptions o = SmallSteps();
  o.truncate_destination = true;
  Replicator r(&src, &sink, o);
  REQUIRE(r.Run().ok());
  CHECK(dest == src.logs["t"][0].batches);
  CHECK(r.summary().truncated == 1);
}

TEST_CASE("a destination longer than the source is a divergence") {
  FakeSource src = SourceOf(2);
  FakeSink sink;
  sink.logs["t"].resize(1);
  FakeSource longer = SourceOf(3);
  sink.logs["t"][0] = longer.logs["t"][0];
  Replicator r(&src, &sink, SmallSteps());
  Status st = r.Run();
  REQUIRE_FALSE(st.ok());
  CHECK(st.message().find("past the source's end 6") != std::string::npos);
}

TEST_CASE("the divergence check ignores the partitionLeaderEpoch a destination restamps") {
  BatchSpec s;
  s.records = 2;
  s.leader_epoch = 7;
  std::string a = MakeBatch(s);
  s.leader_epoch = 9;
  std::string b = MakeBatch(s);
  Offset at;
  CHECK(SameBatches(a, b, &at));
  s.fill = 'z';
  std::string c = MakeBatch(s);
  CHECK_FALSE(SameBatches(a, c, &at));
  CHECK(at == Offset(0));
  CHECK_FALSE(SameBatches(a + Batch(2, 1), a, &at));
  CHECK(at == Offset(2));
}

TEST_CASE("a source whose log start passed the next offset to copy fails unless gaps are allowed") {
  FakeSource src = SourceOf(6);
  FakeSink sink;
  sink.logs["t"].resize(1);
  sink.logs["t"][0].batches = {src.logs["t"][0].batches[0], src.logs["t"][0].batches[1]};
  sink.checkpoint = {{"t", 0, Offset(6)}};
  // Retention deleted the batches at 0..8 of the source.
  auto& sl = src.logs["t"][0];
  sl.batches.erase(sl.batches.begin(), sl.batches.begin() + 3);
  sl.log_start = Offset(9);
  {
    Replicator r(&src, &sink, SmallSteps());
    Status st = r.Run();
    REQUIRE_FALSE(st.ok());
    CHECK(st.code() == Status::Code::kOutOfRange);
    CHECK(r.summary().mismatch);
    CHECK(st.message().find("moved to offset 9") != std::string::npos);
    CHECK(st.message().find("offset to copy 6") != std::string::npos);
  }
  ReplicatorOptions o = SmallSteps();
  o.allow_gaps = true;
  Replicator r(&src, &sink, o);
  REQUIRE(r.Run().ok());
  CHECK(r.summary().gaps_skipped == 1);
  const auto& dest = sink.logs["t"][0].batches;
  REQUIRE(dest.size() == 5);
  CHECK(BaseOf(dest[2]) == Offset(9));
  CHECK(CheckpointOf(sink, "t", 0) == Offset(18));
}

TEST_CASE("an append refused because the destination moved is checked against the source and skipped") {
  // A sink that, at its first append, finds another copy already wrote the batch.
  struct RacingSink : FakeSink {
    const std::vector<std::string>* source = nullptr;
    bool raced = false;
    Result<AppendOutcome> Append(const std::string& topic, int32_t partition, Offset expected,
                                 std::string_view batches) override {
      if (!raced) {
        raced = true;
        logs.at(topic).at(partition).batches.push_back((*source)[0]);
      }
      return FakeSink::Append(topic, partition, expected, batches);
    }
  };
  FakeSource src = SourceOf(3);
  RacingSink sink;
  sink.source = &src.logs["t"][0].batches;
  REQUIRE(Replicator(&src, &sink, SmallSteps()).Run().ok());
  CHECK(sink.logs["t"][0].batches == src.logs["t"][0].batches);
}

TEST_CASE("topics are chosen by name and by whole-name pattern") {
  FakeSource src = SourceOf(1, "orders");
  src.logs["orders-eu"] = src.logs["orders"];
  src.logs["payments"] = src.logs["orders"];
  FakeSink sink;
  ReplicatorOptions o = SmallSteps();
  o.patterns = {"orders-.*"};
  o.topics = {"payments"};
  REQUIRE(Replicator(&src, &sink, o).Run().ok());
  CHECK(sink.logs.count("orders-eu") == 1);
  CHECK(sink.logs.count("payments") == 1);
  CHECK(sink.logs.count("orders") == 0);

  o.topics = {"nope"};
  Status st = Replicator(&src, &sink, o).Run();
  CHECK(st.IsNotFound());
}

TEST_CASE("from end starts an empty destination at the source's end, from a time at that batch") {
  FakeSource src = SourceOf(4);
  {
    FakeSink sink;
    ReplicatorOptions o = SmallSteps();
    o.from = ReplicatorOptions::From::kEnd;
    REQUIRE(Replicator(&src, &sink, o).Run().ok());
    CHECK(sink.logs["t"][0].batches.empty());
    CHECK(CheckpointOf(sink, "t", 0) == Offset(12));
  }
  FakeSink sink;
  ReplicatorOptions o = SmallSteps();
  o.from = ReplicatorOptions::From::kTime;
  o.from_time_ms = 1000 + 6;  // the batch at 6
  REQUIRE(Replicator(&src, &sink, o).Run().ok());
  REQUIRE(sink.logs["t"][0].batches.size() == 2);
  CHECK(BaseOf(sink.logs["t"][0].batches[0]) == Offset(6));
}

TEST_CASE("group offsets are copied for matching groups that are not active at the destination") {
  FakeSource src = SourceOf(4);
  src.groups = {{"billing", {{"t", 0, Offset(6), "m"}}},
                {"busy", {{"t", 0, Offset(3), ""}}},
                {"other", {{"t", 0, Offset(3), ""}}}};
  FakeSink sink;
  ReplicatorOptions o = SmallSteps();
  o.groups = "billing|busy";
  Replicator r(&src, &sink, o);
  REQUIRE(r.Run().ok());
  REQUIRE(sink.committed.size() == 1);
  CHECK(sink.committed[0].group == "billing");
  CHECK(sink.committed[0].offsets[0].offset == Offset(6));
  CHECK(sink.committed[0].offsets[0].metadata == "m");
  CHECK(r.summary().groups_skipped_active == 1);
}

TEST_CASE("a stop request ends the run after the step with the checkpoint stored") {
  FakeSource src = SourceOf(5);
  FakeSink sink;
  std::atomic<bool> stop{true};
  ReplicatorOptions o = SmallSteps();
  o.follow = true;
  o.stop = &stop;
  Replicator r(&src, &sink, o);
  REQUIRE(r.Run().ok());
  CHECK(r.summary().stopped);
  CHECK(CheckpointOf(sink, "t", 0) == Offset(0));
}

TEST_CASE("follow picks up new records, a new partition and a new topic, then stops when asked") {
  // A source that grows while it is followed: each listing adds something.
  struct GrowingSource : FakeSource {
    int listings = 0;
    Result<std::vector<TopicDesc>> ListTopics() override {
      ++listings;
      if (listings == 2) {
        logs["t"][0].batches.push_back(Batch(3, 2));  // new records
        logs["t"].push_back(FakeLog{{Batch(0, 4)}, Offset(0)});  // a new partition
      }
      if (listings == 3) logs["u"].push_back(FakeLog{{Batch(0, 1)}, Offset(0)});  // a new topic
      return FakeSource::ListTopics();
    }
  };
  struct StoppingSink : FakeSink {
    std::atomic<bool>* stop = nullptr;
    Result<AppendOutcome> Append(const std::string& topic, int32_t partition, Offset expected,
                                 std::string_view batches) override {
      auto out = FakeSink::Append(topic, partition, expected, batches);
      if (topic == "u") stop->store(true);
      return out;
    }
  };
  GrowingSource src;
  src.logs["t"].push_back(FakeLog{{Batch(0, 3)}, Offset(0)});
  StoppingSink sink;
  std::atomic<bool> stop{false};
  sink.stop = &stop;
  ReplicatorOptions o = SmallSteps();
  o.follow = true;
  o.rescan_ms = 0;
  o.idle_wait_ms = 1;
  o.stop = &stop;
  Replicator r(&src, &sink, o);
  REQUIRE(r.Run().ok());
  CHECK(r.summary().stopped);
  CHECK(sink.logs["t"][0].batches == src.logs["t"][0].batches);
  REQUIRE(sink.logs["t"].size() == 2);
  CHECK(sink.logs["t"][1].batches == src.logs["t"][1].batches);
  CHECK(sink.logs["u"][0].batches == src.logs["u"][0].batches);
  CHECK(CheckpointOf(sink, "t", 1) == Offset(4));
  CHECK(CheckpointOf(sink, "u", 0) == Offset(1));
}

TEST_CASE("promote checks that the copy is complete before making it writable") {
  struct PromotingSink : FakeSink {
    std::vector<std::string> promoted;
    Status Promote(const std::string& t) override {
      promoted.push_back(t);
      return Status::OK();
    }
  };
  FakeSource src = SourceOf(3);
  PromotingSink sink;
  ReplicatorOptions o = SmallSteps();
  o.promote = true;
  Replicator r(&src, &sink, o);
  REQUIRE(r.Run().ok());
  CHECK(sink.promoted == std::vector<std::string>{"t"});
  CHECK(r.summary().promoted == std::vector<std::string>{"t"});
}

TEST_CASE("a source whose end falls inside a batch is copied up to that batch, and the run ends") {
  // A source that reports an end in the middle of its last batch (a replica's high watermark)
  // and, as a data dir does, returns no batch that crosses it.
  struct MidBatchEnd : FakeSource {
    Result<Bounds> GetBounds(const std::string& t, int32_t p) override {
      SILT_ASSIGN_OR_RETURN(Bounds b, FakeSource::GetBounds(t, p));
      b.end = b.end - 1;
      return b;
    }
    Result<Chunk> Read(const std::string& t, int32_t p, Offset from, int64_t max_bytes,
                       int wait) override {
      Chunk c;
      SILT_ASSIGN_OR_RETURN(c.bounds, GetBounds(t, p));
      c.next_offset = from;
      const FakeLog& l = logs.at(t).at(p);
      for (const auto& b : l.batches) {
        if (NextOf(b) <= from || NextOf(b) > c.bounds.end) continue;
        c.batches += b;
        c.next_offset = NextOf(b);
      }
      return c;
    }
  };
  MidBatchEnd src;
  src.logs["t"].push_back(FakeLog{{Batch(0, 3), Batch(3, 3)}, Offset(0)});
  FakeSink sink;
  Replicator r(&src, &sink, SmallSteps());
  REQUIRE(r.Run().ok());
  CHECK(sink.logs["t"][0].batches.size() == 1);
  CHECK(CheckpointOf(sink, "t", 0) == Offset(3));
}
