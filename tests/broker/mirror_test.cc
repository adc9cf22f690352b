// SiltAppendBatches and mirror topics against an in-process broker: batches appended at their
// own offsets at the expected log end only, mismatches answered with the actual log end,
// ordinary produce refused until promote; and, through the Partition seam, a follower's refusal
// and the replication of mirrored batches to it byte for byte.
#include <algorithm>

#include "base/coding.h"
#include "base/file.h"
#include "broker/partition.h"
#include "broker_test_util.h"
#include "format/batch_header.h"
#include "format/layout.h"
#include "storage/partition_log.h"

using namespace silt;
using namespace silt::broker;
using namespace silt::broker::testing;
using protocol::ErrorCode;

namespace {

// A batch of `n` records at base offset `base`, as a source log stores it (leader epoch 7).
std::string SourceBatch(int64_t base, int n, const std::string& prefix = "m-") {
  std::string b = MakeBatch(n, format::Compression::kNone, -1, -1, -1, prefix);
  EncodeBE64(b.data() + format::kBaseOffsetOffset, static_cast<uint64_t>(base));
  EncodeBE32(b.data() + format::kPartitionLeaderEpochOffset, 7);
  return b;
}

protocol::SiltAppendBatchesResponse SiltAppend(Client& c, const std::string& topic,
                                               int64_t expected, const std::string& batches) {
  protocol::SiltAppendBatchesRequest req;
  req.topic = topic;
  req.partition = 0;
  req.expected_offset = expected;
  req.timeout_ms = 5000;
  req.records.bytes = std::string_view(batches);
  protocol::SiltAppendBatchesResponse resp;
  c.Call(req, 0, &resp);
  return resp;
}

int16_t ProduceError(Client& c, const std::string& topic, std::string* message = nullptr,
                     int64_t* base = nullptr) {
  std::string batch = MakeBatch(2, format::Compression::kNone, -1, -1, -1, "p-");
  protocol::ProduceResponse resp;
  c.Call(MakeProduce(topic, 0, batch), 8, &resp);
  REQUIRE(resp.responses.size() == 1);
  const auto& pr = resp.responses[0].partition_responses.at(0);
  if (message) *message = pr.error_message.value_or("");
  if (base) *base = pr.base_offset;
  return pr.error_code;
}

// The fetched bytes of the partition from `offset` on.
std::string FetchAll(Client& c, const std::string& topic, int64_t offset) {
  protocol::FetchResponse resp;
  c.Call(MakeFetch(topic, 0, offset), 11, &resp);
  REQUIRE(resp.responses.size() == 1);
  const auto& p = resp.responses[0].partitions.at(0);
  REQUIRE(p.error_code == 0);
  return std::string(p.records.bytes.value_or(std::string_view()));
}

// `b` with its leader epoch field set to `epoch` (the one field a mirror may restamp).
std::string WithEpoch(std::string b, int32_t epoch) {
  for (size_t at = 0; at < b.size();) {
    format::BatchHeader h = format::DecodeBatchHeader(std::string_view(b).substr(at));
    EncodeBE32(b.data() + at + format::kPartitionLeaderEpochOffset, static_cast<uint32_t>(epoch));
    at += static_cast<size_t>(h.size());
  }
  return b;
}

void Promote(Client& c, const std::string& topic) {
  protocol::IncrementalAlterConfigsRequest req;
  protocol::IncrementalAlterConfigsRequest::Resource r;
  r.resource_type = 2;
  r.resource_name = topic;
  r.configs.push_back(
      {"silt.mirror", protocol::IncrementalAlterConfigsRequest::kDelete, std::nullopt});
  req.resources.push_back(r);
  protocol::IncrementalAlterConfigsResponse resp;
  c.Call(req, 0, &resp);
  REQUIRE(resp.responses.size() == 1);
  REQUIRE(resp.responses[0].error_code == 0);
}

}  // namespace

TEST_CASE("ApiVersions advertises SiltAppendBatches under silt's own key 10000") {
  TestBroker b;
  Client c(b.port);
  protocol::ApiVersionsResponse resp;
  c.Call(protocol::ApiVersionsRequest{}, 2, &resp);
  auto it = std::find_if(resp.api_keys.begin(), resp.api_keys.end(),
                         [](const auto& k) { return k.api_key == 10000; });
  REQUIRE(it != resp.api_keys.end());
  CHECK(it->min_version == 0);
  CHECK(it->max_version == 0);
}

