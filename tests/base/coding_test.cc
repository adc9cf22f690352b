#include <doctest/doctest.h>

#include <limits>
#include <string>

#include "base/coding.h"

using namespace silt;

TEST_CASE("big-endian fixed-width integers round-trip and lay out most significant byte first") {
  std::string buf;
  ByteWriter w(&buf);
  w.I16(0x0102);
  w.I32(-2);
  w.I64(0x0102030405060708LL);
  REQUIRE(buf.size() == 14);
  CHECK(buf.substr(0, 2) == std::string("\x01\x02", 2));
  CHECK(buf.substr(2, 4) == std::string("\xff\xff\xff\xfe", 4));
  CHECK(buf.substr(6, 8) == std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8));
  ByteReader r(buf);
  int16_t a;
  int32_t b;
  int64_t c;
  REQUIRE(r.I16(&a));
  REQUIRE(r.I32(&b));
  REQUIRE(r.I64(&c));
  CHECK(a == 0x0102);
  CHECK(b == -2);
  CHECK(c == 0x0102030405060708LL);
  CHECK(r.empty());
  CHECK_FALSE(r.I8(reinterpret_cast<int8_t*>(&a)));
}

TEST_CASE("zigzag varints match Kafka's encodings for known values") {
  // From Kafka's ByteUtilsTest: zigzag maps 0,-1,1,-2,2 to 0,1,2,3,4.
  CHECK(ZigZagEncode32(0) == 0);
  CHECK(ZigZagEncode32(-1) == 1);
  CHECK(ZigZagEncode32(1) == 2);
  CHECK(ZigZagEncode32(-2) == 3);
  CHECK(ZigZagEncode32(std::numeric_limits<int32_t>::max()) == 0xfffffffeu);
  CHECK(ZigZagEncode32(std::numeric_limits<int32_t>::min()) == 0xffffffffu);
  std::string buf;
  ByteWriter w(&buf);
  w.Varint(-1);
  CHECK(buf == std::string("\x01", 1));
  buf.clear();
  w.Varint(300);  // zigzag 600 = 0b1001011000 -> d8 04
  CHECK(buf == std::string("\xd8\x04", 2));
  buf.clear();
  w.Varlong(std::numeric_limits<int64_t>::min());
  CHECK(buf.size() == 10);
}

TEST_CASE("varint round trips cover the whole range at every length boundary") {
  const int64_t values[] = {0, 1, -1, 63, -64, 64, -65, 8191, -8192, 8192, 1 << 20, -(1 << 20),
                            std::numeric_limits<int32_t>::max(),
                            std::numeric_limits<int32_t>::min(),
                            std::numeric_limits<int64_t>::max(),
                            std::numeric_limits<int64_t>::min()};
  for (int64_t v : values) {
    std::string buf;
    ByteWriter w(&buf);
    w.Varlong(v);
    CHECK(static_cast<int>(buf.size()) == VarlongLength(v));
    ByteReader r(buf);
    int64_t back;
    REQUIRE(r.Varlong(&back));
    CHECK(back == v);
    CHECK(r.empty());
    if (v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max()) {
      buf.clear();
      w.Varint(static_cast<int32_t>(v));
      CHECK(static_cast<int>(buf.size()) == VarintLength(static_cast<int32_t>(v)));
      ByteReader r2(buf);
      int32_t b32;
      REQUIRE(r2.Varint(&b32));
      CHECK(b32 == v);
    }
  }
}

TEST_CASE("a truncated or overlong varint is rejected without consuming input") {
  std::string cut("\x80\x80", 2);
  ByteReader r(cut);
  int32_t v;
  CHECK_FALSE(r.Varint(&v));
  CHECK(r.position() == 0);
  std::string overlong("\xff\xff\xff\xff\xff\x01", 6);  // six bytes: too long for a varint
  ByteReader r2(overlong);
  CHECK_FALSE(r2.Varint(&v));
  std::string too_big("\xff\xff\xff\xff\x7f", 5);  // fits 5 bytes but exceeds 32 bits
  ByteReader r3(too_big);
  CHECK_FALSE(r3.Varint(&v));
}

TEST_CASE("back-patching writes a length over a placeholder") {
  std::string buf;
  ByteWriter w(&buf);
  size_t at = w.position();
  w.I32(0);
  w.Raw("hello");
  w.PatchI32(at, 5);
  ByteReader r(buf);
  int32_t n = 0;
  std::string_view s;
  REQUIRE(r.I32(&n));
  REQUIRE(r.Bytes(static_cast<size_t>(n), &s));
  CHECK(s == "hello");
}
