// RecordBatch v2: building one (producer side) and reading one without copying (broker, CLI).
// The byte layout is in format/layout.h.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/coding.h"
#include "base/status.h"
#include "format/batch_header.h"
#include "format/layout.h"

namespace silt::format {

struct Header {
  std::string key;
  std::optional<std::string> value;  // nullopt: a null header value
};

// One record as the user sees it, offsets and timestamps absolute.
struct Record {
  int64_t offset = 0;
  int64_t timestamp = -1;
  std::optional<std::string> key;    // nullopt: null key
  std::optional<std::string> value;  // nullopt: null value (a tombstone)
  std::vector<Header> headers;
};

// A record decoded in place. For an uncompressed batch the views point into the batch bytes;
// for a compressed one they point into a buffer that lives only during the ForEachRecord call,
// so copy (ToRecord) what must outlive the callback.
struct RecordView {
  int64_t offset = 0;
  int64_t timestamp = -1;
  bool key_null = true;
  std::string_view key;
  bool value_null = true;
  std::string_view value;
  std::vector<std::pair<std::string_view, std::optional<std::string_view>>> headers;

  Record ToRecord() const;
};

// Builds one batch. Fields are written in spec order; batchLength, recordsCount, lastOffsetDelta,
// maxTimestamp and the CRC are back-patched by Finish().
class RecordBatchBuilder {
 public:
  struct Options {
    Compression compression = Compression::kNone;
    int compression_level = -1;  // codec default
    int64_t base_offset = 0;
    int64_t base_timestamp = -1;  // -1: the first record's timestamp
    int32_t partition_leader_epoch = -1;
    int64_t producer_id = -1;
    int16_t producer_epoch = -1;
    int32_t base_sequence = -1;
    bool transactional = false;
    bool control = false;
    bool log_append_time = false;
    bool snappy_xerial = true;  // snappy framing (see compression.h)
    // >= 0: written as lastOffsetDelta instead of the last record's offset delta. Log
    // compaction keeps a rewritten batch's original last offset even when its last records go.
    int32_t last_offset_delta = -1;
    // Sets attributes bit 6 (hasDeleteHorizonMs): baseTimestamp then holds the time after which
    // the cleaner may drop the batch's tombstones (Kafka's KIP-534); records' timestampDelta
    // stays relative to it. Pass the horizon as base_timestamp.
    bool delete_horizon = false;
  };
  explicit RecordBatchBuilder(Options options);
  // The same, building in `buffer`: its contents are dropped and its capacity is kept, so a
  // producer that hands back the bytes of a finished batch allocates nothing per batch.
  RecordBatchBuilder(Options options, std::string buffer);

  // Appends a record at the next offset delta. A timestamp of -1 means "now".
  void Add(const std::optional<std::string_view>& key, const std::optional<std::string_view>& value,
           int64_t timestamp = -1,
           const std::vector<std::pair<std::string_view, std::optional<std::string_view>>>&
               headers = {});
  void Add(const Record& r);
  // Appends a record at an explicit offset delta, which must be above the previous record's
  // (gaps allowed), with its timestamp taken as given (-1 stays -1). For rewriting a batch
  // whose records keep their offsets (log compaction); do not mix with Add() in one batch.
  void AddAt(int32_t offset_delta, const RecordView& r);

  int record_count() const;
  // Bytes the records take so far, uncompressed (to decide when a batch is full).
  size_t uncompressed_size() const;
  bool empty() const { return record_count() == 0; }

  // Returns the finished batch (compressing if asked). The builder is then reset and reusable.
  // Uncompressed, the batch is the builder's own buffer (no copy); the next batch starts in a
  // new one.
  Result<std::string> Finish();
  // As Finish, into *out, whose old contents are dropped. Uncompressed, the builder takes *out's
  // old buffer for its next batch: a caller that hands back each batch it has written keeps
  // two buffers in use instead of growing (and faulting in) a new one per batch.
  Status FinishInto(std::string* out);

 private:
  Options options_;
  // The batch being built: kBatchHeaderSize bytes of header space (written by Finish) once a
  // record is added, then the encoded records, uncompressed.
  std::string buffer_;
  std::string header_;  // Finish() writes the header here (kept: no allocation per batch)
  void AddRecord(int32_t offset_delta, const std::optional<std::string_view>& key,
                 const std::optional<std::string_view>& value, int64_t timestamp,
                 const std::vector<std::pair<std::string_view, std::optional<std::string_view>>>&
                     headers);

  void Reset();  // after Finish(): no records

