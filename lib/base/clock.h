// Clocks: wall time in Kafka's milliseconds, and a monotonic clock for timeouts. Tests may
// install a fake wall clock so that time-based retention and segment rolling are deterministic.
#pragma once

#include <cstdint>
#include <functional>

#include "base/ids.h"

namespace silt {

// Milliseconds since the Unix epoch (or the fake clock's value when one is installed).
TimestampMs NowMs();
// Milliseconds on a clock that never goes backwards; for deadlines only.
int64_t MonotonicMs();

// Installs `fn` as the wall clock (nullptr restores the real one). For tests.
void SetFakeClockForTesting(std::function<int64_t()> fn);

}  // namespace silt
