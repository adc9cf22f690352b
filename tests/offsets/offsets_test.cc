// The committed-offset store: records of a change, replay, the data dir's partitions and
// their writer locks, migration of silt-groups/, and agreement with the broker's group
// coordinator (which writes the same topic through its own record encoders).
#include <doctest/doctest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/random.h"
#include "base/clock.h"
#include "base/file.h"
#include "broker/group_coordinator.h"
#include "broker/logging.h"
#include "broker/offset_store.h"
#include "offsets/local.h"
#include "offsets/records.h"
#include "offsets/store.h"
#include "protocol/consumer_offsets.h"
#include "storage/data_dir.h"
#include "storage/test_util.h"

using namespace silt;
using namespace silt::offsets;
using silt::storage::testing::TempDir;
using silt::storage::testing::WriteBytes;

namespace {

std::unique_ptr<storage::DataDir> OpenDir(const std::string& path, bool read_only = false) {
  storage::DataDir::Options o;
  o.read_only = read_only;
  auto d = storage::DataDir::Open(path, o);
  REQUIRE(d.ok());
  return std::move(d).value();
}

std::unique_ptr<LocalOffsets> OpenStore(storage::DataDir* dir, int32_t partitions = 5,
                                        int64_t wait_ms = 200) {
  LocalOffsets::Options o;
  o.default_partitions = partitions;
  o.lock_wait_ms = wait_ms;
  auto s = LocalOffsets::Open(dir, o);
  REQUIRE(s.ok());
  return std::move(s).value();
}

GroupOffsets At(const std::string& topic, std::map<int32_t, int64_t> parts) {
  GroupOffsets g;
  for (const auto& [p, o] : parts) g[topic][p].offset = o;
  return g;
}

// topic -> partition -> offset of `group`, empty when it does not exist.
std::map<std::string, std::map<int32_t, int64_t>> Offsets(LocalOffsets* s, const std::string& g) {
  auto r = s->Group(g);
  REQUIRE(r.ok());
  std::map<std::string, std::map<int32_t, int64_t>> out;
  if (*r)
    for (const auto& [t, parts] : (*r)->offsets)
      for (const auto& [p, c] : parts) out[t][p] = c.offset;
  return out;
}

// The broker's OffsetLog over the shared store: how the broker's ConsumerOffsetsTopic looks
// once it is switched to lib/offsets.
class StoreLog : public broker::OffsetLog {
 public:
  explicit StoreLog(OffsetStore* s) : s_(s) {}
  Status Append(const std::string& group, const std::vector<broker::StoredRecord>& records,
                broker::AppendedAt* at = nullptr) override {
    std::vector<Record> rs;
    for (const auto& r : records) rs.push_back({r.key, r.value});
    return s_->Append(group, rs, NowMs().value(), at);
  }
  Status Replay(const ReplayFn& fn) override { return s_->Replay(fn); }
  Status ReplayPartition(int32_t partition, const ReplayFn& fn) override {
    return s_->ReplayPartition(partition, fn);
  }

 private:
  OffsetStore* s_;
};

struct Coordinator {
  std::unique_ptr<broker::GroupCoordinator> c;
  explicit Coordinator(broker::OffsetLog* log) {
    broker::SetLogLevel(broker::LogLevel::kWarn);
    broker::GroupCoordinatorOptions o;
    o.run_timer_thread = false;
    c = std::make_unique<broker::GroupCoordinator>(o, log);
    REQUIRE(c->Load().ok());
  }
  // A standalone commit (no generation), as `group reset-offsets` sends.
  void Commit(const std::string& group, const std::string& topic, int32_t p, int64_t offset) {
    protocol::OffsetCommitRequest r;
    r.group_id = group;
    r.generation_id_or_member_epoch = -1;
    r.topics.push_back({topic, {{p, offset, -1, -1, std::string("meta")}}});
    auto resp = c->CommitOffsets(r, 7);
    REQUIRE(resp.topics.at(0).partitions.at(0).error_code == 0);
  }
  int64_t Committed(const std::string& group, const std::string& topic, int32_t p) {
    protocol::OffsetFetchRequest r;
    r.group_id = group;
    r.topics.emplace();
    r.topics->push_back({topic, {p}});
    return c->FetchOffsets(r, 5).topics.at(0).partitions.at(0).committed_offset;
  }
};

}  // namespace

