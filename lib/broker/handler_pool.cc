// HandlerPool: a fixed set of threads over per-connection serial queues, one bound in all.
#include "broker/handler_pool.h"

#include <algorithm>

#include "base/metrics.h"

namespace silt::broker {
namespace {

metrics::Gauge& WaitingGauge() {
  static auto& g = metrics::Default().GetGauge(
      "silt_request_handler_queue_size", "Requests waiting for a request-handler thread");
  return g;
}

metrics::Gauge& BusyGauge() {
  static auto& g = metrics::Default().GetGauge(
      "silt_request_handler_busy_threads", "Request-handler threads running a handler");
  return g;
}

metrics::Counter& FullCounter() {
  static auto& c = metrics::Default().GetCounter(
      "silt_request_handler_queue_full_total",
      "Times a connection stopped reading because queued.max.requests requests were waiting "
      "for a request-handler thread");
  return c;
}

}  // namespace

HandlerPool::HandlerPool(int threads, int max_queued)
    : max_queued_(static_cast<size_t>(std::max(1, max_queued))) {
  const int n = std::max(1, threads);
  threads_.reserve(n);
  for (int i = 0; i < n; ++i) threads_.emplace_back([this] { Run(); });
}

HandlerPool::~HandlerPool() { Stop(); }

std::shared_ptr<HandlerPool::Serial> HandlerPool::NewSerial() {
  return std::make_shared<Serial>();
}

bool HandlerPool::Idle(const Serial& serial) const {
  return serial.unfinished.load(std::memory_order_acquire) == 0;
}

bool HandlerPool::Submit(const std::shared_ptr<Serial>& serial, std::function<void()> task) {
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_) {
    // The threads may be gone already: run it here rather than lose it.
    lock.unlock();
    task();
    return true;
  }
  serial->unfinished.fetch_add(1, std::memory_order_relaxed);
  serial->tasks.push_back(std::move(task));
  ++waiting_;
  WaitingGauge().Set(static_cast<int64_t>(waiting_));
  if (!serial->scheduled) {
    serial->scheduled = true;
    ready_.push_back(serial);
    lock.unlock();
    cv_.notify_one();
    lock.lock();
  }
  const bool room = waiting_ < max_queued_;
  lock.unlock();
  if (!room) FullCounter().Inc();
  return room;
}

void HandlerPool::WhenRoom(std::function<void()> wake) {
  std::unique_lock<std::mutex> lock(mu_);
  if (waiting_ < max_queued_ || stopping_) {
    lock.unlock();
    wake();
    return;
  }
  waiters_.push_back(std::move(wake));
}

void HandlerPool::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !ready_.empty(); });
    if (ready_.empty()) return;  // stopping, and nothing left to run
    std::shared_ptr<Serial> serial = std::move(ready_.front());
    ready_.pop_front();
    std::function<void()> task = std::move(serial->tasks.front());
    serial->tasks.pop_front();
    --waiting_;
    WaitingGauge().Set(static_cast<int64_t>(waiting_));
    std::vector<std::function<void()>> wake;
    if (waiting_ < max_queued_) wake.swap(waiters_);
    ++busy_;
    BusyGauge().Set(busy_);
    lock.unlock();
    for (auto& w : wake) w();
    task();
    task = nullptr;  // release what the task held before taking the lock again
    serial->unfinished.fetch_sub(1, std::memory_order_release);
    lock.lock();
    --busy_;
    BusyGauge().Set(busy_);
    // The serial's next task waits its turn behind the other connections' (fairness).
    if (serial->tasks.empty()) {
      serial->scheduled = false;
    } else {
      ready_.push_back(std::move(serial));
      cv_.notify_one();
    }
  }
}

void HandlerPool::Stop() {
  std::vector<std::function<void()>> wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    wake.swap(waiters_);
  }
  cv_.notify_all();
  for (auto& w : wake) w();
  for (auto& t : threads_) t.join();
}

size_t HandlerPool::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiting_;
}

int HandlerPool::busy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return busy_;
}

}  // namespace silt::broker
