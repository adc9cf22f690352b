// The group coordinator's state machine (see group_coordinator.h for the protocol it follows).
#include "broker/group_coordinator.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <random>
#include <set>
#include <string_view>

#include "base/clock.h"
#include "broker/logging.h"
#include "protocol/consumer_offsets.h"
#include "protocol/errors.h"

namespace silt::broker {

using protocol::ErrorCode;

namespace {

enum class State { kEmpty, kPreparingRebalance, kCompletingRebalance, kStable, kDead };

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

const char* StateName(State s) {
  switch (s) {
    case State::kEmpty: return "Empty";
    case State::kPreparingRebalance: return "PreparingRebalance";
    case State::kCompletingRebalance: return "CompletingRebalance";
    case State::kStable: return "Stable";
    case State::kDead: return "Dead";
  }
  return "Dead";
}

int16_t Err(ErrorCode c) { return protocol::ToWire(c); }

int64_t Now() { return NowMs().value(); }

constexpr int64_t kNoDeadline = INT64_MAX;

}  // namespace

struct GroupCoordinator::Member {
  std::string id;
  std::optional<std::string> instance_id;  // group.instance.id (static membership)
  std::string client_id;
  std::string client_host;
  int32_t session_timeout_ms = 0;
  int32_t rebalance_timeout_ms = 0;
  std::string protocol_type;
  std::vector<protocol::JoinGroupRequest::Protocol> protocols;  // in preference order
  std::string assignment;
  JoinCallback awaiting_join;  // a JoinGroup waiting for the rebalance to complete
  SyncCallback awaiting_sync;  // a SyncGroup waiting for the leader's assignments
  int64_t heartbeat_deadline = kNoDeadline;

  bool SameProtocols(const std::vector<protocol::JoinGroupRequest::Protocol>& p) const {
    return protocols == p;
  }
  const std::string* MetadataFor(const std::string& protocol) const {
    for (const auto& p : protocols) {
      if (p.name == protocol) return &p.metadata;
    }
    return nullptr;
  }
  // Members waiting on the coordinator are kept alive: the rebalance decides their fate.
  bool KeptAlive() const { return awaiting_join != nullptr || awaiting_sync != nullptr; }
};

struct GroupCoordinator::Group {
  std::string id;
  State state = State::kEmpty;
  std::string protocol_type;
  std::optional<std::string> protocol;
  int32_t generation = 0;
  std::string leader;
  int64_t state_timestamp = -1;
  std::vector<Member> members;                      // in join order; the first may lead
  std::map<std::string, int64_t> pending_members;   // ids handed out by MEMBER_ID_REQUIRED
  std::map<std::string, std::string> static_members;  // group.instance.id -> member id
  int64_t rebalance_deadline = kNoDeadline;
  bool initial_delay = false;          // the rebalance is the first after Empty
  int64_t initial_delay_limit = 0;     // when the initial delay must end at the latest
  bool metadata_stored = false;        // a GroupMetadata record exists in the log
  std::map<std::pair<std::string, int32_t>, protocol::OffsetCommitValue> offsets;
  // Commits written to the group's __consumer_offsets partition but not yet committed there
  // (Kafka's pending offset commits), by the last offset of their batch. OffsetFetch does not
  // see them: a failover could still erase them. PublishCommitted moves them into `offsets`,
  // in log order, once the partition's high watermark passes them.
  std::map<int64_t, std::vector<std::pair<std::pair<std::string, int32_t>,
                                          protocol::OffsetCommitValue>>>
      pending_commits;

  Member* Find(const std::string& member_id) {
    for (Member& m : members) {
      if (m.id == member_id) return &m;
    }
    return nullptr;
  }
  bool AllJoined() const {
    if (!pending_members.empty()) return false;
    for (const Member& m : members) {
      if (!m.awaiting_join) return false;
    }
    return true;
  }
  // Whether every member (and the newcomer) could agree on one of `protocols`.
  bool Supports(const std::string& type,
                const std::vector<protocol::JoinGroupRequest::Protocol>& protocols) const {
    if (members.empty()) return !type.empty() && !protocols.empty();
    if (type != protocol_type) return false;
    for (const auto& p : protocols) {
      bool all = true;
      for (const Member& m : members) {
        if (!m.MetadataFor(p.name)) {
          all = false;
          break;
        }
      }
      if (all) return true;
    }
    return false;
  }
  int32_t MaxRebalanceTimeout() const {
    int32_t t = 0;
    for (const Member& m : members) t = std::max(t, m.rebalance_timeout_ms);
    return t;
  }
  // The protocol that the most members name first among those all support; ties go to the
  // leader's (or the earliest member's) preference.
  std::string SelectProtocol() const {
    std::vector<std::string> candidates;
    for (const auto& p : members.front().protocols) {
      bool all = true;
      for (const Member& m : members) all = all && m.MetadataFor(p.name) != nullptr;
      if (all) candidates.push_back(p.name);
    }
    std::map<std::string, int> votes;
    for (const Member& m : members) {
      for (const auto& p : m.protocols) {
        if (std::find(candidates.begin(), candidates.end(), p.name) != candidates.end()) {
          ++votes[p.name];
          break;
        }
      }
    }
    std::string best;
    int best_votes = -1;
    for (const std::string& c : candidates) {
      if (votes[c] > best_votes) {
        best = c;
        best_votes = votes[c];
      }
    }
    return best;
  }
};

// Holds mu_; when it ends, runs the queued callbacks with mu_ released and wakes the timer.
class GroupCoordinator::Scope {
 public:
  explicit Scope(GroupCoordinator* c) : c_(c), lock_(c->mu_) {}
  ~Scope() {
    std::vector<std::function<void()>> calls;
    calls.swap(c_->calls_);
    lock_.unlock();
    c_->cv_.notify_all();
    for (auto& f : calls) f();
  }

