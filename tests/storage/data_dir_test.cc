#include "storage/data_dir.h"

#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/random.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "storage/test_util.h"

using namespace silt;
using namespace silt::storage;
using namespace silt::storage::testing;

namespace {

std::unique_ptr<DataDir> OpenDir(const std::string& path, bool read_only = false) {
  DataDir::Options o;
  o.read_only = read_only;
  auto r = DataDir::Open(path, o);
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  return std::move(r).value();
}

}  // namespace

TEST_CASE("a topic takes the id its creator gives it, and refuses reserved or taken ids") {
  TempDir dir;
  std::string id;
  {
    auto dd = OpenDir(dir.path());
    Uuid chosen = NewTopicId();
    id = chosen.ToString();
    auto t = dd->CreateTopic("a", chosen, 2, {});
    REQUIRE_MESSAGE(t.ok(), t.status().ToString());
    CHECK(t->topic_id == id);
    CHECK(Slurp(dir / "a-1/partition.metadata") == "version: 0\ntopic_id: " + id);
    CHECK(dd->CreateTopic("b", Uuid(), 1, {}).status().code() == Status::Code::kInvalidArgument);
    Uuid::Bytes one{};
    one[15] = 1;  // Kafka's METADATA_TOPIC_ID
    CHECK(dd->CreateTopic("b", Uuid(one), 1, {}).status().code() ==
          Status::Code::kInvalidArgument);
    CHECK(dd->CreateTopic("b", chosen, 1, {}).status().code() == Status::Code::kAlreadyExists);
    CHECK(!dd->GetTopic("b").ok());
    REQUIRE(dd->Close().ok());
  }
  auto dd = OpenDir(dir.path());
  CHECK(dd->GetTopic("a")->topic_id == id);
}

TEST_CASE("topics are created with partitions, Kafka's metadata files and a properties file") {
  TempDir dir;
  auto dd = OpenDir(dir.path());
  auto t = dd->CreateTopic("orders.v1", NewTopicId(), 3, {{"retention.ms", "60000"}});
  REQUIRE_MESSAGE(t.ok(), t.status().ToString());
  CHECK(t->partitions == 3);
  CHECK(t->topic_id.size() == 22);
  CHECK(t->partition_ids == std::vector<int32_t>{0, 1, 2});
  for (int p = 0; p < 3; ++p) {
    std::string pdir = dir / ("orders.v1-" + std::to_string(p));
    CHECK(Slurp(JoinPath(pdir, "partition.metadata")) == "version: 0\ntopic_id: " + t->topic_id);
    // No leader-epoch-checkpoint until the partition has epochs (Kafka reads none as empty).
    CHECK(!PathExists(JoinPath(pdir, "leader-epoch-checkpoint")));
  }
  std::string props = Slurp(dir / "silt-topics/orders.v1.properties");
  CHECK(props.find("partitions=3\n") != std::string::npos);
  CHECK(props.find("retention.ms=60000\n") != std::string::npos);
  CHECK(dd->TopicConfig("orders.v1")->retention_ms == 60000);
  CHECK(dd->CreateTopic("orders.v1", NewTopicId(), 1, {}).status().code() ==
        Status::Code::kAlreadyExists);

  // Records go in and come back, and survive a reopen with the topic's configs.
  auto log = dd->Partition("orders.v1", 1);
  REQUIRE(log.ok());
  std::string b = MakeBatch(4);
  REQUIRE((*log)->Append(&b).ok());
  CHECK((*log)->config().retention_ms == 60000);
  CHECK(dd->Partition("orders.v1", 3).status().IsNotFound());
  CHECK(dd->Partition("nope", 0).status().IsNotFound());
  REQUIRE(dd->Close().ok());

  dd = OpenDir(dir.path());
  CHECK(dd->opened_after_clean_shutdown());
  auto topics = dd->ListTopics();
  REQUIRE(topics.size() == 1);
  CHECK(topics[0].name == "orders.v1");
  CHECK(topics[0].topic_id == t->topic_id);
  CHECK(topics[0].configs.at("retention.ms") == "60000");
  auto again = dd->Partition("orders.v1", 1);
  REQUIRE(again.ok());
  CHECK((*again)->log_end_offset() == Offset(4));
  CHECK((*again)->config().retention_ms == 60000);
}

