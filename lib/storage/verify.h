// Offline checking and repair of segment files: what `silt verify-crc` and `silt dump-segment`
// run. Works on silt's data and on directories copied from a Kafka broker.
//
// A scan walks a .log file entry by entry. Both RecordBatch v2 and legacy message sets start with
// offset:int64 and a size:int32, and keep their magic byte at position 16, so one walk handles a
// file mixing them. Each entry is checked (CRC-32C for v2, CRC-32 for magic 0/1, length bounds,
// records against the header, offsets increasing) and every problem is reported with the file,
// the byte position and its kind. A partial entry at the very end of a file is a torn tail (what
// a crash mid-append leaves); anything else is corruption.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "format/batch_header.h"

namespace silt::storage {

enum class ProblemKind {
  kTornTail,     // the file ends part-way through an entry
  kCorruption,   // bad CRC, magic, length, or records that do not match their header
  kOffsets,      // offsets not increasing, a gap in a non-compacted log, or first offset != name
                 // (a gap or first offset is accepted beside the segment's quarantine files)
  kIndex,        // an .index entry not pointing at the batch holding its offset
  kTimeIndex,    // a .timeindex entry out of order or pointing outside the segment
  kEpoch,        // partitionLeaderEpoch decreasing, or disagreeing with leader-epoch-checkpoint
};
const char* ProblemKindName(ProblemKind k);  // "torn-tail", "corruption", "offsets", "epoch"...

struct Problem {
  std::string file;
  int64_t position = 0;  // byte position in `file` (entry number * size for index files)
  ProblemKind kind = ProblemKind::kCorruption;
  std::string detail;
};

// One entry of a .log file as the scan saw it.
struct EntryInfo {
  int64_t position = 0;
  int64_t size = 0;  // whole entry, offset and size fields included
  int8_t magic = 2;
  format::BatchHeader header;   // for magic 2 (for legacy: base_offset/last only)
  uint32_t crc = 0;             // stored CRC
  bool crc_valid = false;
  int64_t first_offset = 0;
  int64_t last_offset = 0;
  int64_t timestamp = -1;       // legacy magic 1
  int8_t legacy_attributes = 0;
  std::string_view bytes;       // the entry; valid only during the callback
};

struct ScanOptions {
  bool compacted = false;        // gaps between batches are normal (cleanup.policy=compact)
  bool check_records = true;     // decode the records of each batch, not just the header + CRC
  bool check_indexes = true;     // check the .index/.timeindex beside a .log
  int64_t max_entry_size = 1LL << 30;
  // After a damaged entry, look for the next position holding an entry that validates whole
  // (magic, length bounds, CRC, records, offsets after the last good entry) and go on from there.
  // Off: the rest of the file after the first damage is not interpreted.
  bool resync = true;
};

// Bytes [start, end) of a .log file that hold no valid entry: damage between two good entries,
// or from the damage to the end of the file.
struct DamagedRange {
  int64_t start = 0;
  int64_t end = 0;
};

// Where a run of batches with one partitionLeaderEpoch starts.
struct EpochRun {
  int64_t first_offset = 0;
  int32_t epoch = -1;
  int64_t position = 0;
};

struct SegmentReport {
  std::string path;
  int64_t name_offset = -1;     // from the file name, -1 if not a segment name
  int64_t file_size = 0;
  int64_t valid_bytes = 0;      // bytes before the first damaged range (== file_size when sound)
  int64_t entries = 0;
  int64_t records = 0;
  int64_t first_offset = -1;
  int64_t last_offset = -1;
  bool bad = false;             // a problem in the .log itself (not only its indexes)
  std::vector<DamagedRange> damaged;  // in file order; empty when the .log is sound
  int64_t damaged_bytes = 0;          // sum of the damaged ranges
  std::vector<EpochRun> epochs;       // the v2 batches' epochs, one entry per change
};

struct VerifyReport {
  std::vector<Problem> problems;
  std::vector<SegmentReport> segments;
  int64_t files = 0;
  bool clean() const { return problems.empty(); }
};

// Walks the .log file at `path`, calling `on_entry` for each whole entry (stop by returning
// false) and appending problems to `report`. After a damaged entry the scan resynchronises on
// the next entry that validates (ScanOptions::resync) and goes on; each damaged range is one
// problem and is listed in the SegmentReport. `on_entry` also sees a damaged entry whose bytes
// could be framed. IOError only when the file cannot be read.
Status ScanLogFile(const std::string& path, const ScanOptions& options,
                   const std::function<bool(const EntryInfo&)>& on_entry, VerifyReport* report);

// Checks `path`: a .log, .index or .timeindex file, a partition directory, or a data directory
// (every partition directory in it). Problems go into `report`.
Status VerifyPath(const std::string& path, const ScanOptions& options, VerifyReport* report);

struct RepairAction {
  std::string description;  // one line, e.g. "quarantined bytes 4096..4608 of 00..0.log (...)"
};

struct RepairResult {
  std::vector<RepairAction> actions;  // in the order done (or, for a dry run, to be done)
  int64_t records_kept = 0;           // records of the valid batches, all of the partition's
  int64_t bytes_kept = 0;
  // Records the quarantined bytes held: the offsets missing between the kept batches around
  // each damaged range (in a compacted log, or with no batch after the range, the record count
  // of the damaged batch's header when it was readable).
  int64_t records_quarantined = 0;
  int64_t bytes_quarantined = 0;
};

// Repairs one partition directory after `VerifyPath` found damage in it. Each damaged range of a
// segment (from a bad entry to the next entry that validates, see ScanOptions::resync) is copied
// to <segment>.log.<position>.quarantined beside it (synced, never deleted), then the segment
// keeps every valid batch at its own offset: cut when the damage runs to its end, otherwise
// rewritten (atomically, by rename) without the damaged bytes. The indexes of changed segments
// are rebuilt. Running it on a clean partition does nothing. With `dry_run`, changes nothing and
// takes no lock: `actions` say what would be done and the counts what would be kept and
// quarantined. Busy when a writer holds the data directory's lock.
Result<RepairResult> RepairPartition(const std::string& partition_dir, const ScanOptions& options,
                                     bool dry_run = false);

}  // namespace silt::storage
