#include "format/legacy_convert.h"

#include <zlib.h>

#include <algorithm>

#include "base/coding.h"
#include "format/compression.h"
#include "format/legacy.h"
#include "format/record_batch.h"

namespace silt::format {

// ---- up-conversion --------------------------------------------------------------------------

Result<UpConverted> UpConvertMessageSet(std::string_view message_set,
                                        const UpConvertOptions& options) {
  if (message_set.empty()) return Status::Corruption("empty message set");
  UpConverted out;
  // The batch's codec, from the wrappers' attributes (the walk below checks every entry): the
  // last compressed wrapper's, as Kafka's validator picks the source codec.
  RecordBatchBuilder::Options bo;
  LogEntryScanner scanner(message_set);
  for (LogEntry e; scanner.Next(&e).ok();) {
    if (e.magic > kMagicV1) break;
    int codec = e.bytes[kLegacyLogOverhead + kLegacyAttributesOffset] & kCompressionMask;
    if (codec != 0) bo.compression = static_cast<Compression>(codec);
  }
  RecordBatchBuilder builder(bo);
  LegacyOptions lo;
  lo.max_uncompressed_size = options.max_size;
  bool too_large = false;
  Status s = ForEachLegacyMessage(message_set, lo, [&](const LegacyMessage& m) {
    out.magic = std::max(out.magic, m.info.magic);
    // The log assigns offsets; the producer's are ignored, as Kafka ignores them.
    builder.AddAt(out.records, m.ToRecordView());
    ++out.records;
    if (static_cast<int64_t>(builder.uncompressed_size()) > options.max_size) {
      too_large = true;
      return false;
    }
    return true;
  });
  if (s.IsTruncated()) {
    return Status::Corruption("message set ends in a partial message: " + s.message());
  }
  SILT_TRY(s);
  if (too_large) {
    return Status::TooLarge("converted records pass " + std::to_string(options.max_size) +
                            " bytes");
  }
  if (out.records == 0) return Status::Corruption("message set without messages");
  SILT_ASSIGN_OR_RETURN(out.batch, builder.Finish());
  if (static_cast<int64_t>(out.batch.size()) > options.max_size) {
    return Status::TooLarge("converted batch of " + std::to_string(out.batch.size()) +
                            " bytes passes " + std::to_string(options.max_size));
  }
  return out;
}

// ---- down-conversion ------------------------------------------------------------------------

namespace {

// Appends one legacy entry: offset, messageSize, crc (CRC-32 of magic..end), magic, attributes,
// [timestamp], key, value.
void AppendMessage(std::string* out, int8_t magic, int64_t offset, int8_t attributes,
                   int64_t timestamp, bool key_null, std::string_view key, bool value_null,
                   std::string_view value) {
  size_t start = out->size();
  ByteWriter w(out);
  int32_t size = (magic == kMagicV0 ? kLegacyV0MinSize : kLegacyV1MinSize) +
                 static_cast<int32_t>((key_null ? 0 : key.size()) + (value_null ? 0 : value.size()));
  w.I64(offset);  // offset
  w.I32(size);    // messageSize
  w.U32(0);       // crc (patched below)
  w.I8(magic);    // magic
  w.I8(attributes);
  if (magic == kMagicV1) w.I64(timestamp);
  w.I32(key_null ? -1 : static_cast<int32_t>(key.size()));
  if (!key_null) w.Raw(key);
  w.I32(value_null ? -1 : static_cast<int32_t>(value.size()));
  if (!value_null) w.Raw(value);
  size_t crc_at = start + kLegacyLogOverhead + kLegacyCrcOffset;
  size_t magic_at = start + kLegacyLogOverhead + kLegacyMagicOffset;
  uint32_t crc = static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(out->data() + magic_at),
                                             static_cast<uInt>(out->size() - magic_at)));
  EncodeBE32(out->data() + crc_at, crc);
}

// One entry's records on their way out: what every record shares.
struct EntryShape {
  Compression codec = Compression::kNone;
  bool log_append_time = false;
  int64_t max_timestamp = -1;
};

class Writer {
 public:
  Writer(const DownConvertOptions& o, DownConverted* out) : o_(o), out_(out) {}

  bool stopped() const { return stopped_; }

  // Offers one whole top-level message (its entry bytes in `msg`) ending at `next_offset`.
  // False once the output is full.
  bool Emit(std::string_view msg, int64_t next_offset) {
    if (stopped_) return false;
    int64_t room = o_.max_bytes - static_cast<int64_t>(out_->data.size());
    if (static_cast<int64_t>(msg.size()) > room) {
      if (out_->messages == 0 && o_.min_one_message) {
        // KIP-74: the first message goes out whole so the consumer makes progress.
      } else {
        if (out_->messages == 0 && o_.allow_partial && room > 0) {
          out_->data.append(msg.substr(0, static_cast<size_t>(room)));
          out_->partial = true;
        }
        stopped_ = true;
        return false;
      }
    }
    out_->data.append(msg);
    ++out_->messages;
    out_->next_offset = next_offset;
    return true;
  }