TEST_CASE("a commit is read back, and a later commit moves only the partitions it names") {
  TempDir dir;
  auto dd = OpenDir(dir.path());
  auto s = OpenStore(dd.get());
  CHECK(Offsets(s.get(), "g").empty());
  REQUIRE(s->Commit("g", At("t", {{0, 5}, {1, 7}})).ok());
  REQUIRE(s->Commit("g", At("t", {{1, 9}})).ok());
  REQUIRE(s->Commit("g", At("u", {{0, 1}})).ok());
  REQUIRE(s->Commit("team/a b%c", At("t", {{0, 3}})).ok());
  auto got = Offsets(s.get(), "g");
  CHECK(got["t"] == std::map<int32_t, int64_t>{{0, 5}, {1, 9}});
  CHECK(got["u"] == std::map<int32_t, int64_t>{{0, 1}});
  auto all = s->Load();
  REQUIRE(all.ok());
  CHECK(all->size() == 2);
  CHECK(all->at("g").offsets.at("t").at(1).commit_timestamp > 0);
  // Kafka's topic, where Kafka would put the group.
  auto info = dd->GetTopic(protocol::kConsumerOffsetsTopic);
  REQUIRE(info.ok());
  CHECK(info->partitions == 5);
  CHECK(info->configs.at("cleanup.policy") == "compact");
  auto p = s->store()->PartitionOf("g", false);
  REQUIRE(p.ok());
  CHECK(*p == protocol::OffsetsPartitionFor("g", 5));
  // Another process (a fresh, read-only open) sees the same.
  REQUIRE(dd->Close().ok());
  dd.reset();
  auto ro = OpenDir(dir.path(), true);
  auto s2 = OpenStore(ro.get());
  CHECK(Offsets(s2.get(), "g") == got);
}

TEST_CASE("deleting a group writes tombstones, and replay forgets it") {
  TempDir dir;
  auto dd = OpenDir(dir.path());
  auto s = OpenStore(dd.get());
  REQUIRE(s->Commit("g", At("t", {{0, 5}, {2, 8}})).ok());
  REQUIRE(s->Commit("h", At("t", {{0, 1}})).ok());
  REQUIRE(s->DeleteGroup("g").ok());
  CHECK(s->DeleteGroup("g").IsNotFound());
  CHECK(Offsets(s.get(), "g").empty());
  CHECK(Offsets(s.get(), "h")["t"][0] == 1);
  // The deletion is tombstones for each offset (and the metadata when there is some).
  GroupState st;
  st.offsets = At("t", {{0, 5}, {2, 8}});
  st.metadata = protocol::GroupMetadataValue{};
  auto recs = DeleteGroupRecords("g", st);
  REQUIRE(recs.size() == 3);
  for (const auto& r : recs) CHECK(!r.value);
  CHECK(recs.back().key == protocol::EncodeGroupMetadataKey({"g"}));
  // And it is one batch: replaying it after the commit leaves nothing.
  Replayer r;
  auto commit = EncodeBatch(CommitRecords("g", st.offsets), 1);
  auto del = EncodeBatch(recs, 2);
  REQUIRE(commit.ok());
  REQUIRE(del.ok());
  REQUIRE(r.ApplyBatches(*commit + *del).ok());
  CHECK(r.groups().empty());
  CHECK(r.skipped() == 0);
}

TEST_CASE("the broker's group coordinator and the local store read each other's records") {
  TempDir dir;
  auto dd = OpenDir(dir.path());
  DataDirPartitions parts(dd.get());
  OffsetStore shared(&parts, 7);
  StoreLog log(&shared);
  {
    // The coordinator writes with the broker's own encoders; the local store reads.
    Coordinator co(&log);
    co.Commit("from-broker", "t", 0, 42);
    co.Commit("from-broker", "t", 3, 17);
    co.Commit("deleted", "t", 0, 1);
    protocol::DeleteGroupsRequest del;
    del.groups_names = {"deleted"};
    REQUIRE(co.c->DeleteGroups(del).results.at(0).error_code == 0);
  }
  auto s = OpenStore(dd.get(), 7);
  auto got = Offsets(s.get(), "from-broker");
  CHECK(got["t"] == std::map<int32_t, int64_t>{{0, 42}, {3, 17}});
  auto g = s->Group("from-broker");
  REQUIRE(g.ok());
  CHECK((*g)->offsets.at("t").at(0).metadata == "meta");
  CHECK(Offsets(s.get(), "deleted").empty());
  // The local store writes; a coordinator replaying the topic at start-up reads.
  REQUIRE(s->Commit("from-local", At("t", {{1, 99}})).ok());
  REQUIRE(s->Commit("from-broker", At("t", {{0, 50}})).ok());
  Coordinator co(&log);
  CHECK(co.Committed("from-local", "t", 1) == 99);
  CHECK(co.Committed("from-broker", "t", 0) == 50);
  CHECK(co.Committed("from-broker", "t", 3) == 17);
  CHECK(co.Committed("deleted", "t", 0) == -1);
  // And the records themselves decode the same either way.
  broker::MemoryOffsetLog mem;
  Coordinator co2(&mem);
  co2.Commit("m", "t", 2, 5);
  std::vector<Record> rs;
  for (const auto& r : mem.records()) rs.push_back({r.key, r.value});
  auto batch = EncodeBatch(rs, 1);
  REQUIRE(batch.ok());
  Replayer r;
  REQUIRE(r.ApplyBatches(*batch).ok());
  CHECK(r.groups().at("m").offsets.at("t").at(2).offset == 5);
  CHECK(CommitRecords("m", r.groups().at("m").offsets)[0].key == rs[0].key);
}

