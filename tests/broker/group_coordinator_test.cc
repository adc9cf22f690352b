// The group coordinator's state machine, driven directly with a fake clock and an in-memory
// offset log: joins, rebalances, generations, timeouts, static members, offsets and their
// persistence and expiry.
#include "broker/group_coordinator.h"

#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "base/clock.h"
#include "broker/logging.h"
#include "protocol/consumer_offsets.h"
#include "protocol/errors.h"

namespace silt::broker {
namespace {

using protocol::ErrorCode;

int16_t E(ErrorCode c) { return protocol::ToWire(c); }

struct FakeClock {
  int64_t now = 1'700'000'000'000;
  FakeClock() {
    SetLogLevel(LogLevel::kWarn);
    SetFakeClockForTesting([this] { return now; });
  }
  ~FakeClock() { SetFakeClockForTesting(nullptr); }
  void Advance(int64_t ms) { now += ms; }
};

template <typename T>
using Slot = std::shared_ptr<std::optional<T>>;

struct Fixture {
  FakeClock clock;
  MemoryOffsetLog log;
  GroupCoordinatorOptions options;
  std::unique_ptr<GroupCoordinator> c;

  explicit Fixture(int32_t initial_delay_ms = 0) {
    options.run_timer_thread = false;
    options.initial_rebalance_delay_ms = initial_delay_ms;
    options.min_session_timeout_ms = 1000;
    c = std::make_unique<GroupCoordinator>(options, &log);
    REQUIRE(c->Load().ok());
  }
  void Restart() {
    c.reset();
    c = std::make_unique<GroupCoordinator>(options, &log);
    REQUIRE(c->Load().ok());
  }