  // Converts the records fed by `each` (a function taking a per-record callback) as one entry.
  template <typename EachRecord>
  Status Entry(const EntryShape& shape, EachRecord&& each) {
    const int8_t magic = o_.magic;
    const int8_t lat_bit = magic == kMagicV1 && shape.log_append_time ? kTimestampTypeBit : 0;
    if (shape.codec == Compression::kNone) {
      return each([&](const RecordView& r) {
        if (r.offset < o_.first_offset) return true;
        scratch_.clear();
        AppendMessage(&scratch_, magic, r.offset, lat_bit, r.timestamp, r.key_null, r.key,
                      r.value_null, r.value);
        return Emit(scratch_, r.offset + 1);
      });
    }
    if (shape.codec == Compression::kZstd) {
      stopped_ = true;
      if (out_->messages > 0 || out_->partial) return Status::OK();
      return Status::Unsupported("zstd records cannot be sent as magic " + std::to_string(magic) +
                                 " messages");
    }
    // A wrapper: inner messages (magic 1: offsets relative to the first inner one), compressed.
    std::string inner;
    int64_t first = -1, last = -1, max_ts = -1;
    SILT_TRY(each([&](const RecordView& r) {
      if (r.offset < o_.first_offset) return true;
      if (first < 0) first = r.offset;
      last = r.offset;
      max_ts = std::max(max_ts, r.timestamp);
      AppendMessage(&inner, magic, magic == kMagicV1 ? r.offset - first : r.offset, 0, r.timestamp,
                    r.key_null, r.key, r.value_null, r.value);
      return true;
    }));
    if (first < 0) return Status::OK();
    std::string packed;
    SILT_TRY(Compress(shape.codec, inner, CompressOptions{}, &packed));
    scratch_.clear();
    int8_t attributes = static_cast<int8_t>(static_cast<int8_t>(shape.codec) | lat_bit);
    AppendMessage(&scratch_, magic, last, attributes,
                  shape.log_append_time ? shape.max_timestamp : max_ts, true, {}, false, packed);
    Emit(scratch_, last + 1);
    return Status::OK();
  }

 private:
  const DownConvertOptions& o_;
  DownConverted* out_;
  std::string scratch_;
  bool stopped_ = false;
};

}  // namespace

Status DownConvert(std::string_view log_data, const DownConvertOptions& options,
                   DownConverted* out) {
  *out = DownConverted();
  if (options.magic != kMagicV0 && options.magic != kMagicV1)
    return Status::InvalidArgument("down-conversion targets magic 0 or 1");
  Writer writer(options, out);
  LogEntryScanner scanner(log_data);
  LogEntry e;
  ValidateLimits limits;
  limits.max_uncompressed_size = options.max_uncompressed_size;
  LegacyOptions legacy;
  legacy.max_uncompressed_size = options.max_uncompressed_size;
  while (!writer.stopped()) {
    Status s = scanner.Next(&e);
    if (s.IsNotFound() || s.IsTruncated()) return Status::OK();
    if (s.ok()) {
      if (e.magic == kMagicV2) {
        auto view = RecordBatchView::Parse(e.bytes, limits);
        if (!view.ok()) {
          s = view.status();
        } else if (view->header().control() ||
                   view->header().base_offset + view->header().last_offset_delta <
                       options.first_offset) {
          continue;
        } else {
          const BatchHeader& h = view->header();
          EntryShape shape{h.compression(), h.log_append_time(), h.max_timestamp};
          s = writer.Entry(shape, [&](auto&& fn) { return view->ForEachRecord(fn, limits); });
        }
      } else if (e.magic <= options.magic) {
        // Already in a format the client reads: passed on as stored, as Kafka does.
        if (e.offset < options.first_offset) continue;
        writer.Emit(e.bytes, e.offset + 1);
        continue;
      } else {
        // A magic 1 entry for a magic 0 client: its records, re-encoded.
        EntryShape shape;
        shape.codec = static_cast<Compression>(e.bytes[kLegacyLogOverhead + kLegacyAttributesOffset] &
                                               kCompressionMask);
        s = writer.Entry(shape, [&](auto&& fn) {
          return ForEachLegacyMessage(e.bytes, legacy,
                                      [&](const LegacyMessage& m) { return fn(m.ToRecordView()); });
        });
      }
    }
    if (!s.ok()) {
      // Damage after converted messages ends the output there; the next fetch meets it first.
      if (out->messages > 0) return Status::OK();
      return s;
    }
  }
  return Status::OK();
}

}  // namespace silt::format
