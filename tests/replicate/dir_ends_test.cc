// The data dir ends over real directories: a compacted source with holes copied at its own
// offsets, the checkpoint file, a second writer refused.
#include <doctest/doctest.h>

#include <filesystem>

#include "base/file.h"
#include "base/random.h"
#include "format/batch_header.h"
#include "replicate/dir_sink.h"
#include "replicate/dir_source.h"
#include "replicate/replicator.h"
#include "storage/data_dir.h"
#include "storage/test_util.h"

using namespace silt;
using namespace silt::replicate;
using silt::storage::testing::BatchSpec;
using silt::storage::testing::MakeBatch;
using silt::storage::testing::TempDir;

namespace {

std::string Batch(int64_t base, int records) {
  BatchSpec s;
  s.base_offset = base;
  s.records = records;
  s.base_timestamp = 5000 + base;
  return MakeBatch(s);
}

// A source dir with topic "c": batches at 0..2, 10..11 and 20..22 (compaction holes between).
std::string MakeSource(const std::string& root) {
  const std::string path = JoinPath(root, "src");
  storage::DataDir::Options o;
  auto dir = storage::DataDir::Open(path, o);
  REQUIRE(dir.ok());
  REQUIRE((*dir)->CreateTopic("c", NewTopicId(), 1, {}).ok());
  auto log = (*dir)->Partition("c", 0);
  REQUIRE(log.ok());
  REQUIRE((*log)->AppendWithOffsets(Batch(0, 3) + Batch(10, 2) + Batch(20, 3)).ok());
  REQUIRE((*dir)->Close().ok());
  return path;
}

std::string AllBytes(const std::string& path, const std::string& topic) {
  storage::DataDir::Options o;
  o.read_only = true;
  o.create = false;
  auto dir = storage::DataDir::Open(path, o);
  REQUIRE(dir.ok());
  auto log = (*dir)->Partition(topic, 0);
  REQUIRE(log.ok());
  auto r = (*log)->Read((*log)->log_start_offset(), 1 << 20, (*log)->log_end_offset());
  REQUIRE(r.ok());
  auto bytes = r->ReadAll();
  REQUIRE(bytes.ok());
  return *bytes;
}

}  // namespace

TEST_CASE("a data dir with compaction holes is copied into a data dir at the same offsets") {
  TempDir tmp;
  const std::string src_path = MakeSource(tmp.path());
  const std::string dst_path = JoinPath(tmp.path(), "dst");
  {
    auto source = OpenDirSource(src_path);
    REQUIRE(source.ok());
    auto sink = OpenDirSink(dst_path);
    REQUIRE(sink.ok());
    ReplicatorOptions o;
    o.source_id = "dir:src";
    Replicator r(source->get(), sink->get(), o);
    REQUIRE(r.Run().ok());
    CHECK(r.summary().records == 8);
    // A second writer is refused while the sink holds the directory.
    auto second = OpenDirSink(dst_path);
    CHECK(second.status().IsBusy());
  }
  CHECK(AllBytes(dst_path, "c") == AllBytes(src_path, "c"));
  auto cp = ReadFile(JoinPath(JoinPath(dst_path, "silt-replicate"),
                              CheckpointFileName("dir:src")));
  REQUIRE(cp.ok());
  CHECK(*cp == "0\n1\nc 0 23\n");
}

TEST_CASE("a data dir sink appends only at its log end and reads back what it holds") {
  TempDir tmp;
  auto sink = OpenDirSink(JoinPath(tmp.path(), "dst"));
  REQUIRE(sink.ok());
  Sink& s = **sink;
  REQUIRE(s.EnsureTopic({"t", 2, {{"retention.ms", "5"}, {"min.insync.replicas", "2"}}}, true).ok());
  auto topics = s.ListTopics();
  REQUIRE(topics.ok());
  REQUIRE(topics->size() == 1);
  CHECK((*topics)[0].partitions == 2);
  CHECK((*topics)[0].configs == std::map<std::string, std::string>{{"retention.ms", "5"}});
  auto wrong = s.Append("t", 0, Offset(5), Batch(5, 1));
  REQUIRE(wrong.ok());
  CHECK_FALSE(wrong->appended);
  CHECK(wrong->log_end == Offset(0));
  auto right = s.Append("t", 0, Offset(0), Batch(7, 2));  // an empty log starts at the batch
  REQUIRE(right.ok());
  CHECK(right->appended);
  CHECK(right->log_end == Offset(9));
  REQUIRE(s.Flush().ok());
  auto back = s.ReadBack("t", 0, Offset(8), 1 << 20);
  REQUIRE(back.ok());
  CHECK(*back == Batch(7, 2));
  REQUIRE(s.TruncateTo("t", 0, Offset(7)).ok());
  CHECK(*s.LogEnd("t", 0) == Offset(7));
  CHECK(s.TranslateOffset("t", 1, Offset(1)).status().IsNotFound());
}

