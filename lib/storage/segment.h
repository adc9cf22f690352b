// One segment of a partition log: `<base>.log` (record batches back to back, exactly as on the
// wire) with its `.index` and `.timeindex` (see storage/index.h and format/layout.h).
//
// A Segment is written by one appender at a time (the PartitionLog serialises them) and read by
// any number of readers. Appends write the bytes past the published size first and publish the
// new size afterwards, so readers never see a partial batch. The .log file is held through a
// shared_ptr so that read results outlive deletion of the segment.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/file.h"
#include "base/ids.h"
#include "base/status.h"
#include "format/batch_header.h"
#include "storage/index.h"

namespace silt::storage {

struct ReadResult;

// What the storage layer needs to know about one batch in a segment.
struct BatchInfo {
  int64_t position = 0;  // of the batch's first byte in the .log
  int64_t size = 0;      // whole batch, headers included
  Offset base;
  Offset last;
  int64_t max_timestamp = -1;
  int32_t partition_leader_epoch = -1;
  int16_t attributes = 0;
  int64_t base_timestamp = -1;
};

// "00000000000000000042" for 42.
std::string SegmentFileName(Offset base, const char* suffix);
// The inverse: true and *base for "<20 digits><suffix>" (e.g. "00000000000000000042.log").
bool ParseSegmentFileName(std::string_view name, std::string_view suffix, int64_t* base);

class Segment {
 public:
  // Creates a new, empty segment (files created, or truncated if left over).
  static Result<std::shared_ptr<Segment>> Create(const std::string& dir, Offset base);
  // Opens an existing segment's .log; call Load() before anything else.
  static Result<std::shared_ptr<Segment>> Open(const std::string& dir, Offset base,
                                               bool read_only);
  ~Segment();

  enum class LoadMode {
    // Flushed before a clean shutdown (or below the recovery point): check the indexes, scan only
    // the batches after the last index entry. Falls back to kFullScan when an index is missing or
    // damaged.
    kTrusted,
    // Validate every batch (framing, CRC-32C, increasing offsets) and rebuild both indexes.
    kFullScan,
  };
  struct LoadReport {
    bool full_scan = false;         // every batch was checked
    bool index_rebuilt = false;     // indexes were missing/damaged and rebuilt
    int64_t torn_bytes = 0;         // bytes of a torn tail cut off (or, read-only, ignored)
    int64_t cut_position = -1;      // where that tail began (-1: nothing was cut)
    std::string cut_reason;         // why the batch there was not kept
    std::string quarantine_path;    // where the cut bytes went ("": a zero tail, or read-only)
    // (partitionLeaderEpoch, baseOffset) of each scanned batch whose epoch (>= 0) is above
    // every one before it in the scan: where each epoch starts, for a leader-epoch checkpoint
    // that is behind the log.
    std::vector<std::pair<int32_t, int64_t>> epoch_starts;
  };
  // Establishes size, next offset, max timestamp and indexes from the files. When `is_last`, a
  // partial batch at the end (or a zero-filled tail) is a torn tail. So is any invalid batch
  // (framing, CRC-32C, offsets, leader epochs) at or past `cut_from`: what a crash can leave of
  // writes that were never fsynced. A torn tail is cut, its bytes first copied (synced) to
  // `<segment>.log.<position>.quarantined`, unless they are all zeros; read-only, it is only
  // left unread. Any other damage is Corruption naming the file and the byte position.
  Status Load(LoadMode mode, bool is_last, int32_t index_interval_bytes, LoadReport* report,
              Offset cut_from = Offset(INT64_MAX));

  // Appends one whole batch whose header fields are final. On failure the file is cut back to
  // its previous size and nothing is published.
  Status Append(std::string_view batch, const BatchInfo& info, int32_t index_interval_bytes);
  // Copies `length` bytes of the file `from_fd` at `from_position` into the .log `at` bytes
  // past its published end, where no reader looks (copy_file_range(2), or pread and pwrite
  // where the kernel cannot copy between the two files). OutOfRange when the source ends
  // first. The staged bytes are published batch by batch with PublishStaged, or dropped.
  Status StageCopy(int from_fd, int64_t from_position, int64_t length, int64_t at);
  // Publishes the batch that starts at the published end, already there through StageCopy, as
  // Append would (index entries, timestamps, size). On failure nothing is published and the
  // staged bytes are dropped.
  Status PublishStaged(const BatchInfo& info, int32_t index_interval_bytes);
  // Cuts the staged bytes that were not published.
  Status DropStaged();
  // Adds the final time index entry (Kafka does so when a segment stops being active).
  Status OnBecomeInactive();
  // Drops every batch from the one holding `offset` on; returns the new next offset. On
  // failure the segment is unchanged. Not durable until Sync().
  Result<Offset> TruncateTo(Offset offset, int32_t index_interval_bytes);
  // fdatasync of what changed since the last Sync among the .log and both indexes. The index
  // files of a segment holding data are created here if they do not exist yet; an empty
  // segment's are not. Index files are opened only to be written or synced: a segment at rest
  // holds only its .log open.
  Status Sync();
  // Unlinks the files (open readers keep their descriptors): the .log first. Fails, changing
  // nothing, only when the .log cannot be unlinked; an index file that cannot be unlinked after
  // it is an orphan that the next PartitionLog::Open removes, not an error. The removal is
  // durable once the directory is fsynced (the caller's job).
  Status Delete();
  void CloseFiles();

