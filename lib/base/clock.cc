#include "base/clock.h"

#include <chrono>
#include <mutex>

namespace silt {
namespace {
std::mutex g_mu;
std::function<int64_t()> g_fake;
}  // namespace

TimestampMs NowMs() {
  {
    std::lock_guard<std::mutex> l(g_mu);
    if (g_fake) return TimestampMs(g_fake());
  }
  using namespace std::chrono;
  return TimestampMs(duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count());
}

int64_t MonotonicMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

void SetFakeClockForTesting(std::function<int64_t()> fn) {
  std::lock_guard<std::mutex> l(g_mu);
  g_fake = std::move(fn);
}

}  // namespace silt
