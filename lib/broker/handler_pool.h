// HandlerPool: the request-handler threads (Kafka's num.io.threads), where the handlers that may
// wait run, so that no io thread ever does.
//
// An io thread reads a request and either runs its handler inline (Produce, Fetch, Metadata and
// the other handlers that touch only memory and the page cache) or hands it here (admin
// requests that wait on the metadata quorum, InitProducerId's read barrier, the group
// coordinator, whose lock is held across its log appends, DescribeLogDirs' disk scans).
//
// Each connection hands its requests to its own Serial: they run one at a time, in the order
// they were read, as they would inline (a pipelined OffsetCommit then OffsetFetch sees its own
// commit). While a connection's Serial has work, its inline requests queue behind it too.
//
// The number of requests waiting for a thread is bounded by queued.max.requests: a connection
// whose request finds the pool full stops reading until there is room again (back-pressure on
// the socket: never a blocked io thread, never a dropped request).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace silt::broker {

class HandlerPool {
 public:
  // One connection's queue of tasks, run in order, one at a time.
  class Serial {
   private:
    friend class HandlerPool;
    std::deque<std::function<void()>> tasks;  // under the pool's mutex
    bool scheduled = false;  // in the pool's ready queue, or running
    // Tasks submitted and not yet finished: Idle reads it without the pool's mutex, so an
    // inline request (every Produce and Fetch) takes no lock shared across connections.
    std::atomic<int> unfinished{0};
  };

  // Starts `threads` (at least 1) threads; `max_queued` (at least 1) is the number of waiting
  // tasks past which Submit reports the pool as full.
  HandlerPool(int threads, int max_queued);
  ~HandlerPool();  // Stop()

  HandlerPool(const HandlerPool&) = delete;
  HandlerPool& operator=(const HandlerPool&) = delete;

  std::shared_ptr<Serial> NewSerial();
  // No task of `serial` is queued or running. Meaningful to the one thread that submits to it:
  // the answer can go from false to true behind its back, never the other way.
  bool Idle(const Serial& serial) const;

  // Queues `task` on `serial` (always: a request already read is never dropped); it runs on a
  // pool thread after the serial's earlier tasks. Returns false when max_queued tasks or more
  // are waiting after this one: the caller should stop reading and wait for WhenRoom. After
  // Stop, runs `task` on the caller's thread at once.
  bool Submit(const std::shared_ptr<Serial>& serial, std::function<void()> task);
  // Calls `wake` once, on a pool thread (or at once on the caller's when there is room now),
  // as soon as fewer than max_queued tasks wait. Stop calls every waiting `wake`.
  void WhenRoom(std::function<void()> wake);

  // Runs what is queued, then joins the threads. Idempotent.
  void Stop();

  // Tasks waiting for a thread; threads running a task.
  size_t waiting() const;
  int busy() const;
  int threads() const { return static_cast<int>(threads_.size()); }

 private:
  void Run();

  const size_t max_queued_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Serial>> ready_;  // serials with a task and none running
  size_t waiting_ = 0;                          // tasks queued over every serial
  std::vector<std::function<void()>> waiters_;
  int busy_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace silt::broker
