// Replication on the wire: a broker in (test) cluster mode, whose partitions are given roles by
// hand, with a follower's replica fetches arriving on a peer connection (the way cluster mode
// hands over a socket: BrokerServices::adopt_peer_connection), and clients seeing acks=all,
// NOT_LEADER_OR_FOLLOWER, KIP-320 fencing and OffsetForLeaderEpoch through the dispatcher.
#include <chrono>
#include <thread>

#include "base/clock.h"
#include "broker/local_metadata_store.h"
#include "broker/partition.h"
#include "broker/partition_manager.h"
#include "broker_test_util.h"
#include "hand_cluster.h"
#include "storage/offset_checkpoint.h"

using namespace silt;
using namespace silt::broker;
using namespace silt::broker::testing;
using protocol::ErrorCode;

namespace {

constexpr NodeId kLocal{1};
int16_t Wire(ErrorCode c) { return protocol::ToWire(c); }
constexpr NodeId kFollower{2};

using ClusterBroker = HandClusterBroker;

protocol::FetchRequest ReplicaFetch(const std::string& topic, int64_t offset, int32_t replica,
                                    int32_t max_wait_ms = 0, int32_t current_epoch = -1) {
  protocol::FetchRequest f = MakeFetch(topic, 0, offset, max_wait_ms);
  f.replica_id = replica;
  f.topics[0].partitions[0].current_leader_epoch = current_epoch;
  f.topics[0].partitions[0].log_start_offset = 0;
  return f;
}

const protocol::FetchResponse::Partition& OnlyPartition(const protocol::FetchResponse& r) {
  REQUIRE(r.responses.size() == 1);
  REQUIRE(r.responses[0].partitions.size() == 1);
  return r.responses[0].partitions[0];
}

const protocol::ProduceResponse::PartitionResponse& OnlyPartition(const protocol::ProduceResponse& r) {
  REQUIRE(r.responses.size() == 1);
  REQUIRE(r.responses[0].partition_responses.size() == 1);
  return r.responses[0].partition_responses[0];
}

int16_t ProduceError(Client& c, const std::string& topic, int16_t acks, int32_t timeout_ms = 5000) {
  const std::string batch = MakeBatch(2);
  protocol::ProduceRequest p = MakeProduce(topic, 0, batch, acks);
  p.timeout_ms = timeout_ms;
  protocol::ProduceResponse r;
  c.Call(p, 8, &r);
  return OnlyPartition(r).error_code;
}

protocol::ListOffsetsResponse::Partition ListLatest(Client& c, const std::string& topic,
                                                    int32_t current_epoch = -1,
                                                    int32_t replica_id = -1) {
  protocol::ListOffsetsRequest req;
  req.replica_id = replica_id;
  protocol::ListOffsetsRequest::Topic t;
  t.name = topic;
  protocol::ListOffsetsRequest::Partition p;
  p.partition_index = 0;
  p.timestamp = -1;
  p.current_leader_epoch = current_epoch;
  t.partitions.push_back(p);
  req.topics.push_back(t);
  protocol::ListOffsetsResponse resp;
  c.Call(req, 5, &resp);
  REQUIRE(resp.topics.size() == 1);
  REQUIRE(resp.topics[0].partitions.size() == 1);
  return resp.topics[0].partitions[0];
}

protocol::OffsetForLeaderEpochResponse::Partition EpochEnd(Client& c, const std::string& topic,
                                                           int32_t epoch, int16_t version,
                                                           int32_t current_epoch = -1,
                                                           int32_t replica_id = -1) {
  protocol::OffsetForLeaderEpochRequest req;
  req.replica_id = replica_id;
  protocol::OffsetForLeaderEpochRequest::Topic t;
  t.topic = topic;
  protocol::OffsetForLeaderEpochRequest::Partition p;
  p.partition = 0;
  p.leader_epoch = epoch;
  p.current_leader_epoch = current_epoch;
  t.partitions.push_back(p);
  req.topics.push_back(t);
  protocol::OffsetForLeaderEpochResponse resp;
  c.Call(req, version, &resp);
  REQUIRE(resp.topics.size() == 1);
  REQUIRE(resp.topics[0].partitions.size() == 1);
  return resp.topics[0].partitions[0];
}

}  // namespace

