#include "format/compression.h"

#include <lz4frame.h>
#include <snappy.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "base/coding.h"
#include "format/batch_header.h"

namespace silt::format {

namespace {

constexpr char kXerialMagic[8] = {'\x82', 'S', 'N', 'A', 'P', 'P', 'Y', '\0'};
// magic + version:int32 + compatible:int32
constexpr size_t kXerialHeaderSize = sizeof(kXerialMagic) + 4 + 4;
constexpr int32_t kXerialVersion = 1;
constexpr int32_t kXerialCompatible = 1;
// SnappyOutputStream's default block size, which Kafka's Java client uses.
constexpr size_t kXerialBlockSize = 32 * 1024;

Status TooLargeError(Compression codec, int64_t max_size) {
  return Status::TooLarge(std::string(CompressionName(codec)) +
                          " block inflates past the limit of " + std::to_string(max_size) +
                          " bytes");
}

// Resizes *s to n bytes. When that needs a new allocation, it is of exactly n bytes (plain
// resize may double the capacity, which would break the promise of never allocating more than
// the decompression limit).
void ResizeExact(std::string* s, size_t n) {
  if (n > s->capacity()) {
    std::string bigger;
    bigger.reserve(n);
    bigger.append(*s);
    s->swap(bigger);
  }
  s->resize(n);
}

// Hands out output space to a streaming decompressor, growing *out geometrically but never past
// `limit` added bytes. Once the limit is reached it lends a small scratch buffer instead: any byte
// the decompressor writes there proves the block is too large.
class BoundedOutput {
 public:
  BoundedOutput(std::string* out, int64_t limit, size_t size_hint)
      : out_(out), start_(out->size()), limit_(static_cast<size_t>(std::max<int64_t>(limit, 0))),
        hint_(std::clamp<size_t>(size_hint, 256, 1 << 20)) {}

  // Space to write into; valid until the next call.
  std::pair<char*, size_t> Space() {
    size_t used = out_->size() - start_ - slack_;
    if (used >= limit_) {
      in_scratch_ = true;
      return {scratch_, sizeof scratch_};
    }
    if (slack_ == 0) {
      size_t grow = std::min(std::max(hint_, used), limit_ - used);
      ResizeExact(out_, out_->size() + grow);
      slack_ = grow;
    }
    in_scratch_ = false;
    return {out_->data() + out_->size() - slack_, slack_};
  }
  // Records that `n` bytes of the last Space() were written. False when they went to scratch.
  bool Commit(size_t n) {
    if (in_scratch_) return n == 0;
    slack_ -= n;
    return true;
  }
  size_t used() const { return out_->size() - start_ - slack_; }
  // Drops the unused tail of *out.
  void Finish() {
    out_->resize(out_->size() - slack_);
    slack_ = 0;
  }
  ~BoundedOutput() { Finish(); }

 private:
  std::string* out_;
  size_t start_;
  size_t limit_;
  size_t hint_;
  size_t slack_ = 0;
  bool in_scratch_ = false;
  char scratch_[64];
};

// ---- gzip ---------------------------------------------------------------------------------

Status GzipCompress(std::string_view in, int level, std::string* out) {
  if (level == kDefaultCompressionLevel) level = Z_DEFAULT_COMPRESSION;
  if (level != Z_DEFAULT_COMPRESSION && (level < 0 || level > 9))
    return Status::InvalidArgument("gzip level must be 0..9, got " + std::to_string(level));
  z_stream zs{};
  // 15 + 16: a gzip wrapper rather than zlib's.
  if (deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return Status::Internal("deflateInit2 failed");
  size_t start = out->size();
  size_t bound = deflateBound(&zs, static_cast<uLong>(in.size()));
  out->resize(start + bound);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out->data() + start);
  zs.avail_out = static_cast<uInt>(bound);
  int rc = deflate(&zs, Z_FINISH);
  size_t written = bound - zs.avail_out;
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) {
    out->resize(start);
    return Status::Internal("gzip deflate failed: " + std::to_string(rc));
  }
  out->resize(start + written);
  return Status::OK();
}

Status GzipDecompress(std::string_view in, int64_t max_size, std::string* out) {
  z_stream zs{};
  // 15 + 32: accept a gzip or zlib header (Kafka writes gzip).
  if (inflateInit2(&zs, 15 + 32) != Z_OK) return Status::Internal("inflateInit2 failed");
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&zs, inflateEnd);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  BoundedOutput sink(out, max_size, in.size() * 4);
  while (true) {
    auto [p, n] = sink.Space();
    zs.next_out = reinterpret_cast<Bytef*>(p);
    zs.avail_out = static_cast<uInt>(n);
    int rc = inflate(&zs, Z_NO_FLUSH);
    if (!sink.Commit(n - zs.avail_out)) return TooLargeError(Compression::kGzip, max_size);
    if (rc == Z_STREAM_END) {
      // Another gzip member may follow (GZIPInputStream reads concatenated members).
      if (zs.avail_in >= 2 && zs.next_in[0] == 0x1f && zs.next_in[1] == 0x8b) {
        inflateReset(&zs);
        continue;
      }
      return Status::OK();
    }
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && zs.avail_in == 0)
      return Status::Corruption("gzip block ends before its end marker");
    return Status::Corruption(std::string("gzip block is malformed: ") +
                              (zs.msg ? zs.msg : std::to_string(rc).c_str()));
  }
}

