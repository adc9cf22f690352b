// What a handler sees of one request and what it hands back: the decoded request header, the
// body bytes, and a Response made of in-memory bytes and file ranges (sent with sendfile(2)).
#pragma once

#include <cassert>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/file_slice.h"

namespace silt::broker {

// The connection's serial executor, defined in broker/io.h (which includes asio). Handlers that
// finish later (long-polling Fetch) use it for their timers; others ignore it.
struct ConnExecutor;

// The bytes of one request frame. Allocated without being zero-filled: the socket read that
// follows overwrites every byte, and zeroing a megabyte produce request costs about as much as
// the read's own copy.
class FrameBytes {
 public:
  FrameBytes() = default;
  explicit FrameBytes(size_t n) : data_(n > 0 ? new char[n] : nullptr), size_(n) {}
  char* data() { return data_.get(); }
  const char* data() const { return data_.get(); }
  size_t size() const { return size_; }
  std::string_view view() const { return std::string_view(data_.get(), size_); }

 private:
  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
};

struct Request {
  // RequestHeader: request_api_key, request_api_version, correlation_id, client_id.
  int16_t api_key = -1;
  int16_t api_version = -1;
  int32_t correlation_id = 0;
  std::string client_id;
  FrameBytes frame;        // the whole frame after its size prefix
  size_t body_offset = 0;  // where the request body starts in `frame`
  std::string peer;        // "address:port" of the client, for log lines
  // The cluster node at the other end of a peer connection (a replica fetching, handed over by
  // cluster mode through BrokerServices::adopt_peer_connection); -1 on a client connection.
  // Only such requests may act as a replica (Fetch's replica_id must equal it).
  int32_t peer_node = -1;
  std::shared_ptr<ConnExecutor> executor;

  std::string_view body() const { return frame.view().substr(body_offset); }
  // Writable access to bytes of the body that a handler owns for the request's lifetime (the
  // produce path patches baseOffset into the received batch instead of copying it). `part`
  // must be a view into body().
  char* mutable_bytes(std::string_view part) {
    assert(part.data() >= frame.data() && part.data() + part.size() <= frame.data() + frame.size());
    return frame.data() + (part.data() - frame.data());
  }
};

// One piece of a response body: bytes held in memory, or (when `bytes` is empty and
// slice.length > 0) a range of a segment file.
struct ResponsePart {
  std::string bytes;
  FileSlice slice;
};

// A response body (after the response header, which the connection writes). Build it with
// Append/AppendSlice; most handlers produce a single in-memory part.
struct Response {
  std::vector<ResponsePart> parts;

  static Response FromBytes(std::string bytes) {
    Response r;
    r.parts.push_back(ResponsePart{std::move(bytes), {}});
    return r;
  }
  void Append(std::string_view bytes) {
    if (bytes.empty()) return;
    if (parts.empty() || parts.back().slice.length > 0) parts.emplace_back();
    parts.back().bytes.append(bytes.data(), bytes.size());
  }
  void AppendSlice(const FileSlice& s) {
    if (s.length > 0) parts.push_back(ResponsePart{{}, s});
  }
  int64_t size() const {
    int64_t n = 0;
    for (const ResponsePart& p : parts) n += p.slice.length > 0 ? p.slice.length : static_cast<int64_t>(p.bytes.size());
    return n;
  }
};

// How a handler completes a request; may be called from any thread, exactly once. nullopt means
// "no response" (Produce with acks=0). The connection answers requests strictly in the order
// they arrived, whatever order handlers complete in.
using Respond = std::function<void(std::optional<Response>)>;

}  // namespace silt::broker
