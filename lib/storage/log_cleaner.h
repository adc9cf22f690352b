// Log compaction (cleanup.policy=compact, or compact,delete), in the manner of Kafka's log
// cleaner: a compacted partition keeps at least the latest record of every key.
//
// One pass over a partition (LogCleaner::CleanPartitionOnce):
//   1. Range. The cleanable range is the closed segments from the log's first one up to the
//      first uncleanable offset: never the active segment, nor a segment holding a record newer
//      than min.compaction.lag.ms, nor one reaching past the bound the caller gives (the high
//      watermark). Its dirty section starts at the cleaner checkpoint (where the previous pass
//      ended; the log's first segment when there is none) and is whole segments.
//   2. Offset map: key -> offset of the key's latest record in the dirty section. When the map
//      would pass CleanerOptions::max_map_bytes the pass stops at that segment boundary and the
//      next pass goes on from there (at least one dirty segment is always taken).
//   3. Rewrite. Every segment of the range is copied, adjacent segments merged in groups whose
//      sizes add up to at most segment.bytes (and whose offsets fit the indexes' int32 relative
//      offsets). A record stays when it has no key (producers cannot write those to compacted
//      topics, see CheckKeysForCompaction, but older data may hold them), or when no later
//      record of its key is in the map, unless it is a tombstone past its delete horizon.
//      Control batches stay whole. A batch whose records all stay is copied byte for byte;
//      otherwise it is re-encoded (format::RecordBatchBuilder) at its original baseOffset and
//      lastOffsetDelta, with each record at its original offsetDelta, and the batch's codec,
//      producer id, epoch and base sequence, leader epoch, timestamp type, record timestamps
//      and headers. A batch left without records disappears (offset gaps are normal in a
//      compacted log), except the last batch of each group, which stays as an empty batch so
//      that a group's offset range, and so the log end offset, never shrinks.
//   4. Swap each group in (protocol below), then write the new checkpoint (the end of the
//      range) to <checkpoint dir>/cleaner-offset-checkpoint, in Kafka's format:
//      "0\n<count>\n" then "<topic> <partition> <offset>" lines.
//
// Tombstones (a keyed record with a null value) follow Kafka's delete horizon (KIP-534), in
// broker time rather than producer timestamps: the first pass that keeps a batch holding a
// tombstone re-encodes it with attributes bit hasDeleteHorizonMs and baseTimestamp =
// deleteHorizonMs = now + delete.retention.ms (record timestamps are unchanged: their deltas
// are rewritten against the new base). A later pass drops the batch's tombstones once
// now >= deleteHorizonMs. So a consumer that reads the log from its start within
// delete.retention.ms of a tombstone's first cleaning sees the delete; a tombstone is never
// removed by the pass that first finds it, whatever its own timestamp says.
//
// Swap protocol, per group, new base B = the group's first base offset:
//   a. write B.log.cleaned, B.index.cleaned, B.timeindex.cleaned; fsync them;
//   b. rename B.log.cleaned -> B.log.swap; fsync the directory.     <- commit point
//   c. under the partition's writer lock (appends wait only for this step): rename every file
//      of the old segments to <name>.deleted; fsync the directory; rename B.index.cleaned,
//      B.timeindex.cleaned and then B.log.swap to their final names; swap the segment list.
//   d. fsync the directory; unlink the .deleted files.
// Recovery (FinishInterruptedSwaps, run by PartitionLog::Open when writable):
//   *.cleaned      the pass had not committed (or these are indexes, rebuilt anyway): removed;
//   B.log.swap     committed: its batches span [B, N) exactly (each group keeps its last batch),
//                  so every .log/.index/.timeindex whose base lies in [B, N) is an old segment
//                  of the group and is removed, and the swap file becomes B.log; its indexes
//                  are rebuilt when the segment loads;
//   *.deleted      left over after a finished swap: removed.
// A read-only open changes nothing and ignores these files.
//
// Readers holding FileSlices of swapped-out segments keep reading them: the files stay open.
// Transactions are not considered (aborted data and markers are kept as they are).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "base/ids.h"
#include "base/status.h"
#include "storage/log_config.h"