// ---- snappy -------------------------------------------------------------------------------

Status SnappyRawDecompressAppend(std::string_view in, int64_t max_size, std::string* out,
                                 size_t already) {
  size_t len = 0;
  if (!snappy::GetUncompressedLength(in.data(), in.size(), &len))
    return Status::Corruption("snappy block is malformed (bad length preamble)");
  if (len > static_cast<uint64_t>(max_size) - already)
    return TooLargeError(Compression::kSnappy, max_size);
  size_t start = out->size();
  ResizeExact(out, start + len);
  if (!snappy::RawUncompress(in.data(), in.size(), out->data() + start)) {
    out->resize(start);
    return Status::Corruption("snappy block is malformed");
  }
  return Status::OK();
}

Status SnappyDecompress(std::string_view in, int64_t max_size, std::string* out) {
  if (!IsXerialSnappy(in)) return SnappyRawDecompressAppend(in, max_size, out, 0);
  ByteReader r(in.substr(kXerialHeaderSize));
  size_t total = 0;
  while (!r.empty()) {
    int32_t len;
    std::string_view block;
    if (!r.I32(&len)) return Status::Corruption("xerial snappy chunk length cut short");
    if (len < 0 || !r.Bytes(static_cast<size_t>(len), &block))
      return Status::Corruption("xerial snappy chunk of " + std::to_string(len) +
                                " bytes overruns the block");
    size_t before = out->size();
    SILT_TRY(SnappyRawDecompressAppend(block, max_size, out, total));
    total += out->size() - before;
  }
  return Status::OK();
}

Status SnappyCompress(std::string_view in, bool xerial, std::string* out) {
  auto append_block = [&](std::string_view chunk) {
    size_t start = out->size();
    out->resize(start + snappy::MaxCompressedLength(chunk.size()));
    size_t n = 0;
    snappy::RawCompress(chunk.data(), chunk.size(), out->data() + start, &n);
    out->resize(start + n);
  };
  if (!xerial) {
    append_block(in);
    return Status::OK();
  }
  ByteWriter w(out);
  w.Raw(kXerialMagic, sizeof kXerialMagic);
  w.I32(kXerialVersion);
  w.I32(kXerialCompatible);
  for (size_t pos = 0; pos < in.size(); pos += kXerialBlockSize) {
    size_t len_pos = w.position();
    w.I32(0);
    append_block(in.substr(pos, kXerialBlockSize));
    w.PatchI32(len_pos, static_cast<int32_t>(out->size() - len_pos - 4));
  }
  return Status::OK();
}

// ---- lz4 ----------------------------------------------------------------------------------

constexpr uint32_t kLz4FrameMagic = 0x184D2204;

