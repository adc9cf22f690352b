#include "format/compression.h"

#include <doctest/doctest.h>
#include <lz4frame.h>
#include <zstd.h>

#include <random>
#include <string>
#include <vector>

#include "base/coding.h"

using namespace silt;
using namespace silt::format;

namespace {

const Compression kCodecs[] = {Compression::kGzip, Compression::kSnappy, Compression::kLz4,
                               Compression::kZstd};

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

std::string Text(size_t n) {
  std::string s;
  for (int i = 0; s.size() < n; ++i) s += "record " + std::to_string(i) + " of a compressible log\n";
  s.resize(n);
  return s;
}

std::vector<std::string> Inputs() {
  return {"", "x", Text(1000), Text(200 * 1024), RandomBytes(70 * 1024, 7),
          std::string(100 * 1024, '\0')};
}

}  // namespace

TEST_CASE("every codec round-trips empty, tiny, text, random and multi-block inputs") {
  for (Compression c : kCodecs) {
    CAPTURE(std::string(CompressionName(c)));
    for (const auto& in : Inputs()) {
      CAPTURE(in.size());
      auto packed = Compress(c, in);
      REQUIRE(packed.ok());
      auto back = Decompress(c, *packed, static_cast<int64_t>(in.size()));
      REQUIRE_MESSAGE(back.ok(), back.status().ToString());
      CHECK(*back == in);
    }
  }
}

TEST_CASE("compression levels are honoured and out-of-range levels are refused") {
  std::string in = Text(64 * 1024);
  for (int level : {1, 9}) {
    auto g = Compress(Compression::kGzip, in, {.level = level});
    REQUIRE(g.ok());
    CHECK(*Decompress(Compression::kGzip, *g, 1 << 20) == in);
  }
  auto fast = Compress(Compression::kZstd, in, {.level = 1});
  auto best = Compress(Compression::kZstd, in, {.level = 19});
  REQUIRE(fast.ok());
  REQUIRE(best.ok());
  CHECK(*Decompress(Compression::kZstd, *best, 1 << 20) == in);
  auto hc = Compress(Compression::kLz4, in, {.level = 9});
  REQUIRE(hc.ok());
  CHECK(*Decompress(Compression::kLz4, *hc, 1 << 20) == in);

  CHECK(Compress(Compression::kGzip, in, {.level = 10}).status().code() ==
        Status::Code::kInvalidArgument);
  CHECK(Compress(Compression::kLz4, in, {.level = 13}).status().code() ==
        Status::Code::kInvalidArgument);
  CHECK(Compress(Compression::kZstd, in, {.level = 99}).status().code() ==
        Status::Code::kInvalidArgument);
}

TEST_CASE("gzip output is a gzip stream and concatenated gzip members are read as one") {
  auto a = Compress(Compression::kGzip, "first,");
  auto b = Compress(Compression::kGzip, "second");
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(static_cast<unsigned char>((*a)[0]) == 0x1f);
  CHECK(static_cast<unsigned char>((*a)[1]) == 0x8b);
  auto both = Decompress(Compression::kGzip, *a + *b, 100);
  REQUIRE(both.ok());
  CHECK(*both == "first,second");
}

TEST_CASE("snappy writes the xerial framing by default and reads both xerial and raw blocks") {
  std::string in = Text(100 * 1024);  // several 32 KiB xerial chunks
  auto xerial = Compress(Compression::kSnappy, in);
  auto raw = Compress(Compression::kSnappy, in, {.snappy_xerial = false});
  REQUIRE(xerial.ok());
  REQUIRE(raw.ok());
  CHECK(IsXerialSnappy(*xerial));
  CHECK_FALSE(IsXerialSnappy(*raw));
  CHECK(xerial->substr(0, 8) == std::string("\x82SNAPPY\0", 8));
  // version 1, compatible 1, then the first chunk's length
  CHECK(DecodeBE32(xerial->data() + 8) == 1);
  CHECK(DecodeBE32(xerial->data() + 12) == 1);
  CHECK(*Decompress(Compression::kSnappy, *xerial, 1 << 20) == in);
  CHECK(*Decompress(Compression::kSnappy, *raw, 1 << 20) == in);
}

TEST_CASE("a zip bomb in any codec fails with TooLarge and never allocates past the limit") {
  const std::string bomb_input(8 << 20, '\0');
  const int64_t limit = 1 << 20;
  for (Compression c : kCodecs) {
    CAPTURE(std::string(CompressionName(c)));
    auto bomb = Compress(c, bomb_input);
    REQUIRE(bomb.ok());
    CHECK(bomb->size() < 512 * 1024);
    std::string out;
    Status s = Decompress(c, *bomb, limit, &out);
    CHECK_MESSAGE(s.IsTooLarge(), s.ToString());
    CHECK(out.size() <= static_cast<size_t>(limit));
    CHECK(out.capacity() <= static_cast<size_t>(limit) + 64);
  }
}

