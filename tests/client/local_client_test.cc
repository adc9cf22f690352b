// LocalProducer and LocalConsumer over a real data directory in a temporary folder.
#include <doctest/doctest.h>

#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "base/clock.h"
#include "base/file.h"
#include "base/random.h"
#include "client/local_consumer.h"
#include "client/local_producer.h"
#include "format/record_batch.h"
#include "storage/data_dir.h"
#include "storage/offset_checkpoint.h"

using namespace silt;
using namespace silt::client;

namespace {

struct TempDataDir {
  std::string path;
  TempDataDir() {
    char tmpl[] = "/tmp/silt-client-test.XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDataDir() { (void)RemoveAll(path); }
};

std::unique_ptr<storage::DataDir> Open(const std::string& path, bool read_only) {
  storage::DataDir::Options o;
  o.read_only = read_only;
  auto d = storage::DataDir::Open(path, o);
  REQUIRE_MESSAGE(d.ok(), d.status().ToString());
  return std::move(d).value();
}

struct Got {
  int32_t partition;
  int64_t offset;
  std::string key;
  std::string value;
};

std::vector<Got> ReadAll(const std::string& path, const std::string& topic, ConsumerOptions o) {
  auto dir = Open(path, true);
  auto c = LocalConsumer::Open(dir.get(), topic, o);
  REQUIRE_MESSAGE(c.ok(), c.status().ToString());
  std::vector<Got> got;
  Status st = (*c)->Run(
      [&](int32_t p, const format::RecordView& r) {
        got.push_back({p, r.offset, std::string(r.key), std::string(r.value)});
        return true;
      },
      nullptr, nullptr);
  REQUIRE_MESSAGE(st.ok(), st.ToString());
  return got;
}

}  // namespace

TEST_CASE("records produced locally are read back in order, batched by size") {
  TempDataDir tmp;
  {
    auto dir = Open(tmp.path, false);
    ProducerOptions po;
    po.batch_bytes = 1000;
    auto p = LocalProducer::Open(dir.get(), "t", po);
    REQUIRE_MESSAGE(p.ok(), p.status().ToString());
    for (int i = 0; i < 200; ++i)
      REQUIRE((*p)->Send(std::nullopt, "value-" + std::to_string(i), {}).ok());
    REQUIRE((*p)->Flush().ok());
    CHECK((*p)->records_appended() == 200);
    // ~20 bytes a record: 1000-byte batches hold about 40 each.
    CHECK((*p)->batches_appended() >= 4);
    CHECK((*p)->batches_appended() <= 10);
    auto log = dir->Partition("t", 0);
    REQUIRE(log.ok());
    CHECK((*log)->recovery_point() == (*log)->log_end_offset());  // Flush synced everything
    REQUIRE(dir->Close().ok());
  }
  auto got = ReadAll(tmp.path, "t", {});
  REQUIRE(got.size() == 200);
  for (int i = 0; i < 200; ++i) {
    CHECK(got[i].offset == i);
    CHECK(got[i].value == "value-" + std::to_string(i));
  }
}

TEST_CASE("a record too big for max.message.bytes is refused and nothing of it is written") {
  TempDataDir tmp;
  auto dir = Open(tmp.path, false);
  REQUIRE(dir->CreateTopic("small", NewTopicId(), 1, {{"max.message.bytes", "500"}}).ok());
  auto p = LocalProducer::Open(dir.get(), "small", {});
  REQUIRE(p.ok());
  REQUIRE((*p)->Send(std::nullopt, "fits", {}).ok());
  Status st = (*p)->Send(std::nullopt, std::string(600, 'x'), {});
  CHECK(st.IsTooLarge());
  CHECK(st.message().find("max.message.bytes") != std::string::npos);
  REQUIRE((*p)->Send(std::nullopt, "still fine", {}).ok());
  REQUIRE((*p)->Flush().ok());
  CHECK((*(dir->Partition("small", 0)))->log_end_offset() == Offset(2));
  // Batches never exceed the limit: many small records split into several batches.
  for (int i = 0; i < 100; ++i) REQUIRE((*p)->Send(std::nullopt, std::string(40, 'y'), {}).ok());
  REQUIRE((*p)->Flush().ok());
  for (const auto& s : (*(dir->Partition("small", 0)))->Segments()) CHECK(s.size_bytes > 0);
  REQUIRE(dir->Close().ok());
  CHECK(ReadAll(tmp.path, "small", {}).size() == 102);
}

TEST_CASE("a missing topic is created unless asked not to, and partitions are checked") {
  TempDataDir tmp;
  auto dir = Open(tmp.path, false);
  ProducerOptions no_create;
  no_create.create_topic = false;
  CHECK(LocalProducer::Open(dir.get(), "absent", no_create).status().IsNotFound());
  ProducerOptions create;
  create.default_partitions = 3;
  auto p = LocalProducer::Open(dir.get(), "absent", create);
  REQUIRE(p.ok());
  CHECK((*p)->partitions() == 3);
  ProducerOptions bad;
  bad.partition = 3;
  CHECK_FALSE(LocalProducer::Open(dir.get(), "absent", bad).ok());
}

TEST_CASE("the consumer starts where the offset expression says, per partition") {
  TempDataDir tmp;
  {
    auto dir = Open(tmp.path, false);
    REQUIRE(dir->CreateTopic("t", NewTopicId(), 2, {}).ok());
    ProducerOptions po;
    po.partition = 0;
    auto p0 = LocalProducer::Open(dir.get(), "t", po);
    for (int i = 0; i < 10; ++i)
      REQUIRE((*p0)->Send(std::nullopt, std::string("a").append(std::to_string(i)), {}, 1000 * (i + 1)).ok());
    REQUIRE((*p0)->Flush().ok());
    po.partition = 1;
    auto p1 = LocalProducer::Open(dir.get(), "t", po);
    for (int i = 0; i < 4; ++i) REQUIRE((*p1)->Send(std::nullopt, std::string("b").append(std::to_string(i)), {}).ok());
    REQUIRE((*p1)->Flush().ok());
    REQUIRE(dir->Close().ok());
  }
  ConsumerOptions o;
  o.start = {OffsetSpec::Kind::kFromEnd, 2};
  auto got = ReadAll(tmp.path, "t", o);
  REQUIRE(got.size() == 4);
  o.partitions = {0};
  o.start = {OffsetSpec::Kind::kTimestamp, 7500};
  got = ReadAll(tmp.path, "t", o);
  REQUIRE(got.size() == 3);
  CHECK(got[0].value == "a7");
  o.start = {OffsetSpec::Kind::kAbsolute, 5};
  o.committed = {{0, 8}};
  got = ReadAll(tmp.path, "t", o);
  REQUIRE(got.size() == 2);
  CHECK(got[0].offset == 8);  // a committed position wins over the expression
  o.partitions = {7};
  auto dir = Open(tmp.path, true);
  CHECK_FALSE(LocalConsumer::Open(dir.get(), "t", o).ok());
  CHECK(LocalConsumer::Open(dir.get(), "nope", {}).status().IsNotFound());
}

TEST_CASE("a follower is woken by appends from another writer and follows segment rolls") {
  TempDataDir tmp;
  {
    auto dir = Open(tmp.path, false);
    REQUIRE(dir->CreateTopic("live", NewTopicId(), 1, {{"segment.bytes", "2048"}}).ok());
    REQUIRE(dir->Close().ok());
  }
  auto rdir = Open(tmp.path, true);
  ConsumerOptions o;
  o.follow = true;
  o.idle_check_ms = 60000;  // only inotify can wake it in time
  auto c = LocalConsumer::Open(rdir.get(), "live", o);
  REQUIRE(c.ok());
  std::atomic<bool> stop{false};
  std::vector<std::string> got;
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto dir = Open(tmp.path, false);
    ProducerOptions po;
    po.batch_bytes = 300;
    auto p = LocalProducer::Open(dir.get(), "live", po);
    for (int i = 0; i < 300; ++i) {
      REQUIRE((*p)->Send(std::nullopt, "record-" + std::to_string(i), {}).ok());
      if (i % 50 == 49) {
        REQUIRE((*p)->SendPending().ok());
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    REQUIRE((*p)->Flush().ok());
    REQUIRE(dir->Close().ok());
  });
  const int64_t deadline = MonotonicMs() + 20000;
  Status st = (*c)->Run(
      [&](int32_t, const format::RecordView& r) {
        got.emplace_back(r.value);
        return got.size() < 300;
      },
      [&]() -> Status {
        if (MonotonicMs() > deadline) stop = true;
        return Status::OK();
      },
      &stop);
  writer.join();
  REQUIRE(st.ok());
  REQUIRE(got.size() == 300);
  for (int i = 0; i < 300; ++i) CHECK(got[i] == "record-" + std::to_string(i));
  CHECK((*c)->Positions().at(0) == 300);
  auto segs = ListDir(JoinPath(tmp.path, "live-0"));
  int logs = 0;
  for (const auto& n : *segs) logs += n.size() > 4 && n.substr(n.size() - 4) == ".log";
  CHECK(logs >= 3);
}

TEST_CASE("a consumer that is not following stops at the end it saw when it opened") {
  TempDataDir tmp;
  auto wdir = Open(tmp.path, false);
  auto p = LocalProducer::Open(wdir.get(), "t", {});
  for (int i = 0; i < 5; ++i) REQUIRE((*p)->Send(std::nullopt, "x", {}).ok());
  REQUIRE((*p)->Flush().ok());
  auto rdir = Open(tmp.path, true);
  auto c = LocalConsumer::Open(rdir.get(), "t", {});
  REQUIRE(c.ok());
  for (int i = 0; i < 5; ++i) REQUIRE((*p)->Send(std::nullopt, "later", {}).ok());
  REQUIRE((*p)->Flush().ok());
  int n = 0;
  REQUIRE((*c)->Run([&](int32_t, const format::RecordView&) { return ++n, true; }, nullptr, nullptr).ok());
  CHECK(n == 5);
  CHECK((*c)->Positions().at(0) == 5);
}

TEST_CASE("on a replica's data dir a consumer stops at the checkpointed high watermark") {
  TempDataDir tmp;
  {
    auto wdir = Open(tmp.path, false);
    auto p = LocalProducer::Open(wdir.get(), "t", {});
    for (int i = 0; i < 6; ++i) REQUIRE((*p)->Send(std::nullopt, "r" + std::to_string(i), {}).ok());
    REQUIRE((*p)->Flush().ok());
  }
  // Without a replication-offset-checkpoint (a single node's dir): the log end.
  CHECK(ReadAll(tmp.path, "t", {}).size() == 6);
  // A cluster replica's dir: records 4 and 5 were never known to be committed.
  REQUIRE(storage::WriteOffsetCheckpoint(tmp.path + "/" + storage::kReplicationCheckpointFile,
                                         {{{"t", 0}, 4}, {{"other", 0}, 1}})
              .ok());
  auto got = ReadAll(tmp.path, "t", {});
  REQUIRE(got.size() == 4);
  CHECK(got.back().value == "r3");
  // "end" is that bound too; a checkpoint past the log end changes nothing.
  ConsumerOptions from_end;
  from_end.start = {OffsetSpec::Kind::kFromEnd, 1};
  got = ReadAll(tmp.path, "t", from_end);
  REQUIRE(got.size() == 1);
  CHECK(got[0].offset == 3);
  REQUIRE(storage::WriteOffsetCheckpoint(tmp.path + "/" + storage::kReplicationCheckpointFile,
                                         {{{"t", 0}, 99}})
              .ok());
  CHECK(ReadAll(tmp.path, "t", {}).size() == 6);
}

TEST_CASE("a background producer writes what a foreground one writes, batch for batch") {
  for (auto codec : {format::Compression::kNone, format::Compression::kZstd}) {
    CAPTURE(static_cast<int>(codec));
    std::vector<std::vector<Got>> runs;
    std::vector<int64_t> batches;
    for (bool background : {false, true}) {
      TempDataDir tmp;
      {
        auto dir = Open(tmp.path, false);
        REQUIRE(dir->CreateTopic("t", NewTopicId(), 3, {}).ok());
        ProducerOptions po;
        po.batch_bytes = 700;
        po.compression = codec;
        po.partitioner = Partitioner::Kind::kMurmur2;
        po.background = background;
        auto p = LocalProducer::Open(dir.get(), "t", po);
        REQUIRE(p.ok());
        for (int i = 0; i < 3000; ++i) {
          std::string key = std::to_string(i % 17);
          std::string value = std::to_string(i);
          REQUIRE((*p)->Send(key, value, {}).ok());
        }
        REQUIRE((*p)->Flush().ok());
        CHECK((*p)->records_appended() == 3000);
        batches.push_back((*p)->batches_appended());
        // Flush returned: everything is appended and synced.
        for (int32_t part = 0; part < 3; ++part) {
          auto log = dir->Partition("t", part);
          REQUIRE(log.ok());
          CHECK((*log)->recovery_point() == (*log)->log_end_offset());
        }
        REQUIRE(dir->Close().ok());
      }
      runs.push_back(ReadAll(tmp.path, "t", {}));
    }
    REQUIRE(runs[0].size() == 3000);
    CHECK(batches[0] == batches[1]);
    auto key = [](const Got& g) { return std::make_pair(g.partition, g.offset); };
    std::sort(runs[0].begin(), runs[0].end(), [&](const Got& a, const Got& b) { return key(a) < key(b); });
    std::sort(runs[1].begin(), runs[1].end(), [&](const Got& a, const Got& b) { return key(a) < key(b); });
    REQUIRE(runs[1].size() == runs[0].size());
    for (size_t i = 0; i < runs[0].size(); ++i) {
      CHECK(runs[1][i].partition == runs[0][i].partition);
      CHECK(runs[1][i].offset == runs[0][i].offset);
      CHECK(runs[1][i].value == runs[0][i].value);
      CHECK(runs[1][i].key == runs[0][i].key);
    }
  }
}

TEST_CASE("a background append that fails is reported, and nothing after it is appended") {
  TempDataDir tmp;
  auto dir = Open(tmp.path, false);
  ProducerOptions po;
  po.batch_bytes = 1000;
  po.background = true;
  auto p = LocalProducer::Open(dir.get(), "t", po);
  REQUIRE(p.ok());
  // Let some batches through, then the disk is full.
  for (int i = 0; i < 200; ++i) REQUIRE((*p)->Send(std::nullopt, "before-" + std::to_string(i), {}).ok());
  REQUIRE((*p)->Flush().ok());
  const int64_t before = (*p)->records_appended();
  CHECK(before == 200);
  SetWriteBudgetForTesting(2500);
  Status st;
  for (int i = 0; i < 2000 && st.ok(); ++i) st = (*p)->Send(std::nullopt, "after-" + std::to_string(i), {});
  if (st.ok()) st = (*p)->Flush();
  SetWriteBudgetForTesting(-1);
  REQUIRE_FALSE(st.ok());
  CHECK(st.IsNoSpace());
  // Later calls keep failing; the log holds whole batches only and exactly the appended count.
  CHECK_FALSE((*p)->Flush().ok());
  const int64_t appended = (*p)->records_appended();
  CHECK(appended >= before);
  CHECK(appended < 2200);
  REQUIRE(dir->Close().ok());
  auto got = ReadAll(tmp.path, "t", {});
  CHECK(static_cast<int64_t>(got.size()) == appended);
}

TEST_CASE("a local consumer with a group resumes from its commit and commits only on a good close") {
  TempDataDir tmp;
  {
    auto dir = Open(tmp.path, false);
    auto p = LocalProducer::Open(dir.get(), "t", {});
    REQUIRE(p.ok());
    for (int i = 0; i < 5; ++i) REQUIRE((*p)->Send(std::nullopt, std::to_string(i), {}).ok());
    REQUIRE((*p)->Flush().ok());
    REQUIRE(dir->Close().ok());
  }
  // Reads two, commits them; through the interface, as `silt consume` does.
  auto read = [&](int64_t n, bool commit) {
    auto dir = Open(tmp.path, true);
    ConsumerOptions o;
    o.group = "g";
    auto opened = LocalConsumer::Open(dir.get(), "t", o);
    REQUIRE_MESSAGE(opened.ok(), opened.status().ToString());
    std::unique_ptr<Consumer> c = std::move(opened).value();
    std::vector<std::string> got;
    REQUIRE(c->Run(
                 [&](int32_t, const format::RecordView& r) {
                   got.emplace_back(r.value);
                   return static_cast<int64_t>(got.size()) < n;
                 },
                 nullptr, nullptr)
                .ok());
    REQUIRE(c->Close(commit).ok());
    return got;
  };
  CHECK(read(2, true) == std::vector<std::string>{"0", "1"});
  CHECK(read(1, false) == std::vector<std::string>{"2"});  // not committed
  CHECK(read(10, true) == std::vector<std::string>{"2", "3", "4"});
  CHECK(read(10, true).empty());
}