uint32_t Rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }
uint32_t LoadLE32(const unsigned char* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

// XXH32 with seed 0: the LZ4 frame header checksum is its second byte.
uint32_t Xxh32(const unsigned char* p, size_t len) {
  constexpr uint32_t k1 = 2654435761U, k2 = 2246822519U, k3 = 3266489917U, k4 = 668265263U,
                     k5 = 374761393U;
  const unsigned char* end = p + len;
  uint32_t h;
  if (len >= 16) {
    uint32_t v1 = k1 + k2, v2 = k2, v3 = 0, v4 = 0 - k1;
    auto round = [&](uint32_t acc, uint32_t input) { return Rotl32(acc + input * k2, 13) * k1; };
    for (; p + 16 <= end; p += 16) {
      v1 = round(v1, LoadLE32(p));
      v2 = round(v2, LoadLE32(p + 4));
      v3 = round(v3, LoadLE32(p + 8));
      v4 = round(v4, LoadLE32(p + 12));
    }
    h = Rotl32(v1, 1) + Rotl32(v2, 7) + Rotl32(v3, 12) + Rotl32(v4, 18);
  } else {
    h = k5;
  }
  h += static_cast<uint32_t>(len);
  for (; p + 4 <= end; p += 4) h = Rotl32(h + LoadLE32(p) * k3, 17) * k4;
  for (; p < end; ++p) h = Rotl32(h + *p * k5, 11) * k1;
  h ^= h >> 15;
  h *= k2;
  h ^= h >> 13;
  h *= k3;
  h ^= h >> 16;
  return h;
}

struct Lz4CtxDeleter {
  void operator()(LZ4F_dctx* c) const { LZ4F_freeDecompressionContext(c); }
};

Status Lz4Decompress(std::string_view in, int64_t max_size, std::string* out) {
  // Header: magic:4, FLG, BD, [contentSize:8], [dictID:4], HC.
  const auto* u = reinterpret_cast<const unsigned char*>(in.data());
  unsigned char fixed_header[4 + 2 + 8 + 4 + 1];
  std::string_view pieces[2] = {in, {}};
  if (in.size() >= 7 && LoadLE32(u) == kLz4FrameMagic) {
    uint8_t flg = u[4];
    size_t desc_len = 2 + ((flg & 0x08) ? 8 : 0) + ((flg & 0x01) ? 4 : 0);
    size_t header_len = 4 + desc_len + 1;
    if (in.size() >= header_len) {
      if (flg & 0x08) {
        uint64_t declared = 0;
        for (int i = 7; i >= 0; --i) declared = declared << 8 | u[6 + i];  // little-endian
        if (declared > static_cast<uint64_t>(max_size))
          return TooLargeError(Compression::kLz4, max_size);
      }
      uint8_t hc = u[header_len - 1];
      uint8_t good = static_cast<uint8_t>(Xxh32(u + 4, desc_len) >> 8);
      uint8_t broken = static_cast<uint8_t>(Xxh32(u, 4 + desc_len) >> 8);
      if (hc != good && hc == broken) {
        // Old Java clients hashed the magic number too (KAFKA-3160): feed liblz4 a corrected
        // copy of the header, then the rest of the block in place.
        std::memcpy(fixed_header, u, header_len);
        fixed_header[header_len - 1] = good;
        pieces[0] = std::string_view(reinterpret_cast<char*>(fixed_header), header_len);
        pieces[1] = in.substr(header_len);
      }
    }
  }

  LZ4F_dctx* raw = nullptr;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&raw, LZ4F_VERSION)))
    return Status::Internal("LZ4F_createDecompressionContext failed");
  std::unique_ptr<LZ4F_dctx, Lz4CtxDeleter> ctx(raw);

  if (in.empty()) return Status::Corruption("lz4 block is empty");
  BoundedOutput sink(out, max_size, in.size() * 4);
  size_t hint = 1;
  for (std::string_view piece : pieces) {
    const char* src = piece.data();
    const char* end = src + piece.size();
    if (piece.empty()) continue;
    while (true) {
      auto [p, n] = sink.Space();
      size_t dst_size = n;
      size_t src_size = static_cast<size_t>(end - src);
      hint = LZ4F_decompress(ctx.get(), p, &dst_size, src, &src_size, nullptr);
      if (LZ4F_isError(hint))
        return Status::Corruption(std::string("lz4 block is malformed: ") +
                                  LZ4F_getErrorName(hint));
      src += src_size;
      if (!sink.Commit(dst_size)) return TooLargeError(Compression::kLz4, max_size);
      if (src == end && (hint == 0 || dst_size < n)) break;  // frame done, or input used up
    }
  }
  if (hint != 0) return Status::Corruption("lz4 block ends before its end mark");
  return Status::OK();
}

Status Lz4Compress(std::string_view in, int level, std::string* out) {
  if (level == kDefaultCompressionLevel) level = 0;
  if (level < 0 || level > 12)
    return Status::InvalidArgument("lz4 level must be 0..12, got " + std::to_string(level));
  LZ4F_preferences_t prefs;
  std::memset(&prefs, 0, sizeof prefs);
  // What Kafka's Java client writes: independent 64 KiB blocks, no content size or checksums.
  prefs.frameInfo.blockSizeID = LZ4F_max64KB;
  prefs.frameInfo.blockMode = LZ4F_blockIndependent;
  prefs.compressionLevel = level;
  size_t start = out->size();
  size_t bound = LZ4F_compressFrameBound(in.size(), &prefs);
  out->resize(start + bound);
  size_t n = LZ4F_compressFrame(out->data() + start, bound, in.data(), in.size(), &prefs);
  if (LZ4F_isError(n)) {
    out->resize(start);
    return Status::Internal(std::string("lz4 compression failed: ") + LZ4F_getErrorName(n));
  }
  out->resize(start + n);
  return Status::OK();
}

// ---- zstd ---------------------------------------------------------------------------------

