// The replica manager (replica_manager.h).
#include "cluster/replica_manager.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "base/clock.h"
#include "base/metrics.h"
#include "broker/logging.h"
#include "broker/partition_manager.h"

namespace silt::cluster {

namespace {

thread_local bool opening_for_replica_manager = false;

struct OpeningGuard {
  OpeningGuard() { opening_for_replica_manager = true; }
  ~OpeningGuard() { opening_for_replica_manager = false; }
};

bool Contains(const std::vector<NodeId>& v, NodeId n) {
  return std::find(v.begin(), v.end(), n) != v.end();
}

std::string Nodes(const std::vector<NodeId>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += ",";
    out += std::to_string(v[i].value());
  }
  return out + "]";
}

using broker::LogDebug;
using broker::LogInfo;
using broker::LogWarn;
using Key = std::pair<std::string, int32_t>;

enum class Role { kUnset, kLeader, kFollower, kNone };

}  // namespace

bool OpeningForReplicaManager() { return opening_for_replica_manager; }

std::optional<std::vector<NodeId>> ShrinkIsr(
    const std::vector<NodeId>& isr, NodeId self,
    const std::vector<broker::Partition::FollowerState>& followers, Offset leader_log_end,
    int64_t now_ms, int64_t lag_max_ms) {
  std::vector<NodeId> out;
  for (NodeId n : isr) {
    bool keep = true;
    if (n != self) {
      auto f = std::find_if(followers.begin(), followers.end(),
                            [n](const broker::Partition::FollowerState& s) { return s.id == n; });
      // A follower the leader has no state for has never fetched in this epoch: as good as
      // one that stopped at the epoch's start (BecomeLeader gives each a fresh caught-up time).
      if (f != followers.end()) {
        bool at_end = f->log_end.value() >= 0 && f->log_end == leader_log_end;
        keep = at_end || now_ms - f->last_caught_up_ms <= lag_max_ms;
      }
    }
    if (keep) out.push_back(n);
  }
  if (out.size() == isr.size()) return std::nullopt;
  return out;
}

std::vector<broker::Partition::FollowerState> IsrCandidates(
    const std::vector<broker::Partition::FollowerState>& followers,
    const std::set<int32_t>& unfenced, const std::map<int32_t, int64_t>& left_isr_ms,
    int64_t now_ms, int64_t lag_max_ms) {
  std::vector<broker::Partition::FollowerState> out;
  for (const auto& f : followers) {
    if (!unfenced.count(f.id.value()) || now_ms - f.last_fetch_ms > lag_max_ms) continue;
    auto left = left_isr_ms.find(f.id.value());
    if (left != left_isr_ms.end() && f.last_fetch_ms <= left->second) continue;
    out.push_back(f);
  }
  return out;
}

std::optional<std::vector<NodeId>> ExpandIsr(
    const std::vector<NodeId>& isr, const std::vector<NodeId>& replicas,
    const std::vector<broker::Partition::FollowerState>& followers, Offset high_watermark,
    Offset epoch_start) {
  std::vector<NodeId> out = isr;
  for (NodeId r : replicas) {
    if (Contains(isr, r)) continue;
    auto f = std::find_if(followers.begin(), followers.end(),
                          [r](const broker::Partition::FollowerState& s) { return s.id == r; });
    if (f == followers.end() || f->log_end.value() < 0) continue;
    if (f->log_end.value() >= high_watermark.value() && f->log_end.value() >= epoch_start.value()) {
      out.push_back(r);
    }
  }
  if (out.size() == isr.size()) return std::nullopt;
  return out;
}

struct ReplicaManager::Impl {
  ReplicaManagerOptions o;
  ReplicaFetchers fetchers;

  struct Applied {
    std::shared_ptr<broker::Partition> p;
    Uuid topic_id;
    Role role = Role::kUnset;
    NodeId leader{-1};
    LeaderEpoch epoch{-1};
    int32_t partition_epoch = -1;
    std::vector<NodeId> replicas;
    std::vector<NodeId> isr;  // the image's (committed) ISR
    Offset epoch_start{0};
    bool in_flight = false;   // an AlterPartition is being proposed
    int64_t retry_after_ms = 0;
    std::map<int32_t, int64_t> left_isr_ms;  // followers seen leaving the ISR, and when
    // A role change that failed (the epoch's checkpoint could not be written, say) is tried
    // again at this time, with a backoff doubling from 100 ms to 5 s per failure in a row.
    int64_t role_retry_ms = 0;
    int role_failures = 0;
  };
  struct Proposal {
    Key key;
    AlterPartitionRecord record;
    bool expanding = false;
  };
  struct Outcome {
    Key key;
    int32_t based_on;
    Status status;
  };

  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  bool started = false;
  bool woken = false;
  std::deque<Proposal> proposals;
  std::vector<Outcome> outcomes;
  std::thread worker;
  std::thread proposer;

