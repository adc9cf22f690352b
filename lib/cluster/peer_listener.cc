// A broker-only node's peer listener (peer_listener.h).
#include "cluster/peer_listener.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

namespace silt::cluster {

struct PeerListener::Impl {
  int fd = -1;
  int wake[2] = {-1, -1};
  Handler handler;
  int handshake_timeout_ms = 5000;
  std::thread thread;
  std::atomic<bool> stopped{false};
  std::atomic<int> handshakes{0};  // in flight on threads of their own

  // Reads the preamble of `c` (within the handshake timeout) and hands it on, or closes it.
  void Handshake(int c) {
    char buf[kPreambleSize];
    size_t got = 0;
    while (got < kPreambleSize) {
      pollfd p{c, POLLIN, 0};
      if (::poll(&p, 1, handshake_timeout_ms) <= 0) break;
      ssize_t n = ::read(c, buf + got, kPreambleSize - got);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    bool handed = false;
    if (got == kPreambleSize && !stopped) {
      auto pre = DecodePreamble(std::string_view(buf, kPreambleSize));
      if (pre.ok() && pre->kind != PeerStream::kRaft && pre->sender.value() > 0) {
        handler(pre->sender, pre->kind, c);
        handed = true;
      }
    }
    if (!handed) ::close(c);
    --handshakes;
  }

  void Run() {
    for (;;) {
      pollfd p[2] = {{fd, POLLIN, 0}, {wake[0], POLLIN, 0}};
      if (::poll(p, 2, -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (p[1].revents || stopped) return;
      int c = ::accept(fd, nullptr, nullptr);
      if (c < 0) continue;
      int one = 1;
      ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      ++handshakes;
      std::thread([this, c] { Handshake(c); }).detach();
    }
  }
};

Result<std::unique_ptr<PeerListener>> PeerListener::Start(const Voter& address, Handler handler,
                                                          int handshake_timeout_ms) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(address.port);
  if (::getaddrinfo(address.host.c_str(), port.c_str(), &hints, &res) != 0 || res == nullptr) {
    return Status::IOError("cannot resolve the peer address " + address.address());
  }
  int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd >= 0) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (fd < 0 || ::bind(fd, res->ai_addr, res->ai_addrlen) != 0 || ::listen(fd, 64) != 0) {
    std::string why = std::strerror(errno);
    ::freeaddrinfo(res);
    if (fd >= 0) ::close(fd);
    return Status::IOError("cannot listen on the peer address " + address.address() + ": " + why);
  }
  ::freeaddrinfo(res);
  auto impl = std::make_unique<Impl>();
  impl->fd = fd;
  impl->handler = std::move(handler);
  impl->handshake_timeout_ms = handshake_timeout_ms;
  if (::pipe2(impl->wake, O_CLOEXEC) != 0) {
    ::close(fd);
    return Status::IOError("pipe: " + std::string(std::strerror(errno)));
  }
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->Run(); });
  return std::unique_ptr<PeerListener>(new PeerListener(std::move(impl)));
}

PeerListener::PeerListener(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PeerListener::~PeerListener() { Stop(); }

void PeerListener::Stop() {
  if (impl_->stopped.exchange(true)) return;
  char b = 1;
  (void)!::write(impl_->wake[1], &b, 1);
  if (impl_->thread.joinable()) impl_->thread.join();
  // Handshakes end within their timeout; none may outlive this object.
  while (impl_->handshakes.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ::close(impl_->fd);
  ::close(impl_->wake[0]);
  ::close(impl_->wake[1]);
}

}  // namespace silt::cluster
