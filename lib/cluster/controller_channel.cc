// The ForwardRequest codec and its blocking client.
#include "cluster/controller_channel.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/coding.h"
#include "cluster/peer_preamble.h"

namespace silt::cluster {
namespace {

std::string Frame(const std::string& body) {
  std::string out;
  ByteWriter w(&out);
  w.I32(static_cast<int32_t>(body.size()));
  w.Raw(body);
  return out;
}

bool GetUuid(ByteReader& r, Uuid* out) {
  std::string_view b;
  if (!r.Bytes(16, &b)) return false;
  Uuid::Bytes bytes;
  std::memcpy(bytes.data(), b.data(), 16);
  *out = Uuid(bytes);
  return true;
}

Status ReadExactly(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t got = ::read(fd, p, n);
    if (got == 0) return Status::IOError("peer connection closed");
    if (got < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno("reading from a peer", errno);
    }
    p += got;
    n -= static_cast<size_t>(got);
  }
  return Status::OK();
}

void SetTimeouts(int fd, int timeout_ms) {
  timeval tv{};
  tv.tv_sec = timeout_ms / 1000;
  tv.tv_usec = (timeout_ms % 1000) * 1000;
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

// A connected blocking socket to `v`'s address, or IOError.
Result<int> Connect(const Voter& v, int timeout_ms) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(v.host.c_str(), std::to_string(v.port).c_str(), &hints, &res);
  if (rc != 0) return Status::IOError("resolving " + v.address() + ": " + gai_strerror(rc));
  Status last = Status::IOError("no address for " + v.address());
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    int c = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (c < 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int n = ::poll(&p, 1, timeout_ms);
      int err = 0;
      socklen_t len = sizeof(err);
      if (n == 1) getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      c = (n == 1 && err == 0) ? 0 : -1;
      errno = n == 1 ? err : ETIMEDOUT;
    }
    if (c == 0) {
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      freeaddrinfo(res);
      return fd;
    }
    last = Status::FromErrno("connecting to " + v.address(), errno);
    ::close(fd);
  }
  freeaddrinfo(res);
  return last;
}

}  // namespace

std::string EncodeForwardRequest(const ForwardRequest& r) {
  std::string body;
  ByteWriter w(&body);
  w.I16(kForwardVersion);
  w.I8(static_cast<int8_t>(r.kind));
  w.Raw(reinterpret_cast<const char*>(r.id.bytes().data()), 16);
  w.Raw(r.command);
  return Frame(body);
}

std::string EncodeForwardResponse(const ProposeResult& r) {
  std::string body;
  ByteWriter w(&body);
  w.I16(kForwardVersion);
  w.I8(static_cast<int8_t>(r.outcome));
  w.I64(static_cast<int64_t>(r.index.value()));
  w.I32(r.leader_hint ? r.leader_hint->value() : -1);
  std::string_view msg = r.message;
  if (msg.size() > 32767) msg = msg.substr(0, 32767);
  w.I16(static_cast<int16_t>(msg.size()));
  w.Raw(msg);
  w.Raw(r.result);
  return Frame(body);
}

std::string EncodeHeartbeat(const Uuid& incarnation,
                            const std::set<std::pair<Uuid, int32_t>>& offline,
                            RaftIndex applied) {
  std::string out;
  ByteWriter w(&out);
  w.Raw(std::string_view(reinterpret_cast<const char*>(incarnation.bytes().data()), 16));
  w.I32(static_cast<int32_t>(offline.size()));
  for (const auto& [topic, partition] : offline) {
    w.Raw(std::string_view(reinterpret_cast<const char*>(topic.bytes().data()), 16));
    w.I32(partition);
  }
  w.I64(static_cast<int64_t>(applied.value()));
  return out;
}

Result<HeartbeatBody> DecodeHeartbeat(std::string_view command) {
  HeartbeatBody out;
  if (command.empty()) return out;
  ByteReader r(command);
  int32_t count = 0;
  if (!GetUuid(r, &out.incarnation) || !r.I32(&count) || count < 0 ||
      static_cast<size_t>(count) > command.size() / 20)
    return Status::Corruption("heartbeat: damaged offline replicas");
  for (int32_t i = 0; i < count; ++i) {
    Uuid topic;
    int32_t partition = 0;
    if (!GetUuid(r, &topic) || !r.I32(&partition))
      return Status::Corruption("heartbeat: damaged offline replicas");
    out.offline.insert({topic, partition});
  }
  if (r.empty()) return out;  // a node of before the applied index
  int64_t applied = 0;
  if (!r.I64(&applied) || applied < 0)
    return Status::Corruption("heartbeat: damaged applied index");
  out.applied = RaftIndex(static_cast<uint64_t>(applied));
  if (!r.empty()) return Status::Corruption("heartbeat: bytes after the applied index");
  return out;
}