 private:
  GroupCoordinator* c_;
  std::unique_lock<std::mutex> lock_;
};

GroupCoordinator::GroupCoordinator(const GroupCoordinatorOptions& options, OffsetLog* log)
    : options_(options), log_(log) {}

GroupCoordinator::~GroupCoordinator() { Shutdown(); }

// ---- lifecycle --------------------------------------------------------------------------

Status GroupCoordinator::Load() {
  Scope scope(this);
  groups_.clear();
  Status s = log_->Replay([this](std::string_view key, std::optional<std::string_view> value) {
    ApplyStoredRecord(key, value);
  });
  AfterReplay(std::nullopt);
  next_expiry_check_ = Now() + options_.offsets_retention_check_interval_ms;
  if (!groups_.empty()) {
    LogInfo("group coordinator: loaded " + std::to_string(groups_.size()) + " group(s)");
  }
  return s;
}

void GroupCoordinator::AfterReplay(std::optional<int32_t> partition) {
  int64_t now = Now();
  for (auto it = groups_.begin(); it != groups_.end();) {
    Group& g = *it->second;
    if (partition && protocol::OffsetsPartitionFor(g.id, owned_count_) != *partition) {
      ++it;
      continue;
    }
    // Groups left with neither metadata nor offsets were deleted.
    if (!g.metadata_stored && g.offsets.empty()) {
      it = groups_.erase(it);
      continue;
    }
    for (Member& m : g.members) m.heartbeat_deadline = now + m.session_timeout_ms;
    ++it;
  }
}

// ---- ownership --------------------------------------------------------------------------

void GroupCoordinator::UseOwnedPartitions(int32_t partition_count) {
  Scope scope(this);
  owned_count_ = std::max(partition_count, 1);
  owned_.clear();
  // Groups now live elsewhere (another partition count moves them): waiting members look
  // their coordinator up again.
  for (auto& [id, g] : groups_) AnswerWaiting(*g, Err(ErrorCode::NOT_COORDINATOR));
  groups_.clear();
  next_expiry_check_ = Now() + options_.offsets_retention_check_interval_ms;
}

int16_t GroupCoordinator::OwnershipError(const std::string& group) {
  if (owned_count_ == 0) return 0;
  auto it = owned_.find(protocol::OffsetsPartitionFor(group, owned_count_));
  if (it == owned_.end()) return Err(ErrorCode::NOT_COORDINATOR);
  if (it->second.loading) return Err(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS);
  return 0;
}

void GroupCoordinator::AnswerSync(Member& m, const protocol::SyncGroupResponse& r) {
  if (!m.awaiting_sync) return;
  calls_.push_back([cb = std::move(m.awaiting_sync), r] { cb(r); });
  m.awaiting_sync = nullptr;
}

void GroupCoordinator::AnswerSync(Member& m, int16_t error) {
  protocol::SyncGroupResponse r;
  r.error_code = error;
  AnswerSync(m, r);
}

void GroupCoordinator::AnswerWaiting(Group& g, int16_t error) {
  for (Member& m : g.members) {
    if (m.awaiting_join) AnswerJoin(g, m, error);
    AnswerSync(m, error);
  }
}

Status GroupCoordinator::LoadPartition(int32_t partition) {
  uint64_t id;
  {
    Scope scope(this);
    if (stopping_) return Status::Busy("the group coordinator is shutting down");
    if (owned_count_ == 0) return Status::Internal("LoadPartition without UseOwnedPartitions");
    id = ++load_seq_;
    owned_[partition] = OwnedPartition{id, true};
    // A reload (a new leader epoch): what was served before is replaced by what the log says.
    for (auto it = groups_.begin(); it != groups_.end();) {
      if (protocol::OffsetsPartitionFor(it->first, owned_count_) == partition) {
        AnswerWaiting(*it->second, Err(ErrorCode::NOT_COORDINATOR));
        it = groups_.erase(it);
      } else {
        ++it;
      }
    }
  }
  // Read without the lock: the other partitions' groups are served meanwhile.
  std::vector<StoredRecord> records;
  Status s = log_->ReplayPartition(partition, [&records](std::string_view key,
                                                         std::optional<std::string_view> value) {
    records.push_back({std::string(key),
                       value ? std::optional<std::string>(std::string(*value)) : std::nullopt});
  });
  Scope scope(this);
  auto it = owned_.find(partition);
  if (it == owned_.end() || it->second.load_id != id) return Status::OK();  // overtaken
  if (!s.ok()) {
    owned_.erase(it);
    return s.WithContext("loading the groups of __consumer_offsets-" + std::to_string(partition));
  }
  for (const StoredRecord& r : records) {
    ApplyStoredRecord(r.key, r.value ? std::optional<std::string_view>(*r.value) : std::nullopt);
  }
  AfterReplay(partition);
  it->second.loading = false;
  size_t n = 0;
  for (const auto& [gid, g] : groups_) {
    if (protocol::OffsetsPartitionFor(gid, owned_count_) == partition) ++n;
  }
  LogInfo("group coordinator: now coordinating __consumer_offsets-" + std::to_string(partition) +
          " (" + std::to_string(n) + " group(s) loaded from " + std::to_string(records.size()) +
          " record(s))");
  return Status::OK();
}

void GroupCoordinator::UnloadPartition(int32_t partition) {
  Scope scope(this);
  if (owned_.erase(partition) == 0) return;
  size_t n = 0;
  for (auto it = groups_.begin(); it != groups_.end();) {
    if (protocol::OffsetsPartitionFor(it->first, owned_count_) == partition) {
      AnswerWaiting(*it->second, Err(ErrorCode::NOT_COORDINATOR));
      it = groups_.erase(it);
      ++n;
    } else {
      ++it;
    }
  }
  LogInfo("group coordinator: no longer coordinating __consumer_offsets-" +
          std::to_string(partition) + " (" + std::to_string(n) + " group(s) unloaded)");
}

std::vector<int32_t> GroupCoordinator::OwnedPartitions() {
  Scope scope(this);
  std::vector<int32_t> out;
  for (const auto& [p, o] : owned_) out.push_back(p);
  return out;
}

void GroupCoordinator::ApplyStoredRecord(std::string_view key,
                                         std::optional<std::string_view> value) {
  auto k = protocol::DecodeConsumerOffsetsKey(key);
  if (!k.ok()) {
    LogWarn("__consumer_offsets: skipping a record: " + k.status().ToString());
    return;
  }
  if (k->kind == protocol::ConsumerOffsetsKey::Kind::kOffsetCommit) {
    Group& g = GetOrCreateGroup(k->offset.group);
    auto tp = std::make_pair(k->offset.topic, k->offset.partition);
    if (!value) {
      g.offsets.erase(tp);
      return;
    }
    auto v = protocol::DecodeOffsetCommitValue(*value);
    if (!v.ok()) {
      LogWarn("__consumer_offsets: skipping an offset of group " + k->offset.group + ": " +
              v.status().ToString());
      return;
    }
    g.offsets[tp] = *v;
  } else if (k->kind == protocol::ConsumerOffsetsKey::Kind::kGroupMetadata) {
    Group& g = GetOrCreateGroup(k->metadata.group);
    g.members.clear();
    g.static_members.clear();
    if (!value) {
      g.metadata_stored = false;
      g.state = State::kEmpty;
      g.protocol_type.clear();
      g.protocol.reset();
      g.leader.clear();
      g.generation = 0;
      return;
    }
    auto v = protocol::DecodeGroupMetadataValue(*value);
    if (!v.ok()) {
      LogWarn("__consumer_offsets: skipping the metadata of group " + k->metadata.group + ": " +
              v.status().ToString());
      return;
    }
    g.metadata_stored = true;
    g.protocol_type = v->protocol_type;
    g.generation = v->generation;
    g.protocol = v->protocol;
    g.leader = v->leader.value_or("");
    g.state_timestamp = v->current_state_timestamp;
    for (const auto& sm : v->members) {
      Member m;
      m.id = sm.member_id;
      m.instance_id = sm.group_instance_id;
      m.client_id = sm.client_id;
      m.client_host = sm.client_host;
      m.session_timeout_ms = sm.session_timeout;
      m.rebalance_timeout_ms = sm.rebalance_timeout >= 0 ? sm.rebalance_timeout : sm.session_timeout;
      m.protocol_type = v->protocol_type;
      if (v->protocol) m.protocols.push_back({*v->protocol, sm.subscription});
      m.assignment = sm.assignment;
      if (m.instance_id) g.static_members[*m.instance_id] = m.id;
      g.members.push_back(std::move(m));
    }
    g.state = g.members.empty() || !g.protocol ? State::kEmpty : State::kStable;
    if (g.state == State::kEmpty) g.members.clear();
  }
}

void GroupCoordinator::Start() {
  if (!options_.run_timer_thread || timer_.joinable()) return;
  timer_ = std::thread([this] { TimerLoop(); });
}

void GroupCoordinator::Shutdown() {
  {
    Scope scope(this);
    if (!stopping_) {
      stopping_ = true;
      for (auto& [id, g] : groups_) AnswerWaiting(*g, Err(ErrorCode::NOT_COORDINATOR));
    }
  }
  if (timer_.joinable()) timer_.join();
}

void GroupCoordinator::PrepareStorageSoon() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (prepared_ || prepare_requested_ || !timer_.joinable()) return;
    prepare_requested_ = true;
  }
  cv_.notify_all();
}