TEST_CASE("topic names follow Kafka's rules") {
  TempDir dir;
  auto dd = OpenDir(dir.path());
  for (const std::string& bad : std::vector<std::string>{"", ".", "..", "a/b", "a b", "t\xc3\xb3pico", std::string(250, 'x')})
    CHECK(dd->CreateTopic(bad, NewTopicId(), 1, {}).status().code() ==
          Status::Code::kInvalidArgument);
  CHECK(dd->CreateTopic(std::string(249, 'x'), NewTopicId(), 1, {}).ok());
  CHECK(dd->CreateTopic("a.b", NewTopicId(), 1, {}).ok());
  auto clash = dd->CreateTopic("a_b", NewTopicId(), 1, {});
  CHECK(clash.status().code() == Status::Code::kInvalidArgument);
  CHECK(clash.status().message().find("a.b") != std::string::npos);
  CHECK(dd->CreateTopic("x", NewTopicId(), 0, {}).status().code() ==
        Status::Code::kInvalidArgument);
  CHECK(dd->CreateTopic("x", NewTopicId(), -1, {})->partitions == 1);  // the default
  // A bad config value leaves no trace of the topic.
  auto bad_cfg = dd->CreateTopic("y", NewTopicId(), 1, {{"segment.bytes", "10"}});
  CHECK(bad_cfg.status().code() == Status::Code::kInvalidArgument);
  CHECK(!PathExists(dir / "y-0"));
  CHECK(dd->GetTopic("y").status().IsNotFound());
}

TEST_CASE("topic configs are altered and removed, and open logs see the change") {
  TempDir dir;
  auto dd = OpenDir(dir.path());
  REQUIRE(dd->CreateTopic("t", NewTopicId(), 1, {{"retention.ms", "1000"}}).ok());
  auto log = dd->Partition("t", 0);
  REQUIRE(log.ok());
  REQUIRE(dd->AlterTopicConfig("t", {{"segment.bytes", "4096"}}, {"retention.ms"}).ok());
  CHECK((*log)->config().segment_bytes == 4096);
  CHECK((*log)->config().retention_ms == LogConfig{}.retention_ms);
  auto info = dd->GetTopic("t");
  CHECK(info->configs.count("retention.ms") == 0);
  CHECK(info->configs.at("segment.bytes") == "4096");
  CHECK(dd->AlterTopicConfig("t", {{"cleanup.policy", "shred"}}).code() ==
        Status::Code::kInvalidArgument);
  CHECK(dd->AlterTopicConfig("t", {{"bogus.key", "1"}}).code() ==
        Status::Code::kInvalidArgument);
  CHECK(dd->GetTopic("t")->configs.size() == 1);
  CHECK(dd->AlterTopicConfig("nope", {}).IsNotFound());
}

TEST_CASE("partitions are added, and topics are deleted with their directories") {
  TempDir dir;
  auto dd = OpenDir(dir.path());
  REQUIRE(dd->CreateTopic("t", NewTopicId(), 2, {}).ok());
  CHECK(dd->AddPartitions("t", 2).code() == Status::Code::kInvalidArgument);
  REQUIRE(dd->AddPartitions("t", 5).ok());
  CHECK(dd->GetTopic("t")->partitions == 5);
  CHECK(IsDirectory(dir / "t-4"));
  auto log = dd->Partition("t", 4);
  REQUIRE(log.ok());
  std::string b = MakeBatch(1);
  REQUIRE((*log)->Append(&b).ok());
  REQUIRE(dd->DeleteTopic("t").ok());
  CHECK(!IsDirectory(dir / "t-0"));
  CHECK(!IsDirectory(dir / "t-4"));
  CHECK(!PathExists(dir / "silt-topics/t.properties"));
  CHECK(dd->ListTopics().empty());
  dd->WaitForDeletions();
  auto left = ListDir(dir.path());
  REQUIRE(left.ok());
  for (const std::string& e : left.value()) CHECK(e.find("t-") != 0);
  CHECK(dd->DeleteTopic("t").IsNotFound());
  REQUIRE(dd->Close().ok());
  CHECK(Slurp(dir / "recovery-point-offset-checkpoint") == "0\n0\n");
}

