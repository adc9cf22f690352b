// One partition as the broker serves it: the seam between the request handlers and storage.
//
// A Partition owns its log, the idempotent-producer state, the leader epoch, and the two
// offsets that replication keeps apart (Kafka's names):
//
//   log_start_offset <= high_watermark <= log_end_offset
//
//   log_end_offset  the next offset this replica will assign or receive
//   high_watermark  every record below it is on every in-sync replica ("committed"): the
//                   most a consumer may read, and what acks=all waits for. It only moves up,
//                   except when a truncation cuts the log below it.
//
// The high watermark is the minimum log end over the in-sync replicas (ISR). On a single node
// the ISR is this node alone, so the high watermark follows the log end at every append.
//
// Delayed operations (a Fetch waiting for bytes, a Produce with acks=all waiting for its batch
// to be committed) register a PartitionWatcher for the offset they care about; a registration
// is told once, at the next move of that offset (or when the partition goes away), and must
// register again to hear of the one after. See broker/delayed_operation.h.
//
// Thread-safety: every method may be called from any thread. Producer checks and the append
// they guard run under one per-partition mutex, so the sequence checks and the offsets assigned
// agree; reads never wait for that mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/file_slice.h"
#include "base/ids.h"
#include "base/status.h"
#include "broker/producer_state.h"
#include "protocol/errors.h"
#include "storage/log_config.h"

namespace silt::storage {
class PartitionLog;
}

namespace silt::broker {

// Something waiting for a partition's log end or high watermark to move (a delayed operation).
class PartitionWatcher {
 public:
  virtual ~PartitionWatcher() = default;
  // Called on the thread that moved the offset, outside the partition's locks; must not block.
  virtual void OnPartitionChanged() = 0;
};

// Which offset a watcher waits on: followers wait for the log end, consumers and acks=all
// producers for the high watermark.
enum class WatchOffset { kLogEnd, kHighWatermark };

// Who is reading: a consumer sees only committed records (below the high watermark), a
// follower (a replica fetching) everything up to the log end.
enum class ReadIsolation { kCommitted, kLogEnd };

// What a produce append did, or why it did not happen.
struct ProduceAppend {
  protocol::ErrorCode error = protocol::ErrorCode::NONE;
  std::string message;
  Offset base_offset = kInvalidOffset;
  Offset last_offset = kInvalidOffset;
  int64_t log_append_time = -1;       // LogAppendTime topics; -1 for CreateTime
  Offset log_start_offset = kInvalidOffset;
};

// The offsets a fetch response carries, and the record bytes of one read.
struct PartitionRead {
  protocol::ErrorCode error = protocol::ErrorCode::NONE;
  Offset log_start_offset = kInvalidOffset;
  Offset high_watermark = kInvalidOffset;
  Offset log_end_offset = kInvalidOffset;
  // Whole batches from the one holding the fetch offset, in one file range (adjacent slices
  // of one segment joined; a read never spans segments so that it goes out as one sendfile).
  std::optional<FileSlice> records;
};

// A ListOffsets answer: an offset and the timestamp and leader epoch that go with it.
struct OffsetAnswer {
  protocol::ErrorCode error = protocol::ErrorCode::NONE;
  Offset offset = kInvalidOffset;
  int64_t timestamp = -1;
  LeaderEpoch leader_epoch = kNoLeaderEpoch;
};

class Partition {
 public:
  // Takes a log already opened (and recovered) by the caller, and rebuilds the producer state
  // from it. `local` is this node; the ISR starts as {local} (a single node).
  static Result<std::shared_ptr<Partition>> Open(std::string topic, PartitionId partition,
                                                 std::shared_ptr<storage::PartitionLog> log,
                                                 NodeId local, LeaderEpoch leader_epoch);
  ~Partition();

  const std::string& topic() const { return topic_; }
  PartitionId partition() const { return partition_; }
  std::string name() const;  // "topic-N", for log lines

  Offset log_start_offset() const;
  Offset log_end_offset() const;
  Offset high_watermark() const;
  LeaderEpoch leader_epoch() const;
  // The topic config in force for this partition (a copy).
  storage::LogConfig config() const;
  // False once the partition is deleted or closed: every call then answers
  // UNKNOWN_TOPIC_OR_PARTITION (or NotFound).
  bool alive() const;

