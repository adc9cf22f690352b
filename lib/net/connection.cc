// Client connection: sockets, framing, ApiVersions negotiation.
#include "net/connection.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/clock.h"
#include "protocol/errors.h"
#include "protocol/messages.h"

namespace silt::net {

namespace {

using protocol::ApiKey;

std::string ApiDisplayName(ApiKey key) { return protocol::ApiName(static_cast<int16_t>(key)); }

int64_t Deadline(int timeout_ms) { return MonotonicMs() + timeout_ms; }

// Waits until `fd` is ready for `events` or the deadline passes.
Status WaitFor(int fd, short events, int64_t deadline, const std::string& what) {
  for (;;) {
    int64_t left = deadline - MonotonicMs();
    if (left <= 0) return Status::IOError("timed out " + what);
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(what, errno);
    }
    if (n > 0) return Status::OK();
  }
}

}  // namespace

const std::pair<int16_t, int16_t>* ClientVersionRange(ApiKey key) {
  static thread_local std::pair<int16_t, int16_t> range;
  const protocol::ApiInfo* info = protocol::FindApi(key);
  if (info == nullptr) return nullptr;
  // The non-flexible versions, and Metadata's flexible ones (v10+ carry topic ids) and those of
  // DescribeQuorum, ElectLeaders and the partition reassignments (flexible from v0 or v2): the
  // client has been checked against Kafka's own bytes only for those.
  const bool all = key == ApiKey::kMetadata || key == ApiKey::kDescribeQuorum ||
                   key == ApiKey::kElectLeaders ||
                   key == ApiKey::kAlterPartitionReassignments ||
                   key == ApiKey::kListPartitionReassignments;
  int16_t max = all ? info->max_version
                    : std::min<int16_t>(info->max_version, info->first_flexible_version - 1);
  range = {info->min_version, max};
  return &range;
}

Result<std::vector<HostPort>> ParseBootstrap(std::string_view list) {
  std::vector<HostPort> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    std::string_view item =
        list.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    start = comma == std::string_view::npos ? list.size() + 1 : comma + 1;
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.empty()) continue;
    HostPort hp;
    std::string_view port_text;
    if (item.front() == '[') {
      size_t close = item.find(']');
      if (close == std::string_view::npos)
        return Status::InvalidArgument("bad broker address '" + std::string(item) + "'");
      hp.host = std::string(item.substr(1, close - 1));
      if (close + 1 < item.size()) {
        if (item[close + 1] != ':')
          return Status::InvalidArgument("bad broker address '" + std::string(item) + "'");
        port_text = item.substr(close + 2);
      }
    } else {
      size_t colon = item.rfind(':');
      if (colon == std::string_view::npos) {
        hp.host = std::string(item);
      } else {
        hp.host = std::string(item.substr(0, colon));
        port_text = item.substr(colon + 1);
      }
    }
    hp.port = 9092;
    if (!port_text.empty() || item.back() == ':') {
      int64_t port = 0;
      if (port_text.empty() || port_text.size() > 5) port = -1;
      for (char c : port_text) {
        if (c < '0' || c > '9') {
          port = -1;
          break;
        }
        port = port * 10 + (c - '0');
      }
      if (port <= 0 || port > 65535)
        return Status::InvalidArgument("bad port in broker address '" + std::string(item) +
                                       "': expected HOST:PORT");
      hp.port = static_cast<int32_t>(port);
    }
    if (hp.host.empty())
      return Status::InvalidArgument("bad broker address '" + std::string(item) +
                                     "': expected HOST:PORT");
    out.push_back(std::move(hp));
  }
  if (out.empty()) return Status::InvalidArgument("no broker address given: expected HOST:PORT");
  return out;
}

Connection::Connection(HostPort hp, std::string client_id, int fd, int timeout_ms)
    : hp_(std::move(hp)), client_id_(std::move(client_id)), fd_(fd), timeout_ms_(timeout_ms) {}

