// The flexible versions of Fetch (v12-17) and Produce (v9-11) against an in-process broker:
// topics by id (KIP-516, Fetch v13+), the replica id in ReplicaState (Fetch v15+), incremental
// fetch sessions (KIP-227), and KIP-951's leader hints (CurrentLeader, NodeEndpoints) on
// answers that turn a client away.
#include <thread>

#include "base/uuid.h"
#include "broker/partition.h"
#include "broker_test_util.h"
#include "hand_cluster.h"

using namespace silt;
using namespace silt::broker;
using namespace silt::broker::testing;
using protocol::ErrorCode;

namespace {

int16_t Wire(ErrorCode c) { return protocol::ToWire(c); }

Uuid TopicId(Client& c, const std::string& topic) {
  protocol::MetadataRequest md;
  md.topics.emplace();
  md.topics->push_back({.name = topic});
  protocol::MetadataResponse resp;
  c.Call(md, 12, &resp);
  REQUIRE(resp.topics.size() == 1);
  REQUIRE(!resp.topics[0].topic_id.is_zero());
  return resp.topics[0].topic_id;
}

// A fetch of `topic` partition 0 as `version` names it: by name before v13, by id from v13.
protocol::FetchRequest FetchAt(int16_t version, const std::string& topic, const Uuid& id,
                               int64_t offset) {
  protocol::FetchRequest f = MakeFetch(topic, 0, offset);
  if (version >= 13) {
    f.topics[0].topic.clear();
    f.topics[0].topic_id = id;
  }
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

}  // namespace

TEST_CASE("Fetch v12-17 serve records zero-copy, by name at v12 and by topic id from v13") {
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "flex");
  const Uuid id = TopicId(c, "flex");
  protocol::ProduceResponse pr;
  const std::string batch = MakeBatch(3, format::Compression::kLz4);
  c.Call(MakeProduce("flex", 0, batch), 8, &pr);
  REQUIRE(OnlyPartition(pr).error_code == 0);
  for (int16_t v = 12; v <= 17; ++v) {
    CAPTURE(v);
    protocol::FetchResponse fr;
    c.Call(FetchAt(v, "flex", id, 1), v, &fr);
    CHECK(fr.error_code == 0);
    CHECK(fr.session_id == 0);
    const auto& p = OnlyPartition(fr);
    CHECK(p.error_code == 0);
    CHECK(p.high_watermark == 3);
    CHECK(p.log_start_offset == 0);
    CHECK(p.current_leader.leader_id == -1);  // only answers that turn a client away name it
    // The whole batch comes back (it starts at 0); the consumer skips to its offset.
    CHECK(Values(p.records.bytes.value_or("")) ==
          std::vector<std::string>{"value-0", "value-1", "value-2"});
    if (v >= 13) {
      CHECK(fr.responses[0].topic_id == id);
      CHECK(fr.responses[0].topic.empty());  // not on the wire
    } else {
      CHECK(fr.responses[0].topic == "flex");
    }
  }
}

TEST_CASE("Fetch v13+ answers UNKNOWN_TOPIC_ID for each partition of an unknown topic id, "
          "echoing the id, and serves the known ones") {
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "known", 2);
  const Uuid id = TopicId(c, "known");
  const Uuid unknown(Uuid::Bytes{9, 8, 7, 6, 5, 4, 3, 2, 1, 9, 8, 7, 6, 5, 4, 3});
  protocol::FetchRequest f = FetchAt(13, "known", id, 0);
  protocol::FetchRequest::Topic t;
  t.topic_id = unknown;
  t.partitions = {f.topics[0].partitions[0], f.topics[0].partitions[0]};
  t.partitions[1].partition = 1;
  f.topics.push_back(t);
  f.topics[0].partitions.push_back(t.partitions[1]);  // known, partition 1
  protocol::FetchResponse fr;
  c.Call(f, 13, &fr);
  REQUIRE(fr.responses.size() == 2);
  CHECK(fr.responses[0].topic_id == id);
  REQUIRE(fr.responses[0].partitions.size() == 2);
  CHECK(fr.responses[0].partitions[0].error_code == 0);
  CHECK(fr.responses[0].partitions[1].error_code == 0);
  CHECK(fr.responses[1].topic_id == unknown);
  REQUIRE(fr.responses[1].partitions.size() == 2);
  for (const auto& p : fr.responses[1].partitions) {
    CHECK(p.error_code == Wire(ErrorCode::UNKNOWN_TOPIC_ID));
    CHECK(p.high_watermark == -1);
  }
  CHECK(fr.responses[1].partitions[1].partition_index == 1);

  // A topic deleted and created again has a new id: the old one is unknown from then on.
  protocol::DeleteTopicsRequest del;
  del.topic_names.push_back("known");
  protocol::DeleteTopicsResponse dr;
  c.Call(del, 4, &dr);
  REQUIRE(dr.responses.size() == 1);
  REQUIRE(dr.responses[0].error_code == 0);
  CreateTopic(c, "known", 2);
  c.Call(FetchAt(13, "known", id, 0), 13, &fr);
  CHECK(OnlyPartition(fr).error_code == Wire(ErrorCode::UNKNOWN_TOPIC_ID));
  c.Call(FetchAt(13, "known", TopicId(c, "known"), 0), 13, &fr);
  CHECK(OnlyPartition(fr).error_code == 0);
}