TEST_CASE("decompression to exactly the limit succeeds and one byte less is TooLarge") {
  std::string in = Text(10000);
  for (Compression c : kCodecs) {
    CAPTURE(std::string(CompressionName(c)));
    auto packed = Compress(c, in);
    REQUIRE(packed.ok());
    CHECK(Decompress(c, *packed, 10000).ok());
    CHECK(Decompress(c, *packed, 9999).status().IsTooLarge());
  }
  CHECK(Decompress(Compression::kNone, in, 9999).status().IsTooLarge());
}

TEST_CASE("a zstd frame without a declared content size is still bounded while streaming") {
  std::string in(4 << 20, 'z');
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0);
  std::string frame;
  frame.resize(ZSTD_compressBound(in.size()));
  ZSTD_outBuffer ob{frame.data(), frame.size(), 0};
  ZSTD_inBuffer ib{in.data(), in.size(), 0};
  size_t rc = ZSTD_compressStream2(cctx, &ob, &ib, ZSTD_e_end);
  ZSTD_freeCCtx(cctx);
  REQUIRE(rc == 0);
  frame.resize(ob.pos);
  REQUIRE(ZSTD_getFrameContentSize(frame.data(), frame.size()) == ZSTD_CONTENTSIZE_UNKNOWN);
  std::string out;
  CHECK(Decompress(Compression::kZstd, frame, 1 << 20, &out).IsTooLarge());
  CHECK(out.capacity() <= (1u << 20) + 64);
  CHECK(*Decompress(Compression::kZstd, frame, 4 << 20) == in);
}

TEST_CASE("xerial snappy chunks that each fit but together exceed the limit are TooLarge") {
  auto packed = Compress(Compression::kSnappy, std::string(256 * 1024, 'a'));
  REQUIRE(packed.ok());
  std::string out;
  CHECK(Decompress(Compression::kSnappy, *packed, 100 * 1024, &out).IsTooLarge());
  CHECK(out.size() <= 100 * 1024);
}

TEST_CASE("a compressed block cut short or damaged is Corruption, not a crash") {
  std::string in = Text(50000);
  for (Compression c : kCodecs) {
    CAPTURE(std::string(CompressionName(c)));
    auto packed = Compress(c, in);
    REQUIRE(packed.ok());
    std::string half = packed->substr(0, packed->size() / 2);
    Status s = Decompress(c, half, 1 << 20).status();
    CHECK_MESSAGE(s.IsCorruption(), s.ToString());
    CHECK(Decompress(c, "", 1 << 20).status().IsCorruption());
    CHECK(Decompress(c, std::string(40, '\x5a'), 1 << 20).status().IsCorruption());
  }
  CHECK(Decompress(static_cast<Compression>(6), "x", 10).status().code() ==
        Status::Code::kInvalidArgument);
}

TEST_CASE("xxh32 matches the reference vectors") {
  CHECK(Xxh32("") == 0x02CC5D05u);
  CHECK(Xxh32("a") == 0x550D7456u);
  CHECK(Xxh32("abc") == 0x32D153FFu);
  CHECK(Xxh32("Nobody inspects the spammish repetition") == 0xE2293B2Fu);
}

TEST_CASE("lz4 frames with the old Java client's broken header checksum are accepted") {
  std::string in = Text(3000);
  auto frame = Compress(Compression::kLz4, in);
  REQUIRE(frame.ok());
  // No content size or dictionary id: magic(4) FLG BD HC.
  REQUIRE((static_cast<uint8_t>((*frame)[4]) & 0x09) == 0);
  std::string broken = *frame;
  broken[6] = static_cast<char>(Xxh32(std::string_view(broken).substr(0, 6)) >> 8);
  REQUIRE(broken[6] != (*frame)[6]);
  auto back = Decompress(Compression::kLz4, broken, 1 << 20);
  REQUIRE_MESSAGE(back.ok(), back.status().ToString());
  CHECK(*back == in);

  std::string garbage = *frame;
  garbage[6] = static_cast<char>(garbage[6] ^ broken[6] ^ 0x5a);
  if (garbage[6] != broken[6] && garbage[6] != (*frame)[6])
    CHECK(Decompress(Compression::kLz4, garbage, 1 << 20).status().IsCorruption());
}

TEST_CASE("an lz4 frame that declares a content size above the limit is TooLarge up front") {
  std::string in(300000, 'q');
  LZ4F_preferences_t prefs{};
  prefs.frameInfo.contentSize = in.size();
  std::string frame(LZ4F_compressFrameBound(in.size(), &prefs), '\0');
  size_t n = LZ4F_compressFrame(frame.data(), frame.size(), in.data(), in.size(), &prefs);
  REQUIRE_FALSE(LZ4F_isError(n));
  frame.resize(n);
  std::string out;
  CHECK(Decompress(Compression::kLz4, frame, 100000, &out).IsTooLarge());
  CHECK(out.empty());
  CHECK(*Decompress(Compression::kLz4, frame, 300000) == in);
}