Connection::~Connection() { Close(); }

void Connection::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  pending_.clear();
}

Status Connection::Broken(const std::string& what) {
  Close();
  return Status::IOError(what + " (broker " + hp_.ToString() + ")");
}

Result<std::unique_ptr<Connection>> Connection::Open(const HostPort& hp,
                                                     const std::string& client_id, int timeout_ms,
                                                     std::string_view preamble) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string port = std::to_string(hp.port);
  int rc = ::getaddrinfo(hp.host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0)
    return Status::IOError("cannot resolve " + hp.host + ": " + ::gai_strerror(rc));
  const int64_t deadline = Deadline(timeout_ms);
  Status last = Status::IOError("no address for " + hp.ToString());
  int fd = -1;
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0) {
      last = Status::FromErrno("socket", errno);
      continue;
    }
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS) {
      last = Status::FromErrno("cannot connect to " + hp.ToString(), errno);
      ::close(fd);
      fd = -1;
      continue;
    }
    Status st = WaitFor(fd, POLLOUT, deadline, "connecting to " + hp.ToString());
    int err = 0;
    socklen_t len = sizeof(err);
    if (st.ok()) ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (!st.ok() || err != 0) {
      last = st.ok() ? Status::FromErrno("cannot connect to " + hp.ToString(), err) : st;
      ::close(fd);
      fd = -1;
      continue;
    }
    break;
  }
  ::freeaddrinfo(res);
  if (fd < 0) return last;
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  std::unique_ptr<Connection> c(new Connection(hp, client_id, fd, timeout_ms));
  if (!preamble.empty()) SILT_TRY(c->WriteRaw(preamble));
  SILT_TRY(c->Handshake());
  return c;
}

Status Connection::Handshake() {
  // ApiVersions v3 is flexible (not coded on the client side); v2 is the newest we send. A
  // broker that does not serve it answers with a v0 body, which DecodeApiVersionsResponse reads.
  const int16_t version = 2;
  SILT_ASSIGN_OR_RETURN(int32_t id, Send(protocol::ApiVersionsRequest{}, version));
  int32_t got = 0;
  std::string body;
  // Any Kafka broker answers ApiVersions at once; a port that is not a Kafka listener (an HTTP
  // server waiting for a request line) may never answer: say so well before the request timeout.
  constexpr int kHandshakeTimeoutMs = 10000;
  const int wait_ms = std::min(timeout_ms_, kHandshakeTimeoutMs);
  if (Status st = Receive(&got, &body, wait_ms); !st.ok()) {
    if (!not_kafka_.empty()) return Status::IOError(not_kafka_);
    if (st.message().find("timed out") != std::string::npos)
      return Status::IOError(hp_.ToString() + " did not answer Kafka's ApiVersions request in " +
                             std::to_string(wait_ms / 1000) +
                             " s: is it a Kafka broker's listener?");
    return st;
  }
  if (got != id) return Broken("ApiVersions answer out of order");
  ByteReader r(body);
  protocol::ApiVersionsResponse resp;
  Status st = protocol::DecodeApiVersionsResponse(r, version, &resp);
  if (!st.ok()) return Broken("bad ApiVersions answer: " + st.message());
  if (resp.error_code != 0 && resp.api_keys.empty())
    return Broken(std::string("ApiVersions failed: ") + protocol::ErrorName(resp.error_code));
  for (const auto& k : resp.api_keys) broker_versions_[k.api_key] = {k.min_version, k.max_version};
  return Status::OK();
}

int16_t Connection::Version(ApiKey key) const {
  auto it = broker_versions_.find(static_cast<int16_t>(key));
  if (it == broker_versions_.end()) return -1;
  const auto* mine = ClientVersionRange(key);
  if (mine == nullptr) return -1;
  int16_t lo = std::max(mine->first, it->second.first);
  int16_t hi = std::min(mine->second, it->second.second);
  return lo <= hi ? hi : -1;
}

