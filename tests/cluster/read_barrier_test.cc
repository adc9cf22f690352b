// ReadBarrier over a fake leader: one round trip serves every call that arrived before it was
// sent, a call waits for the image to reach the leader's index, and gives up as Busy.
#include "cluster/read_barrier.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

using namespace silt;
using namespace silt::cluster;
using namespace std::chrono_literals;

namespace {

// A leader whose answers the test releases one at a time; each answer is the commit index at
// the moment it is released.
struct FakeLeader {
  std::mutex mu;
  std::condition_variable cv;
  int asked = 0;
  int released = 0;
  uint64_t commit = 0;
  Status fail;  // answered instead of an index when set

  Result<RaftIndex> ReadIndex() {
    std::unique_lock<std::mutex> l(mu);
    const int me = ++asked;
    cv.notify_all();
    cv.wait(l, [&] { return released >= me; });
    if (!fail.ok()) return fail;
    return RaftIndex(commit);
  }
  void Release() {
    std::lock_guard<std::mutex> l(mu);
    ++released;
    cv.notify_all();
  }
  bool WaitAsked(int n) {
    std::unique_lock<std::mutex> l(mu);
    return cv.wait_for(l, 5s, [&] { return asked >= n; });
  }
};

}  // namespace

TEST_CASE(
    "one round trip to the leader serves every read barrier that arrived before it was sent") {
  FakeLeader leader;
  std::atomic<uint64_t> applied{100};
  ReadBarrier barrier(
      {[&](int) { return leader.ReadIndex(); }, [&] { return RaftIndex(applied); }});
  leader.commit = 50;
  auto first = std::async(std::launch::async, [&] { return barrier.Wait(5000); });
  REQUIRE(leader.WaitAsked(1));
  // These arrive while the first round trip is out: it may have read the leader's index before
  // they began, so the next one serves them, all of them.
  std::vector<std::future<Status>> later;
  for (int i = 0; i < 6; ++i)
    later.push_back(std::async(std::launch::async, [&] { return barrier.Wait(5000); }));
  std::this_thread::sleep_for(50ms);
  CHECK(barrier.round_trips() == 1);
  leader.commit = 60;
  leader.Release();
  CHECK(first.get().ok());
  REQUIRE(leader.WaitAsked(2));
  leader.commit = 70;
  leader.Release();
  for (auto& f : later) CHECK(f.get().ok());
  CHECK(barrier.round_trips() == 2);
}

TEST_CASE("a read barrier waits for the image to apply the leader's index, and gives up as Busy") {
  FakeLeader leader;
  leader.commit = 42;
  leader.Release();
  leader.Release();
  leader.Release();
  std::atomic<uint64_t> applied{40};
  ReadBarrier barrier(
      {[&](int) { return leader.ReadIndex(); }, [&] { return RaftIndex(applied); }});
  auto waiting = std::async(std::launch::async, [&] { return barrier.Wait(5000); });
  CHECK(waiting.wait_for(100ms) == std::future_status::timeout);
  applied = 42;
  barrier.Applied();
  CHECK(waiting.get().ok());

  // Behind for longer than the timeout: Busy, which InitProducerId answers retriably.
  leader.commit = 43;
  const auto start = std::chrono::steady_clock::now();
  Status late = barrier.Wait(150);
  CHECK(late.IsBusy());
  CHECK(std::chrono::steady_clock::now() - start < 2s);

  // A leader that cannot answer (an election under way): Busy as well.
  leader.fail = Status::Busy("no controller");
  CHECK(barrier.Wait(1000).IsBusy());
}
