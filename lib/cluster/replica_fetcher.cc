// Replica fetchers (replica_fetcher.h).
#include "cluster/replica_fetcher.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include <sys/eventfd.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/metrics.h"
#include "broker/logging.h"
#include "cluster/peer_preamble.h"
#include "net/connection.h"
#include "protocol/messages.h"

namespace silt::cluster {

using protocol::ErrorCode;

TruncationDecision DecideTruncation(const LeaderEpochEnd& leader,
                                    const std::optional<broker::Partition::EpochEnd>& ours,
                                    Offset log_end, Offset high_watermark) {
  if (leader.end_offset.value() < 0) {
    return {Offset(std::min(high_watermark.value(), log_end.value())), true};
  }
  auto min = [](Offset a, Offset b) { return a.value() < b.value() ? a : b; };
  if (leader.epoch.value() < 0 || !ours) return {min(leader.end_offset, log_end), true};
  if (ours->epoch != leader.epoch) return {min(ours->end_offset, log_end), false};
  return {min(min(leader.end_offset, ours->end_offset), log_end), true};
}

OutOfRangeAction DecideOutOfRange(Offset leader_log_start, Offset log_end) {
  return leader_log_start.value() > log_end.value() ? OutOfRangeAction::kRestartAtStart
                                                    : OutOfRangeAction::kTruncate;
}

Result<broker::Partition::EpochEnd> LatestEpoch(const broker::Partition& p) {
  for (int32_t e = p.leader_epoch().value(); e >= 0; --e) {
    auto r = p.EndOffsetForEpoch(LeaderEpoch(e));
    if (r.ok()) return r;
    if (!r.status().IsNotFound()) return r.status();
  }
  return Status::NotFound(p.name() + ": no leader epoch in the log");
}

namespace {

using broker::LogDebug;
using broker::LogInfo;
using broker::LogWarn;

struct Key {
  std::string topic;
  int32_t partition;
  bool operator<(const Key& o) const {
    return partition != o.partition ? partition < o.partition : topic < o.topic;
  }
};

enum class FetchState { kTruncating, kFetching };

struct Entry {
  std::shared_ptr<broker::Partition> p;
  LeaderEpoch epoch;
  FetchState state = FetchState::kTruncating;
  int64_t delayed_until_ms = 0;  // MonotonicMs; 0: not delayed
  uint64_t generation = 0;       // bumped on every Add: answers to older requests are dropped
  int quick_retries = 0;         // retries after a leader behind on metadata (see Delay)
  bool busy = false;             // the fetcher appends or truncates it with mu_ released
};

}  // namespace

class FetcherThread {
 public:
  FetcherThread(NodeId self, NodeId leader, std::optional<Voter> to, ReplicaFetchConfig config)
      : self_(self), leader_(leader), to_(std::move(to)), config_(config),
        wake_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    thread_ = std::thread([this] { Run(); });
  }
  ~FetcherThread() {
    Stop();
    if (wake_fd_ >= 0) ::close(wake_fd_);
  }

  void Add(LeaderEpoch epoch, std::shared_ptr<broker::Partition> p, uint64_t generation) {
    std::unique_lock<std::mutex> lock(mu_);
    Entry& e = entries_[Key{p->topic(), p->partition().value()}];
    cv_.wait(lock, [&] { return !e.busy; });  // an append of the old generation ends first
    e.p = std::move(p);
    e.epoch = epoch;
    e.state = FetchState::kTruncating;
    e.delayed_until_ms = 0;
    e.generation = generation;
    e.quick_retries = 0;
    Kick();
  }
  // Once this returns the fetcher appends to the partition no more: an append or truncation
  // in progress (the entry is busy) is waited for, and the fetcher touches only entries it
  // finds in the map.
  bool Remove(const Key& k) {
    std::unique_lock<std::mutex> lock(mu_);
    auto it = entries_.find(k);
    if (it == entries_.end()) return false;
    cv_.wait(lock, [&] { return !it->second.busy; });
    entries_.erase(it);
    return true;
  }
  bool Has(const Key& k) const {
    std::lock_guard<std::mutex> lock(mu_);
    return entries_.count(k) > 0;
  }
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      Kick();
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  struct Snap {
    Key key;
    Entry e;
  };

