#include "broker/fetch_session.h"

#include <climits>
#include <tuple>

#include "broker/broker_metrics.h"

namespace silt::broker {

// ---- FetchSession --------------------------------------------------------------------------

FetchSession::Key FetchSession::KeyOf(const std::string& topic, const Uuid& topic_id,
                                      int32_t partition) const {
  return {uses_topic_ids_ ? topic_id.ToString() : topic, partition};
}

void FetchSession::Upsert(const SessionPartition& p) {
  Key key = KeyOf(p.topic, p.topic_id, p.partition);
  auto it = index_.find(key);
  if (it == index_.end()) {
    partitions_.push_back(p);
    index_.emplace(std::move(key), std::prev(partitions_.end()));
    return;
  }
  SessionPartition& have = *it->second;
  have.topic = p.topic;
  have.fetch_offset = p.fetch_offset;
  have.partition_max_bytes = p.partition_max_bytes;
  have.current_leader_epoch = p.current_leader_epoch;
  have.last_fetched_epoch = p.last_fetched_epoch;
  have.log_start_offset = p.log_start_offset;
}

void FetchSession::Forget(const Key& key) {
  auto it = index_.find(key);
  if (it == index_.end()) return;
  partitions_.erase(it->second);
  index_.erase(it);
}

SessionPartition* FetchSession::Find(const Key& key) {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &*it->second;
}

void FetchSession::MoveToEnd(const Key& key) {
  auto it = index_.find(key);
  if (it == index_.end()) return;
  partitions_.splice(partitions_.end(), partitions_, it->second);
}

// ---- FetchSessionCache ---------------------------------------------------------------------

FetchSessionCache::FetchSessionCache(Options options)
    : options_(options), rng_(std::random_device{}()) {}

FetchSessionCache::~FetchSessionCache() {
  RequestMetrics::Get().fetch_sessions()->Add(-static_cast<int64_t>(sessions_.size()));
}

int32_t FetchSessionCache::NextEpoch(int32_t epoch) {
  if (epoch < 0) return epoch;
  return epoch == INT32_MAX ? 1 : epoch + 1;
}

std::shared_ptr<FetchSession> FetchSessionCache::Get(int32_t id, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return nullptr;
  it->second.last_used_ms = now_ms;
  return it->second.session;
}

void FetchSessionCache::Remove(int32_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (sessions_.erase(id) > 0) RequestMetrics::Get().fetch_sessions()->Add(-1);
}

bool FetchSessionCache::MakeRoom(bool privileged, size_t partitions, int64_t now_ms) {
  if (sessions_.size() < options_.max_slots) return true;
  // The least recently used session, if it has been idle long enough.
  auto lru = sessions_.end();
  // The least valuable: a consumer's before a follower's, then the fewest partitions, then
  // the least recently used.
  auto least = sessions_.end();
  for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
    const Slot& s = it->second;
    if (lru == sessions_.end() || s.last_used_ms < lru->second.last_used_ms) lru = it;
    if (least == sessions_.end() ||
        std::make_tuple(s.session->privileged(), s.partitions, s.last_used_ms) <
            std::make_tuple(least->second.session->privileged(), least->second.partitions,
                            least->second.last_used_ms)) {
      least = it;
    }
  }
  auto victim = sessions_.end();
  if (lru != sessions_.end() && now_ms - lru->second.last_used_ms > options_.eviction_ms) {
    victim = lru;
  } else if (least != sessions_.end() &&
             std::make_pair(privileged, partitions) >
                 std::make_pair(least->second.session->privileged(), least->second.partitions)) {
    victim = least;
  }
  if (victim == sessions_.end()) return false;
  sessions_.erase(victim);
  ++evictions_;
  RequestMetrics::Get().fetch_sessions()->Add(-1);
  RequestMetrics::Get().fetch_session_evictions()->Inc();
  return true;
}

std::shared_ptr<FetchSession> FetchSessionCache::Create(
    bool privileged, bool uses_topic_ids, const std::vector<SessionPartition>& partitions,
    int64_t now_ms) {
  if (!enabled()) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  if (!MakeRoom(privileged, partitions.size(), now_ms)) return nullptr;
  int32_t id = 0;
  std::uniform_int_distribution<int32_t> pick(1, INT32_MAX);
  do {
    id = pick(rng_);
  } while (sessions_.count(id) > 0);
  auto session = std::make_shared<FetchSession>(id, privileged, uses_topic_ids);
  for (const SessionPartition& p : partitions) session->Upsert(p);
  Slot& slot = sessions_[id];
  slot.session = session;
  slot.last_used_ms = now_ms;
  slot.partitions = session->size();
  RequestMetrics::Get().fetch_sessions()->Add(1);
  return session;
}

void FetchSessionCache::Resized(const std::shared_ptr<FetchSession>& session, size_t partitions) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(session->id());
  if (it != sessions_.end() && it->second.session == session) it->second.partitions = partitions;
}

size_t FetchSessionCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.size();
}

int64_t FetchSessionCache::evictions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return evictions_;
}

}  // namespace silt::broker