void GroupCoordinator::TimerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (prepare_requested_ && !prepared_) {
      lock.unlock();
      Status s = log_->Prepare();
      lock.lock();
      // A failure (in a cluster: too few brokers up for the topic's replication factor) is
      // tried again at the next request for it; said once, not at every FindCoordinator.
      if (!s.ok() && !prepare_failed_) {
        LogWarn("group coordinator: preparing the offsets log: " + s.ToString());
      }
      prepare_failed_ = !s.ok();
      prepared_ = s.ok();
      prepare_requested_ = false;
      continue;
    }
    int64_t deadline = NextDeadline();
    int64_t wait = deadline == kNoDeadline ? 60000 : std::max<int64_t>(0, deadline - Now());
    if (wait > 0) {
      cv_.wait_for(lock, std::chrono::milliseconds(std::min<int64_t>(wait, 60000)));
      if (stopping_) break;
      if (prepare_requested_ && !prepared_) continue;
      if (NextDeadline() > Now()) continue;
    }
    lock.unlock();
    Poll();
    lock.lock();
  }
}

int64_t GroupCoordinator::NextDeadline() {
  int64_t d = next_expiry_check_ > 0 ? next_expiry_check_ : kNoDeadline;
  for (auto& [id, g] : groups_) {
    if (g->state == State::kPreparingRebalance || g->state == State::kCompletingRebalance) {
      d = std::min(d, g->rebalance_deadline);
    }
    for (auto& [pid, pd] : g->pending_members) d = std::min(d, pd);
    for (const Member& m : g->members) {
      if (!m.KeptAlive()) d = std::min(d, m.heartbeat_deadline);
    }
  }
  return d;
}

void GroupCoordinator::Poll() {
  bool expire = false;
  {
    Scope scope(this);
    if (stopping_) return;
    int64_t now = Now();
    std::vector<std::string> ids;
    for (auto& [id, g] : groups_) ids.push_back(id);
    for (const std::string& id : ids) {
      Group* g = FindGroup(id);
      if (g == nullptr) continue;
      bool pending_expired = false;
      for (auto it = g->pending_members.begin(); it != g->pending_members.end();) {
        if (it->second <= now) {
          it = g->pending_members.erase(it);
          pending_expired = true;
        } else {
          ++it;
        }
      }
      std::vector<std::string> expired;
      for (const Member& m : g->members) {
        if (!m.KeptAlive() && m.heartbeat_deadline <= now) expired.push_back(m.id);
      }
      for (const std::string& m : expired) {
        RemoveMember(*g, m, "session timeout expired for member " + m);
      }
      if (g->state == State::kCompletingRebalance && g->rebalance_deadline <= now) {
        // Members that never sent SyncGroup (a leader that never assigns, above all) go, so
        // the others are not kept waiting for ever.
        std::vector<std::string> unsynced;
        for (const Member& m : g->members) {
          if (!m.awaiting_sync) unsynced.push_back(m.id);
        }
        for (const std::string& m : unsynced) {
          RemoveMember(*g, m, "no SyncGroup from member " + m + " within the rebalance timeout");
        }
      }
      if (g->state == State::kPreparingRebalance) {
        if (g->rebalance_deadline <= now) {
          CompleteJoin(*g);
        } else if (pending_expired) {
          MaybeCompleteJoin(*g);
        }
      }
    }
    if (next_expiry_check_ > 0 && now >= next_expiry_check_) {
      next_expiry_check_ = now + options_.offsets_retention_check_interval_ms;
      expire = true;
    }
  }
  if (expire) ExpireOffsets();
}

// ---- groups and members -----------------------------------------------------------------

GroupCoordinator::Group* GroupCoordinator::FindGroup(const std::string& id) {
  auto it = groups_.find(id);
  return it == groups_.end() ? nullptr : it->second.get();
}

GroupCoordinator::Group& GroupCoordinator::GetOrCreateGroup(const std::string& id) {
  auto& slot = groups_[id];
  if (!slot) {
    slot = std::make_unique<Group>();
    slot->id = id;
    slot->state_timestamp = Now();
  }
  return *slot;
}