std::string EncodeAwaitApplied(RaftIndex index, int32_t timeout_ms) {
  std::string out;
  ByteWriter w(&out);
  w.I64(static_cast<int64_t>(index.value()));
  w.I32(timeout_ms);
  return out;
}

Result<std::pair<RaftIndex, int32_t>> DecodeAwaitApplied(std::string_view command) {
  ByteReader r(command);
  int64_t index = 0;
  int32_t timeout_ms = 0;
  if (!r.I64(&index) || !r.I32(&timeout_ms) || !r.empty() || index < 0 || timeout_ms < 0)
    return Status::Corruption("await applied: a command of " + std::to_string(command.size()) +
                              " bytes, not an index and a timeout");
  return std::make_pair(RaftIndex(static_cast<uint64_t>(index)), timeout_ms);
}

Result<ForwardRequest> DecodeForwardRequest(std::string_view body) {
  ByteReader r(body);
  int16_t version = 0;
  if (!r.I16(&version)) return Status::Corruption("ForwardRequest: short header");
  if (version != kForwardVersion) {
    return Status::Unsupported("ForwardRequest version " + std::to_string(version));
  }
  ForwardRequest out;
  int8_t kind = 0;
  if (!r.I8(&kind)) return Status::Corruption("ForwardRequest: short header");
  if (kind < 0 || kind > 5) return Status::Corruption("ForwardRequest: kind " + std::to_string(kind));
  out.kind = static_cast<ForwardKind>(kind);
  if (!GetUuid(r, &out.id)) return Status::Corruption("ForwardRequest: short request id");
  out.command = std::string(r.rest());
  return out;
}

Result<ProposeResult> DecodeForwardResponse(std::string_view body) {
  ByteReader r(body);
  int16_t version = 0, msg_len = 0;
  int8_t outcome = 0;
  int64_t index = 0;
  int32_t leader = 0;
  std::string_view msg;
  if (!r.I16(&version)) return Status::Corruption("ForwardResponse: short header");
  if (version != kForwardVersion) {
    return Status::Unsupported("ForwardResponse version " + std::to_string(version));
  }
  if (!r.I8(&outcome) || !r.I64(&index) || !r.I32(&leader) || !r.I16(&msg_len) || msg_len < 0 ||
      !r.Bytes(static_cast<size_t>(msg_len), &msg)) {
    return Status::Corruption("ForwardResponse: short body");
  }
  if (outcome < 0 || outcome > static_cast<int8_t>(ProposeOutcome::kShutdown)) {
    return Status::Corruption("ForwardResponse: outcome " + std::to_string(outcome));
  }
  ProposeResult out;
  out.outcome = static_cast<ProposeOutcome>(outcome);
  out.index = RaftIndex(static_cast<uint64_t>(index));
  if (leader >= 0) out.leader_hint = NodeId(leader);
  out.message = std::string(msg);
  out.result = std::string(r.rest());
  return out;
}

Result<std::string> ReadFrame(int fd) {
  char len_bytes[4];
  SILT_TRY(ReadExactly(fd, len_bytes, 4));
  uint32_t len = DecodeBE32(len_bytes);
  if (len > kMaxForwardFrame) {
    return Status::Corruption("peer frame of " + std::to_string(len) + " bytes");
  }
  std::string body(len, '\0');
  SILT_TRY(ReadExactly(fd, body.data(), len));
  return body;
}

Status WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno("writing to a peer", errno);
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return Status::OK();
}

Result<ProposeResult> ForwardPropose(const Voter& to, NodeId self, const ForwardRequest& r,
                                     int timeout_ms) {
  SILT_ASSIGN_OR_RETURN(int fd, Connect(to, std::max(1, timeout_ms)));
  SetTimeouts(fd, std::max(1, timeout_ms));
  Status s = WriteAll(fd, EncodePreamble(PeerStream::kPeer, self) + EncodeForwardRequest(r));
  Result<std::string> body = s.ok() ? ReadFrame(fd) : Result<std::string>(s);
  ::close(fd);
  if (!body.ok())
    return body.status().WithContext("forwarding to node " + std::to_string(to.id.value()));
  return DecodeForwardResponse(*body);
}

}  // namespace silt::cluster