  static protocol::JoinGroupRequest JoinReq(const std::string& member_id,
                                            std::vector<std::string> protocols = {"range"},
                                            std::string metadata = "md") {
    protocol::JoinGroupRequest r;
    r.group_id = std::string(1, 'g');
    r.session_timeout_ms = 10000;
    r.rebalance_timeout_ms = 30000;
    r.member_id = member_id;
    r.protocol_type = "consumer";
    for (const auto& p : protocols) {
      // Appended piecewise: GCC 12 warns falsely (-Wrestrict) on string + literal + string.
      std::string md = metadata;
      md.append(":").append(p);
      r.protocols.push_back({p, std::move(md)});
    }
    return r;
  }
  Slot<protocol::JoinGroupResponse> Join(const protocol::JoinGroupRequest& r, int16_t version = 5,
                                         const std::string& client = "client") {
    auto slot = std::make_shared<std::optional<protocol::JoinGroupResponse>>();
    c->JoinGroup(r, version, {client, "/127.0.0.1"},
                 [slot](protocol::JoinGroupResponse resp) {
                   REQUIRE(!slot->has_value());
                   *slot = std::move(resp);
                 });
    return slot;
  }
  // A v5 join that goes through MEMBER_ID_REQUIRED first; returns the pending second join.
  Slot<protocol::JoinGroupResponse> JoinNew(protocol::JoinGroupRequest r, std::string* id) {
    auto first = Join(r);
    REQUIRE(first->has_value());
    REQUIRE((*first)->error_code == E(ErrorCode::MEMBER_ID_REQUIRED));
    *id = (*first)->member_id;
    r.member_id = *id;
    return Join(r);
  }
  Slot<protocol::SyncGroupResponse> Sync(const std::string& member, int32_t generation,
                                         std::vector<protocol::SyncGroupRequest::Assignment> a = {}) {
    protocol::SyncGroupRequest r;
    r.group_id = "g";
    r.generation_id = generation;
    r.member_id = member;
    r.assignments = std::move(a);
    auto slot = std::make_shared<std::optional<protocol::SyncGroupResponse>>();
    c->SyncGroup(r, 3, [slot](protocol::SyncGroupResponse resp) {
      REQUIRE(!slot->has_value());
      *slot = std::move(resp);
    });
    return slot;
  }
  int16_t Heartbeat(const std::string& member, int32_t generation,
                    std::optional<std::string> instance = std::nullopt) {
    protocol::HeartbeatRequest r;
    r.group_id = "g";
    r.generation_id = generation;
    r.member_id = member;
    r.group_instance_id = instance;
    return c->Heartbeat(r, 3).error_code;
  }
  int16_t Commit(const std::string& member, int32_t generation, const std::string& topic,
                 int32_t partition, int64_t offset, const std::string& group = "g") {
    protocol::OffsetCommitRequest r;
    r.group_id = group;
    r.generation_id_or_member_epoch = generation;
    r.member_id = member;
    r.topics.push_back({topic, {{partition, offset, 7, -1, std::string("md")}}});
    auto resp = c->CommitOffsets(r, 7);
    REQUIRE(resp.topics.size() == 1);
    REQUIRE(resp.topics[0].partitions.size() == 1);
    return resp.topics[0].partitions[0].error_code;
  }
  int64_t Committed(const std::string& topic, int32_t partition, const std::string& group = "g") {
    protocol::OffsetFetchRequest r;
    r.group_id = group;
    r.topics.emplace();
    r.topics->push_back({topic, {partition}});
    auto resp = c->FetchOffsets(r, 5);
    return resp.topics.at(0).partitions.at(0).committed_offset;
  }
  // One member through join and sync: returns its id and the generation.
  std::pair<std::string, int32_t> StableSingle() {
    std::string id;
    auto j = JoinNew(JoinReq(""), &id);
    REQUIRE(j->has_value());
    REQUIRE((*j)->error_code == 0);
    auto s = Sync(id, (*j)->generation_id, {{id, "A"}});
    REQUIRE(s->has_value());
    REQUIRE((*s)->error_code == 0);
    return {id, (*j)->generation_id};
  }
};

TEST_CASE("a v4+ join without a member id is told MEMBER_ID_REQUIRED and the id to use") {
  Fixture f;
  auto first = f.Join(Fixture::JoinReq(""), 4, "app");
  REQUIRE(first->has_value());
  CHECK((*first)->error_code == E(ErrorCode::MEMBER_ID_REQUIRED));
  CHECK((*first)->member_id.rfind("app-", 0) == 0);
  CHECK(f.c->GroupSize("g") == 0);
  auto r = Fixture::JoinReq((*first)->member_id);
  auto second = f.Join(r, 4);
  REQUIRE(second->has_value());
  CHECK((*second)->error_code == 0);
  CHECK((*second)->member_id == (*first)->member_id);
  CHECK((*second)->leader == (*first)->member_id);
  CHECK((*second)->generation_id == 1);
  CHECK((*second)->protocol_name == "range");
  REQUIRE((*second)->members.size() == 1);
  CHECK((*second)->members[0].metadata == "md:range");
  CHECK(f.c->GroupState("g") == "CompletingRebalance");
}

TEST_CASE("a v3 join without a member id joins at once with an assigned id") {
  Fixture f;
  auto j = f.Join(Fixture::JoinReq(""), 3);
  REQUIRE(j->has_value());
  CHECK((*j)->error_code == 0);
  CHECK(!(*j)->member_id.empty());
  CHECK((*j)->generation_id == 1);
}

TEST_CASE("a second member triggers a rebalance that waits for the first to rejoin") {
  Fixture f;
  auto [a, gen1] = f.StableSingle();
  CHECK(f.c->GroupState("g") == "Stable");
  CHECK(gen1 == 1);

  std::string b;
  auto jb = f.JoinNew(Fixture::JoinReq(""), &b);
  CHECK(!jb->has_value());  // waits for a
  CHECK(f.c->GroupState("g") == "PreparingRebalance");
  CHECK(f.Heartbeat(a, gen1) == E(ErrorCode::REBALANCE_IN_PROGRESS));

  auto ja = f.Join(Fixture::JoinReq(a));
  REQUIRE(ja->has_value());
  REQUIRE(jb->has_value());
  CHECK((*ja)->error_code == 0);
  CHECK((*jb)->error_code == 0);
  CHECK((*ja)->generation_id == 2);
  CHECK((*jb)->generation_id == 2);
  CHECK((*ja)->leader == a);
  CHECK((*jb)->leader == a);
  CHECK((*ja)->members.size() == 2);  // the leader sees everyone
  CHECK((*jb)->members.empty());      // followers see no one

  // The follower's sync waits for the leader's assignments.
  auto sb = f.Sync(b, 2);
  CHECK(!sb->has_value());
  CHECK(f.Heartbeat(b, 2) == 0);
  auto sa = f.Sync(a, 2, {{a, "for-a"}, {b, "for-b"}});
  REQUIRE(sa->has_value());
  REQUIRE(sb->has_value());
  CHECK((*sa)->assignment == "for-a");
  CHECK((*sb)->assignment == "for-b");
  CHECK(f.c->GroupState("g") == "Stable");
  CHECK(f.Heartbeat(a, 2) == 0);
  CHECK(f.Heartbeat(a, 1) == E(ErrorCode::ILLEGAL_GENERATION));
  CHECK(f.Heartbeat("nobody", 2) == E(ErrorCode::UNKNOWN_MEMBER_ID));
  // A sync from an old generation is refused.
  auto old = f.Sync(a, 1);
  REQUIRE(old->has_value());
  CHECK((*old)->error_code == E(ErrorCode::ILLEGAL_GENERATION));
}

TEST_CASE("the protocol is chosen by vote among those every member supports") {
  Fixture f;
  std::string a, b, c;
  auto ja = f.JoinNew(Fixture::JoinReq("", {"roundrobin", "range"}), &a);
  REQUIRE(ja->has_value());
  CHECK((*ja)->protocol_name == "roundrobin");
  auto jb = f.JoinNew(Fixture::JoinReq("", {"range", "roundrobin"}), &b);
  auto jc = f.JoinNew(Fixture::JoinReq("", {"range", "sticky"}), &c);
  CHECK(!jb->has_value());
  auto ja2 = f.Join(Fixture::JoinReq(a, {"roundrobin", "range"}));
  REQUIRE(ja2->has_value());
  REQUIRE(jc->has_value());
  // Only range is common to all three.
  CHECK((*ja2)->protocol_name == "range");
  CHECK((*jc)->protocol_name == "range");
  REQUIRE((*ja2)->members.size() == 3);
  for (const auto& m : (*ja2)->members) CHECK(m.metadata == "md:range");

  // A member sharing no protocol with the group, or of another protocol type, is refused.
  auto bad = f.Join(Fixture::JoinReq("", {"sticky"}));
  REQUIRE(bad->has_value());
  CHECK((*bad)->error_code == E(ErrorCode::INCONSISTENT_GROUP_PROTOCOL));
  auto other_type = Fixture::JoinReq("", {"range"});
  other_type.protocol_type = "connect";
  auto bad2 = f.Join(other_type);
  REQUIRE(bad2->has_value());
  CHECK((*bad2)->error_code == E(ErrorCode::INCONSISTENT_GROUP_PROTOCOL));
  // An empty group needs a protocol type and protocols.
  auto empty = Fixture::JoinReq("", {});
  empty.group_id = std::string(1, 'h');
  auto bad3 = f.Join(empty);
  REQUIRE(bad3->has_value());
  CHECK((*bad3)->error_code == E(ErrorCode::INCONSISTENT_GROUP_PROTOCOL));
}

TEST_CASE("session timeouts outside the broker's bounds are refused") {
  Fixture f;
  auto r = Fixture::JoinReq("");
  r.session_timeout_ms = 10;
  auto j = f.Join(r);
  REQUIRE(j->has_value());
  CHECK((*j)->error_code == E(ErrorCode::INVALID_SESSION_TIMEOUT));
  r.session_timeout_ms = f.options.max_session_timeout_ms + 1;
  j = f.Join(r);
  REQUIRE(j->has_value());
  CHECK((*j)->error_code == E(ErrorCode::INVALID_SESSION_TIMEOUT));
  r.group_id = "";
  r.session_timeout_ms = 10000;
  j = f.Join(r);
  REQUIRE(j->has_value());
  CHECK((*j)->error_code == E(ErrorCode::INVALID_GROUP_ID));
}

TEST_CASE("a member that stops heartbeating is removed after its session timeout") {
  Fixture f;
  auto [a, g1] = f.StableSingle();
  std::string b;
  auto jb = f.JoinNew(Fixture::JoinReq(""), &b);
  auto ja = f.Join(Fixture::JoinReq(a));
  REQUIRE(jb->has_value());
  auto sb = f.Sync(b, 2);
  auto sa = f.Sync(a, 2, {{a, "x"}, {b, "y"}});
  REQUIRE(sb->has_value());
  CHECK(f.c->GroupState("g") == "Stable");

  // b keeps heartbeating; a goes silent.
  f.clock.Advance(6000);
  CHECK(f.Heartbeat(b, 2) == 0);
  f.c->Poll();
  CHECK(f.c->GroupSize("g") == 2);
  f.clock.Advance(4001);
  CHECK(f.Heartbeat(b, 2) == 0);
  f.c->Poll();
  CHECK(f.c->GroupSize("g") == 1);
  CHECK(f.c->GroupState("g") == "PreparingRebalance");
  CHECK(f.Heartbeat(b, 2) == E(ErrorCode::REBALANCE_IN_PROGRESS));
  CHECK(f.Heartbeat(a, 2) == E(ErrorCode::UNKNOWN_MEMBER_ID));
  // The survivor rejoins alone and leads the next generation.
  auto jb2 = f.Join(Fixture::JoinReq(b));
  REQUIRE(jb2->has_value());
  CHECK((*jb2)->generation_id == 3);
  CHECK((*jb2)->leader == b);
  CHECK((*jb2)->members.size() == 1);
}

TEST_CASE("members that do not rejoin within the rebalance timeout are dropped") {
  Fixture f;
  auto [a, g1] = f.StableSingle();
  std::string b;
  auto jb = f.JoinNew(Fixture::JoinReq(""), &b);
  CHECK(!jb->has_value());
  // a keeps heartbeating (so its session does not expire) but never rejoins.
  for (int i = 0; i < 5; ++i) {
    f.clock.Advance(5000);
    CHECK(f.Heartbeat(a, g1) == E(ErrorCode::REBALANCE_IN_PROGRESS));
    f.c->Poll();
  }
  f.clock.Advance(4999);
  f.c->Poll();
  CHECK(!jb->has_value());
  f.clock.Advance(1);
  f.c->Poll();
  REQUIRE(jb->has_value());
  CHECK((*jb)->error_code == 0);
  CHECK((*jb)->leader == b);
  CHECK(f.c->GroupSize("g") == 1);
  CHECK(f.Heartbeat(a, 2) == E(ErrorCode::UNKNOWN_MEMBER_ID));
}

TEST_CASE("a leader that never sends SyncGroup is removed after the rebalance timeout") {
  Fixture f;
  auto [a, g1] = f.StableSingle();
  std::string b;
  auto jb = f.JoinNew(Fixture::JoinReq(""), &b);
  auto ja = f.Join(Fixture::JoinReq(a));
  REQUIRE(jb->has_value());
  CHECK(f.c->GroupState("g") == "CompletingRebalance");
  auto sb = f.Sync(b, 2);
  // a (the leader) heartbeats but never assigns.
  for (int i = 0; i < 5; ++i) {
    f.clock.Advance(5000);
    CHECK(f.Heartbeat(a, 2) == 0);
    f.c->Poll();
  }
  CHECK(!sb->has_value());
  f.clock.Advance(5000);
  f.c->Poll();
  REQUIRE(sb->has_value());
  CHECK((*sb)->error_code == E(ErrorCode::REBALANCE_IN_PROGRESS));
  CHECK(f.c->GroupSize("g") == 1);
  auto jb2 = f.Join(Fixture::JoinReq(b));
  REQUIRE(jb2->has_value());
  CHECK((*jb2)->leader == b);
}

TEST_CASE("the initial rebalance delay gathers members joining an empty group") {
  Fixture f(/*initial_delay_ms=*/3000);
  std::string a, b;
  auto ja = f.JoinNew(Fixture::JoinReq(""), &a);
  f.clock.Advance(2000);
  f.c->Poll();
  CHECK(!ja->has_value());
  auto jb = f.JoinNew(Fixture::JoinReq(""), &b);
  f.clock.Advance(2000);  // past the first delay, within the one b's arrival started
  f.c->Poll();
  CHECK(!ja->has_value());
  f.clock.Advance(1000);
  f.c->Poll();
  REQUIRE(ja->has_value());
  REQUIRE(jb->has_value());
  CHECK((*ja)->generation_id == 1);
  CHECK((*jb)->generation_id == 1);
  CHECK((*ja)->members.size() == 2);
}

TEST_CASE("LeaveGroup v3 removes a batch of members and rebalances the rest") {
  Fixture f;
  auto [a, g1] = f.StableSingle();
  std::string b, c;
  auto jb = f.JoinNew(Fixture::JoinReq(""), &b);
  auto jc = f.JoinNew(Fixture::JoinReq(""), &c);
  auto ja = f.Join(Fixture::JoinReq(a));
  REQUIRE(jc->has_value());
  f.Sync(b, 2);
  f.Sync(c, 2);
  f.Sync(a, 2, {});
  CHECK(f.c->GroupState("g") == "Stable");

  protocol::LeaveGroupRequest leave;
  leave.group_id = "g";
  leave.members = {{a, std::nullopt}, {c, std::nullopt}, {"ghost", std::nullopt}};
  auto resp = f.c->LeaveGroup(leave, 3);
  CHECK(resp.error_code == 0);
  REQUIRE(resp.members.size() == 3);
  CHECK(resp.members[0].error_code == 0);
  CHECK(resp.members[1].error_code == 0);
  CHECK(resp.members[2].error_code == E(ErrorCode::UNKNOWN_MEMBER_ID));
  CHECK(f.c->GroupSize("g") == 1);
  CHECK(f.c->GroupState("g") == "PreparingRebalance");
  auto jb2 = f.Join(Fixture::JoinReq(b));
  REQUIRE(jb2->has_value());
  CHECK((*jb2)->leader == b);  // the leader left: the survivor leads

  // v0-2: one member, the error at the top.
  protocol::LeaveGroupRequest old;
  old.group_id = "g";
  old.member_id = "ghost";
  CHECK(f.c->LeaveGroup(old, 1).error_code == E(ErrorCode::UNKNOWN_MEMBER_ID));
  old.member_id = b;
  CHECK(f.c->LeaveGroup(old, 1).error_code == 0);
  CHECK(f.c->GroupState("g") == "Empty");
}

TEST_CASE("a static member restarting takes over its identity without a rebalance") {
  Fixture f;
  auto r = Fixture::JoinReq("");
  r.group_instance_id = "instance-1";
  auto j = f.Join(r);  // static members skip MEMBER_ID_REQUIRED
  REQUIRE(j->has_value());
  REQUIRE((*j)->error_code == 0);
  std::string old_id = (*j)->member_id;
  auto s = f.Sync(old_id, 1, {{old_id, "mine"}});
  REQUIRE(s->has_value());
  CHECK(f.c->GroupState("g") == "Stable");

  // The process restarts: same instance id, no member id.
  auto j2 = f.Join(r);
  REQUIRE(j2->has_value());
  CHECK((*j2)->error_code == 0);
  std::string new_id = (*j2)->member_id;
  CHECK(new_id != old_id);
  CHECK((*j2)->generation_id == 1);  // no rebalance
  CHECK(f.c->GroupState("g") == "Stable");
  auto s2 = f.Sync(new_id, 1);
  REQUIRE(s2->has_value());
  CHECK((*s2)->assignment == "mine");
  // The old incarnation is fenced.
  CHECK(f.Heartbeat(old_id, 1, std::string("instance-1")) == E(ErrorCode::FENCED_INSTANCE_ID));
  CHECK(f.Heartbeat(new_id, 1, std::string("instance-1")) == 0);

  // Changed subscriptions do rebalance.
  auto changed = Fixture::JoinReq("", {"range"}, "other");
  changed.group_instance_id = "instance-1";
  auto j3 = f.Join(changed);
  REQUIRE(j3->has_value());
  CHECK((*j3)->generation_id == 2);
}

TEST_CASE("offset commits check membership and generation; simple commits need an empty group") {
  Fixture f;
  // No group yet: a simple commit (generation -1) creates it; a generation is refused.
  CHECK(f.Commit("", -1, "t", 0, 10, "simple") == 0);
  CHECK(f.Committed("t", 0, "simple") == 10);
  CHECK(f.Commit("m", 3, "t", 0, 11, "nogroup") == E(ErrorCode::ILLEGAL_GENERATION));

  auto [a, gen] = f.StableSingle();
  CHECK(f.Commit(a, gen, "t", 0, 5) == 0);
  CHECK(f.Committed("t", 0) == 5);
  CHECK(f.Commit(a, gen + 1, "t", 0, 6) == E(ErrorCode::ILLEGAL_GENERATION));
  CHECK(f.Commit("stranger", gen, "t", 0, 6) == E(ErrorCode::UNKNOWN_MEMBER_ID));
  CHECK(f.Commit("", -1, "t", 0, 6) == E(ErrorCode::UNKNOWN_MEMBER_ID));
  CHECK(f.Committed("t", 0) == 5);
  CHECK(f.Committed("t", 1) == -1);

  // During PreparingRebalance the current generation may still commit (revocation commits).
  std::string b;
  auto jb = f.JoinNew(Fixture::JoinReq(""), &b);
  CHECK(f.Commit(a, gen, "t", 1, 9) == 0);
  auto ja = f.Join(Fixture::JoinReq(a));
  REQUIRE(ja->has_value());
  // CompletingRebalance: commits wait for the assignment.
  CHECK(f.Commit(a, gen + 1, "t", 1, 10) == E(ErrorCode::REBALANCE_IN_PROGRESS));

  // A failed write is reported and not applied.
  f.Sync(a, gen + 1, {});
  f.log.FailNextAppend(Status::IOError("disk gone"));
  CHECK(f.Commit(a, gen + 1, "t", 1, 11) == E(ErrorCode::COORDINATOR_NOT_AVAILABLE));
  CHECK(f.Committed("t", 1) == 9);

  // Null topics (v2+): every committed partition.
  protocol::OffsetFetchRequest all;
  all.group_id = "g";
  auto resp = f.c->FetchOffsets(all, 5);
  REQUIRE(resp.topics.size() == 1);
  CHECK(resp.topics[0].name == "t");
  REQUIRE(resp.topics[0].partitions.size() == 2);
  CHECK(resp.topics[0].partitions[0].committed_offset == 5);
  CHECK(resp.topics[0].partitions[0].committed_leader_epoch == 7);
  CHECK(resp.topics[0].partitions[0].metadata == std::optional<std::string>("md"));
  CHECK(resp.topics[0].partitions[1].committed_offset == 9);
}

TEST_CASE("offsets and groups are written as Kafka's records and come back after a restart") {
  Fixture f;
  auto [a, gen] = f.StableSingle();
  CHECK(f.Commit(a, gen, "t", 2, 42) == 0);
  bool saw_group = false, saw_offset = false;
  for (const StoredRecord& r : f.log.records()) {
    auto k = protocol::DecodeConsumerOffsetsKey(r.key);
    REQUIRE(k.ok());
    REQUIRE(r.value.has_value());
    if (k->kind == protocol::ConsumerOffsetsKey::Kind::kGroupMetadata) {
      auto v = protocol::DecodeGroupMetadataValue(*r.value);
      REQUIRE(v.ok());
      CHECK(v->generation == gen);
      REQUIRE(v->members.size() == 1);
      CHECK(v->members[0].member_id == a);
      CHECK(v->members[0].assignment == "A");
      CHECK(v->members[0].subscription == "md:range");
      saw_group = true;
    } else {
      CHECK(k->offset == protocol::OffsetCommitKey{"g", "t", 2});
      auto v = protocol::DecodeOffsetCommitValue(*r.value);
      REQUIRE(v.ok());
      CHECK(v->offset == 42);
      CHECK(v->commit_timestamp == f.clock.now);
      saw_offset = true;
    }
  }
  CHECK(saw_group);
  CHECK(saw_offset);

  f.Restart();
  CHECK(f.Committed("t", 2) == 42);
  CHECK(f.c->GroupState("g") == "Stable");
  CHECK(f.c->GroupGeneration("g") == gen);
  // The member is back and must heartbeat within its session timeout.
  CHECK(f.Heartbeat(a, gen) == 0);
  auto s = f.Sync(a, gen);
  REQUIRE(s->has_value());
  CHECK((*s)->assignment == "A");
  f.clock.Advance(10001);
  f.c->Poll();
  CHECK(f.c->GroupSize("g") == 0);
  CHECK(f.c->GroupState("g") == "Empty");
  CHECK(f.Committed("t", 2) == 42);
}

TEST_CASE("offsets of an empty group expire after the retention and the group goes") {
  Fixture f;
  f.options.offsets_retention_ms = 60000;
  f.Restart();
  auto [a, gen] = f.StableSingle();
  CHECK(f.Commit(a, gen, "t", 0, 3) == 0);
  CHECK(f.Commit("", -1, "t", 0, 8, "standalone") == 0);
  f.clock.Advance(120000);
  // A group with members keeps its offsets however old.
  CHECK(f.Heartbeat(a, gen) == 0);
  CHECK(f.c->ExpireOffsets() == 1);  // the standalone commit
  CHECK(f.Committed("t", 0, "standalone") == -1);
  CHECK(f.Committed("t", 0) == 3);

  protocol::LeaveGroupRequest leave;
  leave.group_id = "g";
  leave.member_id = a;
  CHECK(f.c->LeaveGroup(leave, 2).error_code == 0);
  CHECK(f.c->GroupState("g") == "Empty");
  f.clock.Advance(59000);
  CHECK(f.c->ExpireOffsets() == 0);  // counted from when the group became empty
  f.clock.Advance(1000);
  CHECK(f.c->ExpireOffsets() == 1);
  CHECK(f.Committed("t", 0) == -1);
  CHECK(f.c->GroupState("g") == "Dead");
  CHECK(f.c->ListGroups().groups.empty());

  // Tombstones made it to the log: after a restart nothing comes back.
  const auto recs = f.log.records();
  REQUIRE(recs.size() >= 2);
  CHECK(!recs.back().value.has_value());
  f.Restart();
  CHECK(f.Committed("t", 0) == -1);
  CHECK(f.c->ListGroups().groups.empty());
}

protocol::DeleteGroupsResponse DeleteGroups(Fixture& f, std::vector<std::string> ids) {
  protocol::DeleteGroupsRequest r;
  r.groups_names = std::move(ids);
  auto resp = f.c->DeleteGroups(r);
  REQUIRE(resp.results.size() == r.groups_names.size());
  for (size_t i = 0; i < r.groups_names.size(); ++i) {
    CHECK(resp.results[i].group_id == r.groups_names[i]);
  }
  return resp;
}

TEST_CASE("DeleteGroups waits for an empty group and writes tombstones that outlive a restart") {
  Fixture f;
  auto [a, gen] = f.StableSingle();
  CHECK(f.Commit(a, gen, "t", 0, 5) == 0);
  CHECK(f.Commit(a, gen, "t", 1, 6) == 0);
  CHECK(f.Commit("", -1, "u", 0, 7, "standalone") == 0);

  CHECK(DeleteGroups(f, {"g"}).results[0].error_code == E(ErrorCode::NON_EMPTY_GROUP));
  CHECK(f.Committed("t", 0) == 5);
  protocol::LeaveGroupRequest leave;
  leave.group_id = "g";
  leave.member_id = a;
  REQUIRE(f.c->LeaveGroup(leave, 2).error_code == 0);
  REQUIRE(f.c->GroupState("g") == "Empty");

  // A failed write leaves the group as it was.
  f.log.FailNextAppend(Status::IOError("disk gone"));
  CHECK(DeleteGroups(f, {"g"}).results[0].error_code == E(ErrorCode::COORDINATOR_NOT_AVAILABLE));
  CHECK(f.Committed("t", 0) == 5);
  CHECK(f.c->GroupState("g") == "Empty");

  size_t before = f.log.records().size();
  auto resp = DeleteGroups(f, {"g", "standalone", "missing", ""});
  CHECK(resp.results[0].error_code == 0);
  CHECK(resp.results[1].error_code == 0);
  CHECK(resp.results[2].error_code == E(ErrorCode::GROUP_ID_NOT_FOUND));
  CHECK(resp.results[3].error_code == E(ErrorCode::INVALID_GROUP_ID));
  CHECK(f.Committed("t", 0) == -1);
  CHECK(f.Committed("t", 1) == -1);
  CHECK(f.Committed("u", 0, "standalone") == -1);
  CHECK(f.c->GroupState("g") == "Dead");
  CHECK(f.c->ListGroups().groups.empty());
  CHECK(DeleteGroups(f, {"g"}).results[0].error_code == E(ErrorCode::GROUP_ID_NOT_FOUND));

  // Kafka's keys with no value: both offsets and the metadata of g, the offset and the
  // metadata of standalone.
  auto recs = f.log.records();
  REQUIRE(recs.size() == before + 5);
  std::set<std::string> tombstoned;
  for (size_t i = before; i < recs.size(); ++i) {
    CHECK_FALSE(recs[i].value.has_value());
    auto k = protocol::DecodeConsumerOffsetsKey(recs[i].key);
    REQUIRE(k.ok());
    if (k->kind == protocol::ConsumerOffsetsKey::Kind::kGroupMetadata) {
      tombstoned.insert("group " + k->metadata.group);
    } else {
      tombstoned.insert(k->offset.group + " " + k->offset.topic + "/" +
                        std::to_string(k->offset.partition));
    }
  }
  CHECK(tombstoned == std::set<std::string>{"group g", "group standalone", "g t/0", "g t/1",
                                            "standalone u/0"});

  f.Restart();
  CHECK(f.c->ListGroups().groups.empty());
  CHECK(f.Committed("t", 0) == -1);
  CHECK(f.c->GroupState("g") == "Dead");

  // The id can be used again from scratch, and that survives a restart too.
  CHECK(f.Commit("", -1, "t", 0, 1) == 0);
  f.Restart();
  CHECK(f.Committed("t", 0) == 1);
  CHECK(f.Committed("t", 1) == -1);
}

TEST_CASE("DeleteGroups refuses a group with members joining and a coordinator shutting down") {
  Fixture f;
  auto first = f.Join(Fixture::JoinReq(""));
  REQUIRE(first->has_value());
  REQUIRE((*first)->error_code == E(ErrorCode::MEMBER_ID_REQUIRED));
  // Only a pending member id so far, but a consumer is on its way in.
  CHECK(DeleteGroups(f, {"g"}).results[0].error_code == E(ErrorCode::NON_EMPTY_GROUP));
  CHECK(f.Commit("", -1, "t", 0, 1, "idle") == 0);
  f.c->Shutdown();
  CHECK(DeleteGroups(f, {"idle"}).results[0].error_code ==
        E(ErrorCode::COORDINATOR_NOT_AVAILABLE));
}

TEST_CASE("DescribeGroups and ListGroups show members, state and assignment") {
  Fixture f;
  auto [a, gen] = f.StableSingle();
  CHECK(f.Commit("", -1, "t", 0, 1, "standalone") == 0);
  protocol::DescribeGroupsRequest d;
  d.groups = {"g", "missing"};
  auto resp = f.c->DescribeGroups(d, 4);
  REQUIRE(resp.groups.size() == 2);
  const auto& g = resp.groups[0];
  CHECK(g.group_state == "Stable");
  CHECK(g.protocol_type == "consumer");
  CHECK(g.protocol_data == "range");
  REQUIRE(g.members.size() == 1);
  CHECK(g.members[0].member_id == a);
  CHECK(g.members[0].client_id == "client");
  CHECK(g.members[0].client_host == "/127.0.0.1");
  CHECK(g.members[0].member_metadata == "md:range");
  CHECK(g.members[0].member_assignment == "A");
  CHECK(resp.groups[1].group_state == "Dead");
  CHECK(resp.groups[1].error_code == 0);
  auto list = f.c->ListGroups();
  REQUIRE(list.groups.size() == 2);
  CHECK(list.groups[0].group_id == "g");
  CHECK(list.groups[0].protocol_type == "consumer");
  CHECK(list.groups[1].group_id == "standalone");
  CHECK(list.groups[1].protocol_type.empty());
}

TEST_CASE("shutting down answers waiting joins and syncs so their connections can close") {
  Fixture f;
  auto [a, gen] = f.StableSingle();
  std::string b;
  auto jb = f.JoinNew(Fixture::JoinReq(""), &b);
  CHECK(!jb->has_value());
  f.c->Shutdown();
  REQUIRE(jb->has_value());
  CHECK((*jb)->error_code == E(ErrorCode::NOT_COORDINATOR));
  auto late = f.Join(Fixture::JoinReq(""));
  REQUIRE(late->has_value());
  CHECK((*late)->error_code == E(ErrorCode::COORDINATOR_NOT_AVAILABLE));
}


// ---- ownership in a cluster: the groups of the __consumer_offsets partitions this node leads

// A memory log of four partitions whose partition replay can be interrupted by `during_replay`
// (what happens to requests while a new leader loads its groups).
class HookedLog : public OffsetLog {
 public:
  Status Append(const std::string& group, const std::vector<StoredRecord>& records,
                AppendedAt* at = nullptr) override {
    return mem.Append(group, records, at);
  }
  Status Replay(const ReplayFn& fn) override { return mem.Replay(fn); }
  Status ReplayPartition(int32_t partition, const ReplayFn& fn) override {
    ++replays;
    if (during_replay) during_replay(partition);
    return mem.ReplayPartition(partition, fn);
  }
  MemoryOffsetLog mem{4};
  std::function<void(int32_t)> during_replay;
  int replays = 0;
};

// "g" hashes to 103 and "h" to 104 (Java's String.hashCode): partitions 3 and 0 of four.
constexpr int32_t kPartitionOfG = 3;
constexpr int32_t kPartitionOfH = 0;

TEST_CASE("a group's partition is Kafka's: abs(String.hashCode) modulo the partition count") {
  CHECK(protocol::OffsetsPartitionFor("g", 4) == kPartitionOfG);
  CHECK(protocol::OffsetsPartitionFor("h", 4) == kPartitionOfH);
  // Negative hashes: Kafka's Utils.abs is Math.abs with MIN_VALUE mapped to 0 (not a mask of
  // the sign bit, which would put "interop-resume" in partition 47 of 50).
  CHECK(protocol::JavaStringHashCode("interop-resume") == -190298051);
  CHECK(protocol::OffsetsPartitionFor("interop-resume", 50) == 1);
  CHECK(protocol::JavaStringHashCode("cluster-groups") == -734272249);
  CHECK(protocol::OffsetsPartitionFor("cluster-groups", 50) == 49);
  CHECK(protocol::JavaStringHashCode("test-group") == 627841412);
  CHECK(protocol::OffsetsPartitionFor("test-group", 50) == 12);
  CHECK(protocol::OffsetsPartitionFor("consumer-group-with-a-long-name", 50) == 48);
}

TEST_CASE("in a cluster the coordinator serves only the groups of the partitions it loaded") {
  Fixture f;
  HookedLog log;
  f.c = std::make_unique<GroupCoordinator>(f.options, &log);
  f.c->UseOwnedPartitions(4);
  CHECK(f.Commit("", -1, "t", 0, 5, "g") == E(ErrorCode::NOT_COORDINATOR));
  auto j = f.Join(Fixture::JoinReq(""));
  REQUIRE(j->has_value());
  CHECK((*j)->error_code == E(ErrorCode::NOT_COORDINATOR));
  CHECK(f.Heartbeat("m", 1) == E(ErrorCode::NOT_COORDINATOR));

  REQUIRE(f.c->LoadPartition(kPartitionOfG).ok());
  CHECK(f.c->OwnedPartitions() == std::vector<int32_t>{kPartitionOfG});
  CHECK(f.Commit("", -1, "t", 0, 5, "g") == 0);
  CHECK(f.Committed("t", 0, "g") == 5);
  CHECK(f.Commit("", -1, "t", 0, 5, "h") == E(ErrorCode::NOT_COORDINATOR));
  protocol::DescribeGroupsRequest d;
  d.groups = {"g", "h"};
  auto described = f.c->DescribeGroups(d, 4);
  CHECK(described.groups[0].error_code == 0);
  CHECK(described.groups[1].error_code == E(ErrorCode::NOT_COORDINATOR));
}

TEST_CASE("a new leader loads its partition's groups and an old one unloads them") {
  Fixture f;
  HookedLog log;
  // The first coordinator of partition 3 builds a stable group with offsets; partition 0
  // holds another group's offsets.
  f.c = std::make_unique<GroupCoordinator>(f.options, &log);
  f.c->UseOwnedPartitions(4);
  REQUIRE(f.c->LoadPartition(kPartitionOfG).ok());
  REQUIRE(f.c->LoadPartition(kPartitionOfH).ok());
  auto [member, gen] = f.StableSingle();
  CHECK(f.Commit(member, gen, "t", 1, 42) == 0);
  CHECK(f.Commit("", -1, "t", 1, 7, "h") == 0);

  // It stops leading partition 3: a waiting join and every later request of "g" are sent
  // to look for the coordinator again; "h" is still served.
  std::string newcomer;
  auto waiting = f.JoinNew(Fixture::JoinReq(""), &newcomer);
  CHECK(!waiting->has_value());
  f.c->UnloadPartition(kPartitionOfG);
  REQUIRE(waiting->has_value());
  CHECK((*waiting)->error_code == E(ErrorCode::NOT_COORDINATOR));
  CHECK(f.Heartbeat(member, gen) == E(ErrorCode::NOT_COORDINATOR));
  CHECK(f.Commit(member, gen, "t", 1, 43) == E(ErrorCode::NOT_COORDINATOR));
  protocol::OffsetFetchRequest fetch;
  fetch.group_id = "g";
  fetch.topics.emplace();
  fetch.topics->push_back({"t", {1}});
  auto fr = f.c->FetchOffsets(fetch, 5);
  CHECK(fr.error_code == E(ErrorCode::NOT_COORDINATOR));
  CHECK(fr.topics.at(0).partitions.at(0).error_code == E(ErrorCode::NOT_COORDINATOR));
  CHECK(f.Committed("t", 1, "h") == 7);
  CHECK(f.c->OwnedPartitions() == std::vector<int32_t>{kPartitionOfH});

  // Another node's coordinator, given the partition's records, serves the group as stored:
  // the member keeps its generation and the committed offset is there.
  GroupCoordinator other(f.options, &log);
  other.UseOwnedPartitions(4);
  REQUIRE(other.LoadPartition(kPartitionOfG).ok());
  CHECK(other.GroupState("g") == "Stable");
  CHECK(other.GroupGeneration("g") == gen);
  protocol::HeartbeatRequest hb;
  hb.group_id = "g";
  hb.generation_id = gen;
  hb.member_id = member;
  CHECK(other.Heartbeat(hb, 3).error_code == 0);
  auto fetched = other.FetchOffsets(fetch, 5);
  CHECK(fetched.error_code == 0);
  CHECK(fetched.topics.at(0).partitions.at(0).committed_offset == 42);
  // Only partition 3 was read: "h" is not this coordinator's.
  CHECK(other.GroupState("h") == "Dead");
}

TEST_CASE("while a partition loads, its groups are told COORDINATOR_LOAD_IN_PROGRESS") {
  Fixture f;
  HookedLog log;
  f.c = std::make_unique<GroupCoordinator>(f.options, &log);
  f.c->UseOwnedPartitions(4);
  REQUIRE(f.c->LoadPartition(kPartitionOfH).ok());
  int16_t commit_during = -1, list_during = -1, other_during = -1;
  log.during_replay = [&](int32_t p) {
    if (p != kPartitionOfG) return;
    commit_during = f.Commit("", -1, "t", 0, 1, "g");
    list_during = f.c->ListGroups().error_code;
    other_during = f.Commit("", -1, "t", 0, 1, "h");
  };
  REQUIRE(f.c->LoadPartition(kPartitionOfG).ok());
  CHECK(commit_during == E(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS));
  CHECK(list_during == E(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS));
  CHECK(other_during == 0);  // the loaded partitions' groups are served meanwhile
  CHECK(f.Commit("", -1, "t", 0, 2, "g") == 0);
  CHECK(f.c->ListGroups().error_code == 0);
}

TEST_CASE("leadership lost while a partition loads wins: the replayed groups are dropped") {
  Fixture f;
  HookedLog log;
  {
    GroupCoordinator first(f.options, &log);
    first.UseOwnedPartitions(4);
    REQUIRE(first.LoadPartition(kPartitionOfG).ok());
    protocol::OffsetCommitRequest r;
    r.group_id = "g";
    r.generation_id_or_member_epoch = -1;
    r.topics.push_back({"t", {{0, 9, -1, -1, std::string()}}});
    REQUIRE(first.CommitOffsets(r, 7).topics[0].partitions[0].error_code == 0);
  }
  f.c = std::make_unique<GroupCoordinator>(f.options, &log);
  f.c->UseOwnedPartitions(4);
  log.during_replay = [&](int32_t) { f.c->UnloadPartition(kPartitionOfG); };
  REQUIRE(f.c->LoadPartition(kPartitionOfG).ok());
  CHECK(f.c->OwnedPartitions().empty());
  CHECK(f.Commit("", -1, "t", 0, 10, "g") == E(ErrorCode::NOT_COORDINATOR));
  // Loaded again later (leadership back), the stored offset is there.
  log.during_replay = nullptr;
  REQUIRE(f.c->LoadPartition(kPartitionOfG).ok());
  CHECK(f.Committed("t", 0, "g") == 9);
}

TEST_CASE("another partition count moves every group: waiting members are sent away") {
  Fixture f;
  HookedLog log;
  f.c = std::make_unique<GroupCoordinator>(f.options, &log);
  f.c->UseOwnedPartitions(4);
  REQUIRE(f.c->LoadPartition(kPartitionOfG).ok());
  auto [member, gen] = f.StableSingle();
  std::string newcomer;
  auto waiting = f.JoinNew(Fixture::JoinReq(""), &newcomer);
  CHECK(!waiting->has_value());
  f.c->UseOwnedPartitions(8);
  REQUIRE(waiting->has_value());
  CHECK((*waiting)->error_code == E(ErrorCode::NOT_COORDINATOR));
  CHECK(f.c->OwnedPartitions().empty());
  CHECK(f.Heartbeat(member, gen) == E(ErrorCode::NOT_COORDINATOR));
}

TEST_CASE("a commit says where it was written, so its answer can wait for the high watermark") {
  Fixture f;
  HookedLog log;
  f.c = std::make_unique<GroupCoordinator>(f.options, &log);
  f.c->UseOwnedPartitions(4);
  REQUIRE(f.c->LoadPartition(kPartitionOfG).ok());
  protocol::OffsetCommitRequest r;
  r.group_id = "g";
  r.generation_id_or_member_epoch = -1;
  r.topics.push_back({"t", {{0, 9, -1, -1, std::string()}}});
  AppendedAt at;
  REQUIRE(f.c->CommitOffsets(r, 7, &at).topics[0].partitions[0].error_code == 0);
  CHECK(at.partition == kPartitionOfG);
  // Nothing written (a refused commit): nothing to wait for.
  AppendedAt none;
  r.group_id = "h";
  CHECK(f.c->CommitOffsets(r, 7, &none).topics[0].partitions[0].error_code ==
        E(ErrorCode::NOT_COORDINATOR));
  CHECK(none.partition == -1);
}

}  // namespace
}  // namespace silt::broker