  bool Stopping() {
    std::lock_guard<std::mutex> lock(mu_);
    return stopping_;
  }
  // Wakes the thread (mu_ held): out of Sleep, and out of a fetch waiting at the leader (a
  // partition just added, often one this node must now follow after a failover, would
  // otherwise wait for that long poll, up to replica.fetch.wait.max.ms, and then the backoff).
  void Kick() {
    kicked_ = true;
    cv_.notify_all();
    if (wake_fd_ >= 0) {
      uint64_t one = 1;
      ssize_t n = ::write(wake_fd_, &one, sizeof one);
      (void)n;  // a full counter is already a wake-up
    }
  }
  // Runs `io` on e's partition with mu_ released (held by `lock` before and after) and the
  // entry marked busy, so that an Add or Remove of that partition waits for it and nothing
  // else does: a follower's disk never holds up another partition's role change.
  template <class F>
  auto Unlocked(std::unique_lock<std::mutex>& lock, Entry* e, F io) {
    e->busy = true;
    std::shared_ptr<broker::Partition> p = e->p;
    lock.unlock();
    auto r = io(*p);
    lock.lock();
    e->busy = false;
    cv_.notify_all();
    return r;
  }
  // Takes the pending wake-up, if any (at the start of a round, before picking its entries).
  void Unkick() {
    std::lock_guard<std::mutex> lock(mu_);
    kicked_ = false;
    uint64_t v;
    if (wake_fd_ >= 0) {
      ssize_t n = ::read(wake_fd_, &v, sizeof v);
      (void)n;  // EAGAIN: nothing was pending
    }
  }
  bool Kicked() {
    std::lock_guard<std::mutex> lock(mu_);
    return kicked_ || stopping_;
  }
  // Waits up to `ms`, returning early when stopping or when an entry is added.
  void Sleep(int64_t ms) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return stopping_ || kicked_; });
  }
  std::vector<Snap> Ready(FetchState state) {
    std::vector<Snap> out;
    const int64_t now = MonotonicMs();
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [k, e] : entries_) {
      if (e.state != state) continue;
      if (e.delayed_until_ms != 0 && e.delayed_until_ms > now) continue;
      e.delayed_until_ms = 0;
      out.push_back(Snap{k, e});
    }
    return out;
  }
  // The current entry for `s`, if it is still the one the request was made for (mu_ held).
  Entry* Current(const Snap& s) {
    auto it = entries_.find(s.key);
    if (it == entries_.end() || it->second.generation != s.e.generation) return nullptr;
    return &it->second;
  }
  void Delay(Entry* e) { e->delayed_until_ms = MonotonicMs() + config_.fetch_backoff_ms; }
  // After an error: a leader that does not know our leader epoch yet, or does not lead yet,
  // has most likely not applied the change this node already has (a failover reaches the
  // brokers a few milliseconds apart): asked again soon, a few times, before the backoff.
  void Delay(Entry* e, ErrorCode error) {
    constexpr int kQuickRetries = 8;
    constexpr int64_t kQuickRetryMs = 25;
    if ((error == ErrorCode::UNKNOWN_LEADER_EPOCH || error == ErrorCode::NOT_LEADER_OR_FOLLOWER) &&
        e->quick_retries < kQuickRetries) {
      ++e->quick_retries;
      e->delayed_until_ms = MonotonicMs() + kQuickRetryMs;
      return;
    }
    Delay(e);
  }
  // How long the thread may sleep when nothing is ready: to the first delayed entry's time,
  // at most `cap` ms.
  int64_t IdleMs(int64_t cap) {
    const int64_t now = MonotonicMs();
    std::lock_guard<std::mutex> lock(mu_);
    int64_t ms = cap;
    for (const auto& [k, e] : entries_)
      if (e.delayed_until_ms != 0) ms = std::min(ms, std::max<int64_t>(1, e.delayed_until_ms - now));
    return ms;
  }

  // Waits for the next answer; Stop() cuts the wait short, and so does an Add when
  // `abandon_on_add` (a fetch long-polling at the leader: the caller then reconnects and asks
  // again with the new partition in the request).
  Status Await(int32_t id, std::string* body, int64_t deadline_ms, bool abandon_on_add = false) {
    for (;;) {
      if (Stopping()) return Status::Busy("stopping");
      if (abandon_on_add && Kicked()) {
        abandoned_ = true;
        return Status::Busy("a partition was added: the fetch is sent again");
      }
      const int64_t left = deadline_ms - MonotonicMs();
      if (left < 0) return Status::IOError("no answer from the leader in time");
      // Without the wake-up descriptor (it stays readable until the next round drains it),
      // in ticks, so that Stop() is seen.
      if (conn_->Readable(static_cast<int>(std::min<int64_t>(left + 1, abandon_on_add ? 1000 : 100)),
                          abandon_on_add ? wake_fd_ : -1))
        break;
    }
    int32_t got = 0;
    for (;;) {
      SILT_TRY(conn_->Receive(&got, body, config_.socket_timeout_ms));
      if (got == id) return Status::OK();
    }
  }

  void Run();
  bool Connect();
  Status TruncationRound(const std::vector<Snap>& batch);
  Status FetchRound(const std::vector<Snap>& batch);
  void Truncate(std::unique_lock<std::mutex>& lock, Entry* e, const LeaderEpochEnd& answer,
                const std::string& name);

  const NodeId self_;
  const NodeId leader_;
  const std::optional<Voter> to_;
  const ReplicaFetchConfig config_;
  const int wake_fd_;  // an eventfd: Kick() makes it readable, Unkick() drains it
  std::unique_ptr<net::Connection> conn_;
  int64_t last_connect_warning_ms_ = 0;
  bool abandoned_ = false;  // the last round's fetch was cut short by Kick (thread-only)

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool kicked_ = false;  // an entry was added (or Stop) since the round began
  std::map<Key, Entry> entries_;
  std::thread thread_;
};

