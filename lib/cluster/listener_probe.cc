// Listener probes (listener_probe.h).
#include "cluster/listener_probe.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace silt::cluster {

bool ListenerProbes::Start(int32_t id, const std::string& host, int32_t port, Clock::time_point now,
                           Clock::duration gap) {
  if (probes_.count(id) > 0) return false;
  if (auto it = ended_.find(id); it != ended_.end() && now - it->second < gap) return false;
  if (port <= 0 || port > 65535) return false;
  sockaddr_storage addr{};
  socklen_t len = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
  if (::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    len = sizeof *v4;
  } else if (::inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    len = sizeof *v6;
  } else {
    return false;  // a host name: no lookup here
  }
  // An unspecified address would reach this host, not the broker's.
  if ((addr.ss_family == AF_INET && v4->sin_addr.s_addr == htonl(INADDR_ANY)) ||
      (addr.ss_family == AF_INET6 && IN6_IS_ADDR_UNSPECIFIED(&v6->sin6_addr)))
    return false;
  int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  ended_.erase(id);
  int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), len);
  if (rc == 0 || errno == EINPROGRESS || errno == ECONNREFUSED) {
    // On loopback the refusal may come back from connect itself; SO_ERROR would not hold it,
    // so it is kept as the probe's fd (-ECONNREFUSED) for Poll to report.
    if (rc != 0 && errno == ECONNREFUSED) {
      ::close(fd);
      fd = -ECONNREFUSED;
    }
    probes_[id] = Probe{fd, now};
    return true;
  }
  ::close(fd);
  return false;
}

void ListenerProbes::Poll(Clock::time_point now, Clock::duration timeout,
                          const std::function<void(int32_t, Clock::time_point)>& refused) {
  for (auto it = probes_.begin(); it != probes_.end();) {
    Probe& p = it->second;
    bool done = false;
    bool was_refused = false;
    if (p.fd < 0) {
      done = true;
      was_refused = p.fd == -ECONNREFUSED;
    } else {
      pollfd pfd{p.fd, POLLOUT, 0};
      if (::poll(&pfd, 1, 0) > 0) {
        int err = 0;
        socklen_t len = sizeof err;
        if (::getsockopt(p.fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
        was_refused = err == ECONNREFUSED;
        done = true;
      } else if (now - p.started >= timeout) {
        done = true;  // nothing came back: no evidence either way
      }
    }
    if (!done) {
      ++it;
      continue;
    }
    const int32_t id = it->first;
    const Clock::time_point started = p.started;
    if (p.fd >= 0) ::close(p.fd);
    it = probes_.erase(it);
    ended_[id] = now;
    if (was_refused) refused(id, started);
  }
}

void ListenerProbes::CloseAll() {
  for (auto& [id, p] : probes_)
    if (p.fd >= 0) ::close(p.fd);
  probes_.clear();
}

}  // namespace silt::cluster
