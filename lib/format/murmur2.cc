#include "format/murmur2.h"

#include <cassert>

namespace silt::format {

int32_t Murmur2(std::string_view key) {
  constexpr uint32_t kSeed = 0x9747b28c;
  constexpr uint32_t m = 0x5bd1e995;
  constexpr int r = 24;
  const auto* data = reinterpret_cast<const unsigned char*>(key.data());
  const uint32_t length = static_cast<uint32_t>(key.size());

  uint32_t h = kSeed ^ length;
  const uint32_t words = length / 4;
  for (uint32_t i = 0; i < words; ++i) {
    const unsigned char* p = data + 4 * i;
    uint32_t k = uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) |
                 (uint32_t{p[3]} << 24);
    k *= m;
    k ^= k >> r;
    k *= m;
    h *= m;
    h ^= k;
  }
  // The tail, as Java's fall-through switch on length % 4.
  const unsigned char* tail = data + (length & ~3u);
  switch (length % 4) {
    case 3: h ^= uint32_t{tail[2]} << 16; [[fallthrough]];
    case 2: h ^= uint32_t{tail[1]} << 8; [[fallthrough]];
    case 1:
      h ^= uint32_t{tail[0]};
      h *= m;
  }
  h ^= h >> 13;
  h *= m;
  h ^= h >> 15;
  return static_cast<int32_t>(h);
}

int32_t PartitionForKey(std::string_view key, int32_t num_partitions) {
  assert(num_partitions > 0);
  return ToPositive(Murmur2(key)) % num_partitions;
}

}  // namespace silt::format
