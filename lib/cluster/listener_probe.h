// ListenerProbes: non-blocking TCP connects to brokers' client listeners, to tell a broker whose
// process is gone (the connection is refused: nothing listens on its port) from one that is slow
// or cut off (the connection is accepted, or nothing comes back). The controller uses a refusal
// to fence a broker whose heartbeats stopped without waiting out its whole session.
//
// Never blocks: Start only begins a connect, Poll only looks at the ones in flight (poll with a
// zero timeout). Only numeric addresses are probed (no name lookups on the caller's thread).
// Not thread-safe: one owner thread (the controller's member loop).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

namespace silt::cluster {

class ListenerProbes {
 public:
  using Clock = std::chrono::steady_clock;

  ListenerProbes() = default;
  ~ListenerProbes() { CloseAll(); }
  ListenerProbes(const ListenerProbes&) = delete;
  ListenerProbes& operator=(const ListenerProbes&) = delete;

  // Begins a probe of `host`:`port` for broker `id` unless one is in flight or the last one for
  // it ended less than `gap` ago. False when no probe was started.
  bool Start(int32_t id, const std::string& host, int32_t port, Clock::time_point now,
             Clock::duration gap);
  // Ends the probes that have an answer or are older than `timeout`: `refused(id, started)` for
  // each connection refused. The others (accepted, timed out, other errors) end silently.
  void Poll(Clock::time_point now, Clock::duration timeout,
            const std::function<void(int32_t id, Clock::time_point started)>& refused);
  bool InFlight(int32_t id) const { return probes_.count(id) > 0; }
  void CloseAll();

 private:
  struct Probe {
    int fd;  // -1 once refused
    Clock::time_point started;
    bool refused;  // connect() itself said ECONNREFUSED
  };
  std::map<int32_t, Probe> probes_;
  std::map<int32_t, Clock::time_point> ended_;  // when each broker's last probe ended
};

}  // namespace silt::cluster