bool FetcherThread::Connect() {
  if (conn_ && !conn_->broken()) return true;
  conn_.reset();
  if (!to_) return false;
  auto c = net::Connection::Open(net::HostPort{to_->host, to_->port},
                                 "silt-replica-" + std::to_string(self_.value()),
                                 // Short: a stopped leader accepts and then says nothing,
                                 // and Stop() waits for this thread.
                                 std::min(config_.socket_timeout_ms, 3000),
                                 EncodePreamble(PeerStream::kKafka, self_));
  if (!c.ok()) {
    int64_t now = MonotonicMs();
    if (now - last_connect_warning_ms_ > 10000) {
      last_connect_warning_ms_ = now;
      LogWarn("replica fetcher: connecting to node " + std::to_string(leader_.value()) + " at " +
              to_->address() + ": " + c.status().ToString());
    }
    return false;
  }
  conn_ = std::move(c).value();
  LogDebug("replica fetcher: connected to node " + std::to_string(leader_.value()));
  return true;
}

void FetcherThread::Run() {
  while (!Stopping()) {
    Unkick();
    std::vector<Snap> truncating = Ready(FetchState::kTruncating);
    std::vector<Snap> fetching = Ready(FetchState::kFetching);
    if (truncating.empty() && fetching.empty()) {
      bool idle = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        idle = entries_.empty();
      }
      if (idle) conn_.reset();  // nothing followed from this node any more
      Sleep(IdleMs(50));
      continue;
    }
    if (!Connect()) {
      Sleep(config_.fetch_backoff_ms);
      continue;
    }
    Status s = Status::OK();
    if (!truncating.empty()) s = TruncationRound(truncating);
    if (s.ok() && !fetching.empty()) s = FetchRound(fetching);
    if (!s.ok()) {
      if (Stopping()) break;
      if (abandoned_) {
        // The leader may still answer the fetch cut short: a new connection, at once.
        abandoned_ = false;
        conn_.reset();
        continue;
      }
      LogDebug("replica fetcher for node " + std::to_string(leader_.value()) + ": " +
               s.ToString());
      conn_.reset();
      Sleep(config_.fetch_backoff_ms);
    }
  }
  conn_.reset();
}