  // ---- writes ----
  // Appends one validated producer batch of `size` bytes at `batch` (patched in place: base
  // offset and leader epoch). Checks the batch's keys against cleanup.policy=compact and the
  // idempotent producer's sequence: a retry of one of the producer's last five batches is
  // answered with the original offsets and appends nothing. Producer state is recorded exactly
  // when the batch is in the log. `config` is the one the caller validated the batch against
  // (config(), read once per request).
  ProduceAppend AppendFromProducer(char* batch, size_t size, const storage::LogConfig& config);
  // Appends a batch the broker built itself (group metadata, offsets), with no producer checks.
  Result<Offset> AppendInternal(std::string* batch);
  // Delete-records: moves the log start to `offset` (-1: the high watermark). Offsets above
  // the high watermark are OFFSET_OUT_OF_RANGE. Returns the new log start.
  Result<Offset> DeleteRecordsBefore(int64_t offset, protocol::ErrorCode* error);
  // Cuts every record at or after `offset` (replication truncation); producer state is rebuilt
  // from what is left, and the high watermark drops to the new log end if it was above it.
  Status TruncateTo(Offset offset);

  // ---- reads ----
  // A fetch at `offset`: up to `max_bytes` (at least one whole batch when `min_one`), never
  // past the high watermark for kCommitted. OFFSET_OUT_OF_RANGE below the log start or above
  // the log end (a consumer between the high watermark and the log end gets no records and no
  // error, as in Kafka).
  PartitionRead Read(Offset offset, int64_t max_bytes, bool min_one, ReadIsolation isolation) const;
  // ListOffsets: -1 latest (the high watermark for consumers), -2 earliest, or the first
  // committed record whose timestamp is >= `timestamp`.
  OffsetAnswer ListOffset(int64_t timestamp) const;
  // Calls fn with each whole batch's bytes from the log start up to `upper_bound`
  // (the offset store's replay, producer recovery). Stops at fn's first non-OK Status.
  Status ForEachBatch(Offset upper_bound,
                      const std::function<Status(std::string_view batch)>& fn) const;

  // ---- replication seam ----
  // Sets the in-sync replicas (always including the local node while it leads).
  void SetIsr(std::vector<NodeId> isr);
  // A follower's log end, as its fetches report it; may move the high watermark.
  void RecordFollowerLogEnd(NodeId follower, Offset log_end);

  // ---- roles (set by cluster mode's replica manager from the metadata) ----
  // A partition opens as leader of epoch `leader_epoch` with ISR {local} (a single node).
  //
  // Leads epoch `epoch` with `replicas` assigned and `isr` in sync (partition epoch
  // `partition_epoch`, the metadata's version of this partition's state). When `epoch` is new,
  // its start offset (the log end now) goes into the leader-epoch checkpoint first. Follower
  // state starts afresh (Kafka's makeLeader): each follower's log end unknown until it fetches,
  // its last caught-up time now.
  Status BecomeLeader(LeaderEpoch epoch, int32_t partition_epoch, std::vector<NodeId> replicas,
                      std::vector<NodeId> isr);
  // Follows `leader` in epoch `epoch`: clients' produce and fetch get NOT_LEADER_OR_FOLLOWER;
  // only AppendAsFollower writes. The high watermark stays where it is until the leader says.
  Status BecomeFollower(LeaderEpoch epoch, int32_t partition_epoch, NodeId leader);
  // True while this replica leads (the single-node default).
  bool is_leader() const;
  // The leader this replica follows, or the local node while it leads; -1 when unknown.
  NodeId leader() const;
  int32_t partition_epoch() const;
  std::vector<NodeId> isr() const;

  // ---- follower side ----
  // Appends whole batches fetched from the leader (`batches`: one or more record batches as
  // stored, v2 only, starting exactly at the log end), keeping their offsets and leader epochs
  // (each new epoch seen goes into the leader-epoch checkpoint), and applies each batch's
  // producer state as a replica (no sequence checks). A trailing partial batch is not appended.
  // InvalidArgument when the first batch does not start at the log end, Corruption for a damaged
  // batch (nothing after it is appended). Returns the new log end.
  Result<Offset> AppendAsFollower(std::string_view batches);
  // A follower's high watermark: min(`leader_high_watermark`, log end); never moves down.
  void UpdateFollowerHighWatermark(Offset leader_high_watermark);
  // Kafka's OffsetForLeaderEpoch answer: the largest epoch <= `epoch` this log knows and the
  // offset where it ends (the next epoch's start, or the log end for the latest). NotFound when
  // `epoch` predates every epoch in the log.
  struct EpochEnd {
    LeaderEpoch epoch;
    Offset end_offset;
  };
  Result<EpochEnd> EndOffsetForEpoch(LeaderEpoch epoch) const;