  int32_t count_ = 0;
  int32_t last_delta_ = -1;  // offset delta of the last record added
  int64_t first_ts_ = -1;
  int64_t max_ts_ = -1;
};

// Limits applied when validating or decompressing untrusted batches.
struct ValidateLimits {
  int64_t max_batch_size = INT32_MAX;
  // A batch whose records inflate past this many bytes is rejected (TooLarge), never allocated.
  int64_t max_uncompressed_size = 64LL * 1024 * 1024;
  // Parse() checks the CRC-32C unless this is false (dump tools that show damaged batches).
  bool verify_crc = true;
  // What a broker demands of a produced batch: offset deltas exactly 0, 1, ..., lastOffsetDelta.
  // Off by default because compaction legitimately leaves gaps (deltas still increase strictly
  // and stay within 0..lastOffsetDelta).
  bool contiguous_offsets = false;
};

// A read-only view over one complete batch. Construct with Parse(); the bytes must outlive it.
class RecordBatchView {
 public:
  // Framing + CRC check of the batch at the start of `data` (see CheckBatchFraming); the view
  // covers exactly that batch, so bytes after it are the caller's business (the next batch).
  // Truncated when `data` ends mid-batch; Corruption for a bad magic, length or CRC.
  static Result<RecordBatchView> Parse(std::string_view data, const ValidateLimits& limits = {});

  const BatchHeader& header() const { return header_; }
  std::string_view bytes() const { return bytes_; }

  // Decompresses (bounded by limits) and decodes every record, checking: each record's length
  // fits, recordsCount equals the records actually present, offset deltas strictly increase
  // within 0..lastOffsetDelta (exactly 0..lastOffsetDelta with limits.contiguous_offsets),
  // timestamps neither overflow nor go below -1, lengths and header counts fit, no bytes trail
  // the last record, and a control batch's records have a 4-byte key (version, type).
  // Calls fn for each record; stops early (OK) if fn returns false. Records of a LogAppendTime
  // batch carry the batch's maxTimestamp, as Kafka presents them.
  // Corruption for malformed records, TooLarge past limits.max_uncompressed_size.
  template <typename Fn>
  Status ForEachRecord(Fn&& fn, const ValidateLimits& limits = {}) const;
  // Full validation without a callback (what the broker runs on produce).
  Status Validate(const ValidateLimits& limits = {}) const;
  Result<std::vector<Record>> Records(const ValidateLimits& limits = {}) const;

  // The records block as stored (compressed when the batch is).
  std::string_view records_block() const { return bytes_.substr(kBatchHeaderSize); }

 private:
  RecordBatchView(const BatchHeader& h, std::string_view bytes) : header_(h), bytes_(bytes) {}
  // The records block ready to decode (inflated into *inflated when compressed), after the
  // checks that need no decoding: a known codec, and a recordsCount the block can hold.
  Status RecordsForDecoding(const ValidateLimits& limits, std::string* inflated,
                            std::string_view* block) const;

  BatchHeader header_;
  std::string_view bytes_;
};

// Control records (control batches): key = version:int16, type:int16.
enum class ControlType : int16_t { kAbort = 0, kCommit = 1, kLeaderChange = 2, kUnknown = -1 };
// The type in a control record's key, or kUnknown when the key is shorter than 4 bytes.
ControlType ParseControlType(std::string_view key);

// ---- record decoding (inline: it is the read path's inner loop) ------------------------------

namespace detail {

// Walks the records of a (decompressed) records block, checking each as ForEachRecord promises.
class RecordDecoder {
 public:
  RecordDecoder(const BatchHeader& h, std::string_view block, bool contiguous)
      : h_(h), p_(block.data()), end_(block.data() + block.size()), contiguous_(contiguous) {}

