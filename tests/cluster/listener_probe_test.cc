#include "cluster/listener_probe.h"

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>
#include <vector>

using namespace silt::cluster;
using namespace std::chrono_literals;

namespace {

// A listening socket on 127.0.0.1 (port chosen by the kernel); closed with the object.
struct Listener {
  int fd = -1;
  int port = 0;
  Listener() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(fd, 8) == 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~Listener() {
    if (fd >= 0) ::close(fd);
  }
};

// Polls until every probe ended (or 2 s), collecting the refused ids.
std::vector<int32_t> Drain(ListenerProbes& p, const std::vector<int32_t>& ids) {
  std::vector<int32_t> refused;
  auto deadline = ListenerProbes::Clock::now() + 2s;
  for (;;) {
    p.Poll(ListenerProbes::Clock::now(), 1s,
           [&](int32_t id, ListenerProbes::Clock::time_point) { refused.push_back(id); });
    bool any = false;
    for (int32_t id : ids) any = any || p.InFlight(id);
    if (!any || ListenerProbes::Clock::now() > deadline) break;
    std::this_thread::sleep_for(5ms);
  }
  return refused;
}

}  // namespace

TEST_CASE("a probe reports a refused connection and not an accepted one") {
  Listener open;
  int closed_port;
  {
    Listener gone;  // a port that listened a moment ago and no longer does
    closed_port = gone.port;
  }
  ListenerProbes p;
  auto now = ListenerProbes::Clock::now();
  REQUIRE(p.Start(1, "127.0.0.1", open.port, now, 0ms));
  REQUIRE(p.Start(2, "127.0.0.1", closed_port, now, 0ms));
  CHECK_FALSE(p.Start(2, "127.0.0.1", closed_port, now, 0ms));  // one in flight per broker
  CHECK(Drain(p, {1, 2}) == std::vector<int32_t>{2});
  // The next probe of a broker waits out the gap after the last one ended.
  CHECK_FALSE(p.Start(2, "127.0.0.1", closed_port, ListenerProbes::Clock::now(), 10s));
  CHECK(p.Start(2, "127.0.0.1", closed_port, ListenerProbes::Clock::now() + 11s, 10s));
  p.CloseAll();
  CHECK_FALSE(p.InFlight(2));
}

TEST_CASE("host names and unspecified addresses are not probed") {
  ListenerProbes p;
  auto now = ListenerProbes::Clock::now();
  CHECK_FALSE(p.Start(1, "localhost", 9092, now, 0ms));  // no name lookups on the caller
  CHECK_FALSE(p.Start(2, "0.0.0.0", 9092, now, 0ms));     // would reach this host
  CHECK_FALSE(p.Start(3, "::", 9092, now, 0ms));
  CHECK_FALSE(p.Start(4, "127.0.0.1", 0, now, 0ms));
}
