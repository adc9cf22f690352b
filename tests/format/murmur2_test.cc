#include "format/murmur2.h"

#include <doctest/doctest.h>

#include <string>

using namespace silt::format;

TEST_CASE("murmur2 matches the Java client's Utils.murmur2 vectors") {
  // From Kafka's UtilsTest.testMurmur2.
  CHECK(Murmur2("21") == -973932308);
  CHECK(Murmur2("foobar") == -790332482);
  CHECK(Murmur2("a-little-bit-long-string") == -985981536);
  CHECK(Murmur2("a-little-bit-longer-string") == -1486304829);
  CHECK(Murmur2("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8") == -58897971);
  CHECK(Murmur2("abc") == 479470107);
}

TEST_CASE("murmur2 matches librdkafka's Java-compatible vectors for every tail length") {
  auto u = [](std::string_view s) { return static_cast<uint32_t>(Murmur2(s)); };
  CHECK(u("kafka") == 0xd067cf64u);
  CHECK(u("") == 0x106e08d9u);
  CHECK(u("giberish123456789") == 0x8f552b0cu);
  CHECK(u("1234") == 0x9fc97b14u);
  CHECK(u("234") == 0xe7c009cau);
  CHECK(u("34") == 0x873930dau);
  CHECK(u("4") == 0x5a4b5ca1u);
  std::string_view unaligned = "PreAmbleWillBeRemoved,ThePrePartThatIs";
  CHECK(u(unaligned) == 0x78424f1cu);
  CHECK(u(unaligned.substr(1)) == 0x4a62b377u);
  CHECK(u(unaligned.substr(2)) == 0xe0e4e09eu);
  CHECK(u(unaligned.substr(3)) == 0x62b8b43fu);
}

TEST_CASE("bytes above 0x7f are hashed as unsigned, as Java's & 0xff does") {
  std::string high = "\xff\xfe\xfd\xfc\xfb";
  // Independent of signedness of char: the same bytes always give the same hash, and the value
  // differs from the hash of the low 7 bits.
  std::string low = "\x7f\x7e\x7d\x7c\x7b";
  CHECK(Murmur2(high) != Murmur2(low));
  CHECK(Murmur2(high) == Murmur2(std::string(high)));
}

TEST_CASE("the default partitioner clears the sign bit and takes the remainder") {
  // murmur2("kafka") = 0xd067cf64 is negative; toPositive gives 0x5067cf64 = 1348980580.
  CHECK(ToPositive(static_cast<int32_t>(0xd067cf64u)) == 1348980580);
  CHECK(PartitionForKey("kafka", 10) == 1348980580 % 10);
  CHECK(PartitionForKey("kafka", 12) == 1348980580 % 12);
  CHECK(ToPositive(INT32_MIN) == 0);
  CHECK(ToPositive(-1) == INT32_MAX);
  // "21" hashes to -973932308 (0xc5f2f8ec); & 0x7fffffff = 0x45f2f8ec = 1173551340.
  CHECK(PartitionForKey("21", 3) == 1173551340 % 3);
  CHECK(PartitionForKey("abc", 1) == 0);
  for (int n = 1; n < 50; ++n) {
    int32_t p = PartitionForKey("key-" + std::to_string(n), n);
    CHECK(p >= 0);
    CHECK(p < n);
  }
}