  // Decodes record `i` into *rv. False when it is malformed; Error() then says how.
  [[gnu::always_inline]] bool Next(int32_t i, RecordView* rv) {
    index_ = i;
    if (p_ == end_) return Fail(Fault::kMissing);
    int32_t length;
    if (!Varint(p_, end_, &length)) return Fail(Fault::kLength);
    if (length < 0 || static_cast<size_t>(end_ - p_) < static_cast<size_t>(length))
      return Fail(Fault::kLengthOverrun, length);
    const char* r = p_;
    const char* const rend = p_ + length;
    p_ = rend;
    int64_t ts_delta;
    int32_t offset_delta;
    if (r == rend) return Fail(Fault::kPrefix);
    ++r;  // attributes: unused by any record format so far
    if (!Varlong(r, rend, &ts_delta) || !Varint(r, rend, &offset_delta)) return Fail(Fault::kPrefix);
    if (offset_delta <= prev_delta_ || offset_delta > h_.last_offset_delta)
      return Fail(Fault::kOffsetOrder, offset_delta);
    if (contiguous_ && offset_delta != i) return Fail(Fault::kOffsetGap, offset_delta);
    prev_delta_ = offset_delta;
    int64_t ts;
    if (__builtin_add_overflow(h_.base_timestamp, ts_delta, &ts) || ts < -1)
      return Fail(Fault::kTimestamp, ts_delta);
    if (!VarBytes(r, rend, true, &rv->key_null, &rv->key)) return Fail(Fault::kKey);
    if (!VarBytes(r, rend, true, &rv->value_null, &rv->value)) return Fail(Fault::kValue);
    int32_t header_count;
    if (!Varint(r, rend, &header_count) || header_count < 0 ||
        static_cast<size_t>(header_count) > static_cast<size_t>(rend - r) / 2)
      return Fail(Fault::kHeaderCount);
    rv->headers.clear();
    for (int32_t j = 0; j < header_count; ++j) {
      bool null_key, null_value;
      std::string_view hk, hv;
      if (!VarBytes(r, rend, false, &null_key, &hk)) return Fail(Fault::kHeaderKey, j);
      if (!VarBytes(r, rend, true, &null_value, &hv)) return Fail(Fault::kHeaderValue, j);
      rv->headers.emplace_back(hk, null_value ? std::nullopt : std::optional<std::string_view>(hv));
    }
    if (r != rend) return Fail(Fault::kTrailing, rend - r);
    if (h_.control() && (rv->key_null || rv->key.size() < 4)) return Fail(Fault::kControlKey);
    rv->offset = h_.base_offset + offset_delta;
    rv->timestamp = h_.log_append_time() ? h_.max_timestamp : ts;
    return true;
  }

  // Why the last Next() failed, as Corruption.
  Status Error() const;
  // After the last record: no bytes trail it, and the count matches with contiguous offsets.
  Status Finish() const;

 private:
  enum class Fault : uint8_t {
    kMissing, kLength, kLengthOverrun, kPrefix, kOffsetOrder, kOffsetGap, kTimestamp, kKey,
    kValue, kHeaderCount, kHeaderKey, kHeaderValue, kTrailing, kControlKey,
  };
  bool Fail(Fault f, int64_t detail = 0) {
    fault_ = f;
    detail_ = detail;
    return false;
  }
  [[gnu::always_inline]] static bool Varint(const char*& p, const char* end, int32_t* v) {
    uint64_t x;  // DecodeUvarint64 takes the one-byte case first
    int n = DecodeUvarint64(p, end, &x, kMaxVarint32Bytes);
    if (n == 0 || x > 0xffffffffu) return false;
    p += n;
    *v = ZigZagDecode32(static_cast<uint32_t>(x));
    return true;
  }
  [[gnu::always_inline]] static bool Varlong(const char*& p, const char* end, int64_t* v) {
    uint64_t x;
    int n = DecodeUvarint64(p, end, &x, kMaxVarint64Bytes);
    if (n == 0) return false;
    p += n;
    *v = ZigZagDecode64(x);
    return true;
  }
  // A varint length and that many bytes; -1 (when allowed) is null.
  [[gnu::always_inline]] static bool VarBytes(const char*& p, const char* end, bool allow_null, bool* null,
                       std::string_view* out) {
    int32_t len;
    if (!Varint(p, end, &len)) return false;
    if (len == -1 && allow_null) {
      *null = true;
      *out = {};
      return true;
    }
    if (len < 0 || static_cast<size_t>(end - p) < static_cast<size_t>(len)) return false;
    *null = false;
    *out = std::string_view(p, static_cast<size_t>(len));
    p += len;
    return true;
  }

  const BatchHeader& h_;
  const char* p_;
  const char* end_;
  bool contiguous_;
  int32_t prev_delta_ = -1;
  int32_t index_ = 0;
  Fault fault_ = Fault::kMissing;
  int64_t detail_ = 0;
};

}  // namespace detail

template <typename Fn>
Status RecordBatchView::ForEachRecord(Fn&& fn, const ValidateLimits& limits) const {
  std::string inflated;
  std::string_view block;
  SILT_TRY(RecordsForDecoding(limits, &inflated, &block));
  detail::RecordDecoder d(header_, block, limits.contiguous_offsets);
  RecordView rv;
  for (int32_t i = 0; i < header_.records_count; ++i) {
    if (!d.Next(i, &rv)) return d.Error();
    if (!fn(static_cast<const RecordView&>(rv))) return Status::OK();
  }
  return d.Finish();
}

}  // namespace silt::format
