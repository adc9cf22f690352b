// ClusterSink against an in-process broker: batches of a source partition (gaps, compressed and
// control batches) land at their own offsets, and the broker's segment file equals the
// source's byte for byte; mismatches, checkpoints, promote, offsets and groups.
#include <doctest/doctest.h>

#include "base/coding.h"
#include "base/file.h"
#include "broker/broker_test_util.h"
#include "client/admin.h"
#include "client/cluster.h"
#include "format/layout.h"
#include "format/record_batch.h"
#include "replicate/cluster_sink.h"
#include "storage/partition_log.h"

using namespace silt;
using namespace silt::replicate;
using silt::broker::testing::Client;
using silt::broker::testing::MakeBatch;
using silt::broker::testing::MakeProduce;
using silt::broker::testing::TempDir;
using silt::broker::testing::TestBroker;

namespace {

std::string At(std::string b, int64_t base) {
  EncodeBE64(b.data() + format::kBaseOffsetOffset, static_cast<uint64_t>(base));
  EncodeBE32(b.data() + format::kPartitionLeaderEpochOffset, 0);
  return b;
}

// A transaction's commit marker at `offset` for producer 5.
std::string CommitMarker(int64_t offset) {
  format::RecordBatchBuilder::Options o;
  o.base_offset = offset;
  o.partition_leader_epoch = 0;
  o.producer_id = 5;
  o.producer_epoch = 0;
  o.control = true;
  o.transactional = true;
  format::RecordBatchBuilder b(o);
  std::string key("\0\0\0\1", 4);        // version 0, type 1 (commit)
  std::string value("\0\0\0\0\0\0", 6);  // version 0, coordinator epoch 0
  b.Add(std::string_view(key), std::string_view(value));
  auto r = b.Finish();
  REQUIRE(r.ok());
  return *r;
}

// A source partition log in its own temp dir, holding `batches`.
struct SourceLog {
  explicit SourceLog(const std::string& batches) {
    root = TempDir();
    auto log = storage::PartitionLog::Open(root + "/t-0", storage::LogConfig{}, {});
    REQUIRE_MESSAGE(log.ok(), log.status().ToString());
    auto a = (*log)->AppendWithOffsets(batches);
    REQUIRE_MESSAGE(a.ok(), a.status().ToString());
    REQUIRE((*log)->Close().ok());
  }
  ~SourceLog() { (void)RemoveAll(root); }
  std::string root;
};

std::unique_ptr<Sink> OpenSinkAt(int port) {
  EndpointSpec spec;
  spec.kind = EndpointSpec::Kind::kCluster;
  spec.bootstrap = {"127.0.0.1:" + std::to_string(port)};
  spec.text = "kafka://" + spec.bootstrap[0];
  OpenOptions options;
  options.request_timeout_ms = 5000;
  auto s = MakeClusterSink(spec, options);
  REQUIRE_MESSAGE(s.ok(), s.status().ToString());
  return std::move(s).value();
}

std::string SegmentOf(const std::string& partition_dir) {
  auto bytes = ReadFile(partition_dir + "/00000000000000000000.log");
  REQUIRE_MESSAGE(bytes.ok(), bytes.status().ToString());
  return *bytes;
}

}  // namespace

TEST_CASE("ClusterSink copies batches at their own offsets and the segment equals the source's") {
  TestBroker b;
  // Offsets 0-2, a hole (3-4, compacted away), 5-6 zstd, a commit marker at 7, 8-10 gzip.
  const std::string first = At(MakeBatch(3), 0) + At(MakeBatch(2, format::Compression::kZstd), 5);
  const std::string second = CommitMarker(7) + At(MakeBatch(3, format::Compression::kGzip), 8);
  SourceLog source(first + second);

  auto sink = OpenSinkAt(b.port);
  CHECK(sink->placement() == Placement::kPreservesOffsets);
  TopicDesc td;
  td.name = "t";
  td.partitions = 1;
  td.configs = {{"retention.ms", "-1"}, {"min.insync.replicas", "2"}};
  REQUIRE(sink->EnsureTopic(td, /*copy_configs=*/true).ok());
  REQUIRE(sink->EnsureTopic(td, true).ok());  // again: nothing to do
  auto topics = sink->ListTopics();
  REQUIRE(topics.ok());
  REQUIRE(topics->size() == 1);
  CHECK((*topics)[0].configs.at("silt.mirror") == "true");
  CHECK((*topics)[0].configs.at("retention.ms") == "-1");
  CHECK((*topics)[0].configs.count("min.insync.replicas") == 0);  // the destination's own

  auto end = sink->LogEnd("t", 0);
  REQUIRE(end.ok());
  CHECK(*end == Offset(0));
  auto a = sink->Append("t", 0, Offset(0), first);
  REQUIRE_MESSAGE(a.ok(), a.status().ToString());
  CHECK(a->appended);
  CHECK(a->log_end == Offset(7));
  // A stale expected offset writes nothing and says where the destination ends.
  auto stale = sink->Append("t", 0, Offset(0), first);
  REQUIRE(stale.ok());
  CHECK_FALSE(stale->appended);
  CHECK(stale->log_end == Offset(7));
  auto b2 = sink->Append("t", 0, Offset(7), second);
  REQUIRE(b2.ok());
  CHECK(b2->appended);
  CHECK(b2->log_end == Offset(11));
  REQUIRE(sink->Flush().ok());

  CHECK(SegmentOf(b.data_dir + "/t-0") == SegmentOf(source.root + "/t-0"));
  auto back = sink->ReadBack("t", 0, Offset(5), 1 << 20);
  REQUIRE(back.ok());
  CHECK(*back == first.substr(At(MakeBatch(3), 0).size()) + second);
  auto tr = sink->TranslateOffset("t", 0, Offset(9));
  REQUIRE(tr.ok());
  CHECK(*tr == Offset(9));
  CHECK(sink->TranslateOffset("t", 0, Offset(12)).status().IsNotFound());
}

