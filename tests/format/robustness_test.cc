// Damaged input of every kind must give a Status, never a crash, a hang or an overread (these
// tests earn their keep under the ASan/UBSan build).
#include <doctest/doctest.h>
#include <zlib.h>

#include <random>
#include <string>

#include "base/coding.h"
#include "format/compression.h"
#include "format/legacy.h"
#include "format/record_batch.h"

using namespace silt;
using namespace silt::format;

namespace {

std::string SampleBatch(Compression c) {
  RecordBatchBuilder b({.compression = c, .base_offset = 10});
  for (int i = 0; i < 40; ++i) {
    std::vector<std::pair<std::string_view, std::optional<std::string_view>>> headers;
    if (i % 3 == 0) headers.emplace_back("h", std::nullopt);
    b.Add(i % 4 ? std::optional<std::string_view>("key") : std::nullopt,
          std::string(static_cast<size_t>(i * 3), 'v'), 1000 + i, headers);
  }
  auto batch = b.Finish();
  REQUIRE(batch.ok());
  return *batch;
}

}  // namespace

TEST_CASE("randomly damaged batches of every codec are rejected or decoded, never crash") {
  std::mt19937 rng(12345);
  ValidateLimits limits;
  limits.verify_crc = false;  // let the damage reach the record decoder
  limits.max_uncompressed_size = 1 << 20;
  for (Compression c : {Compression::kNone, Compression::kGzip, Compression::kSnappy,
                        Compression::kLz4, Compression::kZstd}) {
    CAPTURE(std::string(CompressionName(c)));
    const std::string batch = SampleBatch(c);
    int rejected = 0;
    for (int iter = 0; iter < 400; ++iter) {
      std::string bad = batch;
      int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) {
        // Leave the framing intact most of the time so the records block gets exercised.
        size_t pos = kBatchHeaderSize - 4 + rng() % (bad.size() - kBatchHeaderSize + 4);
        bad[pos] = static_cast<char>(rng());
      }
      if (iter % 10 == 0) bad.resize(rng() % bad.size());
      auto v = RecordBatchView::Parse(bad, limits);
      if (!v.ok()) {
        ++rejected;
        continue;
      }
      size_t n = 0;
      Status s = v->ForEachRecord([&](const RecordView& r) {
        n += r.key.size() + r.value.size();
        return true;
      }, limits);
      if (!s.ok()) {
        ++rejected;
        CHECK((s.IsCorruption() || s.IsTooLarge()));
      }
    }
    CHECK(rejected > 0);
  }
}

TEST_CASE("random bytes fed to every decompressor give a Status within the limit") {
  std::mt19937 rng(777);
  for (Compression c : {Compression::kGzip, Compression::kSnappy, Compression::kLz4,
                        Compression::kZstd}) {
    auto good = Compress(c, std::string(5000, 'a') + "tail");
    REQUIRE(good.ok());
    for (int iter = 0; iter < 300; ++iter) {
      std::string bad = *good;
      bad[rng() % bad.size()] = static_cast<char>(rng());
      if (iter % 7 == 0) bad.resize(rng() % bad.size());
      std::string out;
      Status s = Decompress(c, bad, 8000, &out);
      CHECK(out.size() <= 8000);
      if (!s.ok()) CHECK((s.IsCorruption() || s.IsTooLarge()));
    }
  }
}

TEST_CASE("randomly damaged mixed logs are rejected or decoded, never crash") {
  std::mt19937 rng(99);
  std::string legacy_msg(4, '\0');
  {
    ByteWriter w(&legacy_msg);
    w.I8(1);
    w.I8(0);
    w.I64(5);
    w.I32(-1);
    w.I32(3);
    w.Raw("abc");
    EncodeBE32(legacy_msg.data(),
               static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(legacy_msg.data() + 4),
                                           static_cast<uInt>(legacy_msg.size() - 4))));
  }
  std::string entry;
  ByteWriter w(&entry);
  w.I64(0);
  w.I32(static_cast<int32_t>(legacy_msg.size()));
  w.Raw(legacy_msg);
  const std::string log = entry + SampleBatch(Compression::kGzip) + entry;
  LogReadOptions o;
  o.verify_crc = false;
  for (int iter = 0; iter < 500; ++iter) {
    std::string bad = log;
    bad[rng() % bad.size()] = static_cast<char>(rng());
    if (iter % 5 == 0) bad.resize(rng() % bad.size());
    Status s = ForEachLogRecord(bad, o, [](const LogRecord&) { return true; });
    if (!s.ok()) CHECK((s.IsCorruption() || s.IsTruncated() || s.IsTooLarge()));
  }
}