Result<int16_t> Connection::RequireVersion(ApiKey key) const {
  int16_t v = Version(key);
  if (v < 0)
    return Status::Unsupported("broker " + hp_.ToString() + " does not support " +
                               ApiDisplayName(key) + " in a version silt speaks");
  return v;
}

Status Connection::SendFrame(std::string_view frame, const protocol::RequestHeader& h,
                             bool expect_response) {
  SILT_TRY(WriteRaw(frame));
  if (expect_response)
    pending_.push_back({h.correlation_id, h.request_api_key, h.request_api_version});
  return Status::OK();
}

Status Connection::WriteRaw(std::string_view bytes) {
  if (fd_ < 0) return Status::IOError("connection to " + hp_.ToString() + " is closed");
  const int64_t deadline = Deadline(timeout_ms_);
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      Status st = WaitFor(fd_, POLLOUT, deadline, "sending to " + hp_.ToString());
      if (!st.ok()) return Broken(st.message());
      continue;
    }
    return Broken(std::string("send failed: ") + std::strerror(errno));
  }
  return Status::OK();
}

bool Connection::Readable(int wait_ms, int wake_fd) const {
  if (fd_ < 0) return true;
  pollfd p[2] = {{fd_, POLLIN, 0}, {wake_fd, POLLIN, 0}};
  int n = ::poll(p, wake_fd >= 0 ? 2 : 1, wait_ms);
  if (n < 0) return errno != EINTR;  // a failed poll: let the read report the error
  return p[0].revents != 0;
}

Status Connection::ReadFull(char* p, size_t n, int64_t deadline) {
  size_t off = 0;
  while (off < n) {
    ssize_t got = ::recv(fd_, p + off, n - off, 0);
    if (got > 0) {
      off += static_cast<size_t>(got);
      continue;
    }
    if (got == 0) return Broken("connection closed by the broker");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      Status st = WaitFor(fd_, POLLIN, deadline, "waiting for " + hp_.ToString());
      if (!st.ok()) return Broken(st.message());
      continue;
    }
    return Broken(std::string("receive failed: ") + std::strerror(errno));
  }
  return Status::OK();
}

Status Connection::Receive(int32_t* correlation_id, std::string* body, int timeout_ms) {
  if (fd_ < 0) return Status::IOError("connection to " + hp_.ToString() + " is closed");
  if (pending_.empty()) return Status::Internal("no request outstanding");
  const int64_t deadline = Deadline(timeout_ms);
  char size_buf[4];
  SILT_TRY(ReadFull(size_buf, 4, deadline));
  if (std::string_view(size_buf, 4) == "HTTP") {
    not_kafka_ = hp_.ToString() + " answered in HTTP, not the Kafka protocol: -b needs a Kafka "
                 "broker's listener";
    return Broken(not_kafka_);
  }
  int32_t size = static_cast<int32_t>(DecodeBE32(size_buf));
  // A response may legitimately be large (Fetch up to fetch.max.bytes); bound it anyway.
  if (size < 4 || size > (1 << 30)) return Broken("bad response size " + std::to_string(size));
  std::string frame(static_cast<size_t>(size), '\0');
  SILT_TRY(ReadFull(frame.data(), frame.size(), deadline));
  Pending p = pending_.front();
  pending_.pop_front();
  ByteReader r(frame);
  protocol::ResponseHeader rh;
  Status st = rh.Decode(r, protocol::ResponseHeaderVersion(p.api_key, p.version));
  if (!st.ok()) return Broken("bad response header: " + st.message());
  if (rh.correlation_id != p.correlation_id)
    return Broken("response correlation id " + std::to_string(rh.correlation_id) +
                  " does not match request " + std::to_string(p.correlation_id));
  *correlation_id = rh.correlation_id;
  body->assign(frame, frame.size() - r.remaining(), std::string::npos);
  return Status::OK();
}

}  // namespace silt::net