TEST_CASE("close writes Kafka's recovery checkpoint and a marker that the next open removes") {
  TempDir dir;
  {
    auto dd = OpenDir(dir.path());
    REQUIRE(dd->CreateTopic("a", NewTopicId(), 2, {}).ok());
    for (int p = 0; p < 2; ++p) {
      auto log = dd->Partition("a", p);
      REQUIRE(log.ok());
      for (int i = 0; i <= p; ++i) {
        std::string b = MakeBatch(3);
        REQUIRE((*log)->Append(&b).ok());
      }
    }
    REQUIRE(dd->Close().ok());
  }
  CHECK(Slurp(dir / "recovery-point-offset-checkpoint") == "0\n2\na 0 3\na 1 6\n");
  CHECK(Slurp(dir / "log-start-offset-checkpoint") == "0\n2\na 0 0\na 1 0\n");
  CHECK(PathExists(dir / "clean-shutdown"));
  {
    auto dd = OpenDir(dir.path());
    CHECK(dd->opened_after_clean_shutdown());
    CHECK(!PathExists(dir / "clean-shutdown"));
    auto log = dd->Partition("a", 1);
    REQUIRE(log.ok());
    CHECK((*log)->log_end_offset() == Offset(6));
    CHECK((*log)->recovery_point() == Offset(6));
    // Dropped without Close(): like a crash.
  }
  CHECK(!PathExists(dir / "clean-shutdown"));
  auto dd = OpenDir(dir.path());
  CHECK(!dd->opened_after_clean_shutdown());
  auto log = dd->Partition("a", 1);
  REQUIRE(log.ok());
  CHECK((*log)->log_end_offset() == Offset(6));
}

TEST_CASE("delete-records survives a restart through log-start-offset-checkpoint") {
  TempDir dir;
  {
    auto dd = OpenDir(dir.path());
    REQUIRE(dd->CreateTopic("a", NewTopicId(), 1, {}).ok());
    auto log = dd->Partition("a", 0);
    for (int i = 0; i < 5; ++i) {
      std::string b = MakeBatch(2);
      REQUIRE((*log)->Append(&b).ok());
    }
    REQUIRE((*log)->AdvanceLogStart(Offset(4)).ok());
    REQUIRE(dd->Close().ok());
  }
  auto dd = OpenDir(dir.path());
  auto log = dd->Partition("a", 0);
  REQUIRE(log.ok());
  CHECK((*log)->log_start_offset() == Offset(4));
}

TEST_CASE("a second writer gets Busy naming the pid of the process holding the directory") {
  TempDir dir;
  int ready[2], done[2];
  REQUIRE(pipe(ready) == 0);
  REQUIRE(pipe(done) == 0);
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // The child holds the directory until the parent says it is done.
    DataDir::Options o;
    auto dd = DataDir::Open(dir.path(), o);
    char c = dd.ok() ? 'y' : 'n';
    (void)!write(ready[1], &c, 1);
    (void)!read(done[0], &c, 1);
    _exit(0);
  }
  char c = 0;
  REQUIRE(read(ready[0], &c, 1) == 1);
  REQUIRE(c == 'y');
  DataDir::Options o;
  auto second = DataDir::Open(dir.path(), o);
  CHECK(second.status().IsBusy());
  CHECK(second.status().message().find(std::to_string(child)) != std::string::npos);
  // Read-only opens take no lock.
  o.read_only = true;
  CHECK(DataDir::Open(dir.path(), o).ok());
  (void)!write(done[1], "x", 1);
  int status = 0;
  waitpid(child, &status, 0);
  CHECK(WIFEXITED(status));
  // Once the holder is gone the directory opens.
  o.read_only = false;
  auto third = DataDir::Open(dir.path(), o);
  CHECK(third.ok());
  // And within one process a second open is refused too.
  CHECK(DataDir::Open(dir.path(), o).status().IsBusy());
  for (int fd : {ready[0], ready[1], done[0], done[1]}) close(fd);
}