Status FetcherThread::TruncationRound(const std::vector<Snap>& batch) {
  SILT_ASSIGN_OR_RETURN(int16_t version,
                        conn_->RequireVersion(protocol::ApiKey::kOffsetForLeaderEpoch));
  if (version < 3) return Status::Unsupported("the leader's OffsetForLeaderEpoch lacks replica_id");
  protocol::OffsetForLeaderEpochRequest req;
  req.replica_id = self_.value();
  std::map<std::string, size_t> topic_index;
  std::vector<const Snap*> asked;
  for (const Snap& s : batch) {
    // Our latest epoch: the largest the log knows at all.
    auto latest = LatestEpoch(*s.e.p);
    if (!latest.ok()) {
      // No epochs in our log (empty, or written before epochs): nothing to ask about; Kafka
      // truncates such a replica to its high watermark.
      LogDebug(s.e.p->name() + ": " + latest.status().ToString());
      std::unique_lock<std::mutex> lock(mu_);
      Entry* e = Current(s);
      if (e == nullptr) continue;
      Offset hw = e->p->high_watermark();
      if (hw.value() < e->p->log_end_offset().value()) {
        LogInfo(e->p->name() + ": no leader epochs in the log; truncating to the high watermark " +
                std::to_string(hw.value()));
        Status t = Unlocked(lock, e, [&](broker::Partition& p) { return p.TruncateTo(hw); });
        if (!t.ok()) {
          LogWarn(e->p->name() + ": truncating to the high watermark: " + t.ToString());
          Delay(e);
          continue;
        }
      }
      e->state = FetchState::kFetching;
      continue;
    }
    auto [it, fresh] = topic_index.try_emplace(s.key.topic, req.topics.size());
    if (fresh) req.topics.push_back({s.key.topic, {}});
    req.topics[it->second].partitions.push_back(
        {s.key.partition, s.e.epoch.value(), latest->epoch.value()});
    asked.push_back(&s);
  }
  if (asked.empty()) return Status::OK();
  SILT_ASSIGN_OR_RETURN(int32_t id, conn_->Send(req, version));
  std::string body;
  SILT_TRY(Await(id, &body, MonotonicMs() + config_.socket_timeout_ms));
  protocol::OffsetForLeaderEpochResponse resp;
  ByteReader r(body);
  SILT_TRY(resp.Decode(r, version));
  std::unique_lock<std::mutex> lock(mu_);
  for (const Snap* s : asked) {
    Entry* e = Current(*s);
    if (e == nullptr) continue;
    const protocol::OffsetForLeaderEpochResponse::Partition* found = nullptr;
    for (const auto& t : resp.topics) {
      if (t.topic != s->key.topic) continue;
      for (const auto& p : t.partitions) {
        if (p.partition == s->key.partition) found = &p;
      }
    }
    if (found == nullptr) {
      Delay(e);
      continue;
    }
    LeaderEpochEnd answer{static_cast<ErrorCode>(found->error_code), LeaderEpoch(found->leader_epoch),
                          Offset(found->end_offset)};
    if (answer.error != ErrorCode::NONE) {
      LogDebug(e->p->name() + ": OffsetForLeaderEpoch from node " +
               std::to_string(leader_.value()) + ": " + protocol::ErrorName(answer.error));
      Delay(e, answer.error);
      continue;
    }
    Truncate(lock, e, answer, e->p->name());
  }
  return Status::OK();
}

void FetcherThread::Truncate(std::unique_lock<std::mutex>& lock, Entry* e,
                             const LeaderEpochEnd& answer, const std::string& name) {
  std::optional<broker::Partition::EpochEnd> ours;
  if (answer.epoch.value() >= 0) {
    auto r = e->p->EndOffsetForEpoch(answer.epoch);
    if (r.ok()) ours = *r;
  }
  const Offset end = e->p->log_end_offset();
  TruncationDecision d = DecideTruncation(answer, ours, end, e->p->high_watermark());
  if (d.truncate_to.value() < end.value()) {
    LogInfo(name + ": truncating to offset " + std::to_string(d.truncate_to.value()) +
            " (log end " + std::to_string(end.value()) + "; leader " +
            std::to_string(leader_.value()) + " ends epoch " +
            std::to_string(answer.epoch.value()) + " at " +
            std::to_string(answer.end_offset.value()) + ")");
    Status t = Unlocked(lock, e, [&](broker::Partition& p) { return p.TruncateTo(d.truncate_to); });
    if (!t.ok()) {
      LogWarn(name + ": truncation: " + t.ToString());
      Delay(e);
      return;
    }
  } else if (!d.done) {
    // Nothing cut, so the next question would be the same: the leader's answer stands.
    d.done = true;
  }
  if (d.done) e->state = FetchState::kFetching;
}

