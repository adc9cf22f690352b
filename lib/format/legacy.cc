#include "format/legacy.h"

#include <zlib.h>

#include <string>

#include "base/coding.h"
#include "format/compression.h"

namespace silt::format {

namespace {

std::string At(int64_t position) { return " at position " + std::to_string(position); }

// Decodes the fields of one message (crc to end) without looking inside a wrapper.
Status ParseMessage(std::string_view msg, int64_t offset, int64_t position, bool inner,
                    const LegacyOptions& options, LegacyMessage* out) {
  if (msg.size() <= static_cast<size_t>(kLegacyMagicOffset))
    return Status::Corruption("message of " + std::to_string(msg.size()) + " bytes is too short" +
                              At(position));
  int8_t magic = static_cast<int8_t>(msg[kLegacyMagicOffset]);
  if (magic != kMagicV0 && magic != kMagicV1)
    return Status::Corruption("magic " + std::to_string(magic) + " in a legacy message" +
                              At(position));
  size_t min_size = magic == kMagicV0 ? kLegacyV0MinSize : kLegacyV1MinSize;
  if (msg.size() < min_size)
    return Status::Corruption("magic " + std::to_string(magic) + " message of " +
                              std::to_string(msg.size()) + " bytes is below the minimum " +
                              std::to_string(min_size) + At(position));

  LegacyMessageInfo& info = out->info;
  info = LegacyMessageInfo();
  info.position = position;
  info.offset = offset;
  info.size = static_cast<int32_t>(msg.size());
  info.magic = magic;
  info.inner = inner;
  info.crc = DecodeBE32(msg.data() + kLegacyCrcOffset);
  info.computed_crc = static_cast<uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(msg.data() + kLegacyMagicOffset),
            static_cast<uInt>(msg.size() - kLegacyMagicOffset)));
  info.crc_valid = info.crc == info.computed_crc;

  ByteReader r(msg.substr(kLegacyAttributesOffset));
  r.I8(&info.attributes);  // size checked above
  if (magic == kMagicV1) r.I64(&info.timestamp);
  info.log_append_time = magic == kMagicV1 && (info.attributes & kTimestampTypeBit) != 0;
  auto read_bytes = [&](bool* null, std::string_view* b) {
    int32_t len;
    if (!r.I32(&len) || len < -1) return false;
    *null = len == -1;
    if (*null) {
      *b = {};
      return true;
    }
    return r.Bytes(static_cast<size_t>(len), b);
  };
  if (!read_bytes(&out->key_null, &out->key))
    return Status::Corruption("message key overruns the message" + At(position));
  if (!read_bytes(&out->value_null, &out->value))
    return Status::Corruption("message value overruns the message" + At(position));
  if (!r.empty())
    return Status::Corruption(std::to_string(r.remaining()) + " bytes follow the message value" +
                              At(position));

  if (options.verify_crc && !info.crc_valid) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "message crc mismatch: stored 0x%08x, computed 0x%08x",
                  info.crc, info.computed_crc);
    return Status::Corruption(buf + At(position));
  }
  int codec = info.attributes & kCompressionMask;
  if (codec > static_cast<int>(Compression::kZstd))
    return Status::Corruption("unknown compression codec " + std::to_string(codec) + At(position));
  info.codec = static_cast<Compression>(codec);
  if (info.codec == Compression::kZstd && !options.allow_zstd)
    return Status::Corruption("zstd needs magic 2, found in a magic " + std::to_string(magic) +
                              " message" + At(position));
  return Status::OK();
}

// Visits one message from its crc on: itself, or its inner messages if it is a wrapper.
Status VisitMessage(std::string_view msg, int64_t offset, int64_t position,
                    const LegacyOptions& options, const LegacyVisitor& visit, bool* stop) {
  LegacyMessage m;
  SILT_TRY(ParseMessage(msg, offset, position, false, options, &m));
  if (m.info.codec == Compression::kNone) {
    *stop = !visit(m);
    return Status::OK();
  }
  if (options.include_wrappers && !visit(m)) {
    *stop = true;
    return Status::OK();
  }
  if (m.value_null)
    return Status::Corruption("compressed message has a null value" + At(position));

  std::string inflated;
  Status s = Decompress(m.info.codec, m.value, options.max_uncompressed_size, &inflated);
  if (!s.ok()) return s.WithContext("compressed message" + At(position));

  // First pass: frame the inner set and find the last inner offset, which anchors relative
  // offsets (magic 1).
  std::string_view set = inflated;
  int64_t last_inner = 0;
  for (size_t pos = 0; pos < set.size();) {
    if (set.size() - pos < static_cast<size_t>(kLegacyLogOverhead))
      return Status::Corruption("inner message set cut short" + At(position));
    int32_t size = static_cast<int32_t>(DecodeBE32(set.data() + pos + 8));
    if (size < 0 || static_cast<size_t>(size) > set.size() - pos - kLegacyLogOverhead)
      return Status::Corruption("inner messageSize " + std::to_string(size) +
                                " overruns the inner set" + At(position));
    last_inner = static_cast<int64_t>(DecodeBE64(set.data() + pos));
    pos += kLegacyLogOverhead + static_cast<size_t>(size);
  }

  const LegacyMessageInfo wrapper = m.info;
  for (size_t pos = 0; pos < set.size();) {
    int64_t inner_offset = static_cast<int64_t>(DecodeBE64(set.data() + pos));
    int32_t size = static_cast<int32_t>(DecodeBE32(set.data() + pos + 8));
    std::string_view body = set.substr(pos + kLegacyLogOverhead, static_cast<size_t>(size));
    pos += kLegacyLogOverhead + static_cast<size_t>(size);

    int64_t absolute = wrapper.magic >= kMagicV1 ? wrapper.offset - last_inner + inner_offset
                                                 : inner_offset;
    LegacyMessage im;
    s = ParseMessage(body, absolute, position, true, options, &im);
    if (!s.ok()) return s.WithContext("inside compressed message");
    if (im.info.codec != Compression::kNone)
      return Status::Corruption("compressed message nested inside another" + At(position));
    im.info.wrapper_codec = wrapper.codec;
    im.info.wrapper_offset = wrapper.offset;
    if (wrapper.log_append_time) {
      im.info.timestamp = wrapper.timestamp;
      im.info.log_append_time = true;
    }
    if (!visit(im)) {
      *stop = true;
      return Status::OK();
    }
  }
  return Status::OK();
}

}  // namespace

