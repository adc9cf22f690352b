#include <doctest/doctest.h>

#include "client/record_format.h"
#include "format/record_batch.h"

using namespace silt;
using namespace silt::client;

namespace {
format::RecordView View(std::string_view key, std::string_view value, bool key_null = false) {
  format::RecordView r;
  r.offset = 7;
  r.timestamp = 1767323045000;
  r.key_null = key_null;
  r.key = key;
  r.value_null = false;
  r.value = value;
  return r;
}
}  // namespace

TEST_CASE("UTF-8 validation accepts well-formed text and rejects overlongs, surrogates and stray bytes") {
  CHECK(IsValidUtf8(""));
  CHECK(IsValidUtf8("plain ascii text, long enough for the fast path"));
  CHECK(IsValidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
  CHECK_FALSE(IsValidUtf8("\xc0\xaf"));          // overlong '/'
  CHECK_FALSE(IsValidUtf8("\xed\xa0\x80"));      // surrogate D800
  CHECK_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  CHECK_FALSE(IsValidUtf8("abc\xff"));
  CHECK_FALSE(IsValidUtf8("\xe2\x82"));          // cut short
}

TEST_CASE("base64 round-trips every byte value and rejects foreign characters") {
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  for (size_t n : {0u, 1u, 2u, 3u, 4u, 255u, 256u}) {
    std::string enc;
    Base64Encode(std::string_view(all).substr(0, n), &enc);
    CHECK(enc.size() == (n + 2) / 3 * 4);
    auto dec = Base64Decode(enc);
    REQUIRE(dec.ok());
    CHECK(*dec == all.substr(0, n));
  }
  std::string enc;
  Base64Encode("foob", &enc);
  CHECK(enc == "Zm9vYg==");
  CHECK_FALSE(Base64Decode("Zm9v!").ok());
}

TEST_CASE("JSON output escapes control characters and marks non-UTF-8 bytes as base64") {
  std::string out;
  AppendJsonBytes(std::string_view("a\"b\\c\n\x01"), &out);
  CHECK(out == "\"a\\\"b\\\\c\\n\\u0001\"");
  out.clear();
  AppendJsonBytes(std::string_view("\xff\x00", 2), &out);
  CHECK(out == "{\"base64\":\"/wA=\"}");
  out.clear();
  AppendJsonBytes(std::nullopt, &out);
  CHECK(out == "null");
}

TEST_CASE("a record printed as JSON reads back with the same bytes") {
  std::string key("k\xfe\x00y", 4);
  std::string value = "v\xc3\xa9\t\"quoted\"";
  format::RecordView r = View(key, value);
  std::string hv("\x80", 1);
  r.headers.emplace_back("trace", std::optional<std::string_view>(hv));
  r.headers.emplace_back("empty", std::nullopt);
  auto f = RecordFormatter::Parse("json");
  REQUIRE(f.ok());
  std::string line;
  f->Append("orders", 3, r, &line);
  REQUIRE(line.back() == '\n');
  CHECK(line.find("\"topic\":\"orders\",\"partition\":3,\"offset\":7,\"timestamp\":1767323045000") !=
        std::string::npos);
  InputRecord in;
  REQUIRE(ParseJsonRecord(std::string_view(line).substr(0, line.size() - 1), &in).ok());
  CHECK(in.key == key);
  CHECK(in.value == value);
  CHECK(in.timestamp == 1767323045000);
  REQUIRE(in.headers.size() == 2);
  CHECK(in.headers[0].first == "trace");
  CHECK(in.headers[0].second == hv);
  CHECK(in.headers[1].first == "empty");
  CHECK_FALSE(in.headers[1].second.has_value());
}

TEST_CASE("JSON input accepts nulls and plain JSON values and rejects what it cannot use") {
  InputRecord in;
  REQUIRE(ParseJsonRecord(R"({"key":null,"value":{"a":[1,2]}})", &in).ok());
  CHECK_FALSE(in.key.has_value());
  CHECK(in.value == std::string(R"({"a":[1,2]})"));
  CHECK(in.timestamp == -1);
  CHECK_FALSE(ParseJsonRecord("{\"value\":", &in).ok());
  CHECK_FALSE(ParseJsonRecord("[1]", &in).ok());
  CHECK_FALSE(ParseJsonRecord(R"({"valu":"x"})", &in).ok());
  CHECK_FALSE(ParseJsonRecord(R"({"timestamp":"now"})", &in).ok());
  CHECK_FALSE(ParseJsonRecord(R"({"value":{"base64":"***"}})", &in).ok());
}

TEST_CASE("templates substitute kcat's tokens and escapes") {
  format::RecordView r = View("user1", "clicked");
  r.headers.emplace_back("a", std::optional<std::string_view>("1"));
  r.headers.emplace_back("b", std::nullopt);
  auto f = RecordFormatter::Parse("%t/%p@%o %T %k=%s [%h] 100%%\\n");
  REQUIRE(f.ok());
  std::string out;
  f->Append("clicks", 2, r, &out);
  CHECK(out == "clicks/2@7 1767323045000 user1=clicked [a=1,b] 100%\n");
  auto text = RecordFormatter::Parse("text");
  out.clear();
  text->Append("clicks", 2, r, &out);
  CHECK(out == "clicked\n");
}

TEST_CASE("%T{iso} prints the timestamp as ISO-8601 UTC and %T stays milliseconds") {
  format::RecordView r = View("k", "v");
  auto f = RecordFormatter::Parse("%T{iso} %T %T{x}\\n");
  REQUIRE(f.ok());
  std::string out;
  f->Append("t", 0, r, &out);
  CHECK(out == "2026-01-02T03:04:05.000Z 1767323045000 1767323045000{x}\n");
  r.timestamp = -1;  // no timestamp
  out.clear();
  f->Append("t", 0, r, &out);
  CHECK(out == "-1 -1 -1{x}\n");
}

TEST_CASE("%K and %S print the key's and the value's length, -1 for a null") {
  auto f = RecordFormatter::Parse("%K %S\\n");
  REQUIRE(f.ok());
  std::string out;
  f->Append("t", 0, View("user1", "clicked"), &out);
  CHECK(out == "5 7\n");
  format::RecordView nulls = View("", "");
  nulls.key_null = true;
  nulls.value_null = true;
  out.clear();
  f->Append("t", 0, nulls, &out);
  CHECK(out == "-1 -1\n");
  format::RecordView empty = View("", "");
  empty.key_null = false;
  empty.value_null = false;
  out.clear();
  f->Append("t", 0, empty, &out);
  CHECK(out == "0 0\n");
}

TEST_CASE("a null marker stands for null keys and values in templates and text, not empty ones") {
  format::RecordView nulls = View("", "");
  nulls.key_null = true;
  nulls.value_null = true;
  format::RecordView empty = View("", "");
  empty.key_null = false;
  empty.value_null = false;
  auto f = RecordFormatter::Parse("[%k][%s]\\n");
  REQUIRE(f.ok());
  std::string out;
  f->Append("t", 0, nulls, &out);
  CHECK(out == "[][]\n");  // without a marker a null prints as nothing
  f->set_null_marker("NULL");
  out.clear();
  f->Append("t", 0, nulls, &out);
  f->Append("t", 0, empty, &out);
  CHECK(out == "[NULL][NULL]\n[][]\n");
  auto text = RecordFormatter::Parse("text");
  text->set_null_marker("NULL");
  out.clear();
  text->Append("t", 0, nulls, &out);
  text->Append("t", 0, View("k", "v"), &out);
  CHECK(out == "NULL\nv\n");
  auto json = RecordFormatter::Parse("json");
  json->set_null_marker("NULL");
  out.clear();
  json->Append("t", 0, nulls, &out);
  CHECK(out.find("\"key\":null,\"value\":null") != std::string::npos);
}

TEST_CASE("templates with unknown tokens are rejected") {
  CHECK_FALSE(RecordFormatter::Parse("%x").ok());
  CHECK_FALSE(RecordFormatter::Parse("value %").ok());
}
