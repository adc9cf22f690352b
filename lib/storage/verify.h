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
  kIndex,        // an .index entry not pointing at the batch holding its offset
  kTimeIndex,    // a .timeindex entry out of order or pointing outside the segment
};
const char* ProblemKindName(ProblemKind k);  // "torn-tail", "corruption", "offsets", ...

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
};

struct SegmentReport {
  std::string path;
  int64_t name_offset = -1;     // from the file name, -1 if not a segment name
  int64_t file_size = 0;
  int64_t valid_bytes = 0;      // bytes before the first bad entry (== file_size when clean)
  int64_t entries = 0;
  int64_t records = 0;
  int64_t first_offset = -1;
  int64_t last_offset = -1;
  bool bad = false;             // a problem in the .log itself (not only its indexes)
};

struct VerifyReport {
  std::vector<Problem> problems;
  std::vector<SegmentReport> segments;
  int64_t files = 0;
  bool clean() const { return problems.empty(); }
};

// Walks the .log file at `path`, calling `on_entry` for each whole entry (stop by returning
// false) and appending problems to `report`. After the first damaged entry the rest of the file
// is not interpreted (sizes can no longer be trusted). IOError only when the file cannot be read.
Status ScanLogFile(const std::string& path, const ScanOptions& options,
                   const std::function<bool(const EntryInfo&)>& on_entry, VerifyReport* report);

// Checks `path`: a .log, .index or .timeindex file, a partition directory, or a data directory
// (every partition directory in it). Problems go into `report`.
Status VerifyPath(const std::string& path, const ScanOptions& options, VerifyReport* report);

struct RepairAction {
  std::string description;  // one line, e.g. "truncated 00..0.log at 4096; 512 bytes to ..."
};

// Repairs one partition directory after `VerifyPath` found damage in it: truncates the first
// damaged segment at the start of its first bad entry, moves the cut bytes — and every later
// segment of the partition — into quarantine files beside the data (never deletes them),
// and rebuilds the indexes of the truncated segment. Running it on a clean partition does
// nothing. Busy when a writer holds the data directory's lock.
Result<std::vector<RepairAction>> RepairPartition(const std::string& partition_dir,
                                                  const ScanOptions& options);

}  // namespace silt::storage
