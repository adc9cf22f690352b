#include "format/batch_header.h"

#include <string>

#include "base/coding.h"
#include "base/crc32c.h"

namespace silt::format {

int32_t BatchHeader::last_sequence() const {
  if (base_sequence < 0) return -1;
  // Sequences wrap at INT32_MAX, as Kafka's DefaultRecordBatch.incrementSequence does.
  int64_t s = static_cast<int64_t>(base_sequence) + last_offset_delta;
  if (s > INT32_MAX) s -= static_cast<int64_t>(INT32_MAX) + 1;
  return static_cast<int32_t>(s);
}

BatchHeader DecodeBatchHeader(std::string_view d) {
  const char* p = d.data();
  BatchHeader h;
  h.base_offset = static_cast<int64_t>(DecodeBE64(p + kBaseOffsetOffset));
  h.batch_length = static_cast<int32_t>(DecodeBE32(p + kBatchLengthOffset));
  h.partition_leader_epoch = static_cast<int32_t>(DecodeBE32(p + kPartitionLeaderEpochOffset));
  h.magic = static_cast<int8_t>(p[kMagicOffset]);
  h.crc = DecodeBE32(p + kCrcOffset);
  h.attributes = static_cast<int16_t>(DecodeBE16(p + kAttributesOffset));
  h.last_offset_delta = static_cast<int32_t>(DecodeBE32(p + kLastOffsetDeltaOffset));
  h.base_timestamp = static_cast<int64_t>(DecodeBE64(p + kBaseTimestampOffset));
  h.max_timestamp = static_cast<int64_t>(DecodeBE64(p + kMaxTimestampOffset));
  h.producer_id = static_cast<int64_t>(DecodeBE64(p + kProducerIdOffset));
  h.producer_epoch = static_cast<int16_t>(DecodeBE16(p + kProducerEpochOffset));
  h.base_sequence = static_cast<int32_t>(DecodeBE32(p + kBaseSequenceOffset));
  h.records_count = static_cast<int32_t>(DecodeBE32(p + kRecordsCountOffset));
  return h;
}

void EncodeBatchHeader(const BatchHeader& h, char* p) {
  EncodeBE64(p + kBaseOffsetOffset, static_cast<uint64_t>(h.base_offset));
  EncodeBE32(p + kBatchLengthOffset, static_cast<uint32_t>(h.batch_length));
  EncodeBE32(p + kPartitionLeaderEpochOffset, static_cast<uint32_t>(h.partition_leader_epoch));
  p[kMagicOffset] = static_cast<char>(h.magic);
  EncodeBE32(p + kCrcOffset, h.crc);
  EncodeBE16(p + kAttributesOffset, static_cast<uint16_t>(h.attributes));
  EncodeBE32(p + kLastOffsetDeltaOffset, static_cast<uint32_t>(h.last_offset_delta));
  EncodeBE64(p + kBaseTimestampOffset, static_cast<uint64_t>(h.base_timestamp));
  EncodeBE64(p + kMaxTimestampOffset, static_cast<uint64_t>(h.max_timestamp));
  EncodeBE64(p + kProducerIdOffset, static_cast<uint64_t>(h.producer_id));
  EncodeBE16(p + kProducerEpochOffset, static_cast<uint16_t>(h.producer_epoch));
  EncodeBE32(p + kBaseSequenceOffset, static_cast<uint32_t>(h.base_sequence));
  EncodeBE32(p + kRecordsCountOffset, static_cast<uint32_t>(h.records_count));
}

uint32_t ComputeBatchCrc(std::string_view batch) {
  return crc32c::Value(batch.data() + kAttributesOffset, batch.size() - kAttributesOffset);
}

void ResealBatch(const BatchHeader& h, char* batch, size_t size) {
  BatchHeader out = h;
  out.batch_length = static_cast<int32_t>(DecodeBE32(batch + kBatchLengthOffset));
  out.crc = 0;
  EncodeBatchHeader(out, batch);
  EncodeBE32(batch + kCrcOffset, ComputeBatchCrc(std::string_view(batch, size)));
}

const char* CompressionName(Compression c) {
  switch (c) {
    case Compression::kNone: return "none";
    case Compression::kGzip: return "gzip";
    case Compression::kSnappy: return "snappy";
    case Compression::kLz4: return "lz4";
    case Compression::kZstd: return "zstd";
  }
  return "unknown";
}

namespace {

// What the first kMagicPrefixSize bytes of a batch show: its magic, its batchLength (at least a
// header) and its size (within the limit).
Status CheckPrefix(const char* p, const FramingLimits& limits, int64_t* size) {
  int8_t magic = static_cast<int8_t>(p[kMagicOffset]);
  int32_t length = static_cast<int32_t>(DecodeBE32(p + kBatchLengthOffset));
  if (magic != kMagicV2)
    return Status::Corruption("magic " + std::to_string(magic) + ", expected 2");
  if (length < kBatchHeaderSize - kLogOverhead)
    return Status::Corruption("batchLength " + std::to_string(length) + " is below the minimum " +
                              std::to_string(kBatchHeaderSize - kLogOverhead));
  *size = kLogOverhead + static_cast<int64_t>(length);
  if (*size > limits.max_batch_size)
    return Status::Corruption("batch of " + std::to_string(*size) + " bytes exceeds the limit of " +
                              std::to_string(limits.max_batch_size));
  return Status::OK();
}

Status CheckCounts(const BatchHeader& h) {
  if (h.last_offset_delta < 0)
    return Status::Corruption("negative lastOffsetDelta " + std::to_string(h.last_offset_delta));
  if (h.records_count < 0)
    return Status::Corruption("negative recordsCount " + std::to_string(h.records_count));
  return Status::OK();
}

}  // namespace

Status CheckBatchFraming(std::string_view data, const FramingLimits& limits, BatchHeader* out) {
  if (data.size() < static_cast<size_t>(kMagicPrefixSize))
    return Status::Truncated("batch header cut short after " + std::to_string(data.size()) +
                             " bytes");
  int64_t size = 0;
  SILT_TRY(CheckPrefix(data.data(), limits, &size));
  if (static_cast<int64_t>(data.size()) < size)
    return Status::Truncated("batch of " + std::to_string(size) + " bytes cut short after " +
                             std::to_string(data.size()));
  BatchHeader h = DecodeBatchHeader(data);
  SILT_TRY(CheckCounts(h));
  if (limits.verify_crc)
    SILT_TRY(CheckBatchCrc(h, ComputeBatchCrc(data.substr(0, static_cast<size_t>(size)))));
  *out = h;
  return Status::OK();
}

Status CheckBatchHeader(std::string_view header, const FramingLimits& limits, BatchHeader* out) {
  if (header.size() < static_cast<size_t>(kBatchHeaderSize))
    return Status::Truncated("batch header cut short after " + std::to_string(header.size()) +
                             " bytes");
  int64_t size = 0;
  SILT_TRY(CheckPrefix(header.data(), limits, &size));
  BatchHeader h = DecodeBatchHeader(header);
  SILT_TRY(CheckCounts(h));
  *out = h;
  return Status::OK();
}

Status CheckBatchCrc(const BatchHeader& h, uint32_t computed) {
  if (computed == h.crc) return Status::OK();
  char buf[64];
  std::snprintf(buf, sizeof buf, "crc mismatch: stored 0x%08x, computed 0x%08x", h.crc, computed);
  return Status::Corruption(buf);
}

}  // namespace silt::format