TEST_CASE("legacy silt-groups files are read, listed and retired beside the old copies") {
  TempDir dir;
  auto dd = OpenDir(dir.path());
  CHECK(!dd->HasLegacyGroups());
  CHECK(dd->RetireLegacyGroups().ok());  // nothing to do
  REQUIRE(CreateDirs(dir / "silt-groups").ok());
  // What earlier versions wrote: the group's bytes outside [A-Za-z0-9._-] as %XX.
  WriteBytes(dir / "silt-groups/g1.properties", "# committed offsets of group g1\nt.x/0=5\nt.x/1=9\nu/0=1\n");
  WriteBytes(dir / "silt-groups/team%2Fa%20b%25c.properties", "t/0=3\n");
  WriteBytes(dir / "silt-groups/bad.properties", "t/x=3\n");
  const std::string odd = "team/a b%c";
  CHECK(dd->HasLegacyGroups());
  CHECK(dd->ListLegacyGroups() == std::vector<std::string>{"bad", "g1", odd});
  auto g = dd->LegacyGroupCommitted("g1");
  REQUIRE(g.ok());
  CHECK(g->at("t.x").at(0) == 5);
  CHECK(g->at("t.x").at(1) == 9);
  CHECK(g->at("u").at(0) == 1);
  CHECK(dd->LegacyGroupCommitted(odd)->at("t").at(0) == 3);
  CHECK(dd->LegacyGroupCommitted("bad").status().code() == Status::Code::kCorruption);
  CHECK(dd->LegacyGroupCommitted("none").status().IsNotFound());
  REQUIRE(CreateDirs(dir / "silt-groups.migrated").ok());  // an earlier migration's copy
  REQUIRE(dd->RetireLegacyGroups().ok());
  CHECK(!dd->HasLegacyGroups());
  CHECK(dd->ListLegacyGroups().empty());
  CHECK(PathExists(dir / "silt-groups.migrated.1/g1.properties"));
}

TEST_CASE("partition directories left by an interrupted delete are removed, never revived") {
  TempDir dir;
  {
    auto dd = OpenDir(dir.path());
    REQUIRE(dd->Close().ok());
  }
  // What a crash right after the renames leaves.
  REQUIRE(CreateDirs(dir / "gone-0.1234abcd-delete").ok());
  WriteBytes(dir / "gone-0.1234abcd-delete/00000000000000000000.log", MakeBatch(1));
  auto ro = OpenDir(dir.path(), true);
  CHECK(ro->ListTopics().empty());
  ro.reset();
  auto dd = OpenDir(dir.path());
  CHECK(dd->ListTopics().empty());
  dd->WaitForDeletions();
  CHECK(!PathExists(dir / "gone-0.1234abcd-delete"));
}

TEST_CASE("a read-only data dir writes nothing and refuses changes") {
  TempDir dir;
  {
    auto dd = OpenDir(dir.path());
    REQUIRE(dd->CreateTopic("t", NewTopicId(), 1, {}).ok());
    REQUIRE(dd->Close().ok());
  }
  auto before = ListDir(dir.path()).value();
  auto dd = OpenDir(dir.path(), true);
  CHECK(dd->read_only());
  CHECK(dd->CreateTopic("u", NewTopicId(), 1, {}).status().code() ==
        Status::Code::kInvalidArgument);
  auto log = dd->Partition("t", 0);
  REQUIRE(log.ok());
  std::string b = MakeBatch(1);
  CHECK(!(*log)->Append(&b).ok());
  REQUIRE(dd->Close().ok());
  CHECK(ListDir(dir.path()).value() == before);
  CHECK(PathExists(dir / "clean-shutdown"));
}

