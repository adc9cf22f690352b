// The partitions this node serves, opened on first use.
//
// Opening a partition (its log's recovery, then its producer state) happens outside the
// manager's lock, under a lock of that partition alone: a request for one partition never
// waits for another partition's first touch.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/ids.h"
#include "base/status.h"
#include "broker/metadata_store.h"
#include "broker/partition.h"

namespace silt::broker {

class PartitionManager {
 public:
  PartitionManager(LogProvider* logs, NodeId local) : logs_(logs), local_(local) {}
  ~PartitionManager();

  // The partition, opening it on first use. NotFound for a missing topic or partition;
  // InvalidArgument once the manager is shut down.
  Result<std::shared_ptr<Partition>> Get(const std::string& topic, PartitionId partition);
  // The partition if it is open, without opening it; null otherwise.
  std::shared_ptr<Partition> Find(const std::string& topic, PartitionId partition) const;
  // Every partition opened so far.
  std::vector<std::shared_ptr<Partition>> Opened() const;
  // The partitions that are offline until a restart: their log could not be opened (damage,
  // a failing disk) or failed a write or fsync since.
  std::vector<std::pair<std::string, int32_t>> Offline() const;
  // Lets go of a topic's partitions (before its deletion): later Gets open them afresh.
  void RemoveTopic(const std::string& topic);

  // Periodic upkeep: time-based flushes (flush.ms); with `retention`, deletes segments past
  // retention. Returns the number of segments deleted.
  int Maintain(bool retention);
  // Where each partition's high watermark hint comes from (replication-offset-checkpoint, in
  // cluster mode): called once per partition as it opens; kInvalidOffset for none. Set before
  // the first Get.
  using HintFn = std::function<Offset(const std::string& topic, PartitionId partition)>;
  void SetHighWatermarkHints(HintFn fn) { hints_ = std::move(fn); }
  // Wakes every delayed operation (the broker is stopping).
  void WakeAll();
  // Shuts every partition down (writing each one's producer snapshot); later Gets fail.
  void ShutdownAll();

 private:
  struct Slot {
    std::mutex open_mu;  // held while the partition opens (and by whoever replaces it)
    // Written under open_mu and mu_ (exclusive); read under either, so the fast path of Get
    // needs only the map's shared lock.
    std::shared_ptr<Partition> partition;
    // Set (under open_mu) when the log could not be opened for damage or a failing disk: the
    // partition is offline until restart, and every Get answers this.
    Status failed;
    std::atomic<bool> has_failed{false};  // failed is set (readable without open_mu)
  };
  struct Key {
    std::string topic;
    int32_t partition;
  };
  // Looked up by (string_view, partition): the request path copies no topic name.
  struct KeyView {
    std::string_view topic;
    int32_t partition;
  };
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(const KeyView& k) const {
      return std::hash<std::string_view>()(k.topic) * 31 + std::hash<int32_t>()(k.partition);
    }
    size_t operator()(const Key& k) const { return (*this)(KeyView{k.topic, k.partition}); }
  };
  struct KeyEq {
    using is_transparent = void;
    static KeyView View(const Key& k) { return {k.topic, k.partition}; }
    static KeyView View(const KeyView& k) { return k; }
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      KeyView x = View(a), y = View(b);
      return x.partition == y.partition && x.topic == y.topic;
    }
  };

  LogProvider* logs_;
  const NodeId local_;
  HintFn hints_;
  mutable std::shared_mutex mu_;  // guards slots_ and closed_
  std::unordered_map<Key, std::shared_ptr<Slot>, KeyHash, KeyEq> slots_;
  bool closed_ = false;
  std::atomic<bool> any_failed_{false};  // some slot's log could not be opened
};

}  // namespace silt::broker
