// Offset expressions, as kcat spells them: where a consumer starts in each partition.
//
//   beginning | earliest     the log start offset
//   end | latest             the log end offset (only records produced from now on)
//   N                        absolute offset N (clamped into [log start, log end])
//   -N                       N records before the log end, per partition (not below log start)
//   @TIME                    the first record whose timestamp is >= TIME, where TIME is
//                            milliseconds since the Unix epoch or ISO-8601
//                            (2026-01-02T03:04:05Z, 2026-01-02T03:04:05.123+01:00, 2026-01-02)
//
// Parsing is pure; Resolve() turns an expression into an offset given one partition's bounds.
#pragma once

#include <cstdint>
#include <functional>
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

// Parses an offset expression; InvalidArgument naming the text and the accepted forms.
Result<OffsetSpec> ParseOffsetSpec(std::string_view text);

// Parses a point in time: milliseconds since the epoch (digits only) or ISO-8601 with a date,
// optional time (T or space separated), optional fraction and optional zone (Z or ±HH[:MM];
// none means UTC). InvalidArgument on anything else.
Result<int64_t> ParseTimestampMs(std::string_view text);

// Formats ms since the epoch as ISO-8601 UTC with milliseconds ("2026-01-02T03:04:05.000Z").
std::string FormatTimestampMs(int64_t ms);

// Resolves `spec` for a partition whose readable offsets are [log_start, log_end).
// `for_timestamp(ts)` must return the first offset whose batch has a timestamp >= ts, or
// NotFound when there is none (then the log end is used, as Kafka does).
Result<int64_t> ResolveOffset(const OffsetSpec& spec, int64_t log_start, int64_t log_end,
                              const std::function<Result<int64_t>(int64_t)>& for_timestamp);

}  // namespace silt::client