TEST_CASE("a mirror topic takes batches at the expected log end with their own offsets and bytes") {
  TestBroker b;
  Client c(b.port);
  CreateTopicWithConfigs(c, "m", {{"silt.mirror", "true"}});
  // Two batches in one request, the second after a gap (a compacted source's offsets 3-4).
  std::string batches = SourceBatch(0, 3) + SourceBatch(5, 2);
  auto r = SiltAppend(c, "m", 0, batches);
  REQUIRE_MESSAGE(r.error_code == 0, r.error_message.value_or(""));
  CHECK(r.log_end_offset == 7);
  CHECK(r.high_watermark == 7);
  // Byte for byte what was sent, but for the leader epoch (restamped to this leader's, 0).
  CHECK(FetchAll(c, "m", 0) == WithEpoch(batches, 0));
  // The next call continues at the log end; an empty one only answers it.
  auto next = SiltAppend(c, "m", 7, SourceBatch(7, 1));
  CHECK(next.error_code == 0);
  CHECK(next.log_end_offset == 8);
  auto probe = SiltAppend(c, "m", 0, "");
  CHECK(probe.error_code == 0);
  CHECK(probe.log_end_offset == 8);
}

TEST_CASE("an expected offset other than the log end writes nothing and answers the log end") {
  TestBroker b;
  Client c(b.port);
  CreateTopicWithConfigs(c, "m", {{"silt.mirror", "true"}});
  REQUIRE(SiltAppend(c, "m", 0, SourceBatch(0, 4)).error_code == 0);
  for (int64_t expected : {0, 2, 5, 100}) {
    CAPTURE(expected);
    auto r = SiltAppend(c, "m", expected, SourceBatch(expected, 1));
    CHECK(r.error_code == protocol::ToWire(ErrorCode::SILT_OFFSET_MISMATCH));
    CHECK(r.log_end_offset == 4);
  }
  // Right expected offset, but the batch starts below the log end: also refused.
  auto below = SiltAppend(c, "m", 4, SourceBatch(3, 2));
  CHECK(below.error_code == protocol::ToWire(ErrorCode::SILT_OFFSET_MISMATCH));
  CHECK(below.log_end_offset == 4);
  CHECK(Values(FetchAll(c, "m", 0)).size() == 4);
}

TEST_CASE("SiltAppendBatches is refused for a topic that is not a mirror") {
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "plain");
  auto r = SiltAppend(c, "plain", 0, SourceBatch(0, 1));
  CHECK(r.error_code == protocol::ToWire(ErrorCode::POLICY_VIOLATION));
  CHECK(r.log_end_offset == 0);
  auto missing = SiltAppend(c, "nope", 0, SourceBatch(0, 1));
  CHECK(missing.error_code == protocol::ToWire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
}

TEST_CASE("a batch with a bad CRC or cut short is refused and nothing is written") {
  TestBroker b;
  Client c(b.port);
  CreateTopicWithConfigs(c, "m", {{"silt.mirror", "true"}});
  std::string good = SourceBatch(0, 2);
  std::string bad = SourceBatch(2, 2);
  bad[bad.size() - 1] ^= 0x5a;  // inside the CRC's range
  auto r = SiltAppend(c, "m", 0, good + bad);
  CHECK(r.error_code == protocol::ToWire(ErrorCode::CORRUPT_MESSAGE));
  CHECK(r.log_end_offset == 0);
  auto cut = SiltAppend(c, "m", 0, good + SourceBatch(2, 2).substr(0, 40));
  CHECK(cut.error_code == protocol::ToWire(ErrorCode::CORRUPT_MESSAGE));
  CHECK(SiltAppend(c, "m", 0, "").log_end_offset == 0);
}

TEST_CASE("a mirror topic refuses ordinary produce until promoted, then continues at its log end") {
  TestBroker b;
  Client c(b.port);
  CreateTopicWithConfigs(c, "m", {{"silt.mirror", "true"}});
  REQUIRE(SiltAppend(c, "m", 0, SourceBatch(0, 5)).error_code == 0);
  std::string message;
  CHECK(ProduceError(c, "m", &message) == protocol::ToWire(ErrorCode::POLICY_VIOLATION));
  CHECK(message.find("mirror") != std::string::npos);
  Promote(c, "m");
  int64_t base = -1;
  CHECK(ProduceError(c, "m", nullptr, &base) == 0);
  CHECK(base == 5);
  auto r = SiltAppend(c, "m", 7, SourceBatch(7, 1));
  CHECK(r.error_code == protocol::ToWire(ErrorCode::POLICY_VIOLATION));
  CHECK(Values(FetchAll(c, "m", 0)).size() == 7);
}