TEST_CASE("a replica fetch on the follower's peer connection reads past the high watermark and "
          "moves it; from anywhere else it is refused") {
  ClusterBroker b;
  Client c(b.port);
  CreateTopic(c, "rf");
  auto part = b.Get("rf");
  REQUIRE(part->BecomeLeader(LeaderEpoch(1), 0, {kLocal, kFollower}, {kLocal, kFollower}).ok());
  REQUIRE(ProduceError(c, "rf", 1) == 0);
  REQUIRE(ProduceError(c, "rf", 1) == 0);
  CHECK(part->log_end_offset() == Offset(4));
  CHECK(part->high_watermark() == Offset(0));

  // A consumer sees nothing yet.
  protocol::FetchResponse fr;
  c.Call(MakeFetch("rf", 0, 0), 11, &fr);
  CHECK(OnlyPartition(fr).error_code == 0);
  CHECK(Values(OnlyPartition(fr).records.bytes.value_or("")).empty());

  // A client claiming to be the follower is refused (Kafka: no ClusterAction).
  c.Call(ReplicaFetch("rf", 0, kFollower.value()), 11, &fr);
  CHECK(OnlyPartition(fr).error_code == Wire(ErrorCode::TOPIC_AUTHORIZATION_FAILED));
  CHECK(part->Followers()[0].log_end == kInvalidOffset);

  auto peer = b.Peer(kFollower);
  // ... and so is the follower's connection claiming another replica's id.
  peer->Call(ReplicaFetch("rf", 0, 3), 11, &fr);
  CHECK(OnlyPartition(fr).error_code == Wire(ErrorCode::TOPIC_AUTHORIZATION_FAILED));

  peer->Call(ReplicaFetch("rf", 0, kFollower.value()), 11, &fr);
  CHECK(OnlyPartition(fr).error_code == 0);
  CHECK(Values(OnlyPartition(fr).records.bytes.value_or("")).size() == 4);  // past the HW
  CHECK(OnlyPartition(fr).high_watermark == 0);
  peer->Call(ReplicaFetch("rf", 4, kFollower.value(), 0, 1), 11, &fr);
  CHECK(OnlyPartition(fr).error_code == 0);
  // Its fetch at 4 says it has everything: the answer carries the high watermark it moved.
  CHECK(OnlyPartition(fr).high_watermark == 4);
  CHECK(part->high_watermark() == Offset(4));
  CHECK(part->Followers()[0].log_end == Offset(4));
  CHECK(part->Followers()[0].log_start == Offset(0));

  // Past the leader's log end: OFFSET_OUT_OF_RANGE, and nothing recorded.
  peer->Call(ReplicaFetch("rf", 9, kFollower.value()), 11, &fr);
  CHECK(OnlyPartition(fr).error_code == Wire(ErrorCode::OFFSET_OUT_OF_RANGE));
  CHECK(part->Followers()[0].log_end == Offset(4));

  // A peer that is not one of the replicas: UNKNOWN_LEADER_EPOCH when it names the epoch,
  // NOT_LEADER_OR_FOLLOWER when it does not (Kafka's followerReplicaOrThrow).
  auto stranger = b.Peer(NodeId(3));
  stranger->Call(ReplicaFetch("rf", 0, 3, 0, 1), 11, &fr);
  CHECK(OnlyPartition(fr).error_code == Wire(ErrorCode::UNKNOWN_LEADER_EPOCH));
  stranger->Call(ReplicaFetch("rf", 0, 3), 8, &fr);
  CHECK(OnlyPartition(fr).error_code == Wire(ErrorCode::NOT_LEADER_OR_FOLLOWER));
}