Status ZstdDecompress(std::string_view in, int64_t max_size, std::string* out) {
  if (in.empty()) return Status::Corruption("zstd block is empty");
  unsigned long long declared = ZSTD_getFrameContentSize(in.data(), in.size());
  if (declared == ZSTD_CONTENTSIZE_ERROR) return Status::Corruption("zstd frame header is malformed");
  if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared > static_cast<uint64_t>(max_size))
    return TooLargeError(Compression::kZstd, max_size);
  // One context per thread, reused: creating one per batch costs more than decoding a small
  // batch (its tables are large allocations).
  thread_local std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> ctx(ZSTD_createDCtx(),
                                                                      ZSTD_freeDCtx);
  if (!ctx) return Status::Internal("ZSTD_createDCtx failed");
  ZSTD_DCtx_reset(ctx.get(), ZSTD_reset_session_only);
  size_t hint = declared != ZSTD_CONTENTSIZE_UNKNOWN ? static_cast<size_t>(declared) + 1
                                                     : in.size() * 4;
  BoundedOutput sink(out, max_size, hint);
  ZSTD_inBuffer ib{in.data(), in.size(), 0};
  while (true) {
    auto [p, n] = sink.Space();
    ZSTD_outBuffer ob{p, n, 0};
    size_t rc = ZSTD_decompressStream(ctx.get(), &ob, &ib);
    if (ZSTD_isError(rc))
      return Status::Corruption(std::string("zstd block is malformed: ") + ZSTD_getErrorName(rc));
    if (!sink.Commit(ob.pos)) return TooLargeError(Compression::kZstd, max_size);
    if (rc == 0 && ib.pos == ib.size) return Status::OK();
    if (ib.pos == ib.size && ob.pos < ob.size)
      return Status::Corruption("zstd block ends before its frame does");
  }
}

Status ZstdCompress(std::string_view in, int level, std::string* out) {
  if (level == kDefaultCompressionLevel) level = ZSTD_CLEVEL_DEFAULT;
  if (level < ZSTD_minCLevel() || level > ZSTD_maxCLevel())
    return Status::InvalidArgument("zstd level must be " + std::to_string(ZSTD_minCLevel()) +
                                   ".." + std::to_string(ZSTD_maxCLevel()) + ", got " +
                                   std::to_string(level));
  size_t start = out->size();
  size_t bound = ZSTD_compressBound(in.size());
  out->resize(start + bound);
  thread_local std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> ctx(ZSTD_createCCtx(),
                                                                      ZSTD_freeCCtx);
  if (!ctx) return Status::Internal("ZSTD_createCCtx failed");
  size_t n = ZSTD_compressCCtx(ctx.get(), out->data() + start, bound, in.data(), in.size(), level);
  if (ZSTD_isError(n)) {
    out->resize(start);
    return Status::Internal(std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
  }
  out->resize(start + n);
  return Status::OK();
}

}  // namespace

uint32_t Xxh32(std::string_view data) {
  return Xxh32(reinterpret_cast<const unsigned char*>(data.data()), data.size());
}

bool IsXerialSnappy(std::string_view data) {
  return data.size() >= kXerialHeaderSize &&
         std::memcmp(data.data(), kXerialMagic, sizeof kXerialMagic) == 0;
}

Status Compress(Compression codec, std::string_view input, const CompressOptions& options,
                std::string* out) {
  switch (codec) {
    case Compression::kNone:
      out->append(input.data(), input.size());
      return Status::OK();
    case Compression::kGzip: return GzipCompress(input, options.level, out);
    case Compression::kSnappy: return SnappyCompress(input, options.snappy_xerial, out);
    case Compression::kLz4: return Lz4Compress(input, options.level, out);
    case Compression::kZstd: return ZstdCompress(input, options.level, out);
  }
  return Status::InvalidArgument("unknown compression codec " +
                                 std::to_string(static_cast<int>(codec)));
}

Result<std::string> Compress(Compression codec, std::string_view input,
                             const CompressOptions& options) {
  std::string out;
  SILT_TRY(Compress(codec, input, options, &out));
  return out;
}

Status Decompress(Compression codec, std::string_view input, int64_t max_size, std::string* out) {
  switch (codec) {
    case Compression::kNone:
      if (static_cast<int64_t>(input.size()) > max_size) return TooLargeError(codec, max_size);
      out->append(input.data(), input.size());
      return Status::OK();
    case Compression::kGzip: return GzipDecompress(input, max_size, out);
    case Compression::kSnappy: return SnappyDecompress(input, max_size, out);
    case Compression::kLz4: return Lz4Decompress(input, max_size, out);
    case Compression::kZstd: return ZstdDecompress(input, max_size, out);
  }
  return Status::InvalidArgument("unknown compression codec " +
                                 std::to_string(static_cast<int>(codec)));
}

Result<std::string> Decompress(Compression codec, std::string_view input, int64_t max_size) {
  std::string out;
  SILT_TRY(Decompress(codec, input, max_size, &out));
  return out;
}

}  // namespace silt::format
