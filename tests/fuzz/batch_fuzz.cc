// libFuzzer target: untrusted record bytes as a fetch response or a log file holds them.
// The input goes through every reader format/ has: RecordBatchView::Parse, Validate and
// ForEachRecord (CRC not checked, so mutations reach the records; then checked, as produce
// does), each codec's Decompress, the legacy (magic 0/1) message readers, and the mixed-log
// reader, and the conversions for old clients (legacy set -> v2 batch, log -> magic 0/1).
// Any input may be rejected with a Status, none may crash or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "format/compression.h"
#include "format/legacy.h"
#include "format/legacy_convert.h"
#include "format/record_batch.h"

using namespace silt;
using namespace silt::format;

namespace {

constexpr int64_t kMaxInflate = 1 << 20;  // keeps each run small; TooLarge past it

// Reads every byte a view points to, so a view past its buffer is caught by ASan.
uint64_t Touch(std::string_view s) {
  uint64_t h = s.size();
  for (unsigned char c : s) h = h * 31 + c;
  return h;
}

uint64_t TouchRecord(const RecordView& r) {
  uint64_t h = Touch(r.key) ^ Touch(r.value) ^ static_cast<uint64_t>(r.offset);
  for (const auto& [k, v] : r.headers) h ^= Touch(k) + (v ? Touch(*v) : 1);
  return h;
}

volatile uint64_t sink;

void Batches(std::string_view in, bool verify_crc) {
  ValidateLimits limits;
  limits.max_uncompressed_size = kMaxInflate;
  limits.verify_crc = verify_crc;
  // Every batch in the input, one after another, as a fetch response's records field holds them.
  while (!in.empty()) {
    auto view = RecordBatchView::Parse(in, limits);
    if (!view.ok()) return;
    (void)view->Validate(limits);
    uint64_t h = 0;
    (void)view->ForEachRecord([&](const RecordView& r) {
      h ^= TouchRecord(r);
      return true;
    }, limits);
    ValidateLimits strict = limits;
    strict.contiguous_offsets = true;
    (void)view->Validate(strict);
    sink = h;
    in.remove_prefix(view->bytes().size());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  Batches(in, /*verify_crc=*/false);
  Batches(in, /*verify_crc=*/true);

  for (Compression codec : {Compression::kGzip, Compression::kSnappy, Compression::kLz4,
                            Compression::kZstd}) {
    std::string out;
    (void)Decompress(codec, in, kMaxInflate, &out);
    sink = Touch(out);
  }

  LegacyOptions legacy;
  legacy.max_uncompressed_size = kMaxInflate;
  legacy.verify_crc = false;
  legacy.include_wrappers = true;
  legacy.allow_zstd = true;
  auto visit = [](const LegacyMessage& m) {
    sink = Touch(m.key) ^ Touch(m.value) ^ TouchRecord(m.ToRecordView());
    return true;
  };
  (void)ForEachLegacyMessage(in, legacy, visit);
  (void)ForEachInLegacyMessage(in, 0, legacy, visit);

  LogReadOptions mixed;
  mixed.max_uncompressed_size = kMaxInflate;
  mixed.verify_crc = false;
  mixed.allow_legacy_zstd = true;
  (void)ForEachLogRecord(in, mixed, [](const LogRecord& r) {
    sink = TouchRecord(r.record);
    return true;
  });

  UpConvertOptions up;
  up.max_size = kMaxInflate;
  auto converted = UpConvertMessageSet(in, up);
  if (converted.ok()) Batches(converted->batch, /*verify_crc=*/true);
  for (int8_t magic : {kMagicV0, kMagicV1}) {
    DownConvertOptions down;
    down.magic = magic;
    down.max_bytes = static_cast<int64_t>(size) + 64;
    down.max_uncompressed_size = kMaxInflate;
    down.allow_partial = magic == kMagicV0;
    down.min_one_message = magic == kMagicV1;
    DownConverted out;
    if (DownConvert(in, down, &out).ok()) {
      sink = Touch(out.data);
      (void)ForEachLegacyMessage(out.data, legacy, visit);
    }
  }
  return 0;
}