  // The first batch whose last offset is >= target, or nullopt when there is none.
  Result<std::optional<BatchInfo>> FindBatch(Offset target) const;
  // Appends to `out` whole batches from `start`: see PartitionLog::Read. *budget is decreased by
  // the bytes taken; *done is set when the read must not continue into the next segment.
  Status Read(Offset start, int64_t* budget, Offset upper_bound, bool min_one, ReadResult* out,
              bool* done) const;
  // The first batch whose max timestamp is >= ts, refined to the record when the batch is
  // uncompressed; nullopt when no batch qualifies.
  Result<std::optional<Offset>> OffsetForTimestamp(int64_t ts) const;

  Offset base_offset() const { return base_; }
  Offset next_offset() const;
  int64_t size() const;
  int64_t max_timestamp() const;
  // Largest timestamp, or the .log's modification time when no batch carries one (retention).
  int64_t LargestTimestampOrMtime() const;
  const std::string& log_path() const { return log_path_; }
  // The open .log file (stays readable after the segment is deleted or swapped out).
  std::shared_ptr<const File> log_file() const { return log_; }
  // True when the next append of `batch_size` bytes up to `last` must go to a new segment.
  bool ShouldRoll(int64_t batch_size, int64_t batch_max_ts, Offset last, int64_t segment_bytes,
                  int64_t segment_ms, int32_t segment_index_bytes) const;
  // Index entries, for tests and dump tools.
  std::vector<OffsetIndex::Entry> IndexEntries() const;
  std::vector<TimeIndex::Entry> TimeIndexEntries() const;

  // As LoadReport::epoch_starts, for every batch of the segment (reads each batch header).
  Status CollectEpochStarts(std::vector<std::pair<int32_t, int64_t>>* out) const;

  // Reads the header of the batch at `position` (below `limit`); Corruption if it is not one.
  Result<BatchInfo> HeaderAt(int64_t position, int64_t limit) const;
  // The batch an index entry names: from the entry when it knows base and size, else read.
  // Only position, size, base and last are filled in from an entry.
  Result<BatchInfo> BatchAt(const OffsetIndex::Entry& e, int64_t limit) const;

 private:
  Segment(std::string dir, Offset base, bool read_only);
  // The bookkeeping half of Append, for a batch whose bytes are at the published end.
  Status PublishLocked(int64_t pos, int64_t size, const BatchInfo& info, int32_t interval);
  Status ScanFrom(int64_t position, bool skip_first_index, bool verify, bool is_last,
                  int32_t index_interval_bytes, int64_t file_size, Offset cut_from,
                  LoadReport* report);
  // Copies bytes [pos, file_size) of the .log to its quarantine file, then cuts them.
  Status CutTail(int64_t pos, int64_t file_size, bool zeros, LoadReport* report);
  void EnableIndexWrites();
  void RecomputeTail(int32_t index_interval_bytes);

  const std::string dir_;
  const Offset base_;
  const bool read_only_;
  const std::string log_path_;
  std::shared_ptr<File> log_;

  // Guards everything below; appenders hold it exclusively only to publish.
  mutable std::shared_mutex mu_;
  OffsetIndex index_;
  TimeIndex time_index_;
  int64_t size_ = 0;
  Offset next_offset_;
  int64_t max_timestamp_ = -1;
  Offset offset_of_max_timestamp_;
  int64_t bytes_since_index_entry_ = 0;
  int64_t first_batch_timestamp_ = -1;
  int64_t created_ms_ = 0;
  bool tail_dirty_ = false;  // bytes past size_ may remain after a failed append
  // The .log was written or cut since the last Sync (set for every opened segment: the
  // previous process may not have synced it).
  std::atomic<bool> log_unsynced_{true};
};

}  // namespace silt::storage