TEST_CASE("fetch sessions: epoch 0 makes one, incremental fetches carry and answer only what "
          "changed, forgotten partitions leave it, epoch -1 closes it") {
  for (int16_t v : {12, 17}) {
    CAPTURE(v);
    TestBroker b;
    Client c(b.port);
    CreateTopic(c, "sess", 3);
    const Uuid id = TopicId(c, "sess");
    protocol::ProduceResponse pr;
    c.Call(MakeProduce("sess", 0, MakeBatch(2)), 8, &pr);
    c.Call(MakeProduce("sess", 1, MakeBatch(3)), 8, &pr);

    // The full fetch of all three partitions asks for a session (epoch 0).
    protocol::FetchRequest full = FetchAt(v, "sess", id, 0);
    for (int32_t p : {1, 2}) {
      full.topics[0].partitions.push_back(full.topics[0].partitions[0]);
      full.topics[0].partitions.back().partition = p;
    }
    full.session_id = 0;
    full.session_epoch = 0;
    protocol::FetchResponse fr;
    c.Call(full, v, &fr);
    REQUIRE(fr.error_code == 0);
    const int32_t session = fr.session_id;
    REQUIRE(session != 0);
    REQUIRE(fr.responses.size() == 1);
    CHECK(fr.responses[0].partitions.size() == 3);  // a full answer names every partition

    // Epoch 1 with no partitions: the client moved no position, nothing changed: an empty
    // answer (after max_wait_ms). Partition 0 still sits at offset 0 with records, though:
    // the session kept its offset, so it comes back with them.
    protocol::FetchRequest inc = full;
    inc.topics.clear();
    inc.session_id = session;
    inc.session_epoch = 1;
    inc.max_wait_ms = 50;
    c.Call(inc, v, &fr);
    REQUIRE(fr.error_code == 0);
    CHECK(fr.session_id == session);
    REQUIRE(fr.responses.size() == 1);
    REQUIRE(fr.responses[0].partitions.size() == 2);  // 0 and 1 have records; 2 has none
    CHECK(fr.responses[0].partitions[0].partition_index == 0);
    CHECK(fr.responses[0].partitions[1].partition_index == 1);
    CHECK(Values(fr.responses[0].partitions[1].records.bytes.value_or("")).size() == 3);

    // Epoch 2 moves 0 and 1 past their records: nothing new anywhere, an empty answer.
    inc.session_epoch = 2;
    inc.topics = FetchAt(v, "sess", id, 2).topics;
    inc.topics[0].partitions.push_back(inc.topics[0].partitions[0]);
    inc.topics[0].partitions.back().partition = 1;
    inc.topics[0].partitions.back().fetch_offset = 3;
    c.Call(inc, v, &fr);
    REQUIRE(fr.error_code == 0);
    CHECK(fr.responses.empty());

    // New records on partition 2: epoch 3, which names no partition, answers only partition 2.
    c.Call(MakeProduce("sess", 2, MakeBatch(4)), 8, &pr);
    inc.topics.clear();
    inc.session_epoch = 3;
    c.Call(inc, v, &fr);
    REQUIRE(fr.error_code == 0);
    REQUIRE(fr.responses.size() == 1);
    REQUIRE(fr.responses[0].partitions.size() == 1);
    CHECK(fr.responses[0].partitions[0].partition_index == 2);
    CHECK(fr.responses[0].partitions[0].high_watermark == 4);
    CHECK(Values(fr.responses[0].partitions[0].records.bytes.value_or("")).size() == 4);
    if (v >= 13) CHECK(fr.responses[0].topic_id == id);
    if (v < 13) CHECK(fr.responses[0].topic == "sess");

    // A replayed epoch is INVALID_FETCH_SESSION_EPOCH; the session is still there.
    c.Call(inc, v, &fr);
    CHECK(fr.error_code == Wire(ErrorCode::INVALID_FETCH_SESSION_EPOCH));
    CHECK(fr.responses.empty());

    // Forgetting partition 2 (at its old offset it would answer records again): nothing.
    inc.session_epoch = 4;
    protocol::FetchRequest::ForgottenTopic forget;
    if (v >= 13) forget.topic_id = id;
    else forget.topic = "sess";
    forget.partitions = {2};
    inc.forgotten_topics_data = {forget};
    c.Call(inc, v, &fr);
    REQUIRE(fr.error_code == 0);
    CHECK(fr.responses.empty());
    // A new record on partition 2 is not the session's business any more; one on 0 is.
    c.Call(MakeProduce("sess", 2, MakeBatch(1)), 8, &pr);
    c.Call(MakeProduce("sess", 0, MakeBatch(1)), 8, &pr);
    inc.forgotten_topics_data.clear();
    inc.session_epoch = 5;
    c.Call(inc, v, &fr);
    REQUIRE(fr.error_code == 0);
    REQUIRE(fr.responses.size() == 1);
    REQUIRE(fr.responses[0].partitions.size() == 1);
    CHECK(fr.responses[0].partitions[0].partition_index == 0);
    CHECK(fr.responses[0].partitions[0].high_watermark == 3);

    // The other way of naming topics cannot go on with this session.
    const int16_t other = v >= 13 ? 12 : 13;
    protocol::FetchRequest wrong = inc;
    wrong.session_epoch = 6;
    c.Call(wrong, other, &fr);
    CHECK(fr.error_code == Wire(ErrorCode::FETCH_SESSION_TOPIC_ID_ERROR));

    // Epoch -1 closes it: a full fetch without a session, and the session is gone.
    protocol::FetchRequest close = FetchAt(v, "sess", id, 0);
    close.session_id = session;
    close.session_epoch = -1;
    c.Call(close, v, &fr);
    CHECK(fr.error_code == 0);
    CHECK(fr.session_id == 0);
    CHECK(OnlyPartition(fr).error_code == 0);
    inc.session_epoch = 6;
    c.Call(inc, v, &fr);
    CHECK(fr.error_code == Wire(ErrorCode::FETCH_SESSION_ID_NOT_FOUND));
    CHECK(fr.responses.empty());
  }
}

