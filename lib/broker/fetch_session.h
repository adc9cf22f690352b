// Incremental fetch sessions (KIP-227, Fetch v7+).
//
// A client that sends a fetch with session epoch 0 asks for a session: the broker answers the
// full fetch and, when it has a slot, a session id. Later fetches name the session and its next
// epoch, carry only the partitions whose fetch position or limits changed (and those to forget),
// and get back only the partitions with something new: records, an error, or a moved high
// watermark, last stable offset or log start. The session remembers the rest: every partition's
// last request and what the client last heard of it.
//
// FetchSessionCache holds at most max.incremental.fetch.session.cache.slots sessions (Kafka's
// 1000; 0 turns sessions off). When it is full, a new session takes the slot of the least
// recently used one if that one has been idle for 2 minutes (Kafka's
// min.incremental.fetch.session.eviction.ms), else of the least valuable one if the new one is
// worth more: a follower's session over a consumer's, then more partitions over fewer. Otherwise
// the fetch is answered without a session (id 0) and the client keeps sending full fetches.
//
// Thread-safety: the cache is shared by every connection and has its own lock; a session's
// contents are guarded by its mu(). The cache never takes a session's lock, so the cache's may
// be taken while holding a session's (Resized).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "base/uuid.h"

namespace silt::broker {

// One partition of a session.
struct SessionPartition {
  std::string topic;  // the name; "" for a topic id no topic has
  Uuid topic_id;      // sessions of Fetch v13+ key partitions by topic id
  int32_t partition = 0;
  // From the latest request that named the partition.
  int64_t fetch_offset = 0;
  int32_t partition_max_bytes = 0;
  int32_t current_leader_epoch = -1;
  int32_t last_fetched_epoch = -1;
  int64_t log_start_offset = -1;  // a follower's
  // From the latest answer that carried the partition (-1 before the first).
  int64_t high_watermark = -1;
  int64_t last_stable_offset = -1;
  int64_t answered_log_start_offset = -1;
};

class FetchSession {
 public:
  // A partition's key in its session: the topic id (v13+) or name, and the partition.
  using Key = std::pair<std::string, int32_t>;

  FetchSession(int32_t id, bool privileged, bool uses_topic_ids)
      : id_(id), privileged_(privileged), uses_topic_ids_(uses_topic_ids) {}

  int32_t id() const { return id_; }
  // A follower's session, kept in preference to consumers' when slots run out.
  bool privileged() const { return privileged_; }
  // Made by Fetch v13+: partitions are named by topic id, and only such requests may use it.
  bool uses_topic_ids() const { return uses_topic_ids_; }
  std::mutex& mu() { return mu_; }

  // The rest needs mu().
  // The epoch the next request must carry.
  int32_t epoch() const { return epoch_; }
  void set_epoch(int32_t e) { epoch_ = e; }
  Key KeyOf(const std::string& topic, const Uuid& topic_id, int32_t partition) const;
  // Adds `p` at the end, or takes the request fields of `p` for a partition already there
  // (what the client last heard is kept).
  void Upsert(const SessionPartition& p);
  void Forget(const Key& key);
  SessionPartition* Find(const Key& key);
  // Moves a partition to the end of the order answers are built in, so that when max_bytes
  // cuts an answer short, the partitions that got nothing come first next time.
  void MoveToEnd(const Key& key);
  const std::list<SessionPartition>& partitions() const { return partitions_; }
  size_t size() const { return partitions_.size(); }

 private:
  const int32_t id_;
  const bool privileged_;
  const bool uses_topic_ids_;
  std::mutex mu_;
  int32_t epoch_ = 1;
  std::list<SessionPartition> partitions_;
  std::map<Key, std::list<SessionPartition>::iterator> index_;
};

class FetchSessionCache {
 public:
  struct Options {
    size_t max_slots = 1000;       // max.incremental.fetch.session.cache.slots
    int64_t eviction_ms = 120000;  // Kafka's min.incremental.fetch.session.eviction.ms
  };
  explicit FetchSessionCache(Options options);
  ~FetchSessionCache();
  FetchSessionCache(const FetchSessionCache&) = delete;
  FetchSessionCache& operator=(const FetchSessionCache&) = delete;

  bool enabled() const { return options_.max_slots > 0; }
  // The session with this id (marked used at `now_ms`), or nullptr.
  std::shared_ptr<FetchSession> Get(int32_t id, int64_t now_ms);
  void Remove(int32_t id);
  // A new session of `partitions` (epoch 1), or nullptr when no slot is free or can be taken.
  std::shared_ptr<FetchSession> Create(bool privileged, bool uses_topic_ids,
                                       const std::vector<SessionPartition>& partitions,
                                       int64_t now_ms);
  // Records that `session` now holds `partitions` partitions (for eviction by size).
  void Resized(const std::shared_ptr<FetchSession>& session, size_t partitions);
  size_t size() const;
  int64_t evictions() const;

  // Kafka's epoch sequence: 1, 2, ... INT32_MAX, then 1 again.
  static int32_t NextEpoch(int32_t epoch);

 private:
  struct Slot {
    std::shared_ptr<FetchSession> session;
    int64_t last_used_ms = 0;
    size_t partitions = 0;  // as of the last Create or Resized
  };
  // Takes a slot for a new session (`privileged`, of `partitions`); false when none can be had.
  bool MakeRoom(bool privileged, size_t partitions, int64_t now_ms);

  const Options options_;
  mutable std::mutex mu_;
  std::map<int32_t, Slot> sessions_;
  std::mt19937 rng_;
  int64_t evictions_ = 0;
};

}  // namespace silt::broker
