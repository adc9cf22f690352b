// Delayed operations: requests that wait until a partition's log end or high watermark passes
// what they need, or until their timeout (Kafka's "purgatory"). A long-polling Fetch waits for
// min_bytes of committed records; a Produce with acks=all waits for its batch to be committed.
//
// A DelayedOperation runs on its connection's executor (broker/io.h), so TryComplete never runs
// twice at once. It watches a set of partitions (broker/partition.h) and is re-evaluated at
// each move of the watched offset, at its timeout, and when the broker shuts down.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/metrics.h"
#include "broker/partition.h"
#include "broker/request.h"

namespace silt::broker {

class DelayedOperation : public PartitionWatcher,
                         public std::enable_shared_from_this<DelayedOperation> {
 public:
  // `stopping` (the broker's) makes every evaluation final once set.
  DelayedOperation(std::shared_ptr<ConnExecutor> executor, const std::atomic<bool>* stopping);
  ~DelayedOperation() override;

  // Evaluates once on the executor (at once when called on it, else posted there): done when
  // TryComplete says so, or at once when timeout_ms <= 0. Otherwise watches `which` on each
  // of `watched` (null entries are skipped) and arms the timeout.
  void Start(std::vector<std::shared_ptr<Partition>> watched, WatchOffset which,
             int64_t timeout_ms);

  void OnPartitionChanged() final;

  // Counts this operation in `g` (+1) from the moment Start leaves it waiting until it
  // completes or is destroyed (-1). Call before Start.
  void CountWhileWaiting(metrics::Gauge* g) { waiting_gauge_ = g; }

 protected:
  // Builds the answer and sends it, returning true, when the operation can complete (or must:
  // `final` is set at the timeout and at shutdown). Returns false to keep waiting.
  virtual bool TryComplete(bool final) = 0;
  // Called once, after completion, on the executor (to drop held state).
  virtual void OnCompleted() {}

 private:
  void Evaluate(bool final);

  struct Timer;
  std::shared_ptr<ConnExecutor> executor_;
  const std::atomic<bool>* stopping_;
  std::unique_ptr<Timer> timer_;
  std::vector<std::shared_ptr<Partition>> watched_;
  WatchOffset which_ = WatchOffset::kHighWatermark;
  bool done_ = false;
  metrics::Gauge* waiting_gauge_ = nullptr;
  bool counted_ = false;  // waiting_gauge_ holds our +1
  void Uncount();
  std::atomic<bool> poke_pending_{false};
};

}  // namespace silt::broker
