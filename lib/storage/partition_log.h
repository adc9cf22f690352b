// A partition's log: a directory of segments in Kafka's on-disk format (see format/layout.h).
//
// Offsets kept apart, with log_start <= recovery_point <= log_end at all times:
//   log_start_offset  first offset still readable (moves forward with retention/delete-records)
//   recovery_point    everything below it has been fsynced and needs no check after a crash
//   log_end_offset    the next offset to be assigned
//
// Thread-safety: all methods may be called from any thread; appends are serialised by an
// internal mutex and reads run concurrently with them. Read results hold references to the
// segment files, so a segment deleted by retention stays readable until the result is dropped.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/file.h"
#include "base/file_slice.h"
#include "base/ids.h"
#include "base/status.h"
#include "storage/log_config.h"

namespace silt::storage {

class Segment;

struct AppendResult {
  Offset base_offset;
  Offset last_offset;
  int64_t log_append_time = -1;  // the time stored when message.timestamp.type=LogAppendTime
  FilePos position{0};           // where the batch starts in its segment
  // Not OK when the fsync that the flush policy (flush.messages, flush.ms) asked for after this
  // append failed. The batch IS in the log, readable, at the offsets above; it is just not yet
  // known to be durable: the recovery point stays where it was, so recovery after a crash
  // rescans it (and cuts it if it did not reach the disk). A caller must treat the append as
  // done (record producer state, for instance) and may report the storage error.
  Status flush_error;
};

// A range of bytes in a segment file, for sendfile(2) or pread (base/file_slice.h).
using FileSlice = silt::FileSlice;

struct ReadResult {
  std::vector<FileSlice> slices;  // whole batches, in offset order
  int64_t total_bytes = 0;
  Offset next_offset;             // the offset after the last batch returned
  // Copies the slices' bytes into one buffer (for callers that do not sendfile).
  Result<std::string> ReadAll() const;
  // The same into *out (its size becomes total_bytes), reusing its memory: a caller that reads
  // chunk after chunk into one string touches no new pages after the first.
  Status ReadInto(std::string* out) const;
};

struct SegmentInfo {
  Offset base_offset;
  Offset next_offset;   // base offset of what follows (log end for the active segment)
  int64_t size_bytes = 0;
  int64_t largest_timestamp = -1;
  std::string log_path;
};

// What recovery cut at open: bytes past the recovery point that were not a valid batch, or a
// whole segment after such a cut. Nothing is deleted: the bytes are in `quarantine_path`
// ("" when they were all zeros, or the log was opened read-only and only left them unread).
struct RecoveryCut {
  std::string file;      // the segment's .log
  int64_t position = 0;  // where the cut began in it
  int64_t bytes = 0;     // how many bytes were cut
  std::string reason;    // why the batch there was not kept
  std::string quarantine_path;
  // Below the recovery point (or after a clean shutdown): bytes that had been fsynced went bad,
  // which no crash explains. Only a read-only open with stop_at_damage gets past such damage.
  bool below_recovery_point = false;
};

class PartitionLog {
 public:
  struct OpenOptions {
    bool read_only = false;  // never writes: no recovery truncation, no index rebuild on disk
    bool create = true;      // create the directory when missing
    // Read-only: damage anywhere (even below the recovery point) ends the readable log there
    // instead of failing the open; recovery_cuts() reports it.
    bool stop_at_damage = false;
    // Set by the data dir when the previous shutdown was clean: segments are trusted up to
    // recovery_point (the data dir's checkpoint) without being rescanned.
    bool clean_shutdown = false;
    int64_t recovery_point = 0;
    // The log start offset from the data dir's log-start-offset-checkpoint (delete-records);
    // -1 when unknown (the first segment's base offset is used).
    int64_t log_start_offset = -1;
    // Called (under the log's writer lock; it must not call back into the log) when the
    // checkpointed offsets must change before the next periodic checkpoint: a truncation below
    // `recovery_point` (else a crash would trust segments rewritten since), or a new log start
    // (delete-records must survive a crash). Arguments: the new recovery point and log start.
    std::function<Status(int64_t recovery_point, int64_t log_start)> checkpoint_hook;
  };