RecordView LegacyMessage::ToRecordView() const {
  RecordView rv;
  rv.offset = info.offset;
  rv.timestamp = info.timestamp;
  rv.key_null = key_null;
  rv.key = key;
  rv.value_null = value_null;
  rv.value = value;
  return rv;
}

Status ForEachLegacyMessage(std::string_view message_set, const LegacyOptions& options,
                            const LegacyVisitor& visit, int64_t base_position) {
  LogEntryScanner scanner(message_set, base_position);
  LogEntry e;
  while (true) {
    Status s = scanner.Next(&e);
    if (s.IsNotFound()) return Status::OK();
    SILT_TRY(s);
    bool stop = false;
    SILT_TRY(VisitMessage(e.bytes.substr(kLegacyLogOverhead), e.offset, e.position, options, visit,
                          &stop));
    if (stop) return Status::OK();
  }
}

Status ForEachInLegacyMessage(std::string_view message, int64_t offset,
                              const LegacyOptions& options, const LegacyVisitor& visit) {
  bool stop = false;
  return VisitMessage(message, offset, 0, options, visit, &stop);
}

Status LogEntryScanner::Next(LogEntry* entry) {
  if (pos_ == data_.size()) return Status::NotFound("end of data");
  size_t rem = data_.size() - pos_;
  int64_t position = base_ + static_cast<int64_t>(pos_);
  // offset, size and magic are at the same positions in every format: 8 + 4 + (4 crc or epoch).
  if (rem < static_cast<size_t>(kMagicPrefixSize))
    return Status::Truncated("entry header cut short after " + std::to_string(rem) + " bytes" +
                             At(position));
  const char* p = data_.data() + pos_;
  int32_t size = static_cast<int32_t>(DecodeBE32(p + 8));
  int8_t magic = static_cast<int8_t>(p[kMagicOffset]);
  int32_t min_size;
  switch (magic) {
    case kMagicV0: min_size = kLegacyV0MinSize; break;
    case kMagicV1: min_size = kLegacyV1MinSize; break;
    case kMagicV2: min_size = kBatchHeaderSize - kLogOverhead; break;
    default:
      return Status::Corruption("unknown magic " + std::to_string(magic) + At(position));
  }
  if (size < min_size)
    return Status::Corruption("magic " + std::to_string(magic) + " entry size " +
                              std::to_string(size) + " is below the minimum " +
                              std::to_string(min_size) + At(position));
  size_t total = kLogOverhead + static_cast<size_t>(size);
  if (total > rem)
    return Status::Truncated("entry of " + std::to_string(total) + " bytes cut short after " +
                             std::to_string(rem) + At(position));
  entry->position = position;
  entry->offset = static_cast<int64_t>(DecodeBE64(p));
  entry->magic = magic;
  entry->bytes = data_.substr(pos_, total);
  pos_ += total;
  return Status::OK();
}

Status ForEachLogRecord(std::string_view data, const LogReadOptions& options,
                        const std::function<bool(const LogRecord&)>& visit,
                        int64_t base_position) {
  LogEntryScanner scanner(data, base_position);
  LogEntry e;
  ValidateLimits limits;
  limits.max_uncompressed_size = options.max_uncompressed_size;
  limits.verify_crc = options.verify_crc;
  LegacyOptions legacy;
  legacy.max_uncompressed_size = options.max_uncompressed_size;
  legacy.verify_crc = options.verify_crc;
  legacy.allow_zstd = options.allow_legacy_zstd;
  while (true) {
    Status s = scanner.Next(&e);
    if (s.IsNotFound()) return Status::OK();
    SILT_TRY(s);
    bool stop = false;
    LogRecord lr;
    lr.magic = e.magic;
    lr.entry_position = e.position;
    if (e.magic == kMagicV2) {
      auto view = RecordBatchView::Parse(e.bytes, limits);
      if (!view.ok()) return view.status().WithContext("batch" + At(e.position));
      lr.batch = &view->header();
      lr.codec = view->header().compression();
      s = view->ForEachRecord(
          [&](const RecordView& rv) {
            lr.record = rv;
            stop = !visit(lr);
            return !stop;
          },
          limits);
      if (!s.ok()) return s.WithContext("batch" + At(e.position));
    } else {
      SILT_TRY(VisitMessage(
          e.bytes.substr(kLegacyLogOverhead), e.offset, e.position, legacy,
          [&](const LegacyMessage& m) {
            lr.legacy = &m.info;
            lr.codec = m.info.inner ? m.info.wrapper_codec : m.info.codec;
            lr.record = m.ToRecordView();
            return visit(lr);
          },
          &stop));
    }
    if (stop) return Status::OK();
  }
}

}  // namespace silt::format