  // The manager thread's own.
  std::map<Key, Applied> applied;
  bool isolated = false;
  int64_t next_shrink_ms = 0;
  std::set<int32_t> unfenced;  // brokers of the last image reconciled that may join an ISR

  explicit Impl(ReplicaManagerOptions opts)
      : o(std::move(opts)), fetchers(o.self, o.voters, o.fetch) {}

  void Run();
  void Propose();
  void TakeOutcomes();
  void Reconcile();
  // Reconcile's two cases for one replica: a new role (or leader, or leader epoch) to take, and
  // a change within the epoch (ISR, replicas) to follow.
  void ChangeRole(Applied& a, const std::shared_ptr<broker::Partition>& p, Role want,
                  const std::string& topic, int32_t pid, const PartitionImage& part);
  void FollowWithinEpoch(Applied& a, const std::shared_ptr<broker::Partition>& p, Role want,
                         const PartitionImage& part);
  void CheckIsr();
};

void ReplicaManager::Impl::Run() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait_for(lock, std::chrono::milliseconds(100), [this] { return stopping || woken; });
      if (stopping) return;
      woken = false;
    }
    TakeOutcomes();
    Reconcile();
    CheckIsr();
  }
}

void ReplicaManager::Impl::TakeOutcomes() {
  std::vector<Outcome> got;
  {
    std::lock_guard<std::mutex> lock(mu);
    got.swap(outcomes);
  }
  for (const Outcome& out : got) {
    auto it = applied.find(out.key);
    if (it == applied.end()) continue;
    Applied& a = it->second;
    a.in_flight = false;
    if (!out.status.ok()) {
      LogInfo(a.p->name() + ": the ISR change was not applied: " + out.status.message());
      a.retry_after_ms = MonotonicMs() + 1000;
    }
    // The committed ISR now, applied or not: an addition counted early stops counting if it was
    // refused, and an image seen while the change was in flight was not applied then. (Never an
    // older ISR than the image's: dropping an added member for a moment could let the high
    // watermark pass it.) Propose returns once this node's image holds the outcome.
    auto img = o.image();
    if (const TopicImage* t = img->FindTopic(a.topic_id)) {
      auto pit = t->partitions.find(out.key.second);
      if (pit != t->partitions.end() && pit->second.leader_epoch == a.epoch) {
        a.isr = pit->second.isr;
        a.partition_epoch = pit->second.partition_epoch;
        a.replicas = pit->second.replicas;
      }
    }
    if (a.role == Role::kLeader) a.p->SetIsr(a.isr);
  }
}

void ReplicaManager::Impl::Reconcile() {
  auto img = o.image();
  const int64_t now = MonotonicMs();
  unfenced.clear();
  for (const auto& [id, b] : img->brokers()) {
    if (!b.fenced) unfenced.insert(id);
  }
  bool cut_off = now - o.last_controller_contact_ms() > o.broker_session_timeout_ms;
  if (cut_off != isolated) {
    isolated = cut_off;
    if (isolated) {
      LogWarn("no ready controller has answered this node for " +
              std::to_string(o.broker_session_timeout_ms) +
              " ms: its partitions stop acting as leaders");
    } else {
      LogInfo("the controller answers again: partitions this node leads in the metadata lead again");
    }
  }
  // The leaders' lease: the last contact with a ready controller plus the session timeout
  // (Partition::SetLeaderLease); the same test as `isolated`, made by each request itself.
  const int64_t lease_until = o.last_controller_contact_ms() + o.broker_session_timeout_ms;
  std::set<Key> seen;
  // Clients' topics first, internal ones (__consumer_offsets, many partitions) after: each new
  // leader epoch writes its checkpoint before the partition leads, and a failover should not
  // make a client's partition wait behind fifty of those.
  std::vector<const TopicImage*> order;
  for (const auto& [tid, t] : img->topics()) order.push_back(&t);
  std::stable_partition(order.begin(), order.end(),
                        [](const TopicImage* t) { return t->name.rfind("__", 0) != 0; });
  for (const TopicImage* tp : order) {
    const TopicImage& t = *tp;
    for (const auto& entry : t.partitions) {
      const int32_t pid = entry.first;  // a plain variable: captured by the lambda below
      const auto& part = entry.second;
      if (!Contains(part.replicas, o.self)) continue;
      Key key{t.name, pid};
      seen.insert(key);
      Result<std::shared_ptr<broker::Partition>> got = [&] {
        OpeningGuard guard;
        return o.partitions->Get(t.name, PartitionId(pid));
      }();
      if (!got.ok()) {
        LogDebug("replica " + t.name + "-" + std::to_string(pid) + ": " + got.status().ToString());
        continue;
      }
      std::shared_ptr<broker::Partition> p = std::move(got).value();
      Applied& a = applied[key];
      a.topic_id = t.id;
      Role want = part.leader == o.self     ? (isolated ? Role::kNone : Role::kLeader)
                  : part.leader.value() < 0 ? Role::kNone
                                            : Role::kFollower;
      p->SetLeaderLease(lease_until);
      bool fresh = a.p != p || a.role != want || a.epoch != part.leader_epoch ||
                   a.leader != part.leader;
      if (fresh) {
        if (now >= a.role_retry_ms || a.epoch != part.leader_epoch || a.leader != part.leader)
          ChangeRole(a, p, want, t.name, pid, part);
        continue;
      }
      FollowWithinEpoch(a, p, want, part);
    }
  }
  for (auto it = applied.begin(); it != applied.end();) {
    if (seen.count(it->first)) {
      ++it;
      continue;
    }
    fetchers.Remove(it->first.first, PartitionId(it->first.second));
    it = applied.erase(it);
  }
}