Status FetcherThread::FetchRound(const std::vector<Snap>& batch) {
  SILT_ASSIGN_OR_RETURN(int16_t version, conn_->RequireVersion(protocol::ApiKey::kFetch));
  protocol::FetchRequest req;
  req.replica_id = self_.value();
  // The leader holds an idle fetch up to max_wait_ms; an entry waiting to be retried (a
  // truncation asked of a leader not yet leading, just after a failover) must not wait that
  // long behind it.
  req.max_wait_ms = static_cast<int32_t>(IdleMs(config_.fetch_wait_max_ms));
  req.min_bytes = 1;
  req.max_bytes = config_.fetch_response_max_bytes;
  req.isolation_level = 0;
  req.session_id = 0;
  req.session_epoch = -1;  // full fetches, no sessions
  std::map<std::string, size_t> topic_index;
  for (const Snap& s : batch) {
    auto [it, fresh] = topic_index.try_emplace(s.key.topic, req.topics.size());
    if (fresh) req.topics.push_back({s.key.topic, {}});
    protocol::FetchRequest::Partition fp;
    fp.partition = s.key.partition;
    fp.current_leader_epoch = s.e.epoch.value();
    fp.fetch_offset = s.e.p->log_end_offset().value();
    fp.log_start_offset = s.e.p->log_start_offset().value();
    fp.partition_max_bytes = config_.fetch_max_bytes;
    req.topics[it->second].partitions.push_back(fp);
  }
  SILT_ASSIGN_OR_RETURN(int32_t id, conn_->Send(req, version));
  std::string body;
  SILT_TRY(Await(id, &body, MonotonicMs() + config_.fetch_wait_max_ms + config_.socket_timeout_ms,
                 /*abandon_on_add=*/true));
  {
    // Looked up once per fetcher thread (one thread per leader), not per fetch.
    thread_local int32_t counted_leader = -1;
    thread_local metrics::Counter* requests = nullptr;
    thread_local metrics::Counter* bytes = nullptr;
    if (requests == nullptr || counted_leader != leader_.value()) {
      metrics::Labels l = {{"leader", std::to_string(leader_.value())}};
      requests = &metrics::Default().GetCounter(
          "silt_replica_fetch_requests_total", "Follower side: fetches answered by each leader", l);
      bytes = &metrics::Default().GetCounter(
          "silt_replica_fetch_bytes_total",
          "Follower side: bytes of the fetch responses from each leader (records included)", l);
      counted_leader = leader_.value();
    }
    requests->Inc();
    bytes->Inc(body.size());
  }
  protocol::FetchResponse resp;
  ByteReader r(body);
  SILT_TRY(resp.Decode(r, version));
  if (resp.error_code != 0) {
    return Status::IOError(std::string("fetch: ") +
                           protocol::ErrorName(static_cast<ErrorCode>(resp.error_code)));
  }
  std::unique_lock<std::mutex> lock(mu_);
  for (const auto& t : resp.responses) {
    for (const auto& fp : t.partitions) {
      const Snap* s = nullptr;
      for (const Snap& c : batch) {
        if (c.key.partition == fp.partition_index && c.key.topic == t.topic) s = &c;
      }
      if (s == nullptr) continue;
      Entry* e = Current(*s);
      if (e == nullptr || e->state != FetchState::kFetching) continue;
      auto error = static_cast<ErrorCode>(fp.error_code);
      switch (error) {
        case ErrorCode::NONE:
          break;
        case ErrorCode::OFFSET_OUT_OF_RANGE: {
          Offset end = e->p->log_end_offset();
          if (DecideOutOfRange(Offset(fp.log_start_offset), end) ==
              OutOfRangeAction::kTruncate) {
            e->state = FetchState::kTruncating;
          } else {
            LogWarn(e->p->name() + ": the leader's log starts at " +
                    std::to_string(fp.log_start_offset) + ", above this replica's log end " +
                    std::to_string(end.value()) + "; cannot restart there yet");
            Delay(e);
          }
          continue;
        }
        default:
          LogDebug(e->p->name() + ": fetch from node " + std::to_string(leader_.value()) + ": " +
                   protocol::ErrorName(error));
          Delay(e, error);
          continue;
      }
      e->quick_retries = 0;
      if (fp.records.bytes && !fp.records.bytes->empty()) {
        auto appended = Unlocked(lock, e, [&](broker::Partition& p) {
          return p.AppendAsFollower(*fp.records.bytes);
        });
        if (!appended.ok()) {
          if (appended.status().code() == Status::Code::kInvalidArgument) {
            // Not at our log end (a truncation in between): agree with the leader again.
            e->state = FetchState::kTruncating;
          } else {
            LogWarn(e->p->name() + ": appending what node " + std::to_string(leader_.value()) +
                    " sent: " + appended.status().ToString());
            Delay(e);
          }
          continue;
        }
      }
      const Offset hw_before = e->p->high_watermark();
      e->p->UpdateFollowerHighWatermark(Offset(fp.high_watermark));
      if (e->p->high_watermark() != hw_before) {
        LogDebug(e->p->name() + ": high watermark " + std::to_string(e->p->high_watermark().value()) +
                 " (the leader's " + std::to_string(fp.high_watermark) + ")");
      }
    }
  }
  return Status::OK();
}

