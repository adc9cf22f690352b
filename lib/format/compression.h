// The compression codecs of Kafka's record format: gzip, snappy, lz4 and zstd.
//
// Each codec compresses or decompresses one whole block (a RecordBatch's records, or the value of
// a legacy wrapper message). Decompression is always bounded: input that would inflate past
// `max_size` bytes fails with TooLarge and never allocates more than `max_size` bytes of output,
// so a "zip bomb" from the network cannot exhaust memory.
//
// Wire formats, as Kafka's Java client writes and reads them:
//   gzip    RFC 1952 gzip stream (zlib); concatenated members are accepted on read.
//   snappy  xerial framing: magic "\x82SNAPPY\0", version:int32, compatible:int32, then
//           [length:int32, raw snappy block]...; other clients (librdkafka, sarama) may send one
//           raw snappy block instead. Both are detected on read; xerial is written by default.
//   lz4     the standard LZ4 frame format (independent 64 KiB blocks, no content size). Legacy
//           magic-0 messages from old Java clients carry a header checksum computed over the
//           magic number as well (KAFKA-3160); that variant is recognised and accepted on read.
//   zstd    one or more zstd frames.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "format/batch_header.h"  // CompressionName
#include "format/layout.h"

namespace silt::format {

// Level meaning "the codec's default".
inline constexpr int kDefaultCompressionLevel = -1;

struct CompressOptions {
  // gzip 1..9, lz4 1..12 (above 2 is lz4hc), zstd 1..22 (negative levels are zstd's fast
  // modes); snappy has no levels. kDefaultCompressionLevel picks the codec's default.
  int level = kDefaultCompressionLevel;
  // snappy only: write the xerial framing Kafka's Java client writes (true) or one raw block.
  bool snappy_xerial = true;
};

// Compresses `input` with `codec`, appending the block to *out. kNone copies the input.
// InvalidArgument for a level the codec does not accept, Internal if the library fails.
Status Compress(Compression codec, std::string_view input, const CompressOptions& options,
                std::string* out);
Result<std::string> Compress(Compression codec, std::string_view input,
                             const CompressOptions& options = {});

// Decompresses one block, appending at most `max_size` bytes to *out.
//   TooLarge    the block inflates (or declares that it inflates) past max_size;
//   Corruption  the block is malformed or ends before its end marker;
//   InvalidArgument for a codec number Kafka does not define.
// On error *out may hold a partial result (never more than max_size bytes were added).
Status Decompress(Compression codec, std::string_view input, int64_t max_size, std::string* out);
Result<std::string> Decompress(Compression codec, std::string_view input, int64_t max_size);

// XXH32 with seed 0, the hash behind the LZ4 frame header checksum (exposed for tests and
// dump tools that explain a bad lz4 header).
uint32_t Xxh32(std::string_view data);

// True when `data` starts with the xerial snappy stream header.
bool IsXerialSnappy(std::string_view data);

}  // namespace silt::format
