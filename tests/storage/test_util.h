// Helpers for the storage tests: hand-built uncompressed v2 batches (header + varint records,
// CRC via ComputeBatchCrc) and scratch directories. Independent of format/record_batch.h.
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "base/coding.h"
#include "base/file.h"
#include "format/batch_header.h"
#include "format/layout.h"

namespace silt::storage::testing {

struct BatchSpec {
  int64_t base_offset = 0;
  int records = 1;
  int64_t base_timestamp = 1000;
  int64_t timestamp_step = 1;  // record i has base_timestamp + i * timestamp_step
  size_t value_size = 10;
  char fill = 'v';
  int32_t leader_epoch = -1;
};

// One uncompressed RecordBatch v2 with valid CRC.
inline std::string MakeBatch(const BatchSpec& spec) {
  std::string records;
  ByteWriter w(&records);
  for (int i = 0; i < spec.records; ++i) {
    std::string rec;
    ByteWriter r(&rec);
    r.I8(0);                                      // attributes
    r.Varlong(i * spec.timestamp_step);           // timestampDelta
    r.Varint(i);                                  // offsetDelta
    r.Varint(-1);                                 // keyLength: null key
    r.Varint(static_cast<int32_t>(spec.value_size));  // valueLength
    r.Raw(std::string(spec.value_size, spec.fill));
    r.Varint(0);                                  // headersCount
    w.Varint(static_cast<int32_t>(rec.size()));
    w.Raw(rec);
  }
  std::string batch(format::kBatchHeaderSize, '\0');
  batch += records;
  format::BatchHeader h;
  h.base_offset = spec.base_offset;
  h.batch_length = static_cast<int32_t>(batch.size() - format::kLogOverhead);
  h.partition_leader_epoch = spec.leader_epoch;
  h.last_offset_delta = spec.records - 1;
  h.base_timestamp = spec.base_timestamp;
  h.max_timestamp = spec.base_timestamp + (spec.records - 1) * spec.timestamp_step;
  h.records_count = spec.records;
  format::EncodeBatchHeader(h, batch.data());
  h.crc = format::ComputeBatchCrc(batch);
  format::EncodeBatchHeader(h, batch.data());
  return batch;
}

inline std::string MakeBatch(int records, size_t value_size = 10, int64_t ts = 1000) {
  BatchSpec s;
  s.records = records;
  s.value_size = value_size;
  s.base_timestamp = ts;
  return MakeBatch(s);
}

// The (baseOffset, lastOffset) of each batch in `bytes`, checking framing and CRC.
struct Span {
  int64_t base;
  int64_t last;
  bool operator==(const Span&) const = default;
};
inline std::vector<Span> BatchSpans(std::string_view bytes) {
  std::vector<Span> out;
  while (!bytes.empty()) {
    format::BatchHeader h;
    Status s = format::CheckBatchFraming(bytes, {}, &h);
    REQUIRE_MESSAGE(s.ok(), s.ToString());
    out.push_back({h.base_offset, h.base_offset + h.last_offset_delta});
    bytes.remove_prefix(static_cast<size_t>(h.size()));
  }
  return out;
}

// A fresh directory under $TMPDIR (or /tmp), removed when the object goes.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/silt-storage-XXXXXX";
    char* d = mkdtemp(tmpl.data());
    REQUIRE(d != nullptr);
    path_ = d;
  }
  ~TempDir() { (void)RemoveAll(path_); }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return JoinPath(path_, name); }

 private:
  std::string path_;
};

inline std::string SegName(int64_t base, const char* suffix) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%020lld", static_cast<long long>(base));
  return std::string(buf) + suffix;
}

inline void WriteBytes(const std::string& path, std::string_view data) {
  auto f = File::Open(path, File::kCreate);
  REQUIRE(f.ok());
  REQUIRE(f->Truncate(0).ok());
  REQUIRE(f->PWrite(0, data).ok());
}

inline std::string Slurp(const std::string& path) {
  auto r = ReadFile(path);
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  return r.value();
}

}  // namespace silt::storage::testing
