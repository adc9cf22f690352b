// The request-handler pool: handlers that wait run there, never on an io thread; one
// connection's requests still run in order; a full queue stops reading, never drops.
#include "broker/handler_pool.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "broker_test_util.h"
#include "hand_cluster.h"

using namespace silt;
using namespace silt::broker;
using namespace silt::broker::testing;

namespace {

using Clock = std::chrono::steady_clock;

// Waits (bounded) until `pred` holds.
template <typename Pred>
bool WaitFor(Pred pred, int timeout_ms = 10000) {
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!pred()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// A gate that tasks wait at until it opens (at most 20 s, so a broken test cannot hang).
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  std::atomic<int> waiting{0};
  void Wait() {
    std::unique_lock<std::mutex> l(mu);
    ++waiting;
    cv.wait_for(l, std::chrono::seconds(20), [this] { return open; });
    --waiting;
  }
  void Open() {
    {
      std::lock_guard<std::mutex> l(mu);
      open = true;
    }
    cv.notify_all();
  }
};

// Producer ids handed out only once the gate opens: a cluster node's allocator behind its read
// barrier while the controller is stopped.
class GatedAllocator : public ProducerIdAllocator {
 public:
  explicit GatedAllocator(Gate* gate) : gate_(gate) {}
  Result<ProducerId> Allocate() override {
    gate_->Wait();
    return ProducerId(next_++);
  }

 private:
  Gate* gate_;
  std::atomic<int64_t> next_{1000};
};

class GatedCluster : public HandCluster {
 public:
  GatedCluster(BrokerServices* out, Gate* gate) : HandCluster(out), ids_(gate) {}
  ProducerIdAllocator* producer_ids() override { return &ids_; }

 private:
  GatedAllocator ids_;
};

}  // namespace

