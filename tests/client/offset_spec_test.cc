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
    CHECK(r.status().message().find("beginning, end, N, -N, @TIME or START:END") != std::string::npos);
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

TEST_CASE("a plain number of TIME is seconds below 10^11 and milliseconds from there on") {
  CHECK(*ParseTimestampMs("1796142136") == 1796142136000);       // seconds: December 2026
  CHECK(*ParseTimestampMs("1796142136000") == 1796142136000);    // milliseconds
  CHECK(*ParseTimestampMs("99999999999") == 99999999999000);     // just below: seconds
  CHECK(*ParseTimestampMs("100000000000") == 100000000000);      // at the limit: milliseconds
  CHECK(*ParseTimestampMs("8000ms") == 8000);
  CHECK(*ParseTimestampMs("8s") == 8000);
  CHECK_FALSE(ParseTimestampMs("8h").ok());  // a unit without '-' is not a point in time
  CHECK_FALSE(ParseTimestampMs("8 s").ok());
}

TEST_CASE("relative times count back from now") {
  const int64_t now = 1796142136000;
  CHECK(*ParseTimestampMs("-1h", now) == now - 3600 * 1000);
  CHECK(*ParseTimestampMs("-15m", now) == now - 15 * 60 * 1000);
  CHECK(*ParseTimestampMs("-30s", now) == now - 30 * 1000);
  CHECK(*ParseTimestampMs("-2d", now) == now - 2 * 86400 * 1000);
  CHECK(*ParseTimestampMs("-250ms", now) == now - 250);
  CHECK_FALSE(ParseTimestampMs("-1y", now).ok());
  CHECK_FALSE(ParseTimestampMs("-h", now).ok());
  auto spec = ParseOffsetSpec("@-1h", now);
  REQUIRE(spec.ok());
  CHECK(spec->kind == OffsetSpec::Kind::kTimestamp);
  CHECK(spec->value == now - 3600 * 1000);
  // Without a clock given, the system clock is used.
  auto live = ParseTimestampMs("-1s");
  REQUIRE(live.ok());
  CHECK(*live > 1700000000000);
}

TEST_CASE("offset ranges split into a start and an exclusive end") {
  auto r = ParseOffsetRange("100:200");
  REQUIRE(r.ok());
  CHECK(r->start.kind == OffsetSpec::Kind::kAbsolute);
  CHECK(r->start.value == 100);
  REQUIRE(r->end.has_value());
  CHECK(r->end->kind == OffsetSpec::Kind::kAbsolute);
  CHECK(r->end->value == 200);
  // ISO-8601 colons are not separators; the end time carries its own '@'.
  auto t = ParseOffsetRange("@2026-01-02T03:04:05Z:@2026-01-02T04:00:00Z");
  REQUIRE(t.ok());
  CHECK(t->start.value == 1767323045000);
  REQUIRE(t->end.has_value());
  CHECK(t->end->kind == OffsetSpec::Kind::kTimestamp);
  CHECK(t->end->value == 1767326400000);
  auto iso = ParseOffsetRange("@2026-01-02T03:04:05Z");
  REQUIRE(iso.ok());
  CHECK_FALSE(iso->end.has_value());
  auto open = ParseOffsetRange("5:");
  REQUIRE(open.ok());
  CHECK_FALSE(open->end.has_value());
  auto from_start = ParseOffsetRange(":7");
  REQUIRE(from_start.ok());
  CHECK(from_start->start.kind == OffsetSpec::Kind::kBeginning);
  CHECK(from_start->end->value == 7);
  auto to_end = ParseOffsetRange("-5:end");
  REQUIRE(to_end.ok());
  CHECK(to_end->end->kind == OffsetSpec::Kind::kEnd);
  auto rel = ParseOffsetRange("@-2h:@-1h", 1796142136000);
  REQUIRE(rel.ok());
  CHECK(rel->end->value - rel->start.value == 3600 * 1000);
  CHECK_FALSE(ParseOffsetRange("200:100").ok());
  CHECK_FALSE(ParseOffsetRange("@-1h:@-2h").ok());
  CHECK_FALSE(ParseOffsetRange("1:-5").ok());  // an end counted back from the end is refused
  CHECK_FALSE(ParseOffsetRange("1:x").ok());
}
