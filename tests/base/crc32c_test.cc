#include <doctest/doctest.h>

#include <random>
#include <string>

#include "base/crc32c.h"

using namespace silt;

namespace {
// Known vectors: RFC 3720 (iSCSI) appendix B.4 and the classic check value.
struct Vector {
  std::string data;
  uint32_t crc;
};
std::vector<Vector> Vectors() {
  std::string zeros(32, '\0'), ones(32, '\xff'), inc(32, 0), dec(32, 0);
  for (int i = 0; i < 32; ++i) {
    inc[i] = static_cast<char>(i);
    dec[i] = static_cast<char>(31 - i);
  }
  return {{"123456789", 0xE3069283u}, {zeros, 0x8A9136AAu}, {ones, 0x62A8AB43u},
          {inc, 0x46DD794Eu},          {dec, 0x113FDB5Cu},   {"", 0u}};
}
}  // namespace

TEST_CASE("every CRC-32C implementation matches the RFC 3720 vectors") {
  for (const auto& v : Vectors()) {
    CAPTURE(v.data.size());
    CHECK(crc32c::ExtendPortable(0, v.data.data(), v.data.size()) == v.crc);
    CHECK(crc32c::Value(v.data) == v.crc);
    if (crc32c::HaveSse42()) CHECK(crc32c::ExtendSse42(0, v.data.data(), v.data.size()) == v.crc);
    if (crc32c::HaveIsal()) CHECK(crc32c::ExtendIsal(0, v.data.data(), v.data.size()) == v.crc);
  }
  MESSAGE("CRC-32C implementation in use: " << std::string(crc32c::ImplementationName()));
}

TEST_CASE("extending a CRC piece by piece equals the CRC of the whole, at every alignment") {
  std::mt19937 rng(42);
  std::string data(4099, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  uint32_t whole = crc32c::ExtendPortable(0, data.data(), data.size());
  CHECK(crc32c::Value(data) == whole);
  for (size_t split : {0ul, 1ul, 7ul, 8ul, 13ul, 1000ul, 4098ul}) {
    for (size_t start : {0ul, 1ul, 3ul}) {
      std::string_view s(data.data() + start, data.size() - start);
      uint32_t expect = crc32c::ExtendPortable(0, s.data(), s.size());
      size_t k = std::min(split, s.size());
      uint32_t a = crc32c::Extend(crc32c::Extend(0, s.data(), k), s.data() + k, s.size() - k);
      CHECK(a == expect);
      if (crc32c::HaveSse42()) {
        uint32_t b = crc32c::ExtendSse42(crc32c::ExtendSse42(0, s.data(), k), s.data() + k,
                                         s.size() - k);
        CHECK(b == expect);
      }
    }
  }
}