  // Opens (and, when writable, recovers) the partition in `dir`. Recovery validates every batch
  // from the recovery point on, truncates a torn tail, rebuilds missing or damaged indexes, and
  // returns Corruption (naming the file and byte position) at real damage before the end.
  static Result<std::unique_ptr<PartitionLog>> Open(const std::string& dir, const LogConfig& config,
                                                    const OpenOptions& options);
  ~PartitionLog();

  // Appends one producer batch that the caller has validated. Patches baseOffset (and
  // partitionLeaderEpoch when `leader_epoch` >= 0, and maxTimestamp plus the timestampType bit
  // for LogAppendTime — both inside the CRC, which is then recomputed, as Kafka does) in
  // `batch`; never recomputes the CRC otherwise. Rolls the segment first when needed.
  // TooLarge above max.message.bytes.
  // On any failure nothing is appended: the log end is unchanged, partial bytes are cut and
  // a reopen finds the log as it was. Every fallible step comes before the batch is
  // published: the leader-epoch checkpoint for a new epoch is written first, then the bytes
  // and index entries (undone on failure). Only the flush policy's fsync comes after; its
  // failure is AppendResult::flush_error, not a failed append.
  Result<AppendResult> Append(std::string* batch, int32_t leader_epoch = -1);
  // The same for a batch in a caller's buffer of `size` bytes, patched in place (the broker
  // appends a produce request's batch where it was received, without copying it).
  Result<AppendResult> Append(char* batch, size_t size, int32_t leader_epoch = -1);
  // Appends batches that already carry their offsets (replication, replicate, repair): each
  // base offset must be >= log end; gaps are allowed (compacted sources). Framing and CRC are
  // checked first and nothing is written unless all pass. An empty log starts at the first
  // batch's offset (log start moves there) instead of keeping a gap from its old end.
  // Failures as for Append: all of the batches or none (an empty log may keep its new start).
  Result<AppendResult> AppendWithOffsets(std::string_view batches);
  // The same for batches that lie in other files (`from`: whole batches back to back, such as
  // a ReadResult of another log): the bytes go file to file (copy_file_range(2), or through a
  // buffer where the kernel cannot), past the published end of the active segment, and are
  // then checked where they landed, in this log's own file, as AppendWithOffsets checks them;
  // only then are they published. What is checked is therefore exactly what this log holds,
  // even if the source changes meanwhile (that fails the call: nothing is appended). Counts
  // the batches and records appended into *batches and *records (when not null).
  Result<AppendResult> AppendCopiedWithOffsets(const std::vector<FileSlice>& from, int64_t* batches,
                                               int64_t* records);

  // Whole batches from the one containing `start` on, up to `max_bytes` (at least one batch when
  // `min_one` is set, even if larger) and stopping before `upper_bound` (e.g. the high watermark).
  // OutOfRange when start is below log start or above log end.
  Result<ReadResult> Read(Offset start, int64_t max_bytes, Offset upper_bound,
                          bool min_one = true) const;
  // First offset whose batch's max timestamp is >= ts (Kafka's ListOffsets by time), or
  // NotFound when no such record exists.
  Result<Offset> OffsetForTimestamp(int64_t ts) const;

  Offset log_start_offset() const;
  Offset log_end_offset() const;
  Offset recovery_point() const;
  // What recovery cut when the log was opened (empty for a log that needed none).
  const std::vector<RecoveryCut>& recovery_cuts() const;
  // Whether an fsync or a write (other than for a full disk) has failed: every append and
  // flush since answers that error, and the recovery point no longer moves, until a reopen.
  bool failed() const;
  int64_t size_bytes() const;
  std::vector<SegmentInfo> Segments() const;
  const std::string& dir() const;
  bool read_only() const;
  // The config in force (a copy: another thread may change it at any time).
  LogConfig config() const;
  // Replaces the config; later appends, rolls, flushes and retention passes follow it.
  void UpdateConfig(const LogConfig& config);

