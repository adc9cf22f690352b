// A client connection to one Kafka broker: a blocking TCP socket with deadlines (poll(2)), the
// ApiVersions handshake, and pipelined requests answered in order (Kafka guarantees responses on
// one connection come back in request order, so a FIFO of correlation ids is all the matching
// needed).
//
// Version choice: for each API the highest version that both the broker advertises and
// lib/protocol can code (api_table.h's range, or kClientOnlyApis for the admin APIs the broker
// side does not serve). Version() answers -1 when there is none.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "base/coding.h"
#include "base/status.h"
#include "protocol/api_table.h"
#include "protocol/header.h"

namespace silt::protocol {
struct FetchResponse;
}  // namespace silt::protocol

namespace silt::net {

struct HostPort {
  std::string host;
  int32_t port = 0;
  std::string ToString() const { return host + ":" + std::to_string(port); }
};

// Parses "HOST:PORT[,HOST:PORT...]" (brackets around IPv6 literals allowed; the port defaults to
// 9092 when omitted). InvalidArgument naming the bad entry.
Result<std::vector<HostPort>> ParseBootstrap(std::string_view list);

class Connection {
 public:
  // Connects (resolving `hp`, trying each address) within `timeout_ms`, writes `preamble` if
  // any (a peer connection's first bytes, before the Kafka protocol), and runs ApiVersions.
  // IOError (with the address) when the broker cannot be reached or the handshake fails.
  static Result<std::unique_ptr<Connection>> Open(const HostPort& hp, const std::string& client_id,
                                                  int timeout_ms, std::string_view preamble = {});
  ~Connection();

  const HostPort& address() const { return hp_; }
  // The version to use for `key`, or -1 if the broker and silt share none.
  int16_t Version(protocol::ApiKey key) const;
  // Version(key), or Unsupported naming the API when there is none.
  Result<int16_t> RequireVersion(protocol::ApiKey key) const;

  // Writes one request; when `expect_response` (false only for Produce with acks=0) its answer
  // joins the FIFO read by Receive(). Returns the correlation id. IOError on a broken socket.
  template <class Req>
  Result<int32_t> Send(const Req& req, int16_t version, bool expect_response = true) {
    // The frame is built in a buffer kept between requests: a Produce request may be megabytes,
    // and a fresh allocation of that size costs page faults on every request.
    std::string& frame = send_buffer_;
    frame.clear();
    protocol::RequestHeader h;
    h.request_api_key = static_cast<int16_t>(Req::kApiKey);
    h.request_api_version = version;
    h.correlation_id = next_correlation_id_++;
    h.client_id = client_id_;
    protocol::AppendRequestFrame(h, req, &frame);
    Status st = SendFrame(frame, h, expect_response);
    // A buffer grown far past the usual request is given back rather than kept.
    if (frame.capacity() > kMaxKeptSendBuffer) std::string().swap(frame);
    SILT_TRY(st);
    return h.correlation_id;
  }

  // Reads the next response (the oldest outstanding request's) into *body, a buffer holding the
  // response body; `*correlation_id` says which request it answers. `timeout_ms` bounds the wait.
  // IOError on a broken socket or timeout (then the connection is unusable).
  Status Receive(int32_t* correlation_id, std::string* body, int timeout_ms);

  // Send, then Receive its answer and decode it.
  template <class Req, class Resp>
  Status Call(const Req& req, Resp* resp, int16_t version = -1, int timeout_ms = -1) {
    static_assert(!std::is_same_v<Resp, protocol::FetchResponse>,
                  "a FetchResponse's record sets are views into the answer's bytes, which Call "
                  "frees on return: Send and Receive into a buffer that outlives the response");
    if (version < 0) {
      SILT_ASSIGN_OR_RETURN(version, RequireVersion(Req::kApiKey));
    }
    SILT_ASSIGN_OR_RETURN(int32_t id, Send(req, version));
    int32_t got = 0;
    std::string body;
    for (;;) {
      SILT_TRY(Receive(&got, &body, timeout_ms < 0 ? timeout_ms_ : timeout_ms));
      if (got == id) break;
    }
    ByteReader r(body);
    Status st = resp->Decode(r, version);
    if (!st.ok()) return st.WithContext("from " + hp_.ToString());
    return Status::OK();
  }

  // True when an answer (or EOF) can be read without blocking, waiting up to `wait_ms`. With
  // `wake_fd` >= 0, also returns (false) as soon as that descriptor is readable (an eventfd a
  // caller signals to cut the wait short).
  bool Readable(int wait_ms, int wake_fd = -1) const;

  // Outstanding requests (sent, answer not yet read).
  size_t in_flight() const { return pending_.size(); }
  bool broken() const { return fd_ < 0; }
  int timeout_ms() const { return timeout_ms_; }
  void Close();

 private:
  struct Pending {
    int32_t correlation_id;
    int16_t api_key;
    int16_t version;
  };
  Connection(HostPort hp, std::string client_id, int fd, int timeout_ms);
  Status SendFrame(std::string_view frame, const protocol::RequestHeader& h, bool expect_response);
  // Writes bytes as they are (the frame, or a preamble before the handshake).
  Status WriteRaw(std::string_view bytes);
  Status ReadFull(char* p, size_t n, int64_t deadline);
  Status Handshake();
  Status Broken(const std::string& what);

  static constexpr size_t kMaxKeptSendBuffer = 16 << 20;
  HostPort hp_;
  std::string client_id_;
  std::string send_buffer_;  // the last request's frame; its capacity is reused
  int fd_;
  int timeout_ms_;
  int32_t next_correlation_id_ = 1;
  std::deque<Pending> pending_;
  // Set when the peer answered in another protocol (HTTP): what to tell the user.
  std::string not_kafka_;
  std::map<int16_t, std::pair<int16_t, int16_t>> broker_versions_;
};

// The version range lib/protocol can code for `key` on the client side, or nullptr.
const std::pair<int16_t, int16_t>* ClientVersionRange(protocol::ApiKey key);

}  // namespace silt::net