TEST_CASE("a mirror topic stays a mirror across a broker restart") {
  TestBroker b;
  {
    Client c(b.port);
    CreateTopicWithConfigs(c, "m", {{"silt.mirror", "true"}});
    REQUIRE(SiltAppend(c, "m", 0, SourceBatch(0, 3)).error_code == 0);
  }
  b.Restart();
  Client c(b.port);
  CHECK(ProduceError(c, "m") == protocol::ToWire(ErrorCode::POLICY_VIOLATION));
  auto r = SiltAppend(c, "m", 3, SourceBatch(3, 1));
  CHECK(r.error_code == 0);
  CHECK(r.log_end_offset == 4);
}

// ---- through the Partition seam: roles and replication -------------------------------------

namespace {

struct Replica {
  explicit Replica(NodeId id) : id(id) {
    SetLogLevel(LogLevel::kWarn);
    root = TempDir();
    storage::LogConfig config;
    REQUIRE(config.Set("silt.mirror", "true").ok());
    auto log = storage::PartitionLog::Open(root + "/m-0", config, {});
    REQUIRE_MESSAGE(log.ok(), log.status().ToString());
    log_ = std::move(log).value();
    auto p = Partition::Open("m", PartitionId(0), log_, id, LeaderEpoch(0));
    REQUIRE(p.ok());
    part = *p;
  }
  ~Replica() {
    part->Shutdown();
    part.reset();
    (void)log_->Close();
    log_.reset();
    (void)RemoveAll(root);
  }
  std::string Bytes() const {
    std::string out;
    REQUIRE(part->ForEachBatch(part->log_end_offset(),
                               [&](std::string_view b) {
                                 out.append(b);
                                 return Status::OK();
                               })
                .ok());
    return out;
  }
  NodeId id;
  std::string root;
  std::shared_ptr<storage::PartitionLog> log_;
  std::shared_ptr<Partition> part;
};

}  // namespace

TEST_CASE("a follower refuses a mirrored append and keeps its log as it was") {
  Replica f(NodeId(2));
  REQUIRE(f.part->BecomeFollower(LeaderEpoch(1), 0, NodeId(1)).ok());
  std::string batch = SourceBatch(0, 2);
  Partition::MirrorAppend a = f.part->AppendMirrored(batch.data(), batch.size(), Offset(0));
  CHECK(a.error == ErrorCode::NOT_LEADER_OR_FOLLOWER);
  CHECK(f.part->log_end_offset() == Offset(0));
}

TEST_CASE("mirrored batches replicate to followers unchanged and commit at the leader's epoch") {
  Replica leader(NodeId(1)), follower(NodeId(2));
  REQUIRE(
      leader.part->BecomeLeader(LeaderEpoch(3), 1, {NodeId(1), NodeId(2)}, {NodeId(1), NodeId(2)})
          .ok());
  REQUIRE(follower.part->BecomeFollower(LeaderEpoch(3), 1, NodeId(1)).ok());
  std::string batches = SourceBatch(0, 2) + SourceBatch(4, 3);
  std::string sent = batches;
  Partition::MirrorAppend a = leader.part->AppendMirrored(sent.data(), sent.size(), Offset(0));
  REQUIRE_MESSAGE(a.error == ErrorCode::NONE, a.message);
  CHECK(a.last_offset == Offset(6));
  CHECK(leader.part->high_watermark() == Offset(0));  // the follower has not fetched yet
  // What a replica fetcher does: the leader's bytes into the follower, its position back.
  auto appended = follower.part->AppendAsFollower(leader.Bytes());
  REQUIRE(appended.ok());
  leader.part->RecordFollowerFetch(NodeId(2), *appended, Offset(0), 0);
  CHECK(leader.part->high_watermark() == Offset(7));
  CHECK(follower.Bytes() == leader.Bytes());
  CHECK(leader.Bytes() == WithEpoch(batches, 3));
  // The leader-epoch caches name only this cluster's epoch, not the source's 7.
  CHECK(follower.part->EndOffsetForEpoch(LeaderEpoch(7)).status().IsNotFound());
  auto end = follower.part->EndOffsetForEpoch(LeaderEpoch(3));
  REQUIRE(end.ok());
  CHECK(end->end_offset == Offset(7));
}
