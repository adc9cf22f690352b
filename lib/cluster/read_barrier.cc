#include "cluster/read_barrier.h"

#include <algorithm>
#include <chrono>

namespace silt::cluster {

Status ReadBarrier::Wait(int timeout_ms) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  auto remaining_ms = [&] {
    return static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
  };
  std::unique_lock<std::mutex> lock(mu_);
  // The first round sent from now on serves this call; any later one would too.
  const uint64_t want = sent_ + 1;
  while (done_ < want) {
    if (!in_flight_) {
      // Nobody is asking: ask, for every caller waiting for this round.
      in_flight_ = true;
      const uint64_t round = ++sent_;
      lock.unlock();
      Result<RaftIndex> r = options_.read_index(std::max(1, remaining_ms()));
      lock.lock();
      in_flight_ = false;
      done_ = round;
      last_status_ = r.status();
      if (r.ok()) last_index_ = *r;
      cv_.notify_all();
      continue;
    }
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && done_ < want)
      return Status::Busy("the controller did not answer a read barrier within " +
                          std::to_string(timeout_ms) + " ms");
  }
  if (!last_status_.ok()) return Status::Busy("read barrier: " + last_status_.ToString());
  const RaftIndex index = last_index_;
  while (options_.applied_index() < index) {
    if (remaining_ms() <= 0)
      return Status::Busy("this node's metadata has not reached the controller's index " +
                          std::to_string(index.value()) + " within " + std::to_string(timeout_ms) +
                          " ms");
    cv_.wait_for(lock, std::chrono::milliseconds(std::clamp(remaining_ms(), 1, 5)));
  }
  return Status::OK();
}

void ReadBarrier::Applied() {
  std::lock_guard<std::mutex> lock(mu_);
  cv_.notify_all();
}

uint64_t ReadBarrier::round_trips() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sent_;
}

}  // namespace silt::cluster
