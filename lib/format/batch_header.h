// The fixed 61-byte header of a RecordBatch v2, and the framing checks the storage layer runs
// on every batch it appends or recovers. The records inside are the business of record_batch.h.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/ids.h"
#include "base/status.h"
#include "format/layout.h"

namespace silt::format {

struct BatchHeader {
  int64_t base_offset = 0;
  int32_t batch_length = 0;
  int32_t partition_leader_epoch = -1;
  int8_t magic = kMagicV2;
  uint32_t crc = 0;
  int16_t attributes = 0;
  int32_t last_offset_delta = 0;
  int64_t base_timestamp = -1;
  int64_t max_timestamp = -1;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t base_sequence = -1;
  int32_t records_count = 0;

  // Total bytes of the batch, headers included.
  int64_t size() const { return kLogOverhead + static_cast<int64_t>(batch_length); }
  Offset base() const { return Offset(base_offset); }
  Offset last() const { return Offset(base_offset + last_offset_delta); }
  Offset next() const { return last() + 1; }
  Compression compression() const { return static_cast<Compression>(attributes & kCompressionMask); }
  bool log_append_time() const { return (attributes & kTimestampTypeBit) != 0; }
  bool transactional() const { return (attributes & kTransactionalBit) != 0; }
  bool control() const { return (attributes & kControlBit) != 0; }
  // Kafka's hasDeleteHorizonMs (KIP-534): baseTimestamp is the time after which the log cleaner
  // may remove the batch's tombstones.
  bool has_delete_horizon() const { return (attributes & kDeleteHorizonBit) != 0; }
  int32_t last_sequence() const;
};

// Decodes the header at the start of `data`, which must hold at least kBatchHeaderSize bytes.
// Does not check magic, lengths or the CRC.
BatchHeader DecodeBatchHeader(std::string_view data);

// Writes `h` over the first kBatchHeaderSize bytes of `dst` (crc written as given).
void EncodeBatchHeader(const BatchHeader& h, char* dst);

// CRC-32C of a whole batch's covered bytes (attributes to the end).
uint32_t ComputeBatchCrc(std::string_view batch);

// Rewrites the header of the whole batch at `batch` (`size` bytes, at least kBatchHeaderSize)
// with `h`, keeping the batch's own batchLength, and writes the CRC of the result: what a client
// re-producing a stored batch under its own producer id, epoch and sequence needs. The records
// are left as they are, so `h` must describe them (lastOffsetDelta, recordsCount, timestamps,
// codec); h.crc and h.batch_length are ignored.
void ResealBatch(const BatchHeader& h, char* batch, size_t size);

// Name of a codec, as Kafka spells it ("none", "gzip", "snappy", "lz4", "zstd"), or "unknown".
const char* CompressionName(Compression c);

// Limits for CheckBatchFraming.
struct FramingLimits {
  int64_t max_batch_size = INT32_MAX;  // e.g. max.message.bytes + overhead
  bool verify_crc = true;
};

// Checks the batch that starts at data[0]:
//   - Truncated when `data` ends before the batch does (including before the header or the
//     length field): a torn tail if this is the end of a file;
//   - Corruption when the magic is not 2, batchLength is below the header's size or above the
//     limit, lastOffsetDelta or recordsCount is negative, or the CRC does not match.
// On OK, *header is the decoded header and the batch is data[0, header->size()).
Status CheckBatchFraming(std::string_view data, const FramingLimits& limits, BatchHeader* header);

// The checks of CheckBatchFraming that need only the batch's header (its first kBatchHeaderSize
// bytes, which `header` must hold): everything but the batch's end and its CRC. For a batch
// checked as it streams by: its CRC is crc32c::Extend over bytes [kAttributesOffset, size()),
// then CheckBatchCrc.
Status CheckBatchHeader(std::string_view header, const FramingLimits& limits,
                        BatchHeader* out);
// Corruption ("crc mismatch ...") unless `computed` is h.crc.
Status CheckBatchCrc(const BatchHeader& h, uint32_t computed);

}  // namespace silt::format
