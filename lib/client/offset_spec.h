// Offset expressions, as kcat spells them: where a consumer starts in each partition.
//
//   beginning | earliest     the log start offset
//   end | latest             the log end offset (only records produced from now on)
//   N                        absolute offset N (clamped into [log start, log end])
//   -N                       N records before the log end, per partition (not below log start)
//   @TIME                    the first record whose timestamp is >= TIME (see below)
//   START:END                a range (ParseOffsetRange): from START up to, not including, END,
//                            where END is N, @TIME or end; `100:200`, `@2026-01-02:@2026-01-03`,
//                            `@-2h:@-1h`. With a time START, END must be written with its own @.
//
// TIME is one of
//   N                        seconds since the Unix epoch when N < 10^11, else milliseconds:
//                            10^11 s is the year 5138 and 10^11 ms is March 1973, so a plain
//                            number is read the way it was most likely meant (as rpk does)
//   Ns, Nms                  N seconds or N milliseconds since the epoch, explicitly
//   -N(ms|s|m|h|d)           relative: that long before now (`-1h`, `-15m`, `-2d`)
//   ISO-8601                 2026-01-02T03:04:05Z, 2026-01-02T03:04:05.123+01:00, 2026-01-02
//                            (no zone means UTC)
//
// Parsing is pure; Resolve() turns an expression into an offset given one partition's bounds.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace silt::client {

struct OffsetSpec {
  enum class Kind { kBeginning, kEnd, kAbsolute, kFromEnd, kTimestamp };
  Kind kind = Kind::kBeginning;
  int64_t value = 0;  // the offset (kAbsolute), the count (kFromEnd) or ms (kTimestamp)

  static OffsetSpec Beginning() { return {Kind::kBeginning, 0}; }
  static OffsetSpec End() { return {Kind::kEnd, 0}; }
};

// Parses an offset expression (not a range); InvalidArgument naming the text and the accepted
// forms. Relative times count back from `now_ms`, or from the system clock when it is negative.
Result<OffsetSpec> ParseOffsetSpec(std::string_view text, int64_t now_ms = -1);

// A START[:END] range. `end` is absent for a plain START (or `START:`); when present its kind is
// kAbsolute, kTimestamp or kEnd, and it is exclusive.
struct OffsetRange {
  OffsetSpec start;
  std::optional<OffsetSpec> end;
};
Result<OffsetRange> ParseOffsetRange(std::string_view text, int64_t now_ms = -1);

// Parses a point in time (TIME above) into milliseconds since the epoch: digits (seconds below
// 10^11, else milliseconds), digits with an s or ms suffix, a relative -N(ms|s|m|h|d) counted
// back from `now_ms` (the system clock when negative), or ISO-8601 with a date, optional time
// (T or space separated), optional fraction and optional zone (Z or ±HH[:MM]; none means UTC).
// InvalidArgument on anything else.
Result<int64_t> ParseTimestampMs(std::string_view text, int64_t now_ms = -1);

// Values of TIME written as plain digits below this are seconds, at or above it milliseconds.
inline constexpr int64_t kSecondsBelow = 100000000000;  // 10^11

// Formats ms since the epoch as ISO-8601 UTC with milliseconds ("2026-01-02T03:04:05.000Z").
std::string FormatTimestampMs(int64_t ms);

// Resolves `spec` for a partition whose readable offsets are [log_start, log_end).
// `for_timestamp(ts)` must return the first offset whose batch has a timestamp >= ts, or
// NotFound when there is none (then the log end is used, as Kafka does).
Result<int64_t> ResolveOffset(const OffsetSpec& spec, int64_t log_start, int64_t log_end,
                              const std::function<Result<int64_t>(int64_t)>& for_timestamp);

}  // namespace silt::client