TEST_CASE("acks=all takes one follower round trip: the waiting replica fetch wakes at the append") {
  ClusterBroker b;
  Client c(b.port);
  CreateTopic(c, "rt");
  auto part = b.Get("rt");
  REQUIRE(part->BecomeLeader(LeaderEpoch(1), 0, {kLocal, kFollower}, {kLocal, kFollower}).ok());
  auto peer = b.Peer(kFollower);
  protocol::FetchResponse fr;
  // The follower is caught up (at 0) and waits up to 20 s for more.
  peer->Send(ReplicaFetch("rt", 0, kFollower.value(), 20000), 11, 77);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));

  const auto start = std::chrono::steady_clock::now();
  const std::string batch = MakeBatch(3);
  protocol::ProduceRequest p = MakeProduce("rt", 0, batch, -1);
  p.timeout_ms = 20000;
  c.Send(p, 8, 5);
  REQUIRE(peer->Receive(&fr, 11) == 77);
  auto waited = std::chrono::steady_clock::now() - start;
  CHECK(waited < std::chrono::seconds(5));
  CHECK(Values(OnlyPartition(fr).records.bytes.value_or("")).size() == 3);
  // The producer is still waiting; the follower's next fetch commits its batch.
  protocol::ProduceResponse pr;
  CHECK(c.Receive(&pr, 8, 200) == -1);
  peer->Send(ReplicaFetch("rt", 3, kFollower.value(), 20000), 11, 78);
  REQUIRE(c.Receive(&pr, 8) == 5);
  CHECK(OnlyPartition(pr).error_code == 0);
  CHECK(OnlyPartition(pr).base_offset == 0);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

TEST_CASE("acks=all: NOT_ENOUGH_REPLICAS before the append, NOT_ENOUGH_REPLICAS_AFTER_APPEND "
          "after it, NOT_LEADER_OR_FOLLOWER when leadership moves while waiting") {
  ClusterBroker b;
  Client c(b.port);
  CreateTopicWithConfigs(c, "mi", {{"min.insync.replicas", "2"}});
  auto part = b.Get("mi");
  REQUIRE(part->BecomeLeader(LeaderEpoch(1), 0, {kLocal, kFollower}, {kLocal}).ok());
  CHECK(ProduceError(c, "mi", -1) == Wire(ErrorCode::NOT_ENOUGH_REPLICAS));
  CHECK(part->log_end_offset() == Offset(0));  // refused before the append
  CHECK(ProduceError(c, "mi", 1) == 0);        // acks=1 is not held to it

  // The ISR shrinks while an acks=all produce waits: its batch is committed by the smaller
  // ISR, but not on min.insync.replicas replicas.
  part->SetIsr({kLocal, kFollower});
  const std::string batch = MakeBatch(2);
  protocol::ProduceRequest p = MakeProduce("mi", 0, batch, -1);
  p.timeout_ms = 20000;
  protocol::ProduceResponse pr;
  c.Send(p, 8, 11);
  CHECK(c.Receive(&pr, 8, 200) == -1);
  part->SetIsr({kLocal});
  REQUIRE(c.Receive(&pr, 8) == 11);
  CHECK(OnlyPartition(pr).error_code == Wire(ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND));

  // Leadership moves away while one waits.
  part->SetIsr({kLocal, kFollower});
  c.Send(p, 8, 12);
  CHECK(c.Receive(&pr, 8, 200) == -1);
  REQUIRE(part->BecomeFollower(LeaderEpoch(2), 1, kFollower).ok());
  const auto start = std::chrono::steady_clock::now();
  REQUIRE(c.Receive(&pr, 8) == 12);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CHECK(OnlyPartition(pr).error_code == Wire(ErrorCode::NOT_LEADER_OR_FOLLOWER));

  // A follower serves no client: produce, fetch and ListOffsets (but a debugging client's
  // ListOffsets, replica_id -2, is answered).
  CHECK(ProduceError(c, "mi", 1) == Wire(ErrorCode::NOT_LEADER_OR_FOLLOWER));
  protocol::FetchResponse fr;
  c.Call(MakeFetch("mi", 0, 0), 11, &fr);
  CHECK(OnlyPartition(fr).error_code == Wire(ErrorCode::NOT_LEADER_OR_FOLLOWER));
  CHECK(ListLatest(c, "mi").error_code == Wire(ErrorCode::NOT_LEADER_OR_FOLLOWER));
  CHECK(ListLatest(c, "mi", -1, -2).error_code == 0);
}