TEST_CASE("what a flushed data dir sink holds survives a crash even with its indexes lost") {
  // Flush makes the segments' bytes durable and nothing else (not the indexes, the leader
  // epochs or the recovery points): this is the state a crash right after it may leave, and
  // the destination must open from it with every batch, found by offset and by time.
  TempDir tmp;
  const std::string dst = JoinPath(tmp.path(), "dst");
  const std::string crashed = JoinPath(tmp.path(), "crashed");
  std::string all;
  {
    auto sink = OpenDirSink(dst);
    REQUIRE(sink.ok());
    Sink& s = **sink;
    REQUIRE(s.EnsureTopic({"t", 1, {{"segment.bytes", "65536"}}}, true).ok());
    for (int64_t base = 0; base < 3000; base += 10) {
      BatchSpec spec;
      spec.base_offset = base;
      spec.records = 10;
      spec.base_timestamp = 100000 + base;
      spec.value_size = 100;
      spec.leader_epoch = base < 1500 ? 1 : 2;
      std::string b = MakeBatch(spec);
      all += b;
      auto out = s.Append("t", 0, Offset(base), b);
      REQUIRE(out.ok());
      REQUIRE(out->appended);
    }
    REQUIRE(s.Flush().ok());
    // The files as they are now (the sink still open: no clean-shutdown marker), less every
    // index and the leader-epoch checkpoint.
    std::filesystem::copy(dst, crashed, std::filesystem::copy_options::recursive);
  }
  int logs = 0;
  for (const auto& e : std::filesystem::directory_iterator(JoinPath(crashed, "t-0"))) {
    const std::string ext = e.path().extension().string();
    if (ext == ".index" || ext == ".timeindex" || e.path().filename() == "leader-epoch-checkpoint")
      std::filesystem::remove(e.path());
    logs += ext == ".log";
  }
  REQUIRE(logs > 3);  // several segments, not only the active one
  storage::DataDir::Options o;
  auto dir = storage::DataDir::Open(crashed, o);
  REQUIRE(dir.ok());
  auto log = (*dir)->Partition("t", 0);
  REQUIRE(log.ok());
  CHECK((*log)->log_end_offset() == Offset(3000));
  auto r = (*log)->Read(Offset(0), 1 << 30, Offset(3000));
  REQUIRE(r.ok());
  CHECK(*r->ReadAll() == all);
  auto mid = (*log)->Read(Offset(2345), 1, Offset(3000));
  REQUIRE(mid.ok());
  auto mid_bytes = mid->ReadAll();
  REQUIRE(mid_bytes.ok());
  CHECK(format::DecodeBatchHeader(*mid_bytes).base() == Offset(2340));
  CHECK(*(*log)->OffsetForTimestamp(100000 + 2345) == Offset(2345));
  auto epochs = (*log)->LeaderEpochs();
  REQUIRE(epochs.size() == 2);
  CHECK(epochs[1].epoch == 2);
  CHECK(epochs[1].start_offset == Offset(1500));
  REQUIRE((*dir)->Close().ok());
}

TEST_CASE(
    "every fsync mode copies byte for byte; never leaves the destination to be checked by its "
    "next open, with a checkpoint that claims no record") {
  TempDir tmp;
  const std::string src_path = MakeSource(tmp.path());
  const std::pair<FsyncMode, std::string> modes[] = {
      {FsyncMode::kStep, "step"}, {FsyncMode::kEnd, "end"}, {FsyncMode::kNever, "never"}};
  for (const auto& m : modes) {
    const FsyncMode mode = m.first;
    const std::string& name = m.second;  // not a binding: CAPTURE takes it into a lambda
    CAPTURE(name);
    const std::string dst_path = JoinPath(tmp.path(), "dst-" + name);
    {
      auto source = OpenDirSource(src_path);
      REQUIRE(source.ok());
      auto sink = OpenDirSink(dst_path, mode);
      REQUIRE(sink.ok());
      ReplicatorOptions o;
      o.source_id = "dir:src";
      o.fsync = mode;
      Replicator r(source->get(), sink->get(), o);
      REQUIRE(r.Run().ok());
      CHECK(r.summary().records == 8);
    }
    CHECK(AllBytes(dst_path, "c") == AllBytes(src_path, "c"));
    CHECK(PathExists(JoinPath(dst_path, "clean-shutdown")) == (mode != FsyncMode::kNever));
    auto cp = ReadFile(JoinPath(JoinPath(dst_path, "silt-replicate"),
                                CheckpointFileName("dir:src")));
    REQUIRE(cp.ok());
    CHECK(*cp == (mode == FsyncMode::kNever ? "0\n1\nc 0 0\n" : "0\n1\nc 0 23\n"));
  }
}

