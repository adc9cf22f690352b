// Connection: framing, ordered responses, zero-copy writes.
#include "broker/connection.h"

#include <sys/sendfile.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/coding.h"
#include "broker/broker_metrics.h"
#include "broker/dispatch.h"
#include "broker/logging.h"
#include "protocol/header.h"

namespace silt::broker {
namespace {

// What a refused size prefix probably was, for the log line.
std::string GuessProtocol(const char b[4]) {
  if (std::memcmp(b, "GET ", 4) == 0 || std::memcmp(b, "POST", 4) == 0 ||
      std::memcmp(b, "PUT ", 4) == 0 || std::memcmp(b, "HEAD", 4) == 0 ||
      std::memcmp(b, "OPTI", 4) == 0 || std::memcmp(b, "PRI ", 4) == 0) {
    return " (looks like HTTP)";
  }
  if (b[0] == 0x16 && b[1] == 0x03) return " (looks like a TLS ClientHello)";
  return "";
}

}  // namespace

Connection::Connection(asio::ip::tcp::socket socket, const ConnectionEnv* env, int32_t peer_node)
    : socket_(std::move(socket)),
      executor_(std::make_shared<ConnExecutor>(
          asio::make_strand(static_cast<asio::io_context&>(socket_.get_executor().context())))),
      env_(env),
      peer_node_(peer_node) {
  asio::error_code ec;
  auto ep = socket_.remote_endpoint(ec);
  if (!ec) {
    std::string addr = ep.address().to_string();
    peer_ = ep.address().is_v6() ? "[" + addr + "]:" + std::to_string(ep.port())
                                 : addr + ":" + std::to_string(ep.port());
  } else {
    peer_ = "?";
  }
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  // sendfile(2) must never block an io thread: with O_NONBLOCK it returns EAGAIN instead and
  // we wait for writability.
  socket_.native_non_blocking(true, ec);
  if (env_->pool != nullptr) serial_ = env_->pool->NewSerial();
}

Connection::~Connection() {
  if (env_->on_closed) env_->on_closed();
}

void Connection::Start() {
  auto self = shared_from_this();
  asio::dispatch(executor_->strand, [self] { self->ReadSize(); });
}

void Connection::StopReading() {
  auto self = shared_from_this();
  asio::post(executor_->strand, [self] {
    self->stop_reading_ = true;
    if (self->slots_.empty() && !self->writing_) {
      self->CloseOnStrand("", false);
    } else if (self->reading_) {
      // Cancel the idle read; requests already read are still answered.
      asio::error_code ec;
      self->socket_.shutdown(asio::ip::tcp::socket::shutdown_receive, ec);
    }
  });
}

void Connection::Close() {
  auto self = shared_from_this();
  asio::post(executor_->strand, [self] { self->CloseOnStrand("", false); });
}

void Connection::CloseOnStrand(const std::string& why, bool warn) {
  if (closed_) return;
  closed_ = true;
  if (!why.empty()) {
    std::string line = "closing connection from " + peer_ + ": " + why;
    if (warn) LogWarn(line); else LogDebug(line);
  }
  asio::error_code ec;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  socket_.close(ec);
}

void Connection::ReadSize() {
  if (closed_ || stop_reading_) {
    if (stop_reading_ && slots_.empty() && !writing_) CloseOnStrand("", false);
    return;
  }
  if (pool_paused_) return;
  if (static_cast<int>(slots_.size()) >= env_->max_in_flight) {
    paused_ = true;
    return;
  }
  reading_ = true;
  auto self = shared_from_this();
  asio::async_read(socket_, asio::buffer(size_buf_, 4),
                   asio::bind_executor(executor_->strand,
                                       [self](const asio::error_code& ec, size_t n) {
                                         self->OnSize(ec, n);
                                       }));
}

void Connection::MaybeResume() {
  if (paused_ && !pool_paused_ && !closed_ &&
      static_cast<int>(slots_.size()) < env_->max_in_flight) {
    paused_ = false;
    ReadSize();
  }
}

void Connection::OnSize(const asio::error_code& ec, size_t) {
  reading_ = false;
  if (closed_) return;
  if (ec) {
    if (stop_reading_) {
      if (slots_.empty() && !writing_) CloseOnStrand("", false);
      return;
    }
    CloseOnStrand(ec == asio::error::eof ? "closed by peer" : ec.message(), false);
    return;
  }
  // Checked before allocating anything: an HTTP request or a TLS hello decodes to a huge size.
  auto size = protocol::ParseFrameSize(std::string_view(size_buf_, 4),
                                       static_cast<int32_t>(env_->max_request_bytes));
  if (!size.ok()) {
    CloseOnStrand("refusing request: " + size.status().message() + GuessProtocol(size_buf_), true);
    return;
  }
  frame_ = FrameBytes(static_cast<size_t>(*size));
  reading_ = true;
  auto self = shared_from_this();
  asio::async_read(socket_, asio::buffer(frame_.data(), frame_.size()),
                   asio::bind_executor(executor_->strand,
                                       [self](const asio::error_code& ec, size_t n) {
                                         self->OnFrame(ec, n);
                                       }));
}

void Connection::OnFrame(const asio::error_code& ec, size_t) {
  reading_ = false;
  if (closed_) return;
  if (ec) {
    if (stop_reading_) {
      // Shutdown cut this read short; requests read before it are still answered.
      if (slots_.empty() && !writing_) CloseOnStrand("", false);
      return;
    }
    CloseOnStrand(ec == asio::error::eof ? "closed by peer mid-request" : ec.message(), false);
    return;
  }
  auto req = std::make_shared<Request>();
  req->frame = std::move(frame_);
  frame_ = FrameBytes();
  req->peer = peer_;
  req->peer_node = peer_node_;
  req->executor = executor_;
  Dispatcher* d = env_->dispatcher;
  bool flexible_header = false;
  Status s = d->ParseHeader(req.get(), &flexible_header);
  if (!s.ok()) {
    CloseOnStrand(s.message(), true);
    return;
  }
  uint64_t seq = base_seq_ + slots_.size();
  slots_.push_back(Slot{false, std::nullopt, req->correlation_id, flexible_header});
  auto self = shared_from_this();
  const int16_t api = req->api_key;
  RequestMetrics::Get().OnRequest(api, req->api_version, static_cast<int64_t>(req->frame.size()) + 4);
  Respond respond = [self, seq, api, start = std::chrono::steady_clock::now()](
                        std::optional<Response> r) {
    RequestMetrics::Get().OnResponse(
        api, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
        r ? r->size() : 0);
    self->Complete(seq, std::move(r));
  };
  Dispatch(std::move(req), std::move(respond));
  if (closed_ || pool_paused_) return;
  ReadSize();
}

void Connection::Dispatch(std::shared_ptr<Request> req, Respond respond) {
  Dispatcher* d = env_->dispatcher;
  HandlerPool* pool = env_->pool;
  // Inline unless the handler may wait, or an earlier request of this connection is still on
  // the pool (requests of one connection run in the order they came).
  if (pool == nullptr || (!d->RunsOnPool(req->api_key) && pool->Idle(*serial_))) {
    Status s = d->Dispatch(std::move(req), std::move(respond));
    if (!s.ok()) CloseOnStrand(s.message(), true);
    return;
  }
  auto self = shared_from_this();
  bool room = pool->Submit(serial_, [self, d, req = std::move(req),
                                     respond = std::move(respond)]() mutable {
    Status s = d->Dispatch(std::move(req), std::move(respond));
    if (!s.ok()) {
      asio::post(self->executor_->strand,
                 [self, why = s.message()] { self->CloseOnStrand(why, true); });
    }
  });
  if (room) return;
  // queued.max.requests are waiting for a handler thread: read nothing more until one frees.
  pool_paused_ = true;
  pool->WhenRoom([self] {
    asio::post(self->executor_->strand, [self] {
      self->pool_paused_ = false;
      if (!self->reading_ && !self->closed_) self->ReadSize();
    });
  });
}

void Connection::Complete(uint64_t seq, std::optional<Response> response) {
  auto self = shared_from_this();
  auto r = std::make_shared<std::optional<Response>>(std::move(response));
  asio::dispatch(executor_->strand, [self, seq, r] {
    if (self->closed_) return;
    if (seq < self->base_seq_ || seq >= self->base_seq_ + self->slots_.size()) return;
    Slot& slot = self->slots_[seq - self->base_seq_];
    if (slot.done) return;
    slot.done = true;
    slot.response = std::move(*r);
    self->MaybeWrite();
  });
}

void Connection::MaybeWrite() {
  while (!writing_ && !closed_ && !slots_.empty() && slots_.front().done) {
    Slot slot = std::move(slots_.front());
    slots_.pop_front();
    ++base_seq_;
    if (!slot.response) continue;  // acks=0: nothing goes back
    write_resp_ = std::move(*slot.response);
    // Response header: correlation_id, plus an empty tagged-field section when flexible.
    int64_t body = write_resp_.size();
    int64_t head_len = 4 + (slot.flexible_header ? 1 : 0);
    write_head_.clear();
    ByteWriter w(&write_head_);
    w.I32(static_cast<int32_t>(head_len + body));
    w.I32(slot.correlation_id);
    if (slot.flexible_header) w.U8(0);
    writing_ = true;
    write_part_ = 0;
    slice_done_ = 0;
    // The header goes out with the first in-memory part, in one gather write.
    WriteNextPart();
  }
  if (!writing_) {
    if (stop_reading_ && slots_.empty() && !reading_) {
      CloseOnStrand("", false);
      return;
    }
    MaybeResume();
  }
}

void Connection::WriteNextPart() {
  if (closed_) return;
  if (write_part_ > write_resp_.parts.size()) {
    FinishResponse();
    return;
  }
  // Part index 0 is the header; parts are numbered from 1 after it.
  std::vector<asio::const_buffer> bufs;
  if (write_part_ == 0) {
    bufs.push_back(asio::buffer(write_head_));
    ++write_part_;
  }
  while (write_part_ <= write_resp_.parts.size()) {
    const ResponsePart& p = write_resp_.parts[write_part_ - 1];
    if (p.slice.length > 0) break;
    if (!p.bytes.empty()) bufs.push_back(asio::buffer(p.bytes));
    ++write_part_;
  }
  auto self = shared_from_this();
  if (!bufs.empty()) {
    asio::async_write(socket_, bufs,
                      asio::bind_executor(executor_->strand,
                                          [self](const asio::error_code& ec, size_t) {
                                            if (ec) {
                                              self->CloseOnStrand("write: " + ec.message(), false);
                                              return;
                                            }
                                            self->WriteNextPart();
                                          }));
    return;
  }
  if (write_part_ > write_resp_.parts.size()) {
    FinishResponse();
    return;
  }
  slice_done_ = 0;
  SendSlice();
}

void Connection::SendSlice() {
  if (closed_) return;
  const FileSlice& s = write_resp_.parts[write_part_ - 1].slice;
  while (slice_done_ < s.length) {
    off_t off = static_cast<off_t>(s.position + slice_done_);
    ssize_t n = ::sendfile(socket_.native_handle(), s.file->fd(), &off,
                           static_cast<size_t>(s.length - slice_done_));
    if (n > 0) {
      slice_done_ += n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // Socket buffer full: wait for room without holding the io thread.
      auto self = shared_from_this();
      socket_.async_wait(asio::ip::tcp::socket::wait_write,
                         asio::bind_executor(executor_->strand,
                                             [self](const asio::error_code& ec) {
                                               if (ec) {
                                                 self->CloseOnStrand("write wait: " + ec.message(), false);
                                                 return;
                                               }
                                               self->SendSlice();
                                             }));
      return;
    }
    // n == 0: the file is shorter than the slice (truncated under us). The response length is
    // already promised, so the only honest thing left is to close.
    // A peer that went away is routine; anything else is worth a warning.
    bool routine = n < 0 && (errno == EPIPE || errno == ECONNRESET);
    CloseOnStrand(n == 0 ? "segment file shorter than expected during sendfile"
                         : std::string("sendfile: ") + std::strerror(errno),
                  !routine);
    return;
  }
  ++write_part_;
  WriteNextPart();
}

void Connection::FinishResponse() {
  writing_ = false;
  write_resp_ = Response{};
  write_head_.clear();
  MaybeWrite();
}

}  // namespace silt::broker