struct ReplicaFetchers::Impl {
  NodeId self;
  std::vector<Voter> voters;
  ReplicaFetchConfig config;
  mutable std::mutex mu;
  bool stopped = false;
  uint64_t generation = 0;
  std::map<int32_t, std::unique_ptr<FetcherThread>> threads;  // by leader id
  std::map<Key, int32_t> leader_of;
};

ReplicaFetchers::ReplicaFetchers(NodeId self, std::vector<Voter> voters,
                                 ReplicaFetchConfig config)
    : impl_(std::make_unique<Impl>()) {
  impl_->self = self;
  impl_->voters = std::move(voters);
  impl_->config = config;
}

ReplicaFetchers::~ReplicaFetchers() { Stop(); }

void ReplicaFetchers::Add(NodeId leader, LeaderEpoch epoch, std::shared_ptr<broker::Partition> p) {
  Key k{p->topic(), p->partition().value()};
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->stopped) return;
  auto old = impl_->leader_of.find(k);
  if (old != impl_->leader_of.end() && old->second != leader.value()) {
    impl_->threads.at(old->second)->Remove(k);
  }
  auto& t = impl_->threads[leader.value()];
  if (!t) {
    std::optional<Voter> to = FindVoter(impl_->voters, leader);
    if (!to && impl_->config.resolve_peer) to = impl_->config.resolve_peer(leader);
    t = std::make_unique<FetcherThread>(impl_->self, leader, to, impl_->config);
  }
  t->Add(epoch, std::move(p), ++impl_->generation);
  impl_->leader_of[k] = leader.value();
}

void ReplicaFetchers::Remove(const std::string& topic, PartitionId partition) {
  Key k{topic, partition.value()};
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->leader_of.find(k);
  if (it == impl_->leader_of.end()) return;
  impl_->threads.at(it->second)->Remove(k);
  impl_->leader_of.erase(it);
}

std::optional<NodeId> ReplicaFetchers::LeaderOf(const std::string& topic,
                                                PartitionId partition) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->leader_of.find(Key{topic, partition.value()});
  if (it == impl_->leader_of.end()) return std::nullopt;
  return NodeId(it->second);
}

void ReplicaFetchers::Stop() {
  std::map<int32_t, std::unique_ptr<FetcherThread>> threads;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopped = true;
    threads.swap(impl_->threads);
    impl_->leader_of.clear();
  }
  for (auto& [id, t] : threads) t->Stop();
}

}  // namespace silt::cluster
