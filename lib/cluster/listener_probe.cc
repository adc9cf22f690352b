// Listener probes (listener_probe.h).
#include "cluster/listener_probe.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>

namespace silt::cluster {

bool ListenerProbes::Start(int32_t id, const std::string& host, int32_t port, Clock::time_point now,
                           Clock::duration gap) {
  if (probes_.count(id) > 0) return false;
  if (auto it = ended_.find(id); it != ended_.end() && now - it->second < gap) return false;
  if (port <= 0 || port > 65535) return false;
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;  // a host name is not looked up here
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0) return false;
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owned(res, &::freeaddrinfo);
  // An unspecified address would reach this host, not the broker's.
  const auto* v4 = reinterpret_cast<const sockaddr_in*>(res->ai_addr);
  const auto* v6 = reinterpret_cast<const sockaddr_in6*>(res->ai_addr);
  if ((res->ai_family == AF_INET && v4->sin_addr.s_addr == htonl(INADDR_ANY)) ||
      (res->ai_family == AF_INET6 && IN6_IS_ADDR_UNSPECIFIED(&v6->sin6_addr)))
    return false;
  int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  ended_.erase(id);
  if (::connect(fd, res->ai_addr, res->ai_addrlen) == 0 || errno == EINPROGRESS) {
    probes_[id] = Probe{fd, now, false};
    return true;
  }
  const bool refused = errno == ECONNREFUSED;  // on loopback connect itself may say so
  ::close(fd);
  if (!refused) return false;
  probes_[id] = Probe{-1, now, true};
  return true;
}

void ListenerProbes::Poll(Clock::time_point now, Clock::duration timeout,
                          const std::function<void(int32_t, Clock::time_point)>& refused) {
  for (auto it = probes_.begin(); it != probes_.end();) {
    Probe& p = it->second;
    bool done = p.refused;
    bool was_refused = p.refused;
    if (!done) {
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