void ReplicaManager::Impl::ChangeRole(Applied& a, const std::shared_ptr<broker::Partition>& p,
                                      Role want, const std::string& topic, int32_t pid,
                                      const PartitionImage& part) {
  Status s;
  switch (want) {
    case Role::kLeader:
      fetchers.Remove(topic, PartitionId(pid));
      s = p->BecomeLeader(part.leader_epoch, part.partition_epoch, part.replicas, part.isr);
      if (part.leader_epoch.value() > 0) {
        auto prev = p->EndOffsetForEpoch(LeaderEpoch(part.leader_epoch.value() - 1));
        a.epoch_start = prev.ok() ? prev->end_offset : p->log_start_offset();
      } else {
        a.epoch_start = p->log_start_offset();
      }
      a.in_flight = false;
      break;
    case Role::kFollower:
      s = p->BecomeFollower(part.leader_epoch, part.partition_epoch, part.leader);
      if (s.ok()) fetchers.Add(part.leader, part.leader_epoch, p);
      break;
    case Role::kNone:
    case Role::kUnset:
      fetchers.Remove(topic, PartitionId(pid));
      s = p->BecomeFollower(part.leader_epoch, part.partition_epoch, NodeId(-1));
      break;
  }
  const char* what = want == Role::kLeader     ? "leader"
                     : want == Role::kFollower ? "follower"
                                               : "without a leader";
  if (!s.ok()) {
    // Not recorded as taken: the next pass tries again, after the backoff. (Recording it would
    // leave a follower out of the ISR, or a leader not leading, until the next leader epoch.)
    a.role_failures = std::min(a.role_failures + 1, 16);
    const int64_t backoff = std::min<int64_t>(5000, int64_t{100} << std::min(a.role_failures - 1, 6));
    a.role_retry_ms = MonotonicMs() + backoff;
    a.p = p;
    a.role = Role::kUnset;
    a.leader = part.leader;  // the target that failed: a different one is tried at once
    a.epoch = part.leader_epoch;
    LogWarn(p->name() + ": becoming " + what + ": " + s.ToString() + " (trying again in " +
            std::to_string(backoff) + " ms)");
    return;
  }
  if (a.role_failures > 0) {
    LogInfo(p->name() + ": became " + what + " after " + std::to_string(a.role_failures) +
            " failed attempt(s)");
  }
  a.role_failures = 0;
  a.role_retry_ms = 0;
  LogInfo(p->name() + ": " + what + " at leader epoch " +
          std::to_string(part.leader_epoch.value()) +
          (want == Role::kFollower ? " of node " + std::to_string(part.leader.value())
                                   : std::string()) +
          ", ISR " + Nodes(part.isr));
  a.p = p;
  a.role = want;
  a.leader = part.leader;
  a.epoch = part.leader_epoch;
  a.partition_epoch = part.partition_epoch;
  a.replicas = part.replicas;
  a.isr = part.isr;
}