TEST_CASE("a truncation below the checkpointed recovery point lowers the checkpoint at once") {
  TempDir dir;
  DataDir::Options o;
  o.defaults.segment_bytes = 1000;
  {
    auto dd = DataDir::Open(dir.path(), o);
    REQUIRE(dd.ok());
    REQUIRE((*dd)->CreateTopic("a", NewTopicId(), 1, {}).ok());
    auto log = (*dd)->Partition("a", 0);
    for (int i = 0; i < 30; ++i) {
      std::string b = MakeBatch(2, 30);
      REQUIRE((*log)->Append(&b).ok());
    }
    REQUIRE((*dd)->Close().ok());
  }
  CHECK(Slurp(dir / "recovery-point-offset-checkpoint") == "0\n1\na 0 60\n");
  {
    auto dd = DataDir::Open(dir.path(), o);
    REQUIRE(dd.ok());
    auto log = (*dd)->Partition("a", 0);
    REQUIRE(log.ok());
    REQUIRE((*log)->TruncateTo(Offset(10)).ok());
    CHECK(Slurp(dir / "recovery-point-offset-checkpoint") == "0\n1\na 0 10\n");
    // New data, new segments, never flushed; then a crash (no Close).
    for (int i = 0; i < 30; ++i) {
      std::string b = MakeBatch(2, 30, 5000);
      REQUIRE((*log)->Append(&b).ok());
    }
  }
  auto dd = DataDir::Open(dir.path(), o);
  REQUIRE(dd.ok());
  auto log = (*dd)->Partition("a", 0);
  REQUIRE_MESSAGE(log.ok(), log.status().ToString());
  CHECK((*log)->log_end_offset() == Offset(70));
  auto r = (*log)->Read(Offset(0), INT64_MAX, Offset(INT64_MAX));
  CHECK(BatchSpans(r->ReadAll().value()).size() == 35);
}

TEST_CASE("delete-records is checkpointed at once and survives a crash") {
  TempDir dir;
  {
    auto dd = OpenDir(dir.path());
    REQUIRE(dd->CreateTopic("a", NewTopicId(), 1, {}).ok());
    auto log = dd->Partition("a", 0);
    for (int i = 0; i < 5; ++i) {
      std::string b = MakeBatch(2);
      REQUIRE((*log)->Append(&b).ok());
    }
    REQUIRE((*log)->AdvanceLogStart(Offset(6)).ok());
    CHECK(Slurp(dir / "log-start-offset-checkpoint") == "0\n1\na 0 6\n");
    // No Close(): a crash.
  }
  auto dd = OpenDir(dir.path());
  auto log = dd->Partition("a", 0);
  REQUIRE(log.ok());
  CHECK((*log)->log_start_offset() == Offset(6));
  CHECK((*log)->log_end_offset() == Offset(10));
}

namespace {

struct SyncCounter {
  std::atomic<int> file_syncs{0}, dir_syncs{0}, renames{0};
  SyncCounter() {
    SetFileFaultHookForTesting([this](FileOp op, const std::string&) {
      if (op == FileOp::kSync) file_syncs++;
      if (op == FileOp::kSyncDir) dir_syncs++;
      if (op == FileOp::kRename) renames++;
      return Status::OK();
    });
  }
  ~SyncCounter() { SetFileFaultHookForTesting(nullptr); }
};

std::vector<std::string> EntriesStartingWith(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  auto names = ListDir(dir);
  REQUIRE(names.ok());
  for (const std::string& n : *names)
    if (n.rfind(prefix, 0) == 0) out.push_back(n);
  return out;
}

}  // namespace

TEST_CASE("creating a topic writes every partition's files, then makes them durable together") {
  TempDir dir;
  auto dd = OpenDir(dir.path());
  REQUIRE(dd->CreateTopic("first", NewTopicId(), 1, {}).ok());  // silt-topics/ exists now
  SyncCounter ops;
  const int n = 64;
  auto t = dd->CreateTopic("many", NewTopicId(), n, {});
  REQUIRE(t.ok());
  // One fdatasync per partition.metadata, one fsync per new directory and one of the data
  // directory, then the topic file (its fsync, rename and directory fsync); no epoch file.
  CHECK(ops.file_syncs == n + 1);
  CHECK(ops.dir_syncs == n + 2);
  CHECK(ops.renames == 1);
  for (int p = 0; p < n; ++p) {
    std::string pdir = dir / ("many-" + std::to_string(p));
    CHECK(Slurp(JoinPath(pdir, "partition.metadata")) == "version: 0\ntopic_id: " + t->topic_id);
  }
  // Partitions added later get the same treatment.
  REQUIRE(dd->AddPartitions("many", n + 8).ok());
  CHECK(Slurp(dir / ("many-" + std::to_string(n + 7)) + "/partition.metadata") ==
        "version: 0\ntopic_id: " + t->topic_id);
}