TEST_CASE("fetch sessions: a session never made is FETCH_SESSION_ID_NOT_FOUND; with "
          "max.incremental.fetch.session.cache.slots=0 none is made") {
  BrokerConfig config;
  config.max_incremental_fetch_session_cache_slots = 0;
  TestBroker b(config);
  Client c(b.port);
  CreateTopic(c, "nosess");
  const Uuid id = TopicId(c, "nosess");
  for (int32_t epoch : {0, -1}) {
    CAPTURE(epoch);
    protocol::FetchRequest f = FetchAt(17, "nosess", id, 0);
    f.session_id = 0;
    f.session_epoch = epoch;
    protocol::FetchResponse fr;
    c.Call(f, 17, &fr);
    CHECK(fr.error_code == 0);
    CHECK(fr.session_id == 0);  // none made: the next fetch is full again
    CHECK(OnlyPartition(fr).error_code == 0);
  }
  protocol::FetchRequest inc = FetchAt(12, "nosess", id, 0);
  inc.session_id = 12345;
  inc.session_epoch = 3;
  protocol::FetchResponse fr;
  c.Call(inc, 12, &fr);
  CHECK(fr.error_code == Wire(ErrorCode::FETCH_SESSION_ID_NOT_FOUND));
  CHECK(fr.session_id == 0);
  CHECK(fr.responses.empty());
}

