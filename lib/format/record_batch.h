// RecordBatch v2: building one (producer side) and reading one without copying (broker, CLI).
// The byte layout is in format/layout.h.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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
  Result<std::string> Finish();

 private:
  Options options_;
  std::string records_;  // encoded records, uncompressed
  std::string scratch_;  // one record's body while its length is unknown
  void AddRecord(int32_t offset_delta, const std::optional<std::string_view>& key,
                 const std::optional<std::string_view>& value, int64_t timestamp,
                 const std::vector<std::pair<std::string_view, std::optional<std::string_view>>>&
                     headers);

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
  Status ForEachRecord(const std::function<bool(const RecordView&)>& fn,
                       const ValidateLimits& limits = {}) const;
  // Full validation without a callback (what the broker runs on produce).
  Status Validate(const ValidateLimits& limits = {}) const;
  Result<std::vector<Record>> Records(const ValidateLimits& limits = {}) const;

  // The records block as stored (compressed when the batch is).
  std::string_view records_block() const { return bytes_.substr(kBatchHeaderSize); }

 private:
  RecordBatchView(const BatchHeader& h, std::string_view bytes) : header_(h), bytes_(bytes) {}

  BatchHeader header_;
  std::string_view bytes_;
};

// Control records (control batches): key = version:int16, type:int16.
enum class ControlType : int16_t { kAbort = 0, kCommit = 1, kLeaderChange = 2, kUnknown = -1 };
// The type in a control record's key, or kUnknown when the key is shorter than 4 bytes.
ControlType ParseControlType(std::string_view key);

}  // namespace silt::format