  // ---- leader side: followers ----
  // What the leader knows of one follower (Kafka's Replica state).
  struct FollowerState {
    NodeId id;
    Offset log_end = kInvalidOffset;        // from its last fetch; -1 before the first
    Offset log_start = kInvalidOffset;
    int64_t last_caught_up_ms = 0;          // steady-clock ms: it last had everything we had
    int64_t last_fetch_ms = 0;
  };
  // A follower fetched at `fetch_offset` (its log end) with log start `log_start`, at
  // `now_ms` (steady clock). Updates its caught-up time the way Kafka does (caught up when
  // the fetch reached the leader's log end, or the log end of the leader's previous answer to
  // it), and may move the high watermark. Ignored unless leading and `follower` is a replica.
  void RecordFollowerFetch(NodeId follower, Offset fetch_offset, Offset log_start, int64_t now_ms);
  std::vector<FollowerState> Followers() const;

  // ---- delayed operations ----
  // Registers `w` to be told once about the next move of `which` (weakly held).
  void Watch(WatchOffset which, std::weak_ptr<PartitionWatcher> w);
  // Tells every registered watcher (used at shutdown and deletion).
  void WakeAll();

  // Marks the partition gone (topic deleted, broker closing): waits for calls that are using
  // the log, lets go of it (its owner, the data dir, closes it) and wakes every watcher.
  void Shutdown();
  // Writes a producer-state snapshot at the log end (clean shutdown), so that the next start
  // replays nothing.
  Status WriteProducerSnapshot();
  // True after a failed flush: writes and reads answer KAFKA_STORAGE_ERROR until a restart.
  bool offline() const { return offline_.load(); }
  // Flushes the log when flush.ms has passed (periodic upkeep); retention. Internal to the
  // partition manager.
  Status MaybeFlush();
  Result<int> ApplyRetention();

 private:
  Partition(std::string topic, PartitionId partition, std::shared_ptr<storage::PartitionLog> log,
            NodeId local, LeaderEpoch epoch);
  // Recomputes the high watermark from the ISR's log ends (`local_end` is this replica's);
  // returns true when it moved. Called with hw_mu_ held; callers read `local_end` before taking it,
  // as the lock order is life_mu_ before hw_mu_ (an end read a moment early only delays the
  // high watermark to the next call).
  bool MaybeAdvanceHighWatermarkLocked(Offset local_end);
  // Called after the log end moved (with no lock held): moves the high watermark and tells
  // the watchers of whichever moved.
  void OnLogEndMoved();
  void Notify(WatchOffset which);
  Status RebuildProducerStateLocked();
  // Runs one log append (fn) marked as this partition's appending thread, for the roll
  // listener.
  template <typename Fn>
  auto AppendingThread(Fn&& fn);
  Status TakeOfflineAfter(const Status& flush_error);

  const std::string topic_;
  const PartitionId partition_;
  const NodeId local_;

  // Readers of log_ share this; Shutdown takes it exclusively.
  mutable std::shared_mutex life_mu_;
  std::shared_ptr<storage::PartitionLog> log_;
  const std::string log_dir_;
  std::atomic<bool> offline_{false};
  std::atomic<bool> alive_{true};  // false from Shutdown on (log_ goes right after)
  std::atomic<std::thread::id> append_thread_{};

  // Guards producers_ and makes check + append + record one step.
  mutable std::mutex produce_mu_;
  ProducerStateTable producers_;

  // Guards the replication state below.
  mutable std::mutex hw_mu_;
  LeaderEpoch leader_epoch_;
  bool leading_ = true;
  NodeId leader_;
  int32_t partition_epoch_ = 0;
  std::vector<NodeId> isr_;
  std::vector<std::pair<NodeId, Offset>> follower_log_end_;
  std::atomic<int64_t> high_watermark_{0};

  std::mutex watch_mu_;
  std::vector<std::weak_ptr<PartitionWatcher>> log_end_watchers_;
  std::vector<std::weak_ptr<PartitionWatcher>> hw_watchers_;
};

}  // namespace silt::broker