namespace silt::storage {

class DataDir;
class PartitionLog;

// Name of the checkpoint file in a data directory.
inline constexpr const char* kCleanerCheckpointFile = "cleaner-offset-checkpoint";

// Kafka refuses, on a compacted topic, a produced batch holding a record without a key
// (INVALID_RECORD: "Compacted topic cannot accept message without key"). InvalidArgument in
// that case; OK when `config` does not compact, for control batches, and for keyed records.
// `batch` is one whole v2 batch (already validated by the caller).
Status CheckKeysForCompaction(const LogConfig& config, std::string_view batch);

// Completes or rolls back a swap cut short by a crash in partition directory `dir` (see the
// protocol above). Called by PartitionLog::Open before it lists segments.
Status FinishInterruptedSwaps(const std::string& dir);
// True when `names` (a partition directory's entries) hold a staging file that
// FinishInterruptedSwaps would act on.
bool HasCleanerStagingFiles(const std::vector<std::string>& names);

struct CleanerOptions {
  int64_t backoff_ms = 15000;                  // log.cleaner.backoff.ms
  int64_t max_map_bytes = 128LL * 1024 * 1024;  // log.cleaner.dedupe.buffer.size
  int64_t io_buffer_bytes = 1 << 20;           // read-ahead when scanning a segment
};

// What a partition's log looks like to the cleaner.
struct Cleanability {
  Offset first_dirty;        // checkpoint, clamped to the log
  Offset first_uncleanable;  // end of the cleanable range
  int64_t clean_bytes = 0;   // closed segments below first_dirty
  int64_t dirty_bytes = 0;   // closed segments in [first_dirty, first_uncleanable)
  // dirty / (clean + dirty), 0 when both are 0 (Kafka's cleanableRatio).
  double ratio() const {
    int64_t total = clean_bytes + dirty_bytes;
    return total == 0 ? 0.0 : static_cast<double>(dirty_bytes) / static_cast<double>(total);
  }
};

struct CleanStats {
  bool cleaned = false;  // false: nothing cleanable (no closed segment in range)
  Offset first_dirty;    // the dirty section of this pass was [first_dirty, end_offset)
  Offset end_offset;     // the new checkpoint
  int segments_read = 0;
  int segments_written = 0;  // groups swapped in (unchanged single segments are left alone)
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  int64_t records_read = 0;
  int64_t records_kept = 0;
  int64_t tombstones_removed = 0;
  int64_t batches_removed = 0;
  int64_t map_entries = 0;
};

class LogCleaner {
 public:
  // `checkpoint_dir` holds cleaner-offset-checkpoint (the data directory); it is read now.
  explicit LogCleaner(std::string checkpoint_dir, CleanerOptions options = {});
  // Stops the background thread.
  ~LogCleaner();
  LogCleaner(const LogCleaner&) = delete;
  LogCleaner& operator=(const LogCleaner&) = delete;

  // One pass over `log` now, whatever its dirty ratio (for tests, the CLI and the thread).
  // `uncleanable_from` bounds the range (the high watermark); segments reaching past it are
  // not cleaned. InvalidArgument when the log's cleanup.policy lacks compact. The partition is
  // named for the checkpoint by its directory, "<topic>-<partition>". Passes are serialised.
  // Appends continue during the pass; see ReplaceSegments for the moment they wait.
  Result<CleanStats> CleanPartitionOnce(PartitionLog* log, int64_t now_ms,
                                        Offset uncleanable_from = Offset(INT64_MAX));

  // The cleanable range and dirty ratio of `log` at `now_ms`.
  Cleanability Measure(const PartitionLog& log, int64_t now_ms,
                       Offset uncleanable_from = Offset(INT64_MAX)) const;

  // One round of the background loop: among the compacted partitions of `dd`, cleans the one
  // with the highest dirty ratio at or above its min.cleanable.dirty.ratio, or else one whose
  // retained tombstones reached their delete horizon. True when a partition was cleaned.
  Result<bool> CleanDirtiestOnce(DataDir* dd, int64_t now_ms);

  // Runs CleanDirtiestOnce on a thread, waiting backoff_ms whenever a round finds nothing to
  // do or fails. `dd` must outlive Stop(); stop the cleaner before closing the data dir.
  Status Start(DataDir* dd);
  void Stop();

  // The checkpoint of a partition, or kInvalidOffset when it has none.
  Offset CheckpointFor(const std::string& topic, int32_t partition) const;
  // Passes completed (by any caller) and the last error of the background thread.
  int64_t passes() const;
  Status last_error() const;

 private:
  using PartitionKey = std::pair<std::string, int32_t>;
  static PartitionKey KeyOf(const PartitionLog& log);
  Status WriteCheckpointLocked();
  void Run(DataDir* dd);

  const std::string checkpoint_path_;
  const CleanerOptions options_;

  std::mutex pass_mu_;  // one pass at a time
  mutable std::mutex mu_;
  std::map<PartitionKey, int64_t> checkpoints_;
  // Earliest delete horizon among tombstones kept by the last pass of each partition.
  std::map<PartitionKey, int64_t> horizons_;
  int64_t passes_ = 0;
  Status last_error_;

  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace silt::storage