TEST_CASE("acks=all keeps waiting while its leader is only without a role, and answers once it "
          "leads again in the same epoch") {
  ClusterBroker b;
  Client c(b.port);
  CreateTopicWithConfigs(c, "nr", {{"min.insync.replicas", "2"}});
  auto part = b.Get("nr");
  REQUIRE(part->BecomeLeader(LeaderEpoch(1), 0, {kLocal, kFollower}, {kLocal}).ok());
  part->SetIsr({kLocal, kFollower});
  const std::string batch = MakeBatch(2);
  protocol::ProduceRequest p = MakeProduce("nr", 0, batch, -1);
  p.timeout_ms = 20000;
  protocol::ProduceResponse pr;
  c.Send(p, 8, 21);
  // Appended and waiting for the follower (a slow machine may take a while to append).
  const auto appended_by = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (part->log_end_offset() < Offset(2) && std::chrono::steady_clock::now() < appended_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE(part->log_end_offset() == Offset(2));
  REQUIRE(c.Receive(&pr, 8, 100) == -1);
  // Cut off from the controller: no leader, same epoch. The batch stays in the log, so the
  // client must not hear NOT_LEADER_OR_FOLLOWER ("not written").
  REQUIRE(part->BecomeFollower(LeaderEpoch(1), 0, NodeId(-1)).ok());
  CHECK(c.Receive(&pr, 8, 300) == -1);
  REQUIRE(part->BecomeLeader(LeaderEpoch(1), 0, {kLocal, kFollower}, {kLocal, kFollower}).ok());
  part->RecordFollowerFetch(kFollower, Offset(2), Offset(0), MonotonicMs());
  REQUIRE(c.Receive(&pr, 8, 5000) == 21);
  CHECK(OnlyPartition(pr).error_code == 0);
  CHECK(OnlyPartition(pr).base_offset == 0);
}

TEST_CASE("acks=all answers REQUEST_TIMED_OUT when the follower never fetches") {
  ClusterBroker b;
  Client c(b.port);
  CreateTopic(c, "to");
  auto part = b.Get("to");
  REQUIRE(part->BecomeLeader(LeaderEpoch(1), 0, {kLocal, kFollower}, {kLocal, kFollower}).ok());
  CHECK(ProduceError(c, "to", -1, 300) == Wire(ErrorCode::REQUEST_TIMED_OUT));
}

TEST_CASE("a waiting client fetch answers NOT_LEADER_OR_FOLLOWER when its partition's leader "
          "changes") {
  ClusterBroker b;
  Client c(b.port);
  CreateTopic(c, "wf");
  auto part = b.Get("wf");
  REQUIRE(part->BecomeLeader(LeaderEpoch(1), 0, {kLocal}, {kLocal}).ok());
  c.Send(MakeFetch("wf", 0, 0, 20000), 11, 9);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  REQUIRE(part->BecomeFollower(LeaderEpoch(2), 1, kFollower).ok());
  protocol::FetchResponse fr;
  REQUIRE(c.Receive(&fr, 11, 5000) == 9);
  CHECK(OnlyPartition(fr).error_code == Wire(ErrorCode::NOT_LEADER_OR_FOLLOWER));
}

TEST_CASE("KIP-320 on the wire: Fetch, ListOffsets and OffsetForLeaderEpoch fence older epochs "
          "and refuse newer ones") {
  ClusterBroker b;
  Client c(b.port);
  CreateTopic(c, "fe");
  auto part = b.Get("fe");
  REQUIRE(ProduceError(c, "fe", 1) == 0);  // epoch 0, offsets 0-1
  REQUIRE(part->BecomeLeader(LeaderEpoch(3), 0, {kLocal}, {kLocal}).ok());
  REQUIRE(ProduceError(c, "fe", 1) == 0);  // epoch 3, offsets 2-3

  protocol::FetchResponse fr;
  auto fetch = [&](int32_t epoch, int16_t version) {
    protocol::FetchRequest f = MakeFetch("fe", 0, 0);
    f.topics[0].partitions[0].current_leader_epoch = epoch;
    c.Call(f, version, &fr);
    return OnlyPartition(fr).error_code;
  };
  CHECK(fetch(2, 11) == Wire(ErrorCode::FENCED_LEADER_EPOCH));
  CHECK(fetch(4, 11) == Wire(ErrorCode::UNKNOWN_LEADER_EPOCH));
  CHECK(fetch(3, 11) == 0);
  CHECK(Values(OnlyPartition(fr).records.bytes.value_or("")).size() == 4);
  CHECK(fetch(-1, 11) == 0);
  CHECK(fetch(2, 8) == 0);  // before v9 there is no CurrentLeaderEpoch to check

  CHECK(ListLatest(c, "fe", 2).error_code == Wire(ErrorCode::FENCED_LEADER_EPOCH));
  CHECK(ListLatest(c, "fe", 4).error_code == Wire(ErrorCode::UNKNOWN_LEADER_EPOCH));
  auto latest = ListLatest(c, "fe", 3);
  CHECK(latest.error_code == 0);
  CHECK(latest.offset == 4);
  CHECK(latest.leader_epoch == 3);

  CHECK(EpochEnd(c, "fe", 0, 3, 2).error_code == Wire(ErrorCode::FENCED_LEADER_EPOCH));
  CHECK(EpochEnd(c, "fe", 0, 3, 4).error_code == Wire(ErrorCode::UNKNOWN_LEADER_EPOCH));
  for (int16_t v = 0; v <= 4; ++v) {
    CAPTURE(v);
    auto e = EpochEnd(c, "fe", 0, v, 3);
    CHECK(e.error_code == 0);
    CHECK(e.end_offset == 2);
    if (v >= 1) CHECK(e.leader_epoch == 0);
  }
  auto e = EpochEnd(c, "fe", 3, 3);
  CHECK(e.leader_epoch == 3);
  CHECK(e.end_offset == 4);
  e = EpochEnd(c, "fe", 2, 3);  // between 0 and 3: epoch 0's end
  CHECK(e.leader_epoch == 0);
  CHECK(e.end_offset == 2);
  e = EpochEnd(c, "fe", 7, 3);  // unknown: UNDEFINED, no error
  CHECK(e.error_code == 0);
  CHECK(e.leader_epoch == -1);
  CHECK(e.end_offset == -1);
  e = EpochEnd(c, "nosuch", 0, 3);
  CHECK(e.error_code == Wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));

  // Only the leader answers, except a debugging request (replica_id -2, and every v0-2 one).
  REQUIRE(part->BecomeFollower(LeaderEpoch(4), 1, kFollower).ok());
  CHECK(EpochEnd(c, "fe", 3, 3).error_code == Wire(ErrorCode::NOT_LEADER_OR_FOLLOWER));
  CHECK(EpochEnd(c, "fe", 3, 3, -1, -2).error_code == 0);
  CHECK(EpochEnd(c, "fe", 3, 2).error_code == 0);
  CHECK(fetch(4, 11) == Wire(ErrorCode::NOT_LEADER_OR_FOLLOWER));
  CHECK(fetch(3, 11) == Wire(ErrorCode::FENCED_LEADER_EPOCH));
}