TEST_CASE("a destination cut back behind its checkpoint by a crash is resumed at its end") {
  // A crash of the machine after a run without fsync may keep the checkpoint and lose the
  // tail of the segment: the destination's recovery cuts the torn batch, and the rerun copies
  // from there, not from the checkpoint.
  TempDir tmp;
  const std::string src_path = MakeSource(tmp.path());
  const std::string dst_path = JoinPath(tmp.path(), "dst");
  auto copy = [&] {
    auto source = OpenDirSource(src_path);
    REQUIRE(source.ok());
    auto sink = OpenDirSink(dst_path);
    REQUIRE(sink.ok());
    ReplicatorOptions o;
    o.source_id = "dir:src";
    Replicator r(source->get(), sink->get(), o);
    REQUIRE(r.Run().ok());
    return r.summary().batches;
  };
  CHECK(copy() == 3);
  const std::string seg = JoinPath(JoinPath(dst_path, "c-0"), "00000000000000000000.log");
  const int64_t last = static_cast<int64_t>(Batch(20, 3).size());
  const auto size = std::filesystem::file_size(seg);
  std::filesystem::resize_file(seg, size - last + 10);  // the last batch torn
  std::filesystem::remove(JoinPath(dst_path, "clean-shutdown"));
  CHECK(copy() == 1);
  CHECK(AllBytes(dst_path, "c") == AllBytes(src_path, "c"));
  auto cp = ReadFile(JoinPath(JoinPath(dst_path, "silt-replicate"),
                              CheckpointFileName("dir:src")));
  REQUIRE(cp.ok());
  CHECK(*cp == "0\n1\nc 0 23\n");
}

TEST_CASE("several partitions are copied file to file at once, each byte for byte, and resumed") {
  TempDir tmp;
  const std::string src_path = JoinPath(tmp.path(), "src");
  {
    storage::DataDir::Options o;
    auto dir = storage::DataDir::Open(src_path, o);
    REQUIRE(dir.ok());
    REQUIRE((*dir)->CreateTopic("m", NewTopicId(), 3, {}).ok());
    for (int32_t p = 0; p < 3; ++p) {
      auto log = (*dir)->Partition("m", p);
      REQUIRE(log.ok());
      for (int64_t base = 0; base < 300 * (p + 1); base += 10) {
        BatchSpec spec;
        spec.base_offset = base;
        spec.records = 10;
        spec.value_size = 1000;
        spec.base_timestamp = 7000 + base;
        REQUIRE((*log)->AppendWithOffsets(MakeBatch(spec)).ok());
      }
    }
    REQUIRE((*dir)->Close().ok());
  }
  const std::string dst_path = JoinPath(tmp.path(), "dst");
  auto copy = [&](int64_t chunk_bytes) {
    auto source = OpenDirSource(src_path);
    REQUIRE(source.ok());
    auto sink = OpenDirSink(dst_path, FsyncMode::kEnd);
    REQUIRE(sink.ok());
    ReplicatorOptions o;
    o.source_id = "dir:src";
    o.fsync = FsyncMode::kEnd;
    o.chunk_bytes = chunk_bytes;
    Replicator r(source->get(), sink->get(), o);
    REQUIRE(r.Run().ok());
    return r.summary().records;
  };
  auto bytes_of = [](const std::string& path, int32_t p) {
    storage::DataDir::Options o;
    o.read_only = true;
    o.create = false;
    auto dir = storage::DataDir::Open(path, o);
    REQUIRE(dir.ok());
    auto log = (*dir)->Partition("m", p);
    REQUIRE(log.ok());
    auto r = (*log)->Read(Offset(0), 1 << 30, (*log)->log_end_offset());
    REQUIRE(r.ok());
    return *r->ReadAll();
  };
  CHECK(copy(100 << 10) == 300 + 600 + 900);
  // A destination partition cut back (as a crash might): the next run copies the rest of it
  // alongside the others, which have nothing new.
  {
    storage::DataDir::Options o;
    auto dir = storage::DataDir::Open(dst_path, o);
    REQUIRE(dir.ok());
    auto log = (*dir)->Partition("m", 2);
    REQUIRE(log.ok());
    REQUIRE((*log)->TruncateTo(Offset(567)).ok());  // the batch at 560 goes whole
    REQUIRE((*dir)->Close().ok());
  }
  CHECK(copy(100 << 10) == 900 - 560);
  for (int32_t p = 0; p < 3; ++p) {
    CAPTURE(p);
    CHECK(bytes_of(dst_path, p) == bytes_of(src_path, p));
  }
}
