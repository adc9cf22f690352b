// Reading the legacy message formats (magic 0 and 1) and walking logs that mix them with
// RecordBatch v2. Layouts are in format/layout.h; silt stores only v2, and writes these formats
// only for old clients (format/legacy_convert.h).
//
// A legacy message set is a sequence of entries
//   offset: int64, messageSize: int32, message: crc, magic, attributes, [timestamp], key, value
// where crc is the CRC-32 (IEEE, zlib's crc32) of magic..end. A compressed message (a
// "wrapper", attributes & 7 != 0) holds in its value a whole inner message set, compressed.
// The wrapper's offset is that of its last inner message; magic-1 inner offsets are relative:
//   absolute = wrapper_offset - last_inner_relative + inner_relative
// and magic-0 inner offsets are absolute. With LogAppendTime on a magic-1 wrapper, the inner
// messages take the wrapper's timestamp.
//
// Kafka logs and fetch responses can hold magic 0, 1 and 2 entries one after another (a topic
// upgraded in place); the offset field, a 4-byte size and the magic byte sit at the same
// positions in all three, which is what LogEntryScanner relies on.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "base/status.h"
#include "format/batch_header.h"
#include "format/layout.h"
#include "format/record_batch.h"

namespace silt::format {

// What a dump tool shows about one legacy message.
struct LegacyMessageInfo {
  int64_t position = 0;   // of the entry's offset field in the scanned data (an inner message:
                          // its wrapper's position)
  int64_t offset = 0;     // absolute
  int32_t size = 0;       // messageSize: crc to the end of the message
  uint32_t crc = 0;       // as stored
  uint32_t computed_crc = 0;
  bool crc_valid = false;
  int8_t magic = 0;
  int8_t attributes = 0;
  Compression codec = Compression::kNone;
  bool log_append_time = false;  // magic 1, attributes bit 3
  int64_t timestamp = -1;        // -1 for magic 0
  bool inner = false;            // decoded from a compressed wrapper's value
  Compression wrapper_codec = Compression::kNone;  // inner messages: the wrapper's codec
  int64_t wrapper_offset = -1;                     // inner messages: the wrapper's offset
};

// One decoded legacy message; the views point into the scanned data or into the wrapper's
// decompressed value and are valid only during the visitor call.
struct LegacyMessage {
  LegacyMessageInfo info;
  bool key_null = true;
  std::string_view key;
  bool value_null = true;
  std::string_view value;

  // As a v2-style record (no headers).
  RecordView ToRecordView() const;
};

struct LegacyOptions {
  // A wrapper whose value inflates past this is rejected with TooLarge, never allocated.
  int64_t max_uncompressed_size = 64LL * 1024 * 1024;
  // Corruption on a CRC mismatch. When false, the message is still yielded with crc_valid false.
  bool verify_crc = true;
  // Also yield each compressed wrapper itself (info.codec != kNone), before its inner messages.
  bool include_wrappers = false;
  // Kafka rejects zstd below magic 2; some clients wrote it anyway (sarama's tests do).
  bool allow_zstd = false;
};

// Returns false to stop the walk early (the walk then returns OK).
using LegacyVisitor = std::function<bool(const LegacyMessage&)>;

// Walks a legacy message set: every uncompressed message, and the inner messages of every
// compressed wrapper, in order. `base_position` is added to reported positions.
//   Truncated   the data ends part-way through an entry, after all whole entries were visited
//               (normal at the end of a fetch response, a torn tail at the end of a file);
//   Corruption  bad magic, sizes that do not add up, a CRC mismatch (with verify_crc), nested
//               compression, an unknown codec, or a malformed inner set;
//   TooLarge    a wrapper inflates past options.max_uncompressed_size.
Status ForEachLegacyMessage(std::string_view message_set, const LegacyOptions& options,
                            const LegacyVisitor& visit, int64_t base_position = 0);

// The same for one message given from its crc field on, without the offset/messageSize prefix
// (how some clients' tests store them). `offset` is the offset it was stored at. A message that
// is not magic 0 or 1, or whose fields do not exactly fill `message`, is Corruption.
Status ForEachInLegacyMessage(std::string_view message, int64_t offset,
                              const LegacyOptions& options, const LegacyVisitor& visit);

// ---- mixed logs ------------------------------------------------------------------------------

// One entry of a log or fetch response: a RecordBatch (magic 2) or a legacy message.
struct LogEntry {
  int64_t position = 0;  // of the entry's first byte, plus the scanner's base position
  int64_t offset = 0;    // baseOffset (v2) or offset (v0/v1: a wrapper's last inner offset)
  int8_t magic = 0;
  std::string_view bytes;  // the whole entry, offset field included
};

// Splits data into entries by their size fields without decoding them.
class LogEntryScanner {
 public:
  explicit LogEntryScanner(std::string_view data, int64_t base_position = 0)
      : data_(data), base_(base_position) {}

  // The next entry. NotFound at the clean end of the data; Truncated when the data ends inside
  // an entry (header or body); Corruption for an unknown magic or a size below that magic's
  // minimum. Once an error is returned the scanner stays there.
  Status Next(LogEntry* entry);
  // Bytes consumed so far (the position of the next entry, minus the base).
  size_t consumed() const { return pos_; }

 private:
  std::string_view data_;
  int64_t base_;
  size_t pos_ = 0;
};

// A record from a mixed log, with where it came from.
struct LogRecord {
  int8_t magic = 2;
  int64_t entry_position = 0;
  Compression codec = Compression::kNone;
  const BatchHeader* batch = nullptr;         // magic 2 only
  const LegacyMessageInfo* legacy = nullptr;  // magic 0/1 only
  RecordView record;
};

struct LogReadOptions {
  int64_t max_uncompressed_size = 64LL * 1024 * 1024;
  bool verify_crc = true;
  bool allow_legacy_zstd = false;
};

// Decodes every record of a mixed magic 0/1/2 log or records field, in order, validating each
// batch (RecordBatchView::Validate rules) and legacy message. Errors as LogEntryScanner::Next
// and the per-format readers; Truncated comes after every whole entry was visited.
Status ForEachLogRecord(std::string_view data, const LogReadOptions& options,
                        const std::function<bool(const LogRecord&)>& visit,
                        int64_t base_position = 0);

}  // namespace silt::format
