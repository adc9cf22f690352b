// SiltAppendBatches, silt's own API: the v0 layout byte for byte (as silt-serve(1) documents it),
// round trips and every-prefix truncation, and its place in the API table.
#include <doctest/doctest.h>

#include <string>

#include "base/coding.h"
#include "protocol/api_table.h"
#include "protocol/errors.h"
#include "protocol/messages.h"

using namespace silt;
using namespace silt::protocol;

namespace {

template <typename T>
std::string Encoded(const T& m) {
  std::string out;
  ByteWriter w(&out);
  m.Encode(w, 0);
  return out;
}

template <typename T>
void CheckEveryPrefixFails(const std::string& bytes) {
  for (size_t n = 0; n < bytes.size(); ++n) {
    T cut;
    ByteReader r(std::string_view(bytes).substr(0, n));
    if (cut.Decode(r, 0).ok()) FAIL_CHECK("a " << n << "-byte prefix decoded");
  }
}

}  // namespace

TEST_CASE("SiltAppendBatches v0 request bytes follow the documented layout and round-trip") {
  const std::string records = "\x01\x02\x03";
  SiltAppendBatchesRequest m;
  m.topic = "ab";
  m.partition = 3;
  m.expected_offset = 0x0102030405060708;
  m.timeout_ms = 500;
  m.records.bytes = std::string_view(records);
  const std::string want("\x00\x02" "ab"                          // topic
                         "\x00\x00\x00\x03"                       // partition
                         "\x01\x02\x03\x04\x05\x06\x07\x08"       // expected_offset
                         "\x00\x00\x01\xf4"                       // timeout_ms
                         "\x00\x00\x00\x03" "\x01\x02\x03",       // records
                         2 + 2 + 4 + 8 + 4 + 4 + 3);
  const std::string bytes = Encoded(m);
  CHECK(bytes == want);
  SiltAppendBatchesRequest back;
  ByteReader r(bytes);
  REQUIRE(back.Decode(r, 0).ok());
  CHECK(r.remaining() == 0);
  CHECK(back.topic == "ab");
  CHECK(back.expected_offset == m.expected_offset);
  CHECK(back.records.bytes == std::string_view(records));
  CheckEveryPrefixFails<SiltAppendBatchesRequest>(bytes);
}

TEST_CASE("SiltAppendBatches v0 response bytes follow the documented layout and round-trip") {
  SiltAppendBatchesResponse m;
  m.error_code = ToWire(ErrorCode::SILT_OFFSET_MISMATCH);
  m.error_message = "x";
  m.log_end_offset = 9;
  m.high_watermark = 8;
  m.log_start_offset = 1;
  const std::string want("\x27\x10"                               // error_code 10000
                         "\x00\x01" "x"                           // error_message
                         "\x00\x00\x00\x00\x00\x00\x00\x09"       // log_end_offset
                         "\x00\x00\x00\x00\x00\x00\x00\x08"       // high_watermark
                         "\x00\x00\x00\x00\x00\x00\x00\x01",      // log_start_offset
                         2 + 3 + 8 + 8 + 8);
  const std::string bytes = Encoded(m);
  CHECK(bytes == want);
  SiltAppendBatchesResponse back;
  ByteReader r(bytes);
  REQUIRE(back.Decode(r, 0).ok());
  CHECK(back == m);
  CheckEveryPrefixFails<SiltAppendBatchesResponse>(bytes);
  SiltAppendBatchesResponse null_message;
  std::string b2 = Encoded(null_message);
  ByteReader r2(b2);
  REQUIRE(back.Decode(r2, 0).ok());
  CHECK_FALSE(back.error_message.has_value());
}

TEST_CASE("SiltAppendBatches is served at v0 only, non-flexible, under key 10000") {
  const ApiInfo* a = FindApi(10000);
  REQUIRE(a != nullptr);
  CHECK(std::string(a->name) == "SiltAppendBatches");
  CHECK(a->max_version == 0);
  CHECK_FALSE(IsFlexibleVersion(10000, 0));
  CHECK(RequestHeaderVersion(10000, 0) == 1);
  CHECK(ResponseHeaderVersion(10000, 0) == 0);
  CHECK(std::string(ErrorName(ErrorCode::SILT_OFFSET_MISMATCH)) == "SILT_OFFSET_MISMATCH");
}