std::string GroupCoordinator::NewMemberId(const std::string& client_id) {
  // Kafka's shape: the client id, a dash and a random UUID.
  static thread_local std::mt19937_64 rng(std::random_device{}() ^
                                          static_cast<uint64_t>(MonotonicMs()));
  uint64_t a = rng() ^ (++id_counter_ << 17);
  uint64_t b = rng();
  char buf[40];
  snprintf(buf, sizeof(buf), "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(a >> 32),
           static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(0x4000 | (a & 0x0fff)),
           static_cast<unsigned>(0x8000 | ((b >> 48) & 0x3fff)),
           static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return (client_id.empty() ? std::string("member") : client_id) + "-" + buf;
}

void GroupCoordinator::AnswerJoin(Group& g, Member& m, int16_t error) {
  if (!m.awaiting_join) return;
  protocol::JoinGroupResponse r;
  r.error_code = error;
  r.member_id = m.id;
  if (error == 0) {
    r.generation_id = g.generation;
    r.protocol_type = g.protocol_type;  // v7+ (KIP-559)
    r.protocol_name = g.protocol.value_or("");
    r.leader = g.leader;
    if (m.id == g.leader) {
      for (const Member& o : g.members) {
        const std::string* md = o.MetadataFor(r.protocol_name);
        r.members.push_back({o.id, o.instance_id, md ? *md : std::string()});
      }
    }
  }
  calls_.push_back([cb = std::move(m.awaiting_join), r = std::move(r)] { cb(r); });
  m.awaiting_join = nullptr;
}

void GroupCoordinator::RemoveMember(Group& g, const std::string& member_id,
                                    const std::string& reason) {
  auto it = std::find_if(g.members.begin(), g.members.end(),
                         [&](const Member& m) { return m.id == member_id; });
  if (it == g.members.end()) return;
  LogInfo("group " + g.id + ": removing member " + member_id + " (" + reason + ")");
  if (it->awaiting_join) AnswerJoin(g, *it, Err(ErrorCode::UNKNOWN_MEMBER_ID));
  AnswerSync(*it, Err(ErrorCode::UNKNOWN_MEMBER_ID));
  if (it->instance_id) {
    auto s = g.static_members.find(*it->instance_id);
    if (s != g.static_members.end() && s->second == member_id) g.static_members.erase(s);
  }
  g.members.erase(it);
  if (g.leader == member_id) g.leader = g.members.empty() ? "" : g.members.front().id;
  switch (g.state) {
    case State::kStable:
    case State::kCompletingRebalance:
      PrepareRebalance(g, reason);
      break;
    case State::kPreparingRebalance:
      MaybeCompleteJoin(g);
      break;
    default:
      break;
  }
}

void GroupCoordinator::PrepareRebalance(Group& g, const std::string& reason) {
  if (g.state == State::kCompletingRebalance) {
    // Assignments of the generation that never finished are void: followers rejoin.
    for (Member& m : g.members) {
      m.assignment.clear();
      AnswerSync(m, Err(ErrorCode::REBALANCE_IN_PROGRESS));
    }
  }
  int64_t now = Now();
  g.initial_delay = g.state == State::kEmpty && options_.initial_rebalance_delay_ms > 0;
  int32_t timeout = g.MaxRebalanceTimeout();
  if (g.initial_delay) {
    g.rebalance_deadline = now + std::min<int64_t>(options_.initial_rebalance_delay_ms, timeout);
    g.initial_delay_limit = now + timeout;
  } else {
    g.rebalance_deadline = now + timeout;
  }
  g.state = State::kPreparingRebalance;
  g.state_timestamp = now;
  LogInfo("group " + g.id + ": preparing to rebalance (generation " +
          std::to_string(g.generation) + ", " + reason + ")");
  MaybeCompleteJoin(g);
}

void GroupCoordinator::MaybeCompleteJoin(Group& g) {
  if (g.state != State::kPreparingRebalance) return;
  if (Now() >= g.rebalance_deadline || (!g.initial_delay && g.AllJoined())) CompleteJoin(g);
}

void GroupCoordinator::CompleteJoin(Group& g) {
  // Members that did not rejoin in time leave the group.
  std::vector<std::string> gone;
  for (const Member& m : g.members) {
    if (!m.awaiting_join) gone.push_back(m.id);
  }
  for (const std::string& id : gone) {
    auto it = std::find_if(g.members.begin(), g.members.end(),
                           [&](const Member& m) { return m.id == id; });
    LogInfo("group " + g.id + ": member " + id + " did not rejoin in time; removed");
    if (it->instance_id) g.static_members.erase(*it->instance_id);
    g.members.erase(it);
  }
  int64_t now = Now();
  g.rebalance_deadline = kNoDeadline;
  g.initial_delay = false;
  ++g.generation;
  g.state_timestamp = now;
  if (g.members.empty()) {
    g.state = State::kEmpty;
    g.protocol.reset();
    g.leader.clear();
    LogInfo("group " + g.id + ": generation " + std::to_string(g.generation) + " is empty");
    Status s = StoreGroup(g);
    if (!s.ok()) LogError("group " + g.id + ": storing metadata: " + s.ToString());
    return;
  }
  if (g.Find(g.leader) == nullptr) g.leader = g.members.front().id;
  g.protocol = g.SelectProtocol();
  g.state = State::kCompletingRebalance;
  g.rebalance_deadline = now + g.MaxRebalanceTimeout();
  LogInfo("group " + g.id + ": generation " + std::to_string(g.generation) + " with " +
          std::to_string(g.members.size()) + " member(s), protocol " + *g.protocol +
          ", leader " + g.leader);
  for (Member& m : g.members) {
    m.assignment.clear();
    m.heartbeat_deadline = now + m.session_timeout_ms;
    AnswerJoin(g, m, 0);
  }
}

Status GroupCoordinator::StoreGroup(Group& g) {
  protocol::GroupMetadataValue v;
  v.version = 3;
  v.protocol_type = g.protocol_type;
  v.generation = g.generation;
  v.protocol = g.protocol;
  if (!g.leader.empty()) v.leader = g.leader;
  v.current_state_timestamp = g.state_timestamp;
  for (const Member& m : g.members) {
    protocol::GroupMetadataValue::Member sm;
    sm.member_id = m.id;
    sm.group_instance_id = m.instance_id;
    sm.client_id = m.client_id;
    sm.client_host = m.client_host;
    sm.rebalance_timeout = m.rebalance_timeout_ms;
    sm.session_timeout = m.session_timeout_ms;
    const std::string* md = g.protocol ? m.MetadataFor(*g.protocol) : nullptr;
    if (md) sm.subscription = *md;
    sm.assignment = m.assignment;
    v.members.push_back(std::move(sm));
  }
  std::vector<StoredRecord> recs;
  recs.push_back({protocol::EncodeGroupMetadataKey({g.id}), protocol::EncodeGroupMetadataValue(v)});
  SILT_TRY(log_->Append(g.id, recs));
  g.metadata_stored = true;
  return Status::OK();
}

// ---- JoinGroup --------------------------------------------------------------------------

void GroupCoordinator::JoinGroup(const protocol::JoinGroupRequest& req, int16_t version,
                                 const ClientInfo& client, JoinCallback done) {
  Scope scope(this);
  JoinLocked(req, version, client, std::move(done));
}

void GroupCoordinator::JoinLocked(const protocol::JoinGroupRequest& req, int16_t version,
                                  const ClientInfo& client, JoinCallback done) {
  auto fail = [&](ErrorCode c, const std::string& member_id = "") {
    protocol::JoinGroupResponse r;
    r.error_code = Err(c);
    r.member_id = member_id;
    calls_.push_back([done = std::move(done), r] { done(r); });
  };
  if (stopping_) return fail(ErrorCode::COORDINATOR_NOT_AVAILABLE);
  if (req.group_id.empty()) return fail(ErrorCode::INVALID_GROUP_ID);
  if (int16_t e = OwnershipError(req.group_id)) {
    protocol::JoinGroupResponse r;
    r.error_code = e;
    calls_.push_back([done = std::move(done), r] { done(r); });
    return;
  }
  if (req.session_timeout_ms < options_.min_session_timeout_ms ||
      req.session_timeout_ms > options_.max_session_timeout_ms) {
    return fail(ErrorCode::INVALID_SESSION_TIMEOUT);
  }
  protocol::JoinGroupRequest r = req;
  if (version == 0 || r.rebalance_timeout_ms <= 0) r.rebalance_timeout_ms = r.session_timeout_ms;

  Group* gp = FindGroup(r.group_id);
  if (gp == nullptr) {
    if (!r.member_id.empty()) return fail(ErrorCode::UNKNOWN_MEMBER_ID);
    gp = &GetOrCreateGroup(r.group_id);
  }
  Group& g = *gp;
  if (g.state == State::kDead) return fail(ErrorCode::COORDINATOR_NOT_AVAILABLE);
  bool known = !r.member_id.empty() && g.Find(r.member_id) != nullptr;
  // A rejoining member may change its own protocols; the check is against everyone else.
  if (!known && !g.Supports(r.protocol_type, r.protocols)) {
    return fail(ErrorCode::INCONSISTENT_GROUP_PROTOCOL);
  }

  if (r.member_id.empty()) {
    if (r.group_instance_id) {
      auto s = g.static_members.find(*r.group_instance_id);
      if (s != g.static_members.end() && g.Find(s->second) != nullptr) {
        // A static member back from a restart takes over its old identity.
        Member& m = *g.Find(s->second);
        std::string old_id = m.id;
        std::string new_id = NewMemberId(client.client_id);
        if (m.awaiting_join) AnswerJoin(g, m, Err(ErrorCode::FENCED_INSTANCE_ID));
        AnswerSync(m, Err(ErrorCode::FENCED_INSTANCE_ID));
        m.id = new_id;
        m.client_id = client.client_id;
        m.client_host = client.client_host;
        m.session_timeout_ms = r.session_timeout_ms;
        m.rebalance_timeout_ms = r.rebalance_timeout_ms;
        s->second = new_id;
        if (g.leader == old_id) g.leader = new_id;
        LogInfo("group " + g.id + ": static member " + *r.group_instance_id + " rejoined as " +
                new_id + " (was " + old_id + ")");
        bool unchanged = g.protocol && m.SameProtocols(r.protocols);
        if (g.state == State::kStable && unchanged) {
          m.heartbeat_deadline = Now() + m.session_timeout_ms;
          Status st = StoreGroup(g);
          if (!st.ok()) LogError("group " + g.id + ": storing metadata: " + st.ToString());
          protocol::JoinGroupResponse jr;
          jr.generation_id = g.generation;
          jr.protocol_type = g.protocol_type;
          jr.protocol_name = *g.protocol;
          jr.leader = g.leader;
          jr.member_id = new_id;
          // The returning leader keeps the current assignment: no member list, no reassignment.
          calls_.push_back([done = std::move(done), jr] { done(jr); });
          return;
        }
        return UpdateMemberAndRebalance(g, m, r, std::move(done));
      }
      return AddMemberAndRebalance(g, r, client, NewMemberId(client.client_id), std::move(done));
    }
    std::string id = NewMemberId(client.client_id);
    if (version >= 4) {
      // KIP-394: the member must come back with this id, so that a lost response does not
      // leave an unknown member behind.
      g.pending_members[id] = Now() + r.session_timeout_ms;
      return fail(ErrorCode::MEMBER_ID_REQUIRED, id);
    }
    return AddMemberAndRebalance(g, r, client, id, std::move(done));
  }

  if (g.pending_members.erase(r.member_id) > 0) {
    return AddMemberAndRebalance(g, r, client, r.member_id, std::move(done));
  }
  if (r.group_instance_id) {
    auto s = g.static_members.find(*r.group_instance_id);
    if (s != g.static_members.end() && s->second != r.member_id) {
      return fail(ErrorCode::FENCED_INSTANCE_ID, r.member_id);
    }
  }
  Member* mp = g.Find(r.member_id);
  if (mp == nullptr) return fail(ErrorCode::UNKNOWN_MEMBER_ID, r.member_id);
  Member& m = *mp;
  if (r.protocol_type != g.protocol_type) {
    return fail(ErrorCode::INCONSISTENT_GROUP_PROTOCOL, r.member_id);
  }
  m.client_id = client.client_id;
  m.client_host = client.client_host;
  switch (g.state) {
    case State::kPreparingRebalance:
      return UpdateMemberAndRebalance(g, m, r, std::move(done));
    case State::kCompletingRebalance:
    case State::kStable:
      if (m.SameProtocols(r.protocols) &&
          (g.state == State::kCompletingRebalance || m.id != g.leader)) {
        // Nothing changed (a retried join): the current generation stands.
        m.heartbeat_deadline = Now() + m.session_timeout_ms;
        m.awaiting_join = std::move(done);
        AnswerJoin(g, m, 0);
        return;
      }
      return UpdateMemberAndRebalance(g, m, r, std::move(done));
    default:
      return fail(ErrorCode::UNKNOWN_MEMBER_ID, r.member_id);
  }
}

void GroupCoordinator::AddMemberAndRebalance(Group& g, const protocol::JoinGroupRequest& req,
                                             const ClientInfo& client,
                                             const std::string& member_id, JoinCallback done) {
  if (g.members.empty()) g.protocol_type = req.protocol_type;
  Member m;
  m.id = member_id;
  m.instance_id = req.group_instance_id;
  m.client_id = client.client_id;
  m.client_host = client.client_host;
  m.session_timeout_ms = req.session_timeout_ms;
  m.rebalance_timeout_ms = req.rebalance_timeout_ms;
  m.protocol_type = req.protocol_type;
  m.protocols = req.protocols;
  m.awaiting_join = std::move(done);
  m.heartbeat_deadline = Now() + m.session_timeout_ms;
  if (m.instance_id) g.static_members[*m.instance_id] = m.id;
  g.members.push_back(std::move(m));
  if (g.leader.empty() || g.Find(g.leader) == nullptr) g.leader = member_id;
  if (g.state == State::kPreparingRebalance && g.initial_delay) {
    // A newcomer during the initial delay extends it, up to the rebalance timeout.
    g.rebalance_deadline =
        std::min<int64_t>(Now() + options_.initial_rebalance_delay_ms, g.initial_delay_limit);
  }
  if (g.state == State::kPreparingRebalance) {
    MaybeCompleteJoin(g);
  } else {
    PrepareRebalance(g, "member " + member_id + " joined");
  }
}

void GroupCoordinator::UpdateMemberAndRebalance(Group& g, Member& m,
                                                const protocol::JoinGroupRequest& req,
                                                JoinCallback done) {
  m.protocols = req.protocols;
  m.session_timeout_ms = req.session_timeout_ms;
  m.rebalance_timeout_ms = req.rebalance_timeout_ms;
  if (m.awaiting_join) AnswerJoin(g, m, Err(ErrorCode::REBALANCE_IN_PROGRESS));
  m.awaiting_join = std::move(done);
  m.heartbeat_deadline = Now() + m.session_timeout_ms;
  if (g.state == State::kPreparingRebalance) {
    MaybeCompleteJoin(g);
  } else {
    PrepareRebalance(g, "member " + m.id + " rejoined");
  }
}

// ---- SyncGroup, Heartbeat, LeaveGroup ---------------------------------------------------

// SyncGroup v5+ answers name the group's protocol type and chosen protocol.
void GroupCoordinator::NameProtocol(const Group& g, protocol::SyncGroupResponse* r) {
  r->protocol_type = g.protocol_type;
  r->protocol_name = g.protocol;
}

void GroupCoordinator::SyncGroup(const protocol::SyncGroupRequest& req, int16_t version,
                                 SyncCallback done) {
  Scope scope(this);
  Group* g = nullptr;
  auto answer = [&](int16_t error, std::string assignment = {}) {
    protocol::SyncGroupResponse r;
    r.error_code = error;
    r.assignment = std::move(assignment);
    if (error == 0 && g != nullptr) NameProtocol(*g, &r);
    calls_.push_back([done = std::move(done), r] { done(r); });
  };
  if (stopping_) return answer(Err(ErrorCode::COORDINATOR_NOT_AVAILABLE));
  if (int16_t e = OwnershipError(req.group_id)) return answer(e);
  g = FindGroup(req.group_id);
  if (g == nullptr) return answer(Err(ErrorCode::UNKNOWN_MEMBER_ID));
  if (g->state == State::kDead) return answer(Err(ErrorCode::COORDINATOR_NOT_AVAILABLE));
  if (req.group_instance_id) {
    auto s = g->static_members.find(*req.group_instance_id);
    if (s != g->static_members.end() && s->second != req.member_id) {
      return answer(Err(ErrorCode::FENCED_INSTANCE_ID));
    }
  }
  Member* m = g->Find(req.member_id);
  if (m == nullptr) return answer(Err(ErrorCode::UNKNOWN_MEMBER_ID));
  if (req.generation_id != g->generation) return answer(Err(ErrorCode::ILLEGAL_GENERATION));
  // v5+ name the protocol type and the chosen protocol: both must be the group's.
  if ((req.protocol_type && *req.protocol_type != g->protocol_type) ||
      (req.protocol_name && *req.protocol_name != g->protocol.value_or(""))) {
    return answer(Err(ErrorCode::INCONSISTENT_GROUP_PROTOCOL));
  }
  switch (g->state) {
    case State::kPreparingRebalance:
      return answer(Err(ErrorCode::REBALANCE_IN_PROGRESS));
    case State::kStable:
      m->heartbeat_deadline = Now() + m->session_timeout_ms;
      return answer(0, m->assignment);
    case State::kCompletingRebalance: {
      m->heartbeat_deadline = Now() + m->session_timeout_ms;
      AnswerSync(*m, Err(ErrorCode::REBALANCE_IN_PROGRESS));  // an earlier SyncGroup of its own
      m->awaiting_sync = std::move(done);
      if (m->id != g->leader) return;
      for (Member& o : g->members) {
        o.assignment.clear();
        for (const auto& a : req.assignments) {
          if (a.member_id == o.id) o.assignment = a.assignment;
        }
      }
      Status s = StoreGroup(*g);
      int16_t error = 0;
      if (!s.ok()) {
        // Kafka's answer when the group cannot be stored: the members rejoin.
        LogError("group " + g->id + ": storing assignment: " + s.ToString());
        error = Err(ErrorCode::COORDINATOR_NOT_AVAILABLE);
      }
      int64_t now = Now();
      for (Member& o : g->members) {
        if (!o.awaiting_sync) continue;
        protocol::SyncGroupResponse r;
        r.error_code = error;
        if (error == 0) {
          r.assignment = o.assignment;
          NameProtocol(*g, &r);
        }
        AnswerSync(o, r);
        o.heartbeat_deadline = now + o.session_timeout_ms;
      }
      if (error != 0) {
        PrepareRebalance(*g, "the assignment could not be stored");
        return;
      }
      g->state = State::kStable;
      g->state_timestamp = now;
      g->rebalance_deadline = kNoDeadline;
      LogInfo("group " + g->id + ": generation " + std::to_string(g->generation) + " is stable");
      return;
    }
    default:
      return answer(Err(ErrorCode::UNKNOWN_MEMBER_ID));
  }
}

protocol::HeartbeatResponse GroupCoordinator::Heartbeat(const protocol::HeartbeatRequest& req,
                                                        int16_t version) {
  Scope scope(this);
  protocol::HeartbeatResponse r;
  auto set = [&](ErrorCode c) {
    r.error_code = Err(c);
    return r;
  };
  if (stopping_) return set(ErrorCode::COORDINATOR_NOT_AVAILABLE);
  if (int16_t e = OwnershipError(req.group_id)) {
    r.error_code = e;
    return r;
  }
  Group* g = FindGroup(req.group_id);
  if (g == nullptr) return set(ErrorCode::UNKNOWN_MEMBER_ID);
  if (g->state == State::kDead) return set(ErrorCode::COORDINATOR_NOT_AVAILABLE);
  if (req.group_instance_id) {
    auto s = g->static_members.find(*req.group_instance_id);
    if (s != g->static_members.end() && s->second != req.member_id) {
      return set(ErrorCode::FENCED_INSTANCE_ID);
    }
  }
  Member* m = g->Find(req.member_id);
  if (m == nullptr) return set(ErrorCode::UNKNOWN_MEMBER_ID);
  if (req.generation_id != g->generation) return set(ErrorCode::ILLEGAL_GENERATION);
  m->heartbeat_deadline = Now() + m->session_timeout_ms;
  if (g->state == State::kPreparingRebalance) return set(ErrorCode::REBALANCE_IN_PROGRESS);
  if (g->state == State::kEmpty) return set(ErrorCode::UNKNOWN_MEMBER_ID);
  return r;
}

protocol::LeaveGroupResponse GroupCoordinator::LeaveGroup(const protocol::LeaveGroupRequest& req,
                                                          int16_t version) {
  Scope scope(this);
  protocol::LeaveGroupResponse resp;
  std::vector<protocol::LeaveGroupRequest::Member> leaving = req.members;
  if (version < 3) leaving = {{req.member_id, std::nullopt}};
  Group* g = FindGroup(req.group_id);
  const int16_t ownership = stopping_ ? 0 : OwnershipError(req.group_id);
  for (const auto& l : leaving) {
    protocol::LeaveGroupResponse::Member mr{l.member_id, l.group_instance_id, 0};
    std::string id = l.member_id;
    if (stopping_) {
      mr.error_code = Err(ErrorCode::COORDINATOR_NOT_AVAILABLE);
    } else if (ownership != 0) {
      mr.error_code = ownership;
    } else if (g == nullptr || g->state == State::kDead) {
      mr.error_code = Err(ErrorCode::UNKNOWN_MEMBER_ID);
    } else if (l.group_instance_id) {
      auto s = g->static_members.find(*l.group_instance_id);
      if (s == g->static_members.end()) {
        mr.error_code = Err(ErrorCode::UNKNOWN_MEMBER_ID);
      } else if (!id.empty() && s->second != id) {
        mr.error_code = Err(ErrorCode::FENCED_INSTANCE_ID);
      } else {
        id = s->second;
      }
    }
    if (mr.error_code == 0) {
      if (g->pending_members.erase(id) > 0) {
        MaybeCompleteJoin(*g);
      } else if (g->Find(id) == nullptr) {
        mr.error_code = Err(ErrorCode::UNKNOWN_MEMBER_ID);
      } else {
        RemoveMember(*g, id, "member " + id + " left");
      }
    }
    resp.members.push_back(std::move(mr));
  }
  if (version < 3) {
    resp.error_code = resp.members.front().error_code;
    resp.members.clear();
  }
  return resp;
}

// ---- offsets ----------------------------------------------------------------------------

protocol::OffsetCommitResponse GroupCoordinator::CommitOffsets(
    const protocol::OffsetCommitRequest& req, int16_t version, AppendedAt* at) {
  Scope scope(this);
  protocol::OffsetCommitResponse resp;
  auto all = [&](int16_t error) {
    for (const auto& t : req.topics) {
      protocol::OffsetCommitResponse::Topic tr;
      tr.name = t.name;
      for (const auto& p : t.partitions) tr.partitions.push_back({p.partition_index, error});
      resp.topics.push_back(std::move(tr));
    }
    return resp;
  };
  if (stopping_) return all(Err(ErrorCode::COORDINATOR_NOT_AVAILABLE));
  if (req.group_id.empty()) return all(Err(ErrorCode::INVALID_GROUP_ID));
  if (int16_t e = OwnershipError(req.group_id)) return all(e);
  // v0 carries no generation: a commit outside group management.
  int32_t generation = version == 0 ? -1 : req.generation_id_or_member_epoch;
  Group* g = FindGroup(req.group_id);
  if (g == nullptr) {
    if (generation >= 0) return all(Err(ErrorCode::ILLEGAL_GENERATION));
    g = &GetOrCreateGroup(req.group_id);
  }
  if (g->state == State::kDead) return all(Err(ErrorCode::COORDINATOR_NOT_AVAILABLE));
  if (!(generation < 0 && g->state == State::kEmpty)) {
    if (g->state == State::kCompletingRebalance) return all(Err(ErrorCode::REBALANCE_IN_PROGRESS));
    if (req.group_instance_id) {
      auto s = g->static_members.find(*req.group_instance_id);
      if (s != g->static_members.end() && s->second != req.member_id) {
        return all(Err(ErrorCode::FENCED_INSTANCE_ID));
      }
    }
    Member* m = g->Find(req.member_id);
    if (m == nullptr) {
      return all(Err(ErrorCode::UNKNOWN_MEMBER_ID));
    }
    if (generation != g->generation) return all(Err(ErrorCode::ILLEGAL_GENERATION));
    m->heartbeat_deadline = Now() + m->session_timeout_ms;
  }

  int64_t now = Now();
  std::vector<StoredRecord> recs;
  std::vector<std::pair<std::pair<std::string, int32_t>, protocol::OffsetCommitValue>> updates;
  for (const auto& t : req.topics) {
    protocol::OffsetCommitResponse::Topic tr;
    tr.name = t.name;
    for (const auto& p : t.partitions) {
      std::string md = p.committed_metadata.value_or("");
      if (static_cast<int64_t>(md.size()) > options_.offset_metadata_max_bytes) {
        tr.partitions.push_back({p.partition_index, Err(ErrorCode::OFFSET_METADATA_TOO_LARGE)});
        continue;
      }
      protocol::OffsetCommitValue v;
      v.version = 3;
      v.offset = p.committed_offset;
      v.leader_epoch = version >= 6 ? p.committed_leader_epoch : -1;
      v.metadata = md;
      v.commit_timestamp = now;
      recs.push_back({protocol::EncodeOffsetCommitKey({req.group_id, t.name, p.partition_index}),
                      protocol::EncodeOffsetCommitValue(v)});
      updates.push_back({{t.name, p.partition_index}, v});
      tr.partitions.push_back({p.partition_index, 0});
    }
    resp.topics.push_back(std::move(tr));
  }
  Status s = log_->Append(req.group_id, recs, at);
  if (!s.ok()) {
    LogError("group " + req.group_id + ": storing offsets: " + s.ToString());
    // Kafka's mapping: a partition this node no longer leads sends the client to look the
    // coordinator up again; anything else is worth a retry here.
    int16_t error = Err(s.code() == Status::Code::kNotLeader ? ErrorCode::NOT_COORDINATOR
                                        : ErrorCode::COORDINATOR_NOT_AVAILABLE);
    for (auto& t : resp.topics) {
      for (auto& p : t.partitions) {
        if (p.error_code == 0) p.error_code = error;
      }
    }
    return resp;
  }
  if (at == nullptr || at->last_offset < 0) {
    // No replicated log under it (the caller does not wait for a high watermark): as written.
    for (auto& [tp, v] : updates) g->offsets[tp] = v;
  } else if (!updates.empty()) {
    g->pending_commits[at->last_offset] = std::move(updates);
  }
  return resp;
}

void GroupCoordinator::PublishCommitted(const std::string& group, Offset high_watermark) {
  Scope scope(this);
  Group* g = FindGroup(group);
  if (g == nullptr) return;
  auto& pending = g->pending_commits;
  while (!pending.empty() && pending.begin()->first < high_watermark.value()) {
    for (auto& [tp, v] : pending.begin()->second) g->offsets[tp] = std::move(v);
    pending.erase(pending.begin());
  }
}

protocol::OffsetFetchResponse GroupCoordinator::FetchOffsets(const protocol::OffsetFetchRequest& req,
                                                             int16_t version) {
  Scope scope(this);
  protocol::OffsetFetchResponse resp;
  const int16_t refused =
      stopping_ ? Err(ErrorCode::COORDINATOR_NOT_AVAILABLE) : OwnershipError(req.group_id);
  if (refused != 0) {
    // v2+ carry the group's error; v0-1 only the partitions' (the same, on each named one).
    resp.error_code = refused;
    if (req.topics) {
      for (const auto& t : *req.topics) {
        protocol::OffsetFetchResponse::Topic tr;
        tr.name = t.name;
        for (int32_t p : t.partition_indexes) {
          protocol::OffsetFetchResponse::Partition pr;
          pr.partition_index = p;
          pr.metadata = "";
          pr.error_code = refused;
          tr.partitions.push_back(std::move(pr));
        }
        resp.topics.push_back(std::move(tr));
      }
    }
    return resp;
  }
  Group* g = FindGroup(req.group_id);
  auto partition = [&](const std::string& topic, int32_t p) {
    protocol::OffsetFetchResponse::Partition pr;
    pr.partition_index = p;
    pr.metadata = "";
    if (g != nullptr) {
      auto it = g->offsets.find({topic, p});
      if (it != g->offsets.end()) {
        pr.committed_offset = it->second.offset;
        pr.committed_leader_epoch = it->second.leader_epoch;
        pr.metadata = it->second.metadata;
      }
    }
    return pr;
  };
  if (req.topics) {
    for (const auto& t : *req.topics) {
      protocol::OffsetFetchResponse::Topic tr;
      tr.name = t.name;
      for (int32_t p : t.partition_indexes) tr.partitions.push_back(partition(t.name, p));
      resp.topics.push_back(std::move(tr));
    }
  } else if (g != nullptr) {
    for (const auto& [tp, v] : g->offsets) {
      if (resp.topics.empty() || resp.topics.back().name != tp.first) {
        resp.topics.emplace_back();
        resp.topics.back().name = tp.first;
      }
      resp.topics.back().partitions.push_back(partition(tp.first, tp.second));
    }
  }
  return resp;
}

int GroupCoordinator::ExpireOffsets() {
  Scope scope(this);
  int64_t now = Now();
  int expired_total = 0;
  for (auto it = groups_.begin(); it != groups_.end();) {
    Group& g = *it->second;
    if (g.state != State::kEmpty) {
      ++it;
      continue;
    }
    std::vector<StoredRecord> recs;
    std::vector<std::pair<std::string, int32_t>> expired;
    for (const auto& [tp, v] : g.offsets) {
      int64_t base;
      if (v.expire_timestamp >= 0) {
        base = v.expire_timestamp - options_.offsets_retention_ms;
      } else if (g.metadata_stored && g.state_timestamp >= 0) {
        base = g.state_timestamp;
      } else {
        base = v.commit_timestamp;
      }
      if (now - base >= options_.offsets_retention_ms) {
        expired.push_back(tp);
        recs.push_back({protocol::EncodeOffsetCommitKey({g.id, tp.first, tp.second}), std::nullopt});
      }
    }
    bool delete_group = expired.size() == g.offsets.size() && g.pending_members.empty() &&
                        g.pending_commits.empty();
    if (delete_group && g.metadata_stored) {
      recs.push_back({protocol::EncodeGroupMetadataKey({g.id}), std::nullopt});
    }
    if (recs.empty()) {
      ++it;
      continue;
    }
    Status s = log_->Append(g.id, recs);
    if (!s.ok()) {
      LogError("group " + g.id + ": writing expired offsets: " + s.ToString());
      ++it;
      continue;
    }
    for (const auto& tp : expired) g.offsets.erase(tp);
    expired_total += static_cast<int>(expired.size());
    if (!expired.empty()) {
      LogInfo("group " + g.id + ": " + std::to_string(expired.size()) + " offset(s) expired");
    }
    if (delete_group) {
      g.state = State::kDead;
      LogInfo("group " + g.id + ": deleted (empty, no offsets left)");
      it = groups_.erase(it);
    } else {
      ++it;
    }
  }
  return expired_total;
}

// ---- describe and list ------------------------------------------------------------------

protocol::DescribeGroupsResponse GroupCoordinator::DescribeGroups(
    const protocol::DescribeGroupsRequest& req, int16_t version) {
  Scope scope(this);
  protocol::DescribeGroupsResponse resp;
  for (const std::string& id : req.groups) {
    protocol::DescribeGroupsResponse::Group gr;
    gr.group_id = id;
    if (req.include_authorized_operations) gr.authorized_operations = 0;
    Group* g = FindGroup(id);
    if (stopping_) {
      gr.error_code = Err(ErrorCode::COORDINATOR_NOT_AVAILABLE);
    } else if (int16_t e = OwnershipError(id)) {
      gr.error_code = e;
    } else if (g == nullptr) {
      gr.group_state = "Dead";
    } else {
      gr.group_state = StateName(g->state);
      gr.protocol_type = g->protocol_type;
      bool stable = g->state == State::kStable;
      gr.protocol_data = stable ? g->protocol.value_or("") : "";
      for (const Member& m : g->members) {
        protocol::DescribeGroupsResponse::Member mr;
        mr.member_id = m.id;
        mr.group_instance_id = m.instance_id;
        mr.client_id = m.client_id;
        mr.client_host = m.client_host;
        if (stable) {
          const std::string* md = m.MetadataFor(*g->protocol);
          if (md) mr.member_metadata = *md;
          mr.member_assignment = m.assignment;
        }
        gr.members.push_back(std::move(mr));
      }
    }
    resp.groups.push_back(std::move(gr));
  }
  return resp;
}

protocol::ListGroupsResponse GroupCoordinator::ListGroups(const protocol::ListGroupsRequest& req) {
  Scope scope(this);
  protocol::ListGroupsResponse resp;
  if (stopping_) {
    resp.error_code = Err(ErrorCode::COORDINATOR_NOT_AVAILABLE);
    return resp;
  }
  for (const auto& [p, o] : owned_) {
    // Kafka's answer while some groups are not known yet: the list would be incomplete.
    if (o.loading) {
      resp.error_code = Err(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS);
      return resp;
    }
  }
  for (const auto& [id, g] : groups_) {
    if (g->state == State::kDead) continue;
    // v4+ filter by state, v5+ by type, both case-insensitively as Kafka does; every group
    // here is a classic one.
    const std::string state = StateName(g->state);
    if (!req.states_filter.empty() &&
        std::none_of(req.states_filter.begin(), req.states_filter.end(),
                     [&](const std::string& f) { return EqualsIgnoreCase(f, state); })) {
      continue;
    }
    if (!req.types_filter.empty() &&
        std::none_of(req.types_filter.begin(), req.types_filter.end(),
                     [&](const std::string& f) { return EqualsIgnoreCase(f, "classic"); })) {
      continue;
    }
    protocol::ListGroupsResponse::Group lg;
    lg.group_id = id;
    lg.protocol_type = g->protocol_type;
    lg.group_state = state;
    lg.group_type = "classic";
    resp.groups.push_back(std::move(lg));
  }
  return resp;
}

protocol::DeleteGroupsResponse GroupCoordinator::DeleteGroups(
    const protocol::DeleteGroupsRequest& req) {
  Scope scope(this);
  protocol::DeleteGroupsResponse resp;
  for (const std::string& id : req.groups_names) {
    protocol::DeleteGroupsResponse::Result r{id, 0};
    Group* g = FindGroup(id);
    if (stopping_) {
      r.error_code = Err(ErrorCode::COORDINATOR_NOT_AVAILABLE);
    } else if (int16_t e = id.empty() ? 0 : OwnershipError(id)) {
      r.error_code = e;
    } else if (id.empty()) {
      // Kafka accepts "" here for groups that committed under it; OffsetCommit refuses "" in
      // silt, so no such group can exist.
      r.error_code = Err(ErrorCode::INVALID_GROUP_ID);
    } else if (g == nullptr || g->state == State::kDead) {
      r.error_code = Err(ErrorCode::GROUP_ID_NOT_FOUND);
    } else if (g->state != State::kEmpty || !g->members.empty() || !g->pending_members.empty()) {
      r.error_code = Err(ErrorCode::NON_EMPTY_GROUP);
    } else {
      std::vector<StoredRecord> recs;
      for (const auto& [tp, v] : g->offsets) {
        recs.push_back({protocol::EncodeOffsetCommitKey({id, tp.first, tp.second}), std::nullopt});
      }
      // Also when no metadata was ever stored (a group that only committed offsets): a
      // tombstone of a key never written costs a record and cannot bring anything back.
      recs.push_back({protocol::EncodeGroupMetadataKey({id}), std::nullopt});
      Status s = log_->Append(id, recs);
      if (!s.ok()) {
        LogError("group " + id + ": writing the deletion: " + s.ToString());
        r.error_code = Err(ErrorCode::COORDINATOR_NOT_AVAILABLE);
      } else {
        LogInfo("group " + id + ": deleted with " + std::to_string(g->offsets.size()) +
                " committed offset(s)");
        g->state = State::kDead;
        groups_.erase(id);
      }
    }
    resp.results.push_back(std::move(r));
  }
  return resp;
}

namespace {

// The topics of a ConsumerProtocolSubscription (any version: int16 version, then an array of
// topic names first); nullopt when the bytes do not parse.
std::optional<std::vector<std::string>> SubscribedTopics(std::string_view metadata) {
  ByteReader r(metadata);
  int16_t version;
  int32_t n;
  if (!r.I16(&version) || !r.I32(&n) || n < 0 ||
      static_cast<size_t>(n) > r.remaining() / 2) {
    return std::nullopt;
  }
  std::vector<std::string> topics;
  for (int32_t i = 0; i < n; ++i) {
    int16_t len;
    if (!r.I16(&len) || len < 0) {
      return std::nullopt;
    }
    std::string_view name;
    if (!r.Bytes(static_cast<size_t>(len), &name)) return std::nullopt;
    topics.emplace_back(name);
  }
  return topics;
}

}  // namespace

int16_t GroupCoordinator::DeleteOffsets(
    const std::string& group, const std::vector<std::pair<std::string, int32_t>>& partitions,
    std::vector<int16_t>* errors) {
  Scope scope(this);
  errors->assign(partitions.size(), 0);
  if (stopping_) return Err(ErrorCode::COORDINATOR_NOT_AVAILABLE);
  if (group.empty()) return Err(ErrorCode::INVALID_GROUP_ID);
  if (int16_t e = OwnershipError(group)) return e;
  Group* g = FindGroup(group);
  if (g == nullptr || g->state == State::kDead) return Err(ErrorCode::GROUP_ID_NOT_FOUND);
  // Which topics the members consume; nullopt: all of them (a member whose subscription does
  // not parse, or no protocol chosen yet), as Kafka assumes when it cannot tell.
  std::optional<std::set<std::string>> subscribed;
  if (g->state != State::kEmpty) {
    if (g->protocol_type != "consumer") return Err(ErrorCode::NON_EMPTY_GROUP);
    if (g->protocol) {
      subscribed.emplace();
      for (const Member& m : g->members) {
        const std::string* md = m.MetadataFor(*g->protocol);
        auto topics = md ? SubscribedTopics(*md) : std::nullopt;
        if (!topics) {
          subscribed.reset();
          break;
        }
        subscribed->insert(topics->begin(), topics->end());
      }
    }
  }
  std::vector<StoredRecord> recs;
  std::vector<std::pair<std::string, int32_t>> deleted;
  for (size_t i = 0; i < partitions.size(); ++i) {
    const auto& tp = partitions[i];
    if (g->state != State::kEmpty && (!subscribed || subscribed->count(tp.first) > 0)) {
      (*errors)[i] = Err(ErrorCode::GROUP_SUBSCRIBED_TO_TOPIC);
      continue;
    }
    if (g->offsets.count(tp) == 0) continue;
    if (std::find(deleted.begin(), deleted.end(), tp) != deleted.end()) continue;
    deleted.push_back(tp);
    recs.push_back({protocol::EncodeOffsetCommitKey({group, tp.first, tp.second}), std::nullopt});
  }
  bool delete_group = g->state == State::kEmpty && g->pending_members.empty() &&
                      deleted.size() == g->offsets.size() && !deleted.empty();
  if (delete_group && g->metadata_stored) {
    recs.push_back({protocol::EncodeGroupMetadataKey({group}), std::nullopt});
  }
  if (recs.empty()) return 0;
  Status s = log_->Append(group, recs);
  if (!s.ok()) {
    LogError("group " + group + ": deleting offsets: " + s.ToString());
    return Err(s.code() == Status::Code::kNotLeader ? ErrorCode::NOT_COORDINATOR
                                                    : ErrorCode::COORDINATOR_NOT_AVAILABLE);
  }
  for (const auto& tp : deleted) g->offsets.erase(tp);
  // A commit still pending for a deleted partition must not bring its offset back.
  for (auto& [at, updates] : g->pending_commits)
    std::erase_if(updates, [&](const auto& u) {
      return std::find(deleted.begin(), deleted.end(), u.first) != deleted.end();
    });
  LogInfo("group " + group + ": " + std::to_string(deleted.size()) + " committed offset(s) deleted");
  if (delete_group) {
    g->state = State::kDead;
    groups_.erase(group);
  }
  return 0;
}

std::string GroupCoordinator::GroupState(const std::string& group) {
  Scope scope(this);
  Group* g = FindGroup(group);
  return g ? StateName(g->state) : "Dead";
}

int32_t GroupCoordinator::GroupGeneration(const std::string& group) {
  Scope scope(this);
  Group* g = FindGroup(group);
  return g ? g->generation : -1;
}

size_t GroupCoordinator::GroupSize(const std::string& group) {
  Scope scope(this);
  Group* g = FindGroup(group);
  return g ? g->members.size() : 0;
}

std::vector<GroupCoordinator::GroupSummary> GroupCoordinator::Summaries() {
  Scope scope(this);
  std::vector<GroupSummary> out;
  out.reserve(groups_.size());
  for (const auto& [id, g] : groups_) {
    if (g->state == State::kDead) continue;
    GroupSummary s{id, StateName(g->state), g->members.size(), {}};
    s.offsets.reserve(g->offsets.size());
    for (const auto& [tp, v] : g->offsets) s.offsets.push_back({tp.first, tp.second, v.offset});
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace silt::broker
