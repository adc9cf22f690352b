#include "base/clock.h"

#include <atomic>
#include <chrono>
#include <mutex>

namespace silt {
namespace {
std::mutex g_mu;
std::function<int64_t()> g_fake;
// Read on every call: the real clock costs no lock (NowMs is called per produced record).
std::atomic<bool> g_has_fake{false};
}  // namespace

TimestampMs NowMs() {
  if (g_has_fake.load(std::memory_order_acquire)) {
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
  g_has_fake.store(fn != nullptr, std::memory_order_release);
  g_fake = std::move(fn);
}

}  // namespace silt