void ReplicaManager::Impl::FollowWithinEpoch(Applied& a, const std::shared_ptr<broker::Partition>& p,
                                             Role want, const PartitionImage& part) {
  if (part.partition_epoch == a.partition_epoch && part.isr == a.isr &&
      part.replicas == a.replicas)
    return;
  // The state moved within the epoch (an ISR change, ours or the controller's; or a
  // reassignment's new replicas, which the leader must know to serve their fetches).
  const bool replicas_moved = part.replicas != a.replicas;
  if (want == Role::kLeader && !a.in_flight) {
    if (replicas_moved) {
      Status s = p->BecomeLeader(part.leader_epoch, part.partition_epoch, part.replicas, part.isr);
      if (!s.ok()) LogWarn(p->name() + ": new replicas " + Nodes(part.replicas) + ": " +
                           s.ToString());
    } else {
      p->SetIsr(part.isr);
    }
  } else if (want == Role::kLeader && replicas_moved) {
    return;  // taken up once the ISR change in flight is answered
  }
  if (part.isr != a.isr) {
    const int64_t changed_ms = MonotonicMs();
    for (NodeId n : a.isr) {
      if (std::find(part.isr.begin(), part.isr.end(), n) == part.isr.end())
        a.left_isr_ms[n.value()] = changed_ms;
    }
    LogInfo(p->name() + ": ISR " + Nodes(a.isr) + " -> " + Nodes(part.isr) +
            " (partition epoch " + std::to_string(part.partition_epoch) + ")");
  }
  a.partition_epoch = part.partition_epoch;
  a.isr = part.isr;
  a.replicas = part.replicas;
}

void ReplicaManager::Impl::CheckIsr() {
  const int64_t now = MonotonicMs();
  bool shrink_due = now >= next_shrink_ms;
  if (shrink_due) next_shrink_ms = now + std::max(1, o.replica_lag_time_max_ms / 2);
  for (auto& [key, a] : applied) {
    if (a.role != Role::kLeader || a.in_flight || now < a.retry_after_ms) continue;
    std::vector<broker::Partition::FollowerState> followers = a.p->Followers();
    std::optional<std::vector<NodeId>> next;
    bool expanding = false;
    if (shrink_due) {
      next = ShrinkIsr(a.isr, o.self, followers, a.p->log_end_offset(), now,
                       o.replica_lag_time_max_ms);
    }
    if (!next) {
      // Candidates: followers fetching now (Kafka expands on a follower's fetch) from brokers
      // the image has unfenced (KIP-841); the leader's memory of a dead one's log end is no
      // reason to add it.
      std::vector<broker::Partition::FollowerState> live =
          IsrCandidates(followers, unfenced, a.left_isr_ms, now, o.replica_lag_time_max_ms);
      next = ExpandIsr(a.isr, a.replicas, live, a.p->high_watermark(), a.epoch_start);
      expanding = next.has_value();
    }
    if (!next) continue;
    LogInfo(a.p->name() + ": " + (expanding ? "expanding" : "shrinking") + " the ISR " +
            Nodes(a.isr) + " -> " + Nodes(*next));
    // The maximal ISR: an addition counts for the high watermark from now on, a removal only
    // once committed.
    if (expanding) a.p->SetIsr(*next);
    a.in_flight = true;
    std::lock_guard<std::mutex> lock(mu);
    proposals.push_back(Proposal{
        key, AlterPartitionRecord{PartitionId(key.second), a.topic_id, o.self, a.epoch,
                                  a.partition_epoch, *next},
        expanding});
    cv.notify_all();
  }
}

void ReplicaManager::Impl::Propose() {
  for (;;) {
    Proposal next;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [this] { return stopping || !proposals.empty(); });
      if (stopping) return;
      next = std::move(proposals.front());
      proposals.pop_front();
    }
    Status s = o.propose({next.record});
    if (s.ok()) {
      // Counted once the controller took the change (Kafka marks them on AlterPartition's
      // success).
      static metrics::Counter& shrinks = metrics::Default().GetCounter(
          "silt_isr_shrinks_total", "ISR shrinks of partitions this node leads");
      static metrics::Counter& expands = metrics::Default().GetCounter(
          "silt_isr_expands_total", "ISR expansions of partitions this node leads");
      (next.expanding ? expands : shrinks).Inc();
    }
    std::lock_guard<std::mutex> lock(mu);
    outcomes.push_back(Outcome{next.key, next.record.partition_epoch, s});
    woken = true;
    cv.notify_all();
  }
}

ReplicaManager::ReplicaManager(ReplicaManagerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

ReplicaManager::~ReplicaManager() { Stop(); }

void ReplicaManager::Start() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->started || impl_->stopping) return;
  impl_->started = true;
  Impl* raw = impl_.get();
  impl_->worker = std::thread([raw] { raw->Run(); });
  impl_->proposer = std::thread([raw] { raw->Propose(); });
}

void ReplicaManager::Wake() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->woken = true;
  impl_->cv.notify_all();
}

void ReplicaManager::Stop() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopping = true;
    impl_->cv.notify_all();
  }
  if (impl_->worker.joinable()) impl_->worker.join();
  if (impl_->proposer.joinable()) impl_->proposer.join();
  impl_->fetchers.Stop();
}

}  // namespace silt::cluster
