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
#include <unordered_map>
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
  // Everything below it is fsynced (storage::PartitionLog::recovery_point).
  Offset recovery_point() const;
  Offset high_watermark() const;
  // Bytes in the log's segment files (0 once the partition is gone): /metrics and
  // DescribeLogDirs.
  int64_t size_bytes() const;
  LeaderEpoch leader_epoch() const;
  // The idempotent producers known to this partition, ordered by producer id, with each one's
  // epoch and latest batch (DescribeProducers).
  struct ProducerSummary {
    ProducerId producer_id;
    int16_t epoch = -1;
    int32_t last_sequence = -1;
    int64_t last_timestamp = -1;
  };
  std::vector<ProducerSummary> ActiveProducers() const;
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
  // SiltAppendBatches into a mirror topic, at the leader: appends `size` bytes at `batches`
  // (whole v2 batches carrying their own offsets, checked for framing and CRC first) only when
  // `expected` is the log end, like a follower's append: no offsets are assigned, later batches
  // may leave gaps (a compacted source), control batches are kept, and each batch's producer
  // state is applied as a replica's. The partitionLeaderEpoch field of each batch (outside the
  // CRC) is restamped in place to this leader's epoch, so that the leader-epoch cache only ever
  // holds this cluster's epochs. Errors (nothing written): SILT_OFFSET_MISMATCH when `expected`
  // is not the log end or the first batch starts below it, CORRUPT_MESSAGE for a bad or partial
  // batch, NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR. `last_offset` is the last appended
  // batch's last offset; `log_end` the log end after the call, also on error.
  struct MirrorAppend {
    protocol::ErrorCode error = protocol::ErrorCode::NONE;
    std::string message;
    Offset last_offset = kInvalidOffset;
    Offset log_end = kInvalidOffset;
  };
  MirrorAppend AppendMirrored(char* batches, size_t size, Offset expected);
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
  // ListOffsets: -1 latest (the high watermark for consumers), -2 earliest, -3 the first record
  // with the largest timestamp, -4 earliest local (the log start: nothing is tiered), -5 latest
  // tiered (-1: nothing is tiered), or the first committed record whose timestamp is >=
  // `timestamp`.
  OffsetAnswer ListOffset(int64_t timestamp) const;
  // Calls fn with each whole batch's bytes from the log start up to `upper_bound`
  // (the offset store's replay, producer recovery). Stops at fn's first non-OK Status.
  Status ForEachBatch(Offset upper_bound,
                      const std::function<Status(std::string_view batch)>& fn) const;

  // ---- replication seam ----
  // Sets the in-sync replicas (always including the local node while it leads); a member not
  // yet among the replicas is added to them. May move the high watermark.
  void SetIsr(std::vector<NodeId> isr);
  // A follower's log end, as its fetches report it; may move the high watermark. (The bare form
  // of RecordFollowerFetch, for tests: it adds `follower` to the replicas when missing.)
  void RecordFollowerLogEnd(NodeId follower, Offset log_end);

  // ---- roles (set by cluster mode's replica manager from the metadata) ----
  // A partition opens as leader of epoch `leader_epoch` with ISR {local} (a single node), and
  // its high watermark at the log end. Role changes are serialised with appends (an append
  // runs wholly before or wholly after one).
  //
  // The first role change (BecomeLeader or BecomeFollower) starts the high watermark from the
  // restart hint (SetHighWatermarkHint; the log start without one), never above the log end:
  // what the log holds beyond it may not be committed.
  //
  // Leads epoch `epoch` with `replicas` assigned and `isr` in sync (partition epoch
  // `partition_epoch`, the metadata's version of this partition's state). When `epoch` is new
  // (above the current one, or this is the first role change), its start offset (the log end
  // now) goes into the leader-epoch checkpoint first, written before this returns, and follower
  // state starts afresh as in Kafka's makeLeader: when this replica was not leading, each
  // follower's log end and log start are unknown (-1) until it fetches; its last caught-up time
  // is now if it is in `isr`, else 0 (so that it cannot hold the high watermark back), and so
  // is its last fetch time. The same epoch again only updates replicas and ISR. A
  // `partition_epoch` older than the current one is skipped (OK, nothing changes: the state
  // already came from a newer version); an `epoch` older than the current one is
  // InvalidArgument. The high watermark may move (ISR {local}: to the log end).
  Status BecomeLeader(LeaderEpoch epoch, int32_t partition_epoch, std::vector<NodeId> replicas,
                      std::vector<NodeId> isr);
  // Follows `leader` in epoch `epoch`: clients' produce and fetch get NOT_LEADER_OR_FOLLOWER
  // (and so do the acks=all produces waiting: every watcher is woken); only AppendAsFollower
  // writes. The ISR and follower state are dropped (a follower tracks none). The high
  // watermark stays where it is until the leader says. Stale epochs as for BecomeLeader.
  Status BecomeFollower(LeaderEpoch epoch, int32_t partition_epoch, NodeId leader);
  // True while this replica leads (the single-node default).
  bool is_leader() const;
  // The leader's lease (cluster mode): this replica acts as leader for clients (produce, fetch,
  // the broker's own appends) only while MonotonicMs() <= `until_ms`. Cluster mode's replica
  // manager renews it from the node's last contact with the controller plus the session
  // timeout, so that a leader whose process was stopped, or that has been cut off from the
  // controller, answers NOT_LEADER_OR_FOLLOWER from its first request on, before anything else
  // of it has run. -1 (the default, a single node): no lease.
  void SetLeaderLease(int64_t until_ms);
  // For kUnknownProducerGraceMs after this replica starts leading (a BecomeLeader while not
  // leading), a batch of an idempotent producer it holds no state for whose first sequence is
  // not 0 is answered NOT_LEADER_OR_FOLLOWER and not appended: its earlier batches may have been
  // refused while the replica opened, or taken by an old leader that never replicated them, and
  // taking the later one first would leave a gap the client cannot see (librdkafka reports the
  // earlier batches delivered once a later one is acknowledged). The client refreshes its
  // metadata and sends its batches again in order. After the grace period any first sequence
  // is taken, as in Kafka (producer state lost to retention). 10 s: many times a client's
  // metadata refresh and retry backoff, short enough that a producer whose state really is gone
  // waits only briefly. Tests may shorten it per partition.
  // In the same period a known producer's batch that starts past its next sequence (a gap, not
  // a rewind or an overlap) is answered NOT_LEADER_OR_FOLLOWER too, not
  // OUT_OF_ORDER_SEQUENCE_NUMBER, for at most kGapGraceMs from the first such answer to that
  // producer: the batch before it is most likely still in flight to the old leader (librdkafka
  // sends to the new leader as soon as the old one answers, and the two can cross), and
  // librdkafka takes OUT_OF_ORDER on a batch that is not its oldest unacknowledged one as a
  // reason to bump its producer epoch (see NoteRetriableRefusal for why that writes
  // duplicates). The bound keeps a gap that is real from being retried for long.
  static constexpr int64_t kUnknownProducerGraceMs = 10000;
  static constexpr int64_t kGapGraceMs = 2000;
  void SetUnknownProducerGraceMs(int64_t ms);
  // A batch of an idempotent producer refused before the append with a retriable error (this
  // replica was not leading yet, or had too few in-sync replicas). The producer's later batches,
  // already in flight behind it, would meet a gap in its sequence and be answered
  // OUT_OF_ORDER_SEQUENCE_NUMBER, on which librdkafka bumps its producer epoch and renumbers
  // every batch it has not had acknowledged, in every partition: one already in another
  // partition's log, its answer lost to a leader change, is then written a second time. So for
  // kRefusalMemoryMs a later batch of the same producer epoch that starts past the refused
  // sequence gets the refused batch's error instead (Kafka answers OUT_OF_ORDER here; a retriable
  // error makes every client resend from the refused batch on, in order). Forgotten as soon as a
  // batch of that producer is appended. `batch` is the batch as received (its header is read
  // only when it is a v2 batch of an idempotent producer).
  static constexpr int64_t kRefusalMemoryMs = 5000;
  void NoteRetriableRefusal(std::string_view batch, protocol::ErrorCode error);
  // is_leader(), and the lease (if any) holds now.
  bool serves_as_leader() const;
  // The leader this replica follows, or the local node while it leads; -1 when unknown.
  NodeId leader() const;
  int32_t partition_epoch() const;
  std::vector<NodeId> isr() const;
  // The assigned replicas ({local} on a single node).
  std::vector<NodeId> replicas() const;
  // Where the current leader epoch started in this log while leading (the log end at
  // BecomeLeader); -1 while following or before any BecomeLeader.
  Offset leader_epoch_start_offset() const;
  // Kafka's effective min.insync.replicas: `config`'s, but never more than the replicas
  // assigned (a single node with min.insync.replicas=2 still takes acks=all).
  int32_t EffectiveMinIsr(const storage::LogConfig& config) const;
  // KIP-320 fencing, then the role: FENCED_LEADER_EPOCH when `current_leader_epoch` (>= 0) is
  // older than this replica's leader epoch, UNKNOWN_LEADER_EPOCH when newer, -1 skips the
  // check; then NOT_LEADER_OR_FOLLOWER when `leader_only` and this replica does not serve as
  // leader (follows, or its lease ran out); else NONE.
  protocol::ErrorCode CheckLeaderEpoch(int32_t current_leader_epoch, bool leader_only) const;
  // The high watermark this replica had at its last clean stop (replication-offset-checkpoint),
  // applied at the first role change. Call before it; -1 forgets it.
  void SetHighWatermarkHint(Offset hint);
  // True once BecomeLeader or BecomeFollower has run (the high watermark then means what is
  // committed in the cluster, not just the log end this replica opened with).
  bool role_set() const;

  // ---- follower side ----
  // Appends whole batches fetched from the leader (`batches`: one or more record batches as
  // stored, v2 only, starting exactly at the log end — or, in an empty log, anywhere above it:
  // the log then starts there), keeping their bytes as they are (offsets, leader epochs, CRC;
  // later batches may leave gaps, as a compacted leader's do), recording each new epoch seen in
  // the leader-epoch cache, and applying each batch's producer state as a replica (no sequence
  // checks; the state is then what a new leader needs to answer a retry with the original
  // offsets). A trailing partial batch (a fetch cut at max_bytes) is not appended; no whole
  // batch at all appends nothing. InvalidArgument when this replica leads, or when the first
  // batch does not start at the log end; Corruption for a damaged batch (bad framing or CRC):
  // then nothing is appended. Returns the new log end.
  Result<Offset> AppendAsFollower(std::string_view batches);
  // A follower's high watermark: min(`leader_high_watermark`, log end); never moves down.
  // Ignored while leading.
  void UpdateFollowerHighWatermark(Offset leader_high_watermark);
  // Kafka's OffsetForLeaderEpoch answer (LeaderEpochFileCache.endOffsetFor): for this log's
  // latest epoch, the log end; for an older epoch the log knows, that epoch and the next
  // epoch's start offset; for one between two known epochs, the older of them and the newer's
  // start; for one older than every known epoch, `epoch` itself and the first epoch's start
  // offset (everything before that is gone: a follower truncates there, not to its high
  // watermark). NotFound (UNDEFINED, -1/-1 on the wire) when `epoch` is -1, newer than every
  // known epoch, or the log knows no epoch.
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
  // `now_ms` (steady clock, MonotonicMs). Updates its caught-up time the way Kafka does: a
  // fetch at or beyond the leader's log end now is caught up now; else one at or beyond the log
  // end the leader had at this follower's previous fetch is caught up as of that previous
  // fetch's time; the time never moves back. Then may move the high watermark (and wake the
  // acks=all waiters). Ignored unless leading and `follower` is one of the replicas.
  void RecordFollowerFetch(NodeId follower, Offset fetch_offset, Offset log_start, int64_t now_ms);
  // Every replica but this one, in replica order (empty while following).
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
  // True after a failed flush or write: writes and reads answer KAFKA_STORAGE_ERROR until a
  // restart.
  bool offline() const { return offline_.load(); }
  // Takes the partition offline (once; logged once) after `error` from its log's flush or a
  // write the disk failed. Returns the IOError to answer with.
  Status TakeOfflineAfter(const Status& error);
  // Whether any partition of this process has gone offline since it started (it never goes
  // back): lets a scan for offline partitions be skipped in the usual case.
  static bool AnyEverOffline();
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
  struct Refusal {
    int16_t epoch = 0;
    int32_t sequence = 0;  // first sequence of the refused batch
    protocol::ErrorCode error = protocol::ErrorCode::NONE;
    int64_t at_ms = 0;
  };
  std::unordered_map<int64_t, Refusal> refused_;  // by producer id; under produce_mu_
  void NoteRefusalLocked(const format::BatchHeader& h, protocol::ErrorCode error);
  // The refusal that explains a gap before `h`, if one is recent (see NoteRetriableRefusal).
  const Refusal* RefusalBeforeLocked(const format::BatchHeader& h) const;
  // Whether `h`, out of sequence, may be overtaking a batch still in flight to the old leader
  // (see kGapGraceMs); counts the answer against the producer's budget.
  bool GapMayBeInFlightLocked(const format::BatchHeader& h);
  std::unordered_map<int64_t, int64_t> gap_answered_;  // producer id -> first answer (ms)

  // Guards the replication state below. Role changes also hold produce_mu_ (taken first), so
  // that an append sees one role and one epoch from its checks to its end.
  mutable std::mutex hw_mu_;
  LeaderEpoch leader_epoch_;
  bool leading_ = true;
  bool role_set_ = false;  // a BecomeLeader/BecomeFollower has run
  NodeId leader_;
  int32_t partition_epoch_ = 0;
  std::vector<NodeId> replicas_;
  std::vector<NodeId> isr_;
  Offset leader_epoch_start_ = kInvalidOffset;
  Offset hw_hint_ = kInvalidOffset;
  struct Follower {
    FollowerState state;
    // The leader's log end when this follower last fetched (Kafka's lastFetchLeaderLogEndOffset).
    Offset last_fetch_leader_log_end = kInvalidOffset;
  };
  std::vector<Follower> followers_;  // one per replica but this node
  Follower* FindFollowerLocked(NodeId id);
  void SyncFollowersLocked();  // an entry for each replica, none for others
  std::atomic<int64_t> high_watermark_{0};
  std::atomic<int64_t> lease_until_ms_{-1};
  // MonotonicMs() when this replica last started leading; -1 before any BecomeLeader.
  std::atomic<int64_t> leading_since_ms_{-1};
  std::atomic<int64_t> unknown_producer_grace_ms_{kUnknownProducerGraceMs};

  std::mutex watch_mu_;
  std::vector<std::weak_ptr<PartitionWatcher>> log_end_watchers_;
  std::vector<std::weak_ptr<PartitionWatcher>> hw_watchers_;
};

}  // namespace silt::broker