TEST_CASE("a connection's tasks run in order, one at a time, while other connections' run") {
  HandlerPool pool(4, 1000);
  auto a = pool.NewSerial();
  auto b = pool.NewSerial();
  std::mutex mu;
  std::vector<int> order_a;
  std::atomic<int> running_a{0};
  std::atomic<int> max_running_a{0};
  Gate gate;
  // b's task waits at the gate: a's tasks must not wait behind it.
  pool.Submit(b, [&] { gate.Wait(); });
  for (int i = 0; i < 50; ++i) {
    pool.Submit(a, [&, i] {
      int now = ++running_a;
      int seen = max_running_a.load();
      while (now > seen && !max_running_a.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      {
        std::lock_guard<std::mutex> l(mu);
        order_a.push_back(i);
      }
      --running_a;
    });
  }
  CHECK(WaitFor([&] {
    std::lock_guard<std::mutex> l(mu);
    return order_a.size() == 50;
  }));
  CHECK_FALSE(pool.Idle(*b));
  CHECK(pool.Idle(*a));
  gate.Open();
  CHECK(WaitFor([&] { return pool.Idle(*b); }));
  CHECK(max_running_a.load() == 1);
  for (int i = 0; i < 50; ++i) CHECK(order_a[i] == i);
}

TEST_CASE("a full handler queue reports no room, and wakes a waiter once a thread frees one") {
  HandlerPool pool(1, 2);
  Gate gate;
  auto s = pool.NewSerial();
  CHECK(pool.Submit(s, [&] { gate.Wait(); }));
  REQUIRE(WaitFor([&] { return gate.waiting.load() == 1; }));  // running: nothing waits
  auto t = pool.NewSerial();
  CHECK(pool.Submit(t, [] {}));        // 1 waiting
  CHECK_FALSE(pool.Submit(t, [] {}));  // 2 waiting: full, but queued all the same
  CHECK(pool.waiting() == 2);
  std::atomic<bool> woken{false};
  pool.WhenRoom([&] { woken = true; });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK_FALSE(woken.load());
  gate.Open();
  CHECK(WaitFor([&] { return woken.load(); }));
  CHECK(WaitFor([&] { return pool.waiting() == 0 && pool.busy() == 0; }));
  // With room, WhenRoom calls back at once.
  bool now = false;
  pool.WhenRoom([&] { now = true; });
  CHECK(now);
}

TEST_CASE("stopping the handler pool runs what was queued, and later tasks on the caller") {
  std::atomic<int> ran{0};
  {
    HandlerPool pool(2, 100);
    auto s = pool.NewSerial();
    for (int i = 0; i < 20; ++i) pool.Submit(s, [&] { ++ran; });
    pool.Stop();
    CHECK(ran.load() == 20);
    pool.Submit(s, [&] { ++ran; });
    CHECK(ran.load() == 21);
  }
}

TEST_CASE("Metadata and Produce are answered at once while InitProducerId requests wait") {
  // Each InitProducerId waits in the allocator, as a cluster node's does behind a read barrier
  // while its controller is stopped. They used to hold the io threads (2), so every other
  // request of the node waited with them.
  Gate gate;
  BrokerServices services;
  BrokerConfig config;
  config.listen_host = "127.0.0.1";
  config.listen_port = 0;
  std::string dir = TempDir();
  config.data_dir = dir;
  config.node_id = 1;
  SetLogLevel(LogLevel::kError);
  auto started = Server::Start(config, std::make_unique<GatedCluster>(&services, &gate));
  REQUIRE_MESSAGE(started.ok(), started.status().ToString());
  std::unique_ptr<Server> server = std::move(started).value();
  const int port = server->port();
  {
    Client admin(port);
    CreateTopic(admin, "quick");
  }
  constexpr int kWaiting = 6;
  std::vector<std::unique_ptr<Client>> idempotent;
  for (int i = 0; i < kWaiting; ++i) {
    idempotent.push_back(std::make_unique<Client>(port));
    idempotent.back()->Send(protocol::InitProducerIdRequest{}, 1, 100 + i);
  }
  // Every one of them reached the allocator: none holds up a network thread.
  CHECK(WaitFor([&] { return gate.waiting.load() == kWaiting; }));

  Client c(port);
  auto t0 = Clock::now();
  protocol::MetadataRequest md;
  md.topics.emplace();
  protocol::MetadataResponse m;
  c.Call(md, 8, &m);
  std::string batch = MakeBatch(3);
  protocol::ProduceResponse p;
  c.Call(MakeProduce("quick", 0, batch), 8, &p);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  MESSAGE("Metadata + Produce answered in " << ms << " ms with " << kWaiting
                                            << " InitProducerId waiting");
  CHECK(ms < 500);
  REQUIRE(p.responses.size() == 1);
  CHECK(p.responses[0].partition_responses[0].error_code == 0);
  CHECK(gate.waiting.load() == kWaiting);  // still waiting: the answers did not need them

  gate.Open();
  for (int i = 0; i < kWaiting; ++i) {
    protocol::InitProducerIdResponse ir;
    CHECK(idempotent[i]->Receive(&ir, 1) == 100 + i);
    CHECK(ir.error_code == 0);
    CHECK(ir.producer_id >= 1000);
  }
  server.reset();
  (void)RemoveAll(dir);
}

TEST_CASE("a connection's pipelined requests run in order across the pool and inline") {
  // An OffsetCommit (pooled) then an OffsetFetch (pooled) then a Metadata (inline) then an
  // OffsetFetch again: each sees what the ones before it did, and answers keep their order.
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "ordered");
  protocol::OffsetCommitRequest commit;
  commit.group_id = "g";
  commit.generation_id_or_member_epoch = -1;
  protocol::OffsetCommitRequest::Topic ct;
  ct.name = "ordered";
  protocol::OffsetCommitRequest::Partition cp;
  cp.partition_index = 0;
  cp.committed_offset = 42;
  ct.partitions.push_back(cp);
  commit.topics.push_back(ct);
  protocol::OffsetFetchRequest fetch;
  fetch.group_id = "g";
  protocol::OffsetFetchRequest::Topic ft;
  ft.name = "ordered";
  ft.partition_indexes = {0};
  fetch.topics = std::vector<protocol::OffsetFetchRequest::Topic>{ft};
  protocol::MetadataRequest md;
  md.topics.emplace();
  c.Send(commit, 2, 1);
  c.Send(fetch, 1, 2);
  c.Send(md, 8, 3);
  commit.topics[0].partitions[0].committed_offset = 43;
  c.Send(commit, 2, 4);
  c.Send(fetch, 1, 5);
  protocol::OffsetCommitResponse cr;
  protocol::OffsetFetchResponse fr;
  protocol::MetadataResponse mr;
  CHECK(c.Receive(&cr, 2) == 1);
  CHECK(cr.topics[0].partitions[0].error_code == 0);
  CHECK(c.Receive(&fr, 1) == 2);
  CHECK(fr.topics[0].partitions[0].committed_offset == 42);
  CHECK(c.Receive(&mr, 8) == 3);
  CHECK(c.Receive(&cr, 2) == 4);
  CHECK(c.Receive(&fr, 1) == 5);
  CHECK(fr.topics[0].partitions[0].committed_offset == 43);
}
