// Formats a long stretch of one segment file on two threads at once. The stretch is cut into
// chunks of whole batches (found by walking the batch headers, as a sequential read would);
// each thread reads, checks (CRC-32C and all of ForEachRecord's checks) and formats the chunks
// it claims into its own buffer, and the buffers are emitted strictly in chunk order. Each
// chunk stays in the cache of the core that reads it, so the two threads share no data but
// the cursor, and the output is exactly what one thread would have produced.
//
// Used by the local consumer when it only formats records (no per-record decisions), for the
// bulk of a segment. It stops before anything it cannot read whole and clean — a torn or
// unfinished batch, a damaged one, a read error — and leaves that to the sequential reader,
// which reports damage with its byte position.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "format/record_batch.h"

namespace silt::client {

struct ScanRange {
  int fd = -1;              // the segment, open for reading (not owned)
  int32_t partition = 0;
  int64_t start = 0;        // file position of a batch boundary
  int64_t limit = 0;        // read no byte at or past this file position
  int64_t min_offset = 0;   // skip records below this offset
  int64_t stop_offset = 0;  // stop at the first batch starting at or past this offset
  size_t chunk_bytes = 256 << 10;
};

struct ScanResult {
  int64_t position = 0;     // file position after the last chunk emitted
  int64_t next_offset = 0;  // offset after the last record emitted (min_offset if none)
  int64_t records = 0;      // records emitted
  bool stopped = false;     // emit returned false, or *stop was set
};

// Appends one formatted record to `out`. Called from two threads at once (on different
// records), so it must not touch shared state.
using ScanFormatFn =
    std::function<void(int32_t partition, const format::RecordView& record, std::string* out)>;
// Writes the formatted records of one chunk; called in chunk order, one call at a time.
// Returns false to stop the scan.
using ScanEmitFn = std::function<bool(std::string_view formatted)>;

ScanResult ParallelScan(const ScanRange& range, const ScanFormatFn& format, const ScanEmitFn& emit,
                        const std::atomic<bool>* stop);

}  // namespace silt::client