TEST_CASE("a directory left by a topic creation cut short gets the new topic's id") {
  TempDir dir;
  {
    auto dd = OpenDir(dir.path());
    REQUIRE(dd->Close().ok());
  }
  REQUIRE(CreateDirs(dir / "again-0").ok());
  WriteBytes(dir / "again-0/partition.metadata", "version: 0\ntopic_id: AAAAAA");  // torn
  auto dd = OpenDir(dir.path());
  auto inferred = dd->GetTopic("again");
  REQUIRE(inferred.ok());
  CHECK(inferred->topic_id.empty());  // a torn id is not taken
  REQUIRE(dd->DeleteTopic("again").ok());
  auto t = dd->CreateTopic("again", NewTopicId(), 1, {});
  REQUIRE(t.ok());
  CHECK(Slurp(dir / "again-0/partition.metadata") == "version: 0\ntopic_id: " + t->topic_id);
}

TEST_CASE("deleting a topic returns once it is durably gone and removes its files afterwards") {
  TempDir dir;
  auto dd = OpenDir(dir.path());
  REQUIRE(dd->CreateTopic("d", NewTopicId(), 20, {}).ok());
  for (int p = 0; p < 20; ++p) {
    auto log = dd->Partition("d", p);
    REQUIRE(log.ok());
    std::string b = MakeBatch(3);
    REQUIRE((*log)->Append(&b, 0).ok());
  }
  {
    SyncCounter ops;
    REQUIRE(dd->DeleteTopic("d").ok());
    // No flush of the doomed logs: two directory fsyncs (the topic file's rename, the
    // partition directories' renames) and nothing else.
    CHECK(ops.file_syncs == 0);
    CHECK(ops.dir_syncs == 2);
  }
  CHECK(dd->GetTopic("d").status().IsNotFound());
  CHECK(!PathExists(dir / "silt-topics/d.properties"));
  CHECK(!PathExists(dir / "silt-topics/d.properties.deleting"));
  for (const std::string& e : EntriesStartingWith(dir.path(), "d-"))
    CHECK(e.find("-delete") != std::string::npos);  // renamed away at once
  dd->WaitForDeletions();
  CHECK(EntriesStartingWith(dir.path(), "d-").empty());
  // The name is free again at once.
  REQUIRE(dd->CreateTopic("d", NewTopicId(), 2, {}).ok());
  REQUIRE(dd->Close().ok());
  auto again = OpenDir(dir.path());
  CHECK(again->GetTopic("d")->partitions == 2);
}

TEST_CASE("a topic deletion interrupted by a crash is finished at the next open") {
  for (int stage : {1, 2}) {
    CAPTURE(stage);
    TempDir dir;
    {
      auto dd = OpenDir(dir.path());
      REQUIRE(dd->CreateTopic("x", NewTopicId(), 3, {}).ok());
      REQUIRE(dd->CreateTopic("keep", NewTopicId(), 1, {}).ok());
      auto log = dd->Partition("x", 1);
      REQUIRE(log.ok());
      std::string b = MakeBatch(2);
      REQUIRE((*log)->Append(&b).ok());
      REQUIRE(dd->Close().ok());
    }
    // Stage 1: a crash right after the topic file was renamed. Stage 2: after the partition
    // directories were renamed too (only some of them, here).
    REQUIRE(RenameFile(dir / "silt-topics/x.properties",
                       dir / "silt-topics/x.properties.deleting").ok());
    if (stage == 2) REQUIRE(RenameFile(dir / "x-0", dir / "x-0.0000abcd-delete").ok());
    // A read-only open already ignores the topic.
    {
      auto ro = OpenDir(dir.path(), true);
      CHECK(ro->GetTopic("x").status().IsNotFound());
    }
    auto dd = OpenDir(dir.path());
    CHECK(dd->GetTopic("x").status().IsNotFound());
    CHECK(dd->GetTopic("keep").ok());
    CHECK(!PathExists(dir / "silt-topics/x.properties.deleting"));
    dd->WaitForDeletions();
    CHECK(EntriesStartingWith(dir.path(), "x-").empty());
    CHECK(IsDirectory(dir / "keep-0"));
    REQUIRE(dd->Close().ok());
    // Nothing comes back.
    auto later = OpenDir(dir.path());
    CHECK(later->GetTopic("x").status().IsNotFound());
  }
}

