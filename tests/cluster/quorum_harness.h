// Test scaffolding for RaftQuorum: a recording state machine, an executor thread, free loopback
// ports, and a three-node cluster in one process. Every wait is bounded.
#pragma once

#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/coding.h"
#include "base/random.h"
#include "cluster/raft_quorum.h"

namespace silt::cluster::testing {

// Appends each command to a list; the result of an apply is "#<count>:<command>".
class RecordingStateMachine : public StateMachine {
 public:
  std::string Apply(std::string_view command) override {
    std::lock_guard<std::mutex> lock(mu_);
    applied_.emplace_back(command);
    return "#" + std::to_string(applied_.size()) + ":" + std::string(command);
  }
  std::string Snapshot() override {
    std::lock_guard<std::mutex> lock(mu_);
    std::string out;
    ByteWriter w(&out);
    w.I32(static_cast<int32_t>(applied_.size()));
    for (const auto& c : applied_) {
      w.I32(static_cast<int32_t>(c.size()));
      w.Raw(c);
    }
    ++snapshots_;
    return out;
  }
  Status Restore(std::string_view bytes) override {
    ByteReader r(bytes);
    int32_t n = 0;
    if (!r.I32(&n)) return Status::Corruption("test snapshot");
    std::vector<std::string> list;
    for (int32_t i = 0; i < n; ++i) {
      int32_t len = 0;
      std::string_view c;
      if (!r.I32(&len) || !r.Bytes(static_cast<size_t>(len), &c)) {
        return Status::Corruption("test snapshot");
      }
      list.emplace_back(c);
    }
    std::lock_guard<std::mutex> lock(mu_);
    applied_ = std::move(list);
    ++restores_;
    return Status::OK();
  }
  std::vector<std::string> applied() const {
    std::lock_guard<std::mutex> lock(mu_);
    return applied_;
  }
  int restores() const {
    std::lock_guard<std::mutex> lock(mu_);
    return restores_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> applied_;
  int snapshots_ = 0;
  int restores_ = 0;
};

// One worker thread running posted functions in order (what asio::post would do).
class ExecutorThread {
 public:
  ExecutorThread() : worker_([this] { Loop(); }) {}
  ~ExecutorThread() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }
  Executor executor() {
    return [this](std::function<void()> f) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        q_.push_back(std::move(f));
      }
      cv_.notify_all();
    };
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [this] { return done_ || !q_.empty(); });
      if (q_.empty()) return;
      auto f = std::move(q_.front());
      q_.pop_front();
      lock.unlock();
      f();
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> q_;
  bool done_ = false;
  std::thread worker_;
};

// A loopback port nothing listens on right now.
inline uint16_t FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

inline bool WaitUntil(std::function<bool()> cond, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return cond();
}

inline constexpr auto kElectionLimit = std::chrono::milliseconds(15000);

class TestCluster {
 public:
  explicit TestCluster(int n = 3, unsigned snapshot_threshold = 1024,
                       unsigned snapshot_trailing = 128)
      : threshold_(snapshot_threshold), trailing_(snapshot_trailing) {
    char tmpl[] = "/tmp/silt-raft-test-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    for (int i = 1; i <= n; ++i) voters_.push_back(Voter{NodeId(i), "127.0.0.1", FreePort()});
    nodes_.resize(n);
    sms_.resize(n);
    for (int i = 0; i < n; ++i) REQUIRE(StartNode(i).ok());
  }
  ~TestCluster() {
    for (auto& q : nodes_) q.reset();
    std::error_code ec;
    if (!std::getenv("SILT_KEEP_TEST_DIRS")) std::filesystem::remove_all(dir_, ec);
  }

  // (Re)starts node index i (id i+1) with a fresh state machine, as a restarted process would.
  Status StartNode(int i, PeerConnectionHandler on_peer = nullptr) {
    sms_[i] = std::make_unique<RecordingStateMachine>();
    RaftQuorumOptions o;
    o.node_id = voters_[i].id;
    o.voters = voters_;
    o.raft_dir = dir_ + "/node" + std::to_string(i + 1);
    o.state_machine = sms_[i].get();
    o.executor = exec_.executor();
    o.election_timeout_ms = 500;
    o.heartbeat_timeout_ms = 50;
    o.connect_retry_delay_ms = 100;
    o.snapshot_threshold = threshold_;
    o.snapshot_trailing = trailing_;
    o.handshake_timeout_ms = 1000;
    o.install_snapshot_timeout_ms = 1000;
    o.on_peer_connection = std::move(on_peer);
    auto q = RaftQuorum::Start(std::move(o));
    if (!q.ok()) return q.status();
    nodes_[i] = std::move(q).value();
    return Status::OK();
  }
  void StopNode(int i) { nodes_[i].reset(); }
  // Gives every voter a new port in the static list (all nodes must be stopped): the Raft
  // configuration stored in their directories keeps the old addresses.
  void MovePorts() {
    for (auto& v : voters_) v.port = FreePort();
  }

  RaftQuorum* node(int i) { return nodes_[i].get(); }
  RecordingStateMachine& sm(int i) { return *sms_[i]; }
  const Voter& voter(int i) const { return voters_[i]; }
  int size() const { return static_cast<int>(nodes_.size()); }

  // The index of the one running node that is a ready leader, or -1 after the limit.
  int WaitForReadyLeader(std::chrono::milliseconds limit = kElectionLimit) {
    int found = -1;
    WaitUntil(
        [&] {
          int n = 0;
          for (int i = 0; i < size(); ++i) {
            if (nodes_[i] && nodes_[i]->IsReadyLeader()) {
              found = i;
              ++n;
            }
          }
          return n == 1;
        },
        limit);
    return found;
  }

  // Proposes on node i and waits (bounded) for the outcome.
  ProposeResult ProposeAndWait(int i, RequestId id, std::string command) {
    auto p = std::make_shared<std::promise<ProposeResult>>();
    auto f = p->get_future();
    nodes_[i]->Propose(id, std::move(command),
                       [p](ProposeResult r) { p->set_value(std::move(r)); });
    if (f.wait_for(std::chrono::seconds(15)) != std::future_status::ready) {
      ProposeResult r;
      r.outcome = ProposeOutcome::kShutdown;
      r.message = "test: no completion within 15 s";
      return r;
    }
    return f.get();
  }

  // Proposes through whichever node is the ready leader, retrying (same request id) on
  // kNotLeader and kOutcomeUnknown, for up to `limit`.
  ProposeResult ProposeAnywhere(RequestId id, std::string command,
                                std::chrono::milliseconds limit = kElectionLimit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    ProposeResult last;
    while (std::chrono::steady_clock::now() < deadline) {
      int l = WaitForReadyLeader(std::chrono::milliseconds(2000));
      if (l >= 0) {
        last = ProposeAndWait(l, id, command);
        if (last.outcome == ProposeOutcome::kApplied) return last;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return last;
  }

 private:
  std::string dir_;
  unsigned threshold_, trailing_;
  std::vector<Voter> voters_;
  ExecutorThread exec_;  // outlives the nodes (declared before them)
  std::vector<std::unique_ptr<RecordingStateMachine>> sms_;
  std::vector<std::unique_ptr<RaftQuorum>> nodes_;
};

inline RequestId NewRequestId() { return RandomUuid(); }

}  // namespace silt::cluster::testing
