#include <doctest/doctest.h>

#include "client/offset_spec.h"

using namespace silt;
using namespace silt::client;

namespace {
Result<int64_t> NoTimestamps(int64_t) { return Status::NotFound("none"); }
}  // namespace

TEST_CASE("offset expressions parse into their kinds") {
  CHECK(ParseOffsetSpec("beginning")->kind == OffsetSpec::Kind::kBeginning);
  CHECK(ParseOffsetSpec("end")->kind == OffsetSpec::Kind::kEnd);
  auto abs = ParseOffsetSpec("42");
  REQUIRE(abs.ok());
  CHECK(abs->kind == OffsetSpec::Kind::kAbsolute);
  CHECK(abs->value == 42);
  auto rel = ParseOffsetSpec("-10");
  REQUIRE(rel.ok());
  CHECK(rel->kind == OffsetSpec::Kind::kFromEnd);
  CHECK(rel->value == 10);
  auto ts = ParseOffsetSpec("@1767323045000");
  REQUIRE(ts.ok());
  CHECK(ts->kind == OffsetSpec::Kind::kTimestamp);
  CHECK(ts->value == 1767323045000);
}

TEST_CASE("malformed offset expressions are rejected with the accepted forms in the message") {
  for (const char* bad : {"", "begin", "1x", "--5", "-", "@", "@yesterday", "+3", "99999999999999999999"}) {
    auto r = ParseOffsetSpec(bad);
    CHECK_FALSE(r.ok());
    CHECK(r.status().message().find("beginning, end, N, -N or @TIME") != std::string::npos);
  }
}

TEST_CASE("ISO-8601 timestamps become milliseconds since the epoch") {
  CHECK(*ParseTimestampMs("1970-01-01T00:00:00Z") == 0);
  CHECK(*ParseTimestampMs("2026-01-02T03:04:05Z") == 1767323045000);
  CHECK(*ParseTimestampMs("2026-01-02T03:04:05.250Z") == 1767323045250);
  CHECK(*ParseTimestampMs("2026-01-02T04:04:05+01:00") == 1767323045000);
  CHECK(*ParseTimestampMs("2026-01-02T02:04:05-0100") == 1767323045000);
  CHECK(*ParseTimestampMs("2026-01-02 03:04:05") == 1767323045000);
  CHECK(*ParseTimestampMs("2026-01-02") == 1767312000000);
  CHECK(*ParseTimestampMs("2024-02-29T00:00:00Z") == 1709164800000);
  CHECK(*ParseTimestampMs("1767323045000") == 1767323045000);
  CHECK_FALSE(ParseTimestampMs("2026-13-01").ok());
  CHECK_FALSE(ParseTimestampMs("2025-02-29").ok());
  CHECK_FALSE(ParseTimestampMs("2026-01-02T25:00").ok());
  CHECK_FALSE(ParseTimestampMs("2026-01-02T03:04:05Q").ok());
  CHECK(FormatTimestampMs(1767323045250) == "2026-01-02T03:04:05.250Z");
}

TEST_CASE("resolving clamps into the readable range and counts -N back from each end") {
  CHECK(*ResolveOffset(OffsetSpec::Beginning(), 5, 20, NoTimestamps) == 5);
  CHECK(*ResolveOffset(OffsetSpec::End(), 5, 20, NoTimestamps) == 20);
  CHECK(*ResolveOffset({OffsetSpec::Kind::kAbsolute, 10}, 5, 20, NoTimestamps) == 10);
  CHECK(*ResolveOffset({OffsetSpec::Kind::kAbsolute, 2}, 5, 20, NoTimestamps) == 5);
  CHECK(*ResolveOffset({OffsetSpec::Kind::kAbsolute, 99}, 5, 20, NoTimestamps) == 20);
  CHECK(*ResolveOffset({OffsetSpec::Kind::kFromEnd, 3}, 5, 20, NoTimestamps) == 17);
  CHECK(*ResolveOffset({OffsetSpec::Kind::kFromEnd, 100}, 5, 20, NoTimestamps) == 5);
  CHECK(*ResolveOffset({OffsetSpec::Kind::kFromEnd, 0}, 5, 20, NoTimestamps) == 20);
}

TEST_CASE("a time past every record resolves to the log end; a time lookup error is returned") {
  CHECK(*ResolveOffset({OffsetSpec::Kind::kTimestamp, 1000}, 0, 7, NoTimestamps) == 7);
  auto at = [](int64_t ts) -> Result<int64_t> { return ts / 100; };
  CHECK(*ResolveOffset({OffsetSpec::Kind::kTimestamp, 300}, 0, 7, at) == 3);
  auto broken = [](int64_t) -> Result<int64_t> { return Status::IOError("disk"); };
  CHECK_FALSE(ResolveOffset({OffsetSpec::Kind::kTimestamp, 300}, 0, 7, broken).ok());
}