TEST_CASE("Produce v9 and v11 append, and what they wrote comes back from Fetch v17 by id") {
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "p11");
  const Uuid id = TopicId(c, "p11");
  int64_t expected = 0;
  for (int16_t v : {9, 10, 11}) {
    CAPTURE(v);
    const std::string batch = MakeBatch(2, format::Compression::kZstd, -1, -1, -1,
                                        "v" + std::to_string(v) + "-");
    protocol::ProduceResponse pr;
    c.Call(MakeProduce("p11", 0, batch, -1), v, &pr);
    REQUIRE(pr.responses.size() == 1);
    CHECK(pr.responses[0].name == "p11");
    CHECK(OnlyPartition(pr).error_code == 0);
    CHECK(OnlyPartition(pr).base_offset == expected);
    CHECK(OnlyPartition(pr).log_start_offset == 0);
    CHECK(OnlyPartition(pr).current_leader.leader_id == -1);
    CHECK(pr.node_endpoints.empty());
    expected += 2;
  }
  protocol::ProduceResponse pr;
  c.Call(MakeProduce("nosuch-p11", 0, MakeBatch(1), -1), 11, &pr);
  CHECK(OnlyPartition(pr).error_code == Wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));

  std::vector<std::string> all;
  int64_t at = 0;
  while (at < expected) {
    protocol::FetchResponse fr;
    c.Call(FetchAt(17, "p11", id, at), 17, &fr);
    REQUIRE(OnlyPartition(fr).error_code == 0);
    auto v = Values(OnlyPartition(fr).records.bytes.value_or(""));
    REQUIRE(!v.empty());
    all.insert(all.end(), v.begin(), v.end());
    at += static_cast<int64_t>(v.size());
  }
  CHECK(all == std::vector<std::string>{"v9-0", "v9-1", "v10-0", "v10-1", "v11-0", "v11-1"});
}

TEST_CASE("Fetch v15+ takes the replica id from ReplicaState: a follower's fetch on its peer "
          "connection reads past the high watermark, a client's claim is refused") {
  constexpr NodeId kLocal{1};
  constexpr NodeId kFollower{2};
  HandClusterBroker b;
  Client c(b.port);
  CreateTopic(c, "rs");
  const Uuid id = TopicId(c, "rs");
  auto part = b.Get("rs");
  REQUIRE(part->BecomeLeader(LeaderEpoch(1), 0, {kLocal, kFollower}, {kLocal, kFollower}).ok());
  protocol::ProduceResponse pr;
  c.Call(MakeProduce("rs", 0, MakeBatch(3), 1), 11, &pr);
  REQUIRE(OnlyPartition(pr).error_code == 0);
  REQUIRE(part->high_watermark() == Offset(0));

  for (int16_t v : {15, 16, 17}) {
    CAPTURE(v);
    protocol::FetchRequest f = FetchAt(v, "rs", id, 0);
    f.replica_state.replica_id = kFollower.value();
    f.replica_state.replica_epoch = 7;
    f.topics[0].partitions[0].log_start_offset = 0;
    protocol::FetchResponse fr;
    c.Call(f, v, &fr);  // a client connection
    CHECK(OnlyPartition(fr).error_code == Wire(ErrorCode::TOPIC_AUTHORIZATION_FAILED));
    CHECK(fr.responses[0].topic_id == id);

    // A consumer (ReplicaState absent: replica id -1) sees nothing past the high watermark.
    c.Call(FetchAt(v, "rs", id, 0), v, &fr);
    CHECK(OnlyPartition(fr).error_code == 0);
    CHECK(Values(OnlyPartition(fr).records.bytes.value_or("")).empty());
  }
  auto peer = b.Peer(kFollower);
  protocol::FetchRequest f = FetchAt(15, "rs", id, 0);
  f.replica_state.replica_id = kFollower.value();
  f.topics[0].partitions[0].log_start_offset = 0;
  protocol::FetchResponse fr;
  peer->Call(f, 15, &fr);
  CHECK(OnlyPartition(fr).error_code == 0);
  CHECK(Values(OnlyPartition(fr).records.bytes.value_or("")).size() == 3);  // past the HW
  f.topics[0].partitions[0].fetch_offset = 3;
  peer->Call(f, 15, &fr);
  CHECK(OnlyPartition(fr).high_watermark == 3);
  CHECK(part->Followers()[0].log_end == Offset(3));
}

