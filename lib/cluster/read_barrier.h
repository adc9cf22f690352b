// ReadBarrier: Raft's read index for a node's metadata image. Wait() returns once the image has
// applied every entry the quorum had committed when Wait() was called, so that what the node
// reads from its image next is at least as new as anything acknowledged before (a producer-id
// reservation, say: BlockProducerIds checks the image's reserved id after a barrier).
//
// One round trip to the leader serves every waiter that arrived before it was sent: a call
// that finds a round trip in flight waits for the next one (the one in flight may have read
// the leader's index before this call began), and that next one is sent once the one in
// flight returns, for all who wait for it. The leader answers with the index of a barrier
// entry of its own term that it has committed (MetadataQuorum::ReadIndex: the commit proves
// it still led), which is at or above every entry committed before it was asked.
//
// Thread-safe. Wait() blocks the calling thread for at most its timeout.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>

#include "base/status.h"
#include "cluster/metadata_quorum.h"

namespace silt::cluster {

class ReadBarrier {
 public:
  struct Options {
    // The leader's read index, asked now, within `timeout_ms` (it blocks the calling thread).
    std::function<Result<RaftIndex>(int timeout_ms)> read_index;
    // What this node's image has applied.
    std::function<RaftIndex()> applied_index;
  };
  explicit ReadBarrier(Options options) : options_(std::move(options)) {}

  // Busy when the leader did not answer, or the image did not reach its index, within
  // `timeout_ms` (retriable: the caller answers COORDINATOR_LOAD_IN_PROGRESS or the like).
  Status Wait(int timeout_ms);
  // Wakes the waiters to look at the applied index again (call it when the image changes;
  // they also look every few milliseconds without it).
  void Applied();

  // Round trips to the leader so far (for tests of the batching).
  uint64_t round_trips() const;

 private:
  const Options options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t sent_ = 0;       // round trips sent so far; the n-th is round n
  uint64_t done_ = 0;       // the last round whose answer is in
  bool in_flight_ = false;  // round sent_ has not answered yet
  Status last_status_;      // round done_'s answer
  RaftIndex last_index_{0};
};

}  // namespace silt::cluster
