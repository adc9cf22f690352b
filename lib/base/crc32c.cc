#include "base/crc32c.h"

#include <array>
#include <climits>
#include <cstring>

#if defined(SILT_HAVE_ISAL)
#include <isa-l/crc.h>
#endif

namespace silt::crc32c {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;

// tables[k][b]: CRC of byte b followed by k zero bytes (slicing-by-8).
struct Tables {
  std::array<std::array<uint32_t, 256>, 8> t{};
  constexpr Tables() {
    for (uint32_t b = 0; b < 256; ++b) {
      uint32_t c = b;
      for (int i = 0; i < 8; ++i) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
      t[0][b] = c;
    }
    for (uint32_t b = 0; b < 256; ++b)
      for (int k = 1; k < 8; ++k) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
  }
};
constexpr Tables kTables;

inline uint64_t LoadLE64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t Sse42Impl(uint32_t crc, const char* data, size_t n) {
  auto p = reinterpret_cast<const unsigned char*>(data);
  uint64_t c = ~crc;
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    c = __builtin_ia32_crc32qi(static_cast<uint32_t>(c), *p++);
    --n;
  }
  while (n >= 8) {
    c = __builtin_ia32_crc32di(c, LoadLE64(p));
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    c = __builtin_ia32_crc32qi(static_cast<uint32_t>(c), *p++);
    --n;
  }
  return ~static_cast<uint32_t>(c);
}
#endif

using ExtendFn = uint32_t (*)(uint32_t, const char*, size_t);

ExtendFn Choose() {
#if defined(SILT_HAVE_ISAL)
  return &ExtendIsal;
#else
  if (HaveSse42()) return &ExtendSse42;
  return &ExtendPortable;
#endif
}

const ExtendFn kExtend = Choose();

}  // namespace

uint32_t ExtendPortable(uint32_t crc, const char* data, size_t n) {
  auto p = reinterpret_cast<const unsigned char*>(data);
  const auto& t = kTables.t;
  uint32_t c = ~crc;
  while (n >= 8) {
    uint64_t v = LoadLE64(p) ^ c;
    c = t[7][v & 0xff] ^ t[6][(v >> 8) & 0xff] ^ t[5][(v >> 16) & 0xff] ^
        t[4][(v >> 24) & 0xff] ^ t[3][(v >> 32) & 0xff] ^ t[2][(v >> 40) & 0xff] ^
        t[1][(v >> 48) & 0xff] ^ t[0][v >> 56];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = (c >> 8) ^ t[0][(c ^ *p++) & 0xff];
  return ~c;
}

bool HaveSse42() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("sse4.2");
#else
  return false;
#endif
}

uint32_t ExtendSse42(uint32_t crc, const char* data, size_t n) {
#if defined(__x86_64__)
  return Sse42Impl(crc, data, n);
#else
  return ExtendPortable(crc, data, n);
#endif
}

bool HaveIsal() {
#if defined(SILT_HAVE_ISAL)
  return true;
#else
  return false;
#endif
}

uint32_t ExtendIsal(uint32_t crc, const char* data, size_t n) {
#if defined(SILT_HAVE_ISAL)
  // ISA-L works on the raw register: pre- and post-inversion are ours. Its length is an int, so
  // very large buffers go in chunks.
  uint32_t c = ~crc;
  auto p = reinterpret_cast<unsigned char*>(const_cast<char*>(data));
  while (n > 0) {
    int chunk = n > (1u << 30) ? (1 << 30) : static_cast<int>(n);
    c = crc32_iscsi(p, chunk, c);
    p += chunk;
    n -= static_cast<size_t>(chunk);
  }
  return ~c;
#else
  return ExtendPortable(crc, data, n);
#endif
}

uint32_t Extend(uint32_t crc, const char* data, size_t n) { return kExtend(crc, data, n); }

const char* ImplementationName() {
#if defined(SILT_HAVE_ISAL)
  return "isa-l";
#else
  return HaveSse42() ? "sse4.2" : "portable";
#endif
}

}  // namespace silt::crc32c