TEST_CASE("KIP-951: NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH answers name the current "
          "leader, and the leader's endpoint from Produce v10 and Fetch v16") {
  constexpr NodeId kLocal{1};
  constexpr NodeId kOther{2};
  HandClusterBroker b;
  Client c(b.port);
  CreateTopic(c, "lh");
  const Uuid id = TopicId(c, "lh");
  auto part = b.Get("lh");
  REQUIRE(part->BecomeLeader(LeaderEpoch(3), 0, {kLocal}, {kLocal}).ok());
  protocol::MetadataRequest md;
  md.topics.emplace();
  protocol::MetadataResponse mr;
  c.Call(md, 12, &mr);
  REQUIRE(mr.brokers.size() == 1);

  // A fenced epoch: this node leads at epoch 3, and says so with its own endpoint.
  for (int16_t v = 11; v <= 17; ++v) {
    CAPTURE(v);
    protocol::FetchRequest f = FetchAt(v, "lh", id, 0);
    f.topics[0].partitions[0].current_leader_epoch = 2;
    protocol::FetchResponse fr;
    c.Call(f, v, &fr);
    const auto& p = OnlyPartition(fr);
    CHECK(p.error_code == Wire(ErrorCode::FENCED_LEADER_EPOCH));
    if (v < 12) {
      CHECK(p.current_leader.leader_id == -1);  // not on the wire
      continue;
    }
    CHECK(p.current_leader.leader_id == kLocal.value());
    CHECK(p.current_leader.leader_epoch == 3);
    if (v < 16) {
      CHECK(fr.node_endpoints.empty());
      continue;
    }
    REQUIRE(fr.node_endpoints.size() == 1);
    CHECK(fr.node_endpoints[0].node_id == kLocal.value());
    CHECK(fr.node_endpoints[0].host == mr.brokers[0].host);
    CHECK(fr.node_endpoints[0].port == mr.brokers[0].port);
    CHECK(!fr.node_endpoints[0].rack.has_value());
  }

  // Another node leads at epoch 4: named, with no endpoint (this node does not know one).
  REQUIRE(part->BecomeFollower(LeaderEpoch(4), 1, kOther).ok());
  for (int16_t v : {12, 13, 16, 17}) {
    CAPTURE(v);
    protocol::FetchResponse fr;
    c.Call(FetchAt(v, "lh", id, 0), v, &fr);
    CHECK(OnlyPartition(fr).error_code == Wire(ErrorCode::NOT_LEADER_OR_FOLLOWER));
    CHECK(OnlyPartition(fr).current_leader.leader_id == kOther.value());
    CHECK(OnlyPartition(fr).current_leader.leader_epoch == 4);
    CHECK(fr.node_endpoints.empty());
  }
  for (int16_t v : {9, 10, 11}) {
    CAPTURE(v);
    protocol::ProduceResponse pr;
    c.Call(MakeProduce("lh", 0, MakeBatch(1), 1), v, &pr);
    CHECK(OnlyPartition(pr).error_code == Wire(ErrorCode::NOT_LEADER_OR_FOLLOWER));
    CHECK(OnlyPartition(pr).current_leader.leader_id == (v >= 10 ? kOther.value() : -1));
    CHECK(OnlyPartition(pr).current_leader.leader_epoch == (v >= 10 ? 4 : -1));
    CHECK(pr.node_endpoints.empty());
  }

  // Leading again: a produce turned away while waiting for acks=all names the new leader too.
  REQUIRE(part->BecomeLeader(LeaderEpoch(5), 1, {kLocal, kOther}, {kLocal, kOther}).ok());
  const std::string one = MakeBatch(1);
  c.Send(MakeProduce("lh", 0, one, -1), 11, 77);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  REQUIRE(part->BecomeFollower(LeaderEpoch(6), 2, kOther).ok());
  protocol::ProduceResponse pr;
  REQUIRE(c.Receive(&pr, 11, 5000) == 77);
  CHECK(OnlyPartition(pr).error_code == Wire(ErrorCode::NOT_LEADER_OR_FOLLOWER));
  CHECK(OnlyPartition(pr).current_leader.leader_id == kOther.value());
  CHECK(OnlyPartition(pr).current_leader.leader_epoch == 6);

  // Leading again: an accepted produce names no leader.
  REQUIRE(part->BecomeLeader(LeaderEpoch(7), 3, {kLocal}, {kLocal}).ok());
  c.Call(MakeProduce("lh", 0, MakeBatch(1), 1), 11, &pr);
  CHECK(OnlyPartition(pr).error_code == 0);
  CHECK(OnlyPartition(pr).current_leader.leader_id == -1);
}
