// Conversions between legacy message sets (magic 0 and 1, layout in format/layout.h) and
// RecordBatch v2, for clients that speak Produce v0-2 and Fetch v0-3.
//
// Up-conversion (produce): a legacy message set becomes one RecordBatch v2 holding every
// message, as Kafka's log validator does for a v2 log: offset deltas 0..n-1 (the log assigns
// the base offset), no producer id, CreateTime timestamps as the messages carry them (-1 for
// magic 0, which has none), compressed with the codec of the set's compressed wrappers.
//
// Down-conversion (fetch): the entries of a log read (RecordBatch v2, or legacy messages copied
// from an older Kafka log) are rewritten as magic 0 or 1 messages, as Kafka's down-conversion
// does: records below the fetch offset and control batches are left out, headers are dropped,
// an uncompressed batch becomes one message per record, a compressed batch one wrapper of the
// same codec (inner offsets relative to its first record for magic 1, absolute for magic 0).
// Output is written whole message by whole message and never passes its byte bound; memory is
// that bound plus one batch's records.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "format/layout.h"

namespace silt::format {

struct UpConvertOptions {
  // A wrapper inflating, or the built batch growing, past this is TooLarge.
  int64_t max_size = 64LL * 1024 * 1024;
};

struct UpConverted {
  std::string batch;    // one RecordBatch v2, baseOffset 0, CRC-32C set
  int32_t records = 0;  // messages converted
  int8_t magic = 0;     // the highest magic seen in the set
};

// Converts a whole legacy message set into one RecordBatch v2.
//   Corruption  the set is empty, holds a magic 2 entry, ends in a partial message, or any
//               message is malformed or fails its CRC-32 (format/legacy.h's rules), or is a
//               zstd wrapper (zstd needs magic 2);
//   TooLarge    a wrapper or the result passes options.max_size.
Result<UpConverted> UpConvertMessageSet(std::string_view message_set,
                                        const UpConvertOptions& options = {});

struct DownConvertOptions {
  int8_t magic = kMagicV1;   // 0 or 1: what to write
  int64_t first_offset = 0;  // records below it are skipped (a fetch inside a batch)
  int64_t max_bytes = 0;     // bound on the output
  // When not even the first message fits in max_bytes: write it whole anyway (Fetch v3, KIP-74),
  // or else, with allow_partial, its first max_bytes bytes (Fetch v0-2: the old consumer sees a
  // partial message and asks again with a larger size), or else nothing.
  bool min_one_message = false;
  bool allow_partial = false;
  int64_t max_uncompressed_size = 64LL * 1024 * 1024;
};

struct DownConverted {
  std::string data;           // whole messages (and at most one partial one at the end)
  int32_t messages = 0;       // whole top-level messages written (a wrapper counts as one)
  int64_t next_offset = -1;   // the offset after the last record written, -1 if none
  bool partial = false;       // data ends with a message cut at max_bytes
};

// Down-converts the entries of `log_data` (whole entries; a partial one at the end is ignored)
// into *out, stopping at the first message that does not fit.
//   Unsupported  the first entry to convert is zstd-compressed (magic 0/1 cannot carry zstd;
//                Kafka answers UNSUPPORTED_COMPRESSION_TYPE). A zstd entry after converted
//                messages ends the output there instead;
//   Corruption / TooLarge  a malformed entry, or one inflating past max_uncompressed_size.
Status DownConvert(std::string_view log_data, const DownConvertOptions& options,
                   DownConverted* out);

}  // namespace silt::format