TEST_CASE("ClusterSink keeps each source's checkpoint as a record of __silt_replicate") {
  TestBroker b;
  auto sink = OpenSinkAt(b.port);
  auto none = sink->LoadCheckpoint("src-a");
  REQUIRE(none.ok());
  CHECK(none->empty());
  REQUIRE(sink->StoreCheckpoint("src-a", {{"t", 0, Offset(10)}, {"t", 1, Offset(4)}}).ok());
  REQUIRE(sink->StoreCheckpoint("src-b", {{"u", 0, Offset(1)}}).ok());
  REQUIRE(sink->StoreCheckpoint("src-a", {{"t", 0, Offset(12)}, {"t", 1, Offset(4)}}).ok());
  auto a = sink->LoadCheckpoint("src-a");
  REQUIRE(a.ok());
  REQUIRE(a->size() == 2);
  CHECK((*a)[0].topic == "t");
  CHECK((*a)[0].partition == 0);
  CHECK((*a)[0].source_next == Offset(12));
  CHECK((*a)[1].partition == 1);
  CHECK((*a)[1].source_next == Offset(4));
  auto bb = sink->LoadCheckpoint("src-b");
  REQUIRE(bb.ok());
  REQUIRE(bb->size() == 1);
  CHECK((*bb)[0].topic == "u");
  // A reopened sink (a restarted replicator) finds it too; ListTopics leaves the topic out.
  auto again = OpenSinkAt(b.port);
  auto a2 = again->LoadCheckpoint("src-a");
  REQUIRE(a2.ok());
  REQUIRE(a2->size() == 2);
  CHECK((*a2)[0].source_next == Offset(12));
  CHECK((*a2)[1].topic == "t");
  auto topics = again->ListTopics();
  REQUIRE(topics.ok());
  CHECK(topics->empty());
  // Metadata marks it internal, as it does __consumer_offsets.
  client::ClusterOptions co;
  co.bootstrap = {{"127.0.0.1", b.port}};
  auto cluster = client::Cluster::Connect(co);
  REQUIRE(cluster.ok());
  auto meta = (*cluster)->Topic(kCheckpointTopic, false);
  REQUIRE(meta.ok());
  CHECK(meta->internal);
}

TEST_CASE("ClusterSink promote makes a mirror topic writable and refuses further appends") {
  TestBroker b;
  auto sink = OpenSinkAt(b.port);
  REQUIRE(sink->EnsureTopic({"t", 1, {}}, false).ok());
  auto appended = sink->Append("t", 0, Offset(0), At(MakeBatch(2), 0));
  REQUIRE_MESSAGE(appended.ok(), appended.status().ToString());
  CHECK(appended->appended);
  Client c(b.port);
  std::string batch = MakeBatch(1);
  protocol::ProduceResponse before;
  c.Call(MakeProduce("t", 0, batch), 8, &before);
  CHECK(before.responses[0].partition_responses[0].error_code ==
        protocol::ToWire(protocol::ErrorCode::POLICY_VIOLATION));
  REQUIRE(sink->Promote("t").ok());
  protocol::ProduceResponse after;
  c.Call(MakeProduce("t", 0, batch), 8, &after);
  CHECK(after.responses[0].partition_responses[0].error_code == 0);
  CHECK(after.responses[0].partition_responses[0].base_offset == 2);
  CHECK_FALSE(sink->Append("t", 0, Offset(3), At(MakeBatch(1), 3)).ok());
  // A promoted (or any ordinary) topic is never taken over as a mirror again.
  CHECK(sink->EnsureTopic({"t", 1, {}}, false).code() == Status::Code::kInvalidArgument);
}

TEST_CASE("ClusterSink adds partitions and commits offsets of groups with no members") {
  TestBroker b;
  auto sink = OpenSinkAt(b.port);
  REQUIRE(sink->EnsureTopic({"t", 1, {}}, false).ok());
  REQUIRE(sink->EnsureTopic({"t", 3, {}}, false).ok());
  auto topics = sink->ListTopics();
  REQUIRE(topics.ok());
  CHECK((*topics)[0].partitions == 3);
  REQUIRE(sink->Append("t", 2, Offset(0), At(MakeBatch(5), 0)).ok());
  auto active = sink->GroupActive("g");
  REQUIRE(active.ok());
  CHECK_FALSE(*active);
  GroupOffsets go;
  go.group = "g";
  go.offsets.push_back({"t", 2, Offset(4), ""});
  REQUIRE(sink->CommitGroupOffsets(go).ok());
  client::ClusterOptions co;
  co.bootstrap = {{"127.0.0.1", b.port}};
  auto cluster = client::Cluster::Connect(co);
  REQUIRE(cluster.ok());
  auto committed = client::FetchCommitted(cluster->get(), "g");
  REQUIRE(committed.ok());
  CHECK((*committed)["t"][2] == 4);
}
