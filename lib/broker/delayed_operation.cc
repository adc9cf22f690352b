// Delayed operations on a connection's strand, woken by partition watchers and a timer.
#include "broker/delayed_operation.h"

#include <chrono>

#include "broker/io.h"

namespace silt::broker {

struct DelayedOperation::Timer {
  explicit Timer(Strand& s) : timer(s) {}
  asio::steady_timer timer;
};

DelayedOperation::DelayedOperation(std::shared_ptr<ConnExecutor> executor,
                                   const std::atomic<bool>* stopping)
    : executor_(std::move(executor)),
      stopping_(stopping),
      timer_(std::make_unique<Timer>(executor_->strand)) {}

DelayedOperation::~DelayedOperation() { Uncount(); }

void DelayedOperation::Uncount() {
  if (!counted_) return;
  counted_ = false;
  waiting_gauge_->Add(-1);
}

void DelayedOperation::Start(std::vector<std::shared_ptr<Partition>> watched, WatchOffset which,
                             int64_t timeout_ms) {
  if (!executor_->strand.running_in_this_thread()) {
    // Started by a handler on the request-handler pool: evaluations belong on the strand.
    auto self = shared_from_this();
    asio::post(executor_->strand, [self, watched = std::move(watched), which, timeout_ms]() mutable {
      self->Start(std::move(watched), which, timeout_ms);
    });
    return;
  }
  watched_ = std::move(watched);
  which_ = which;
  Evaluate(timeout_ms <= 0 || (stopping_ && stopping_->load()));
  if (done_) return;
  if (waiting_gauge_) {
    waiting_gauge_->Add(1);
    counted_ = true;
  }
  auto self = shared_from_this();
  timer_->timer.expires_after(std::chrono::milliseconds(timeout_ms));
  timer_->timer.async_wait([self](const asio::error_code& ec) {
    if (ec == asio::error::operation_aborted) return;
    self->Evaluate(true);
  });
}

void DelayedOperation::OnPartitionChanged() {
  // Many appends may land before the strand runs us: one evaluation covers them all.
  if (poke_pending_.exchange(true)) return;
  auto self = shared_from_this();
  asio::post(executor_->strand, [self] {
    self->poke_pending_ = false;
    self->Evaluate(self->stopping_ && self->stopping_->load());
  });
}

void DelayedOperation::Evaluate(bool final) {
  if (done_) return;
  if (!final) {
    // Register before reading, so that a move racing with this evaluation still pokes us.
    std::weak_ptr<PartitionWatcher> me = shared_from_this();
    for (auto& p : watched_) {
      if (p) p->Watch(which_, me);
    }
  }
  if (!TryComplete(final)) return;
  done_ = true;
  Uncount();
  timer_->timer.cancel();
  watched_.clear();
  OnCompleted();
}

}  // namespace silt::broker