TEST_CASE("a read-only data dir commits while another process holds the directory") {
  TempDir dir;
  auto writer = OpenDir(dir.path());  // e.g. `silt produce`, holding .lock
  REQUIRE(writer->CreateTopic("t", NewTopicId(), 2, {}).ok());
  auto ro = OpenDir(dir.path(), true);
  auto s = OpenStore(ro.get());
  REQUIRE(s->Commit("g", At("t", {{0, 3}})).ok());  // creates __consumer_offsets too
  REQUIRE(s->Commit("g", At("t", {{1, 4}})).ok());
  CHECK(Offsets(s.get(), "g")["t"] == std::map<int32_t, int64_t>{{0, 3}, {1, 4}});
  // A second read-only reader, opened before, sees the topic and the commits.
  auto ro2 = OpenDir(dir.path(), true);
  auto s2 = OpenStore(ro2.get());
  REQUIRE(s->Commit("g", At("t", {{1, 6}})).ok());
  CHECK(Offsets(s2.get(), "g")["t"][1] == 6);
}

TEST_CASE("a held partition lock makes a commit wait, then fail with Busy naming the holder") {
  TempDir dir;
  auto dd = OpenDir(dir.path(), true);
  auto s = OpenStore(dd.get(), 1, /*wait_ms=*/100);
  REQUIRE(s->store()->Prepare().ok());
  {
    auto held = LockOffsetsPartition(dir.path(), 0, LockRole::kLocal, 0);
    REQUIRE(held.ok());
    int64_t t0 = MonotonicMs();
    Status st = s->Commit("g", At("t", {{0, 1}}));
    CHECK(st.IsBusy());
    CHECK(MonotonicMs() - t0 >= 100);
    CHECK(st.message().find("process " + std::to_string(::getpid())) != std::string::npos);
  }
  REQUIRE(s->Commit("g", At("t", {{0, 1}})).ok());
  // A broker's locks are not waited for.
  auto broker = LockOffsetsForBroker(dir.path(), 1, 0);
  REQUIRE(broker.ok());
  CHECK(broker->size() == 2);
  Status st = s->Commit("g", At("t", {{0, 2}}));
  CHECK(st.IsBusy());
  CHECK(st.message().find("a broker is running on it (pid " + std::to_string(::getpid()) +
                          "); use -b HOST:PORT") != std::string::npos);
  CHECK(LockOffsetsTopic(dir.path(), LockRole::kLocal, 0).status().IsBusy());
  broker->clear();
  REQUIRE(s->Commit("g", At("t", {{0, 2}})).ok());
}

TEST_CASE("racing creators of __consumer_offsets agree, and a creation cut short is finished") {
  TempDir dir;
  auto a = OpenDir(dir.path(), true);
  auto b = OpenDir(dir.path(), true);
  auto ta = a->CreateSharedTopic("__consumer_offsets", NewTopicId(), 4, {{"cleanup.policy", "compact"}});
  auto tb = b->CreateSharedTopic("__consumer_offsets", NewTopicId(), 9, {{"cleanup.policy", "compact"}});
  REQUIRE(ta.ok());
  REQUIRE(tb.ok());
  CHECK(tb->partitions == 4);
  CHECK(tb->topic_id == ta->topic_id);

  // A creation that stopped after its first partition directory: the last one.
  TempDir dir2;
  REQUIRE(CreateDirs(dir2 / "__consumer_offsets-5").ok());
  WriteBytes(dir2 / "__consumer_offsets-5/partition.metadata",
             "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAB");
  auto c = OpenDir(dir2.path(), true);
  auto tc = c->CreateSharedTopic("__consumer_offsets", NewTopicId(), 50, {{"cleanup.policy", "compact"}});
  REQUIRE(tc.ok());
  CHECK(tc->partitions == 6);
  CHECK(tc->topic_id == "AAAAAAAAAAAAAAAAAAAAAB");
  CHECK(PathExists(dir2 / "__consumer_offsets-0/partition.metadata"));
  CHECK(PathExists(dir2 / "silt-topics/__consumer_offsets.properties"));
}