namespace {

// Records every sync and rename with the thread that made it; while `held`, the first such
// operation off the test's thread waits for Release(). Made before the DataDir (which must be
// gone before the hook), and released by a Releaser made after it (or a failed check would
// leave the DataDir's destructor waiting for the held thread).
struct OpRecorder {
  struct Op {
    FileOp op;
    std::string path;
    bool on_caller;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Op> ops;
  bool held = true;
  std::string fail_rename_of;  // a rename whose source ends with this fails
  const std::thread::id caller = std::this_thread::get_id();

  OpRecorder() {
    SetFileFaultHookForTesting([this](FileOp op, const std::string& path) {
      if (op != FileOp::kSync && op != FileOp::kSyncDir && op != FileOp::kRename)
        return Status::OK();
      std::unique_lock l(mu);
      const bool on_caller = std::this_thread::get_id() == caller;
      if (!on_caller) cv.wait(l, [this] { return !held; });
      ops.push_back({op, path, on_caller});
      if (op == FileOp::kRename && !fail_rename_of.empty() && path.ends_with(fail_rename_of))
        return InjectedFault(EIO, "rename", path);
      return Status::OK();
    });
  }
  ~OpRecorder() { SetFileFaultHookForTesting(nullptr); }
  void Release() {
    std::lock_guard l(mu);
    held = false;
    cv.notify_all();
  }
  void Clear() {
    std::lock_guard l(mu);
    ops.clear();
  }
  std::vector<Op> Snapshot() {
    std::lock_guard l(mu);
    return ops;
  }
};

struct Releaser {
  OpRecorder& rec;
  ~Releaser() { rec.Release(); }
};

}  // namespace

TEST_CASE(
    "a topic whose creation is synced in the background exists at once, and is put in place "
    "only once its files are durable") {
  TempDir dir;
  std::string id;
  {
    OpRecorder rec;
    auto dd = OpenDir(dir.path());
    Releaser releaser{rec};
    REQUIRE(dd->CreateTopic("first", NewTopicId(), 1, {}).ok());  // silt-topics/ exists now
    rec.Clear();
    auto t = dd->CreateTopic("bg", NewTopicId(), 3, {{"retention.ms", "1234"}},
                             DataDir::TopicSync::kBackground);
    REQUIRE_MESSAGE(t.ok(), t.status().ToString());
    id = t->topic_id;
    // There for this DataDir at once, its files written, nothing synced on the caller's thread
    // and the topic file not in place yet.
    CHECK(dd->GetTopic("bg")->configs.at("retention.ms") == "1234");
    auto log = dd->Partition("bg", 2);
    REQUIRE(log.ok());
    std::string b = MakeBatch(3);
    REQUIRE((*log)->Append(&b).ok());
    for (int p = 0; p < 3; ++p)
      CHECK(Slurp(dir / ("bg-" + std::to_string(p)) + "/partition.metadata") ==
            "version: 0\ntopic_id: " + id);
    CHECK(!PathExists(dir / "silt-topics/bg.properties"));
    CHECK(PathExists(dir / "silt-topics/bg.properties.tmp"));
    for (const auto& op : rec.Snapshot()) CHECK_MESSAGE(!op.on_caller, op.path);
    rec.Release();
    REQUIRE(dd->SyncTopics().ok());
    CHECK(PathExists(dir / "silt-topics/bg.properties"));
    CHECK(!PathExists(dir / "silt-topics/bg.properties.tmp"));
    // Every file and directory synced before the rename; the topics directory after it.
    auto ops = rec.Snapshot();
    size_t rename_at = ops.size();
    for (size_t i = 0; i < ops.size(); ++i)
      if (ops[i].op == FileOp::kRename) rename_at = i;
    REQUIRE(rename_at < ops.size());
    CHECK(ops[rename_at].path == dir / "silt-topics/bg.properties.tmp");
    std::set<std::string> synced;
    for (size_t i = 0; i < rename_at; ++i) synced.insert(ops[i].path);
    for (int p = 0; p < 3; ++p) {
      const std::string pdir = dir / ("bg-" + std::to_string(p));
      CHECK(synced.count(JoinPath(pdir, "partition.metadata")) == 1);
      CHECK(synced.count(pdir) == 1);
    }
    CHECK(synced.count(dir.path()) == 1);
    CHECK(synced.count(dir / "silt-topics/bg.properties.tmp") == 1);
    REQUIRE(rename_at + 1 < ops.size());
    CHECK(ops[rename_at + 1].op == FileOp::kSyncDir);
    CHECK(ops[rename_at + 1].path == dir / "silt-topics");
  }
  auto dd = OpenDir(dir.path());
  auto t = dd->GetTopic("bg");
  REQUIRE(t.ok());
  CHECK(t->topic_id == id);
  CHECK(t->configs.at("retention.ms") == "1234");
  CHECK((*dd->Partition("bg", 2))->log_end_offset() == Offset(3));
}

TEST_CASE("a DataDir destroyed without Close still puts its background-synced topics in place") {
  TempDir dir;
  {
    OpRecorder rec;
    auto dd = OpenDir(dir.path());
    Releaser releaser{rec};
    for (const char* name : {"x", "y", "z"})
      REQUIRE(dd->CreateTopic(name, NewTopicId(), 2, {{"cleanup.policy", "compact"}},
                              DataDir::TopicSync::kBackground)
                  .ok());
    rec.Release();
    // No SyncTopics, no Close: the destructor waits for the syncs.
  }
  auto dd = OpenDir(dir.path());
  for (const char* name : {"x", "y", "z"}) {
    CHECK(PathExists(dir / (std::string("silt-topics/") + name + ".properties")));
    auto t = dd->GetTopic(name);
    REQUIRE(t.ok());
    CHECK(t->configs.at("cleanup.policy") == "compact");
  }
}

TEST_CASE("a background topic sync that fails is reported by SyncTopics and every later change") {
  TempDir dir;
  {
    OpRecorder rec;
    rec.fail_rename_of = "bad.properties.tmp";
    rec.Release();
    auto dd = OpenDir(dir.path());
    REQUIRE(dd->CreateTopic("bad", NewTopicId(), 2, {{"retention.ms", "5"}},
                            DataDir::TopicSync::kBackground)
                .ok());
    Status s = dd->SyncTopics();
    CHECK(s.code() == Status::Code::kIOError);
    CHECK(s.ToString().find("making new topics durable") != std::string::npos);
    CHECK(dd->SyncTopics().code() == Status::Code::kIOError);  // kept
    CHECK(dd->CreateTopic("other", NewTopicId(), 1, {}).status().code() == Status::Code::kIOError);
    CHECK(dd->CreateTopic("other", NewTopicId(), 1, {}, DataDir::TopicSync::kBackground)
              .status()
              .code() == Status::Code::kIOError);
    CHECK(dd->AlterTopicConfig("bad", {{"retention.ms", "6"}}).code() == Status::Code::kIOError);
    CHECK(dd->DeleteTopic("bad").code() == Status::Code::kIOError);
    CHECK(dd->Close().code() == Status::Code::kIOError);
  }
  // Never half-made: no topic file, so the next open finds only the partition directories.
  CHECK(!PathExists(dir / "silt-topics/bad.properties"));
  auto dd = OpenDir(dir.path());
  auto t = dd->GetTopic("bad");
  REQUIRE(t.ok());
  CHECK(t->partitions == 2);
  CHECK(t->configs.empty());
  CHECK(!dd->GetTopic("other").ok());
}