  // fsync of everything appended so far; advances the recovery point.
  Status Flush();
  // Flushes when flush.ms has passed since the last flush (for a periodic timer).
  Status MaybeFlush();
  // Starts a new active segment at the log end.
  Status Roll();
  // Drops every record at or after `offset` (replication truncation). A batch holding
  // `offset` goes whole, so the log end becomes min(offset, that batch's base offset).
  Status TruncateTo(Offset offset);
  // Moves the log start forward to `offset` (delete-records); whole segments below go.
  Status AdvanceLogStart(Offset offset);
  // Deletes closed segments past retention.ms / retention.bytes (when cleanup.policy includes
  // delete) and those wholly below the log start. Returns the count deleted.
  Result<int> ApplyRetention();
  // Flushes and closes; after this the object must not be used.
  Status Close();
  // Closes without flushing or writing anything, for a log whose files are about to be
  // deleted; then as after Close().
  void CloseWithoutFlush();

  // Leader epochs and the first offset of each (leader-epoch-checkpoint), oldest first.
  struct EpochEntry {
    int32_t epoch;
    Offset start_offset;
  };
  std::vector<EpochEntry> LeaderEpochs() const;
  // Kafka's OffsetForLeaderEpoch: the largest epoch <= `epoch` and the offset where it ends
  // (the next epoch's start, or the log end for the latest). NotFound when `epoch` predates
  // every known epoch.
  Result<EpochEntry> EndOffsetForEpoch(int32_t epoch) const;
  // A new leader's epoch (Kafka's maybeAssignEpochStartOffset): records that `epoch` starts at
  // the log end, before any batch of it is appended, and writes the checkpoint at once
  // (atomically), so that a follower asking for an older epoch's end is answered from here even
  // before the first append. Nothing happens when `epoch` is not newer than every known epoch.
  // An entry starting at the log end (an earlier epoch that appended nothing) is replaced.
  Status AssignLeaderEpoch(int32_t epoch);

  // Called (outside the internal lock) after each successful append with the new log end.
  void SetAppendListener(std::function<void(Offset)> fn);
  // Called with the base offset of each new active segment (a roll by size, time or index,
  // Roll(), or AdvanceLogStart emptying the log). It runs on the thread whose call rolled
  // (Append, AppendWithOffsets, Roll, AdvanceLogStart), inside that call but after the log has
  // released all its locks, so it may call any method of the log; it must not wait for locks
  // that thread holds around the call. For Append, the batch that caused the roll is already
  // in the log at offsets >= the base offset, and Append has not yet returned: a caller that
  // serialises its appends and updates per-batch state (producer state) after each Append
  // returns sees, in the callback, exactly the state of the offsets below the base offset.
  // For a multi-batch AppendWithOffsets the calls come after all its batches are in.
  // Threads appending concurrently may make calls overlap.
  void SetRollListener(std::function<void(Offset base_offset)> fn);

  // ---- for the log cleaner (storage/log_cleaner.h) ----
  // The closed segments (every one but the active), oldest first. They stay usable after a
  // swap or deletion for as long as the caller holds them.
  std::vector<std::shared_ptr<Segment>> ClosedSegments() const;
  // With the writer lock held (appends wait only for this), checks that `old` is still a run of
  // consecutive closed segments of this log, calls `install` (which puts the replacement's
  // files in place and returns it loaded), and substitutes its result for `old` in the segment
  // list. Busy, without calling `install`, when retention, truncation or another swap changed
  // the run since the caller took it; InvalidArgument when the log is closed or read-only.
  Status ReplaceSegments(const std::vector<std::shared_ptr<Segment>>& old,
                         const std::function<Result<std::shared_ptr<Segment>>()>& install);

 private:
  struct Impl;
  explicit PartitionLog(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace silt::storage
