#include "format/record_batch.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "base/clock.h"
#include "base/coding.h"
#include "format/compression.h"

namespace silt::format {

namespace {

// Smallest record: length, attributes, timestampDelta, offsetDelta, keyLength, valueLength,
// headersCount, one byte each.
constexpr size_t kMinRecordSize = 7;

// Bytes WriteNullableBytes writes.
size_t NullableBytesLength(bool null, std::string_view b) {
  return null ? 1 : static_cast<size_t>(VarintLength(static_cast<int32_t>(b.size()))) + b.size();
}

void WriteNullableBytes(ByteWriter& w, bool null, std::string_view b) {
  if (null) {
    w.Varint(-1);
    return;
  }
  w.Varint(static_cast<int32_t>(b.size()));
  w.Raw(b);
}

Status RecordError(int index, const std::string& what) {
  return Status::Corruption("record " + std::to_string(index) + ": " + what);
}

}  // namespace

Record RecordView::ToRecord() const {
  Record r;
  r.offset = offset;
  r.timestamp = timestamp;
  if (!key_null) r.key = std::string(key);
  if (!value_null) r.value = std::string(value);
  r.headers.reserve(headers.size());
  for (const auto& [k, v] : headers) {
    Header h;
    h.key = std::string(k);
    if (v) h.value = std::string(*v);
    r.headers.push_back(std::move(h));
  }
  return r;
}

ControlType ParseControlType(std::string_view key) {
  if (key.size() < 4) return ControlType::kUnknown;
  return static_cast<ControlType>(static_cast<int16_t>(DecodeBE16(key.data() + 2)));
}

// ---- builder --------------------------------------------------------------------------------

RecordBatchBuilder::RecordBatchBuilder(Options options) : options_(options) {}

RecordBatchBuilder::RecordBatchBuilder(Options options, std::string buffer)
    : options_(options), buffer_(std::move(buffer)) {
  buffer_.clear();
}

void RecordBatchBuilder::Add(
    const std::optional<std::string_view>& key, const std::optional<std::string_view>& value,
    int64_t timestamp,
    const std::vector<std::pair<std::string_view, std::optional<std::string_view>>>& headers) {
  if (timestamp < 0) timestamp = NowMs().value();
  AddRecord(count_, key, value, timestamp, headers);
}

void RecordBatchBuilder::AddAt(int32_t offset_delta, const RecordView& r) {
  AddRecord(offset_delta,
            r.key_null ? std::nullopt : std::optional<std::string_view>(r.key),
            r.value_null ? std::nullopt : std::optional<std::string_view>(r.value), r.timestamp,
            r.headers);
}

void RecordBatchBuilder::AddRecord(
    int32_t offset_delta, const std::optional<std::string_view>& key,
    const std::optional<std::string_view>& value, int64_t timestamp,
    const std::vector<std::pair<std::string_view, std::optional<std::string_view>>>& headers) {
  if (count_ == 0) {
    first_ts_ = options_.base_timestamp >= 0 ? options_.base_timestamp : timestamp;
    max_ts_ = timestamp;
    buffer_.assign(kBatchHeaderSize, '\0');  // written by Finish()
  }
  max_ts_ = std::max(max_ts_, timestamp);

  const int64_t timestamp_delta = timestamp - first_ts_;
  const std::string_view k = key.value_or(std::string_view());
  const std::string_view v = value.value_or(std::string_view());
  // The body's length comes first: it is summed from the fields, so that the record is written
  // once, straight into the batch.
  size_t length = 1 + static_cast<size_t>(VarlongLength(timestamp_delta)) +
                  static_cast<size_t>(VarintLength(offset_delta)) +
                  NullableBytesLength(!key.has_value(), k) +
                  NullableBytesLength(!value.has_value(), v) +
                  static_cast<size_t>(VarintLength(static_cast<int32_t>(headers.size())));
  for (const auto& [hk, hv] : headers)
    length += NullableBytesLength(false, hk) +
              NullableBytesLength(!hv.has_value(), hv.value_or(std::string_view()));

  ByteWriter w(&buffer_);
  w.Varint(static_cast<int32_t>(length));  // length
  w.I8(0);                                 // attributes
  w.Varlong(timestamp_delta);              // timestampDelta
  w.Varint(offset_delta);                  // offsetDelta
  WriteNullableBytes(w, !key.has_value(), k);
  WriteNullableBytes(w, !value.has_value(), v);
  w.Varint(static_cast<int32_t>(headers.size()));  // headersCount
  for (const auto& [hk, hv] : headers) {
    WriteNullableBytes(w, false, hk);
    WriteNullableBytes(w, !hv.has_value(), hv.value_or(std::string_view()));
  }
  ++count_;
  last_delta_ = offset_delta;
}

void RecordBatchBuilder::Add(const Record& r) {
  std::vector<std::pair<std::string_view, std::optional<std::string_view>>> headers;
  headers.reserve(r.headers.size());
  for (const auto& h : r.headers) {
    headers.emplace_back(h.key, h.value ? std::optional<std::string_view>(*h.value)
                                        : std::nullopt);
  }
  Add(r.key ? std::optional<std::string_view>(*r.key) : std::nullopt,
      r.value ? std::optional<std::string_view>(*r.value) : std::nullopt, r.timestamp, headers);
}

int RecordBatchBuilder::record_count() const { return count_; }

size_t RecordBatchBuilder::uncompressed_size() const {
  return count_ == 0 ? 0 : buffer_.size() - kBatchHeaderSize;
}

Result<std::string> RecordBatchBuilder::Finish() {
  std::string batch;
  SILT_TRY(FinishInto(&batch));
  return batch;
}

Status RecordBatchBuilder::FinishInto(std::string* out) {
  int16_t attributes = static_cast<int16_t>(options_.compression) & kCompressionMask;
  if (options_.log_append_time) attributes |= kTimestampTypeBit;
  if (options_.transactional) attributes |= kTransactionalBit;
  if (options_.control) attributes |= kControlBit;
  if (options_.delete_horizon) attributes |= kDeleteHorizonBit;

  if (count_ == 0) buffer_.assign(kBatchHeaderSize, '\0');  // a batch without records
  const std::string_view records = std::string_view(buffer_).substr(kBatchHeaderSize);
  header_.clear();
  ByteWriter w(&header_);
  // Spec order; the fields marked "patched" are filled in once the records are written.
  w.I64(options_.base_offset);                                   // baseOffset
  w.I32(0);                                                      // batchLength (patched)
  w.I32(options_.partition_leader_epoch);                        // partitionLeaderEpoch
  w.I8(kMagicV2);                                                // magic
  w.U32(0);                                                      // crc (patched)
  w.I16(attributes);                                             // attributes
  w.I32(0);                                                      // lastOffsetDelta (patched)
  w.I64(count_ > 0 ? first_ts_ : options_.base_timestamp);       // baseTimestamp
  w.I64(0);                                                      // maxTimestamp (patched)
  w.I64(options_.producer_id);                                   // producerId
  w.I16(options_.producer_epoch);                                // producerEpoch
  w.I32(options_.base_sequence);                                 // baseSequence
  w.I32(0);                                                      // recordsCount (patched)

  constexpr size_t kMaxBatchLength = static_cast<size_t>(std::numeric_limits<int32_t>::max());
  std::string& batch = *out;
  if (options_.compression == Compression::kNone) {
    if (buffer_.size() - kLogOverhead > kMaxBatchLength)
      return Status::TooLarge("batch exceeds 2 GiB");
    // The records are already in place behind the header space.
    std::memcpy(buffer_.data(), header_.data(), kBatchHeaderSize);
    batch.swap(buffer_);
    buffer_.clear();  // the caller's old buffer, kept for its capacity
  } else {
    batch.clear();
    batch.reserve(kBatchHeaderSize + records.size());  // the codec appends without regrowing
    batch.assign(header_);
    CompressOptions co;
    co.level = options_.compression_level;
    co.snappy_xerial = options_.snappy_xerial;
    SILT_TRY(Compress(options_.compression, records, co, &batch));
    if (batch.size() - kLogOverhead > kMaxBatchLength)
      return Status::TooLarge("batch exceeds 2 GiB");
    buffer_.clear();  // its capacity serves the next batch
  }

  ByteWriter b(&batch);
  b.PatchI32(kBatchLengthOffset, static_cast<int32_t>(batch.size() - kLogOverhead));
  int32_t last_offset_delta = count_ > 0 ? last_delta_ : 0;
  if (options_.last_offset_delta >= 0) last_offset_delta = options_.last_offset_delta;
  b.PatchI32(kLastOffsetDeltaOffset, last_offset_delta);
  b.PatchI64(kMaxTimestampOffset, count_ > 0 ? max_ts_ : options_.base_timestamp);
  b.PatchI32(kRecordsCountOffset, count_);
  b.PatchU32(kCrcOffset, ComputeBatchCrc(batch));
  Reset();
  return Status::OK();
}

void RecordBatchBuilder::Reset() {
  count_ = 0;
  last_delta_ = -1;
  first_ts_ = -1;
  max_ts_ = -1;
}

// ---- view -----------------------------------------------------------------------------------

Result<RecordBatchView> RecordBatchView::Parse(std::string_view data, const ValidateLimits& limits) {
  FramingLimits fl;
  fl.max_batch_size = limits.max_batch_size;
  fl.verify_crc = limits.verify_crc;
  BatchHeader h;
  SILT_TRY(CheckBatchFraming(data, fl, &h));
  return RecordBatchView(h, data.substr(0, static_cast<size_t>(h.size())));
}

Status RecordBatchView::RecordsForDecoding(const ValidateLimits& limits, std::string* inflated,
                                           std::string_view* block) const {
  const BatchHeader& h = header_;
  *block = records_block();
  Compression codec = h.compression();
  if (static_cast<int>(codec) > static_cast<int>(Compression::kZstd))
    return Status::Corruption("unknown compression codec " + std::to_string(static_cast<int>(codec)));
  if (codec != Compression::kNone) {
    Status s = Decompress(codec, *block, limits.max_uncompressed_size, inflated);
    if (!s.ok()) return s.WithContext("records block");
    *block = *inflated;
  }
  if (h.records_count < 0 || static_cast<uint64_t>(h.records_count) > block->size() / kMinRecordSize)
    return Status::Corruption("recordsCount " + std::to_string(h.records_count) +
                              " cannot fit in a records block of " + std::to_string(block->size()) +
                              " bytes");
  if (h.records_count > static_cast<int64_t>(h.last_offset_delta) + 1)
    return Status::Corruption("recordsCount " + std::to_string(h.records_count) +
                              " exceeds lastOffsetDelta + 1 = " +
                              std::to_string(static_cast<int64_t>(h.last_offset_delta) + 1));
  return Status::OK();
}

namespace detail {

Status RecordDecoder::Error() const {
  const std::string d = std::to_string(detail_);
  switch (fault_) {
    case Fault::kMissing:
      return Status::Corruption("recordsCount is " + std::to_string(h_.records_count) +
                                " but the block holds only " + std::to_string(index_) + " records");
    case Fault::kLength: return RecordError(index_, "malformed length");
    case Fault::kLengthOverrun: return RecordError(index_, "length " + d + " overruns the batch");
    case Fault::kPrefix:
      return RecordError(index_, "malformed attributes, timestampDelta or offsetDelta");
    case Fault::kOffsetOrder:
      return RecordError(index_, "offsetDelta " + d + " is not above the previous " +
                                     std::to_string(prev_delta_) + " and within lastOffsetDelta " +
                                     std::to_string(h_.last_offset_delta));
    case Fault::kOffsetGap:
      return RecordError(index_, "offsetDelta " + d + ", expected " + std::to_string(index_));
    case Fault::kTimestamp:
      return RecordError(index_, "timestampDelta " + d +
                                     " gives an invalid timestamp from baseTimestamp " +
                                     std::to_string(h_.base_timestamp));
    case Fault::kKey: return RecordError(index_, "malformed key");
    case Fault::kValue: return RecordError(index_, "malformed value");
    case Fault::kHeaderCount:
      return RecordError(index_, "headersCount is malformed or larger than the record");
    case Fault::kHeaderKey: return RecordError(index_, "header " + d + " has a malformed key");
    case Fault::kHeaderValue: return RecordError(index_, "header " + d + " has a malformed value");
    case Fault::kTrailing: return RecordError(index_, d + " bytes follow the last header");
    case Fault::kControlKey:
      return RecordError(index_, "a control record needs a 4-byte key (version, type)");
  }
  return RecordError(index_, "malformed");
}

Status RecordDecoder::Finish() const {
  if (p_ != end_)
    return Status::Corruption(std::to_string(end_ - p_) + " bytes follow the last of " +
                              std::to_string(h_.records_count) + " records");
  if (contiguous_ && h_.records_count != static_cast<int64_t>(h_.last_offset_delta) + 1)
    return Status::Corruption("lastOffsetDelta " + std::to_string(h_.last_offset_delta) +
                              " does not match recordsCount " + std::to_string(h_.records_count));
  return Status::OK();
}

}  // namespace detail

Status RecordBatchView::Validate(const ValidateLimits& limits) const {
  return ForEachRecord([](const RecordView&) { return true; }, limits);
}

Result<std::vector<Record>> RecordBatchView::Records(const ValidateLimits& limits) const {
  std::vector<Record> out;
  SILT_TRY(ForEachRecord(
      [&](const RecordView& rv) {
        out.push_back(rv.ToRecord());
        return true;
      },
      limits));
  return out;
}

}  // namespace silt::format