TEST_CASE("silt-groups is migrated on the first writable open and kept aside") {
  TempDir dir;
  REQUIRE(CreateDirs(dir / "silt-groups").ok());
  WriteBytes(dir / "silt-groups/g1.properties", "t/0=5\nt/1=9\nu/0=1\n");
  WriteBytes(dir / "silt-groups/team%2Fa.properties", "t/0=3\n");
  {
    // Read-only, before migration: the old files read the same.
    auto ro = OpenDir(dir.path(), true);
    auto s = OpenStore(ro.get());
    CHECK(Offsets(s.get(), "g1")["t"] == std::map<int32_t, int64_t>{{0, 5}, {1, 9}});
    auto all = s->Load();
    REQUIRE(all.ok());
    CHECK(all->size() == 2);
    CHECK(PathExists(dir / "silt-groups"));
  }
  auto dd = OpenDir(dir.path());
  auto s = OpenStore(dd.get());
  CHECK(!PathExists(dir / "silt-groups"));
  CHECK(PathExists(dir / "silt-groups.migrated/g1.properties"));
  CHECK(Offsets(s.get(), "g1")["t"] == std::map<int32_t, int64_t>{{0, 5}, {1, 9}});
  CHECK(Offsets(s.get(), "g1")["u"][0] == 1);
  CHECK(Offsets(s.get(), "team/a")["t"][0] == 3);
  // Opening again changes nothing.
  auto again = OpenStore(dd.get());
  auto all = again->Load();
  REQUIRE(all.ok());
  CHECK(all->size() == 2);
  CHECK(!PathExists(dir / "silt-groups.migrated.1"));
}

TEST_CASE("the first local commit migrates silt-groups from a read-only data dir") {
  TempDir dir;
  REQUIRE(CreateDirs(dir / "silt-groups").ok());
  WriteBytes(dir / "silt-groups/old.properties", "t/0=5\n");
  auto ro = OpenDir(dir.path(), true);
  auto s = OpenStore(ro.get());
  REQUIRE(s->Commit("new", At("t", {{0, 1}})).ok());
  CHECK(!PathExists(dir / "silt-groups"));
  CHECK(Offsets(s.get(), "old")["t"][0] == 5);
  CHECK(Offsets(s.get(), "new")["t"][0] == 1);
}

TEST_CASE("a migration cut short is finished by the next open without losing newer commits") {
  TempDir dir;
  REQUIRE(CreateDirs(dir / "silt-groups").ok());
  WriteBytes(dir / "silt-groups/a.properties", "t/0=5\nt/1=6\n");
  WriteBytes(dir / "silt-groups/b.properties", "t/0=7\n");
  std::string log_file;
  {
    // What a crash after writing group a (and before b and the rename) leaves, plus a newer
    // commit of a made since, and a torn batch at the end of b's partition.
    auto dd = OpenDir(dir.path(), true);
    DataDirPartitions parts(dd.get());
    OffsetStore store(&parts, 3);
    REQUIRE(store.Commit("a", At("t", {{0, 5}, {1, 6}}), 1).ok());
    REQUIRE(store.Commit("a", At("t", {{0, 50}}), 2).ok());
    auto pb = store.PartitionOf("b", false);
    REQUIRE(pb.ok());
    log_file = dir / ("__consumer_offsets-" + std::to_string(*pb) + "/00000000000000000000.log");
    auto batch = EncodeBatch(CommitRecords("b", At("t", {{0, 7}})), 3);
    REQUIRE(batch.ok());
    auto existing = ReadFile(log_file);
    WriteBytes(log_file, (existing.ok() ? *existing : std::string()) + batch->substr(0, 30));
  }
  CHECK(PathExists(dir / "silt-groups"));
  auto dd = OpenDir(dir.path());
  auto s = OpenStore(dd.get(), 3);
  CHECK(!PathExists(dir / "silt-groups"));
  CHECK(Offsets(s.get(), "a")["t"] == std::map<int32_t, int64_t>{{0, 50}, {1, 6}});
  CHECK(Offsets(s.get(), "b")["t"][0] == 7);

  // Cut short after the commits but before the rename: the rerun writes nothing new.
  REQUIRE(RenameFile(dir / "silt-groups.migrated", dir / "silt-groups").ok());
  auto before = ReadFile(log_file);
  auto s2 = OpenStore(dd.get(), 3);
  CHECK(!PathExists(dir / "silt-groups"));
  CHECK(ReadFile(log_file).value() == before.value());
  CHECK(Offsets(s2.get(), "a")["t"][0] == 50);
}
