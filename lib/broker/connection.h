// One client connection: reads size-prefixed request frames, hands each to the dispatcher, and
// writes the responses back strictly in request order, from memory or with sendfile(2).
// Internal to lib/broker (includes asio).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "broker/handler_pool.h"
#include "broker/io.h"
#include "broker/request.h"

namespace silt::broker {

class Dispatcher;

// Limits and hooks a connection needs from its server.
struct ConnectionEnv {
  Dispatcher* dispatcher = nullptr;
  int64_t max_request_bytes = 100LL << 20;  // socket.request.max.bytes
  int max_in_flight = 64;
  // The request-handler threads (broker/handler_pool.h); nullptr: every handler runs inline.
  HandlerPool* pool = nullptr;
  std::function<void()> on_closed;  // called once, when the connection is gone
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // `peer_node`: the cluster node on a peer connection (request.h's Request::peer_node), -1 for
  // a client.
  Connection(asio::ip::tcp::socket socket, const ConnectionEnv* env, int32_t peer_node = -1);
  ~Connection();

  // Starts reading. The connection keeps itself alive until it closes.
  void Start();
  // Graceful stop: read no more requests; close once every request read so far is answered.
  void StopReading();
  // Immediate close (thread-safe).
  void Close();
  const std::string& peer() const { return peer_; }

 private:
  struct Slot {
    bool done = false;
    std::optional<Response> response;
    int32_t correlation_id = 0;
    bool flexible_header = false;
  };

  void ReadSize();
  void OnSize(const asio::error_code& ec, size_t n);
  void OnFrame(const asio::error_code& ec, size_t n);
  void Complete(uint64_t seq, std::optional<Response> response);
  void MaybeWrite();
  void WriteNextPart();
  void SendSlice();
  void FinishResponse();
  void CloseOnStrand(const std::string& why, bool warn);
  void MaybeResume();
  // Hands a parsed request to its handler, inline on this strand or on the handler pool.
  void Dispatch(std::shared_ptr<Request> req, Respond respond);

  asio::ip::tcp::socket socket_;
  std::shared_ptr<ConnExecutor> executor_;
  const ConnectionEnv* env_;
  std::string peer_;
  int32_t peer_node_ = -1;
  char size_buf_[4];
  FrameBytes frame_;
  bool closed_ = false;
  bool reading_ = false;       // a read is outstanding
  bool stop_reading_ = false;  // graceful shutdown asked
  bool paused_ = false;        // too many requests in flight; resume when answered
  bool pool_paused_ = false;   // the handler pool was full; resume when it has room
  // This connection's queue on the handler pool: its pooled requests run there in order, and
  // while it has work the connection's other requests queue behind it.
  std::shared_ptr<HandlerPool::Serial> serial_;
  // Requests in arrival order; slots_[0] is sequence number base_seq_.
  std::deque<Slot> slots_;
  uint64_t base_seq_ = 0;
  // The response being written: its header + parts, and where we are in them.
  bool writing_ = false;
  std::string write_head_;
  Response write_resp_;
  size_t write_part_ = 0;
  int64_t slice_done_ = 0;
};

}  // namespace silt::broker