TEST_CASE("ApiVersions offers OffsetForLeaderEpoch v0-4") {
  ClusterBroker b;
  Client c(b.port);
  protocol::ApiVersionsRequest req;
  protocol::ApiVersionsResponse resp;
  c.Call(req, 2, &resp);
  bool found = false;
  for (const auto& k : resp.api_keys) {
    if (k.api_key == static_cast<int16_t>(protocol::ApiKey::kOffsetForLeaderEpoch)) {
      found = true;
      CHECK(k.min_version == 0);
      CHECK(k.max_version == 4);
    }
  }
  CHECK(found);
}

TEST_CASE("replication-offset-checkpoint keeps each replica's high watermark: written while "
          "serving and at a clean stop, the start of its high watermark after a restart") {
  ClusterBroker b;
  Client c(b.port);
  CreateTopic(c, "ck");
  auto part = b.Get("ck");
  REQUIRE(part->BecomeLeader(LeaderEpoch(1), 0, {kLocal, kFollower}, {kLocal, kFollower}).ok());
  REQUIRE(ProduceError(c, "ck", 1) == 0);
  REQUIRE(ProduceError(c, "ck", 1) == 0);
  auto peer = b.Peer(kFollower);
  protocol::FetchResponse fr;
  peer->Call(ReplicaFetch("ck", 0, kFollower.value()), 11, &fr);
  peer->Call(ReplicaFetch("ck", 4, kFollower.value()), 11, &fr);
  REQUIRE(part->high_watermark() == Offset(4));
  REQUIRE(ProduceError(c, "ck", 1) == 0);  // 4-5: not on the follower, not committed
  const std::string path = b.data_dir + "/" + storage::kReplicationCheckpointFile;
  // The maintenance thread writes it every few seconds.
  storage::OffsetCheckpointMap want{{{"ck", 0}, 4}};
  bool seen = false;
  for (int i = 0; i < 100 && !seen; ++i) {
    auto cp = storage::ReadOffsetCheckpoint(path);
    seen = cp.ok() && *cp == want;
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CHECK(seen);

  peer.reset();
  b.Restart();
  // Only partitions with a role are in it (the __consumer_offsets partitions opened by the
  // group coordinator have none here).
  auto cp = storage::ReadOffsetCheckpoint(path);
  REQUIRE(cp.ok());
  CHECK(*cp == want);
  part = b.Get("ck");
  CHECK(part->log_end_offset() == Offset(6));
  REQUIRE(part->BecomeFollower(LeaderEpoch(2), 1, kFollower).ok());
  CHECK(part->high_watermark() == Offset(4));
  // A clean stop as a follower writes what it has then.
  part->UpdateFollowerHighWatermark(Offset(5));
  part.reset();
  b.Restart();
  cp = storage::ReadOffsetCheckpoint(path);
  REQUIRE(cp.ok());
  CHECK(cp->at({"ck", 0}) == 5);
}

TEST_CASE(
    "a leader whose lease ran out names no leader in Metadata, and itself again once renewed") {
  ClusterBroker b;
  Client c(b.port);
  CreateTopicWithConfigs(c, "leased", {{"min.insync.replicas", "1"}});
  auto part = b.Get("leased");
  REQUIRE(part->BecomeLeader(LeaderEpoch(1), 0, {kLocal, kFollower}, {kLocal, kFollower}).ok());
  auto leader_of = [&](int16_t* error) {
    protocol::MetadataRequest md;
    md.topics = std::vector<protocol::MetadataRequest::Topic>{};
    md.topics->push_back({});
    md.topics->back().name = "leased";
    md.allow_auto_topic_creation = false;
    protocol::MetadataResponse mr;
    c.Call(md, 7, &mr);
    REQUIRE(mr.topics.size() == 1);
    REQUIRE(mr.topics[0].partitions.size() == 1);
    *error = mr.topics[0].partitions[0].error_code;
    return mr.topics[0].partitions[0].leader_id;
  };
  int16_t error = -1;
  part->SetLeaderLease(MonotonicMs() + 60000);
  CHECK(leader_of(&error) == kLocal.value());
  CHECK(error == 0);
  // Cut off from the controller past its session: produce and fetch get NOT_LEADER_OR_FOLLOWER,
  // and Metadata does not send clients back here.
  part->SetLeaderLease(MonotonicMs() - 1);
  CHECK(leader_of(&error) == -1);
  CHECK(error == static_cast<int16_t>(protocol::ErrorCode::LEADER_NOT_AVAILABLE));
  part->SetLeaderLease(MonotonicMs() + 60000);
  CHECK(leader_of(&error) == kLocal.value());
  CHECK(error == 0);
}
