// The /metrics HTTP server (see metrics_http.h): HTTP/1.1 on asio, one thread, only as much of
// the protocol as a scraper uses. A general HTTP library would cost every silt process its
// start-up (cpp-httplib as Debian builds it loads OpenSSL and brotli when the binary starts,
// about 10 ms of each `silt produce` in a shell loop) for one GET.
#include "broker/metrics_http.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string_view>
#include <thread>

#include "base/metrics.h"
#include "broker/io.h"

namespace silt::broker {

namespace {

using asio::ip::tcp;

constexpr size_t kMaxHead = 16 << 10;       // request line and headers
constexpr int kMaxConnections = 64;         // beyond this, a new connection is closed at once
constexpr int kMaxRequestsPerConnection = 100;
constexpr auto kIdle = std::chrono::seconds(5);  // to read a request, or write an answer

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool IContains(std::string_view hay, std::string_view needle) {
  if (needle.size() > hay.size()) return false;
  for (size_t i = 0; i + needle.size() <= hay.size(); ++i)
    if (IEquals(hay.substr(i, needle.size()), needle)) return true;
  return false;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// What a request head asks for, as far as the answer depends on it.
struct Request {
  bool ok = false;  // a request line and headers that parse
  std::string_view method, path;
  bool http10 = false;
  bool close = false;     // Connection: close (or HTTP/1.0 without keep-alive)
  bool has_body = false;  // Content-Length above 0 or Transfer-Encoding: not read, so close
};

Request Parse(std::string_view head) {
  Request r;
  size_t eol = head.find("\r\n");
  if (eol == std::string_view::npos) return r;
  std::string_view line = head.substr(0, eol);
  size_t sp1 = line.find(' ');
  size_t sp2 = line.rfind(' ');
  if (sp1 == std::string_view::npos || sp2 == sp1) return r;
  r.method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (version == "HTTP/1.0") {
    r.http10 = true;
  } else if (version != "HTTP/1.1") {
    return r;
  }
  if (r.method.empty() || target.empty() || target.find(' ') != std::string_view::npos) return r;
  r.path = target.substr(0, target.find('?'));
  bool keep_alive = false;
  size_t at = eol + 2;
  while (at < head.size()) {
    size_t end = head.find("\r\n", at);
    if (end == std::string_view::npos) end = head.size();
    std::string_view h = head.substr(at, end - at);
    at = end + 2;
    if (h.empty()) break;
    size_t colon = h.find(':');
    if (colon == std::string_view::npos || colon == 0) return r;
    std::string_view name = h.substr(0, colon), value = Trim(h.substr(colon + 1));
    if (IEquals(name, "Connection")) {
      if (IContains(value, "close")) r.close = true;
      if (IContains(value, "keep-alive")) keep_alive = true;
    } else if (IEquals(name, "Content-Length")) {
      if (value != "0") r.has_body = true;
    } else if (IEquals(name, "Transfer-Encoding")) {
      r.has_body = true;
    }
  }
  if (r.http10 && !keep_alive) r.close = true;
  r.ok = true;
  return r;
}

std::string Answer(int status, std::string_view reason, std::string_view content_type,
                   const std::string& body, bool head_only, bool close,
                   std::string_view extra = {}) {
  std::string out;
  out.reserve(160 + (head_only ? 0 : body.size()));
  out += "HTTP/1.1 ";
  out += std::to_string(status);
  out += ' ';
  out += reason;
  out += "\r\nContent-Type: ";
  out += content_type;
  out += "\r\nContent-Length: ";
  out += std::to_string(body.size());
  out += "\r\n";
  out += extra;
  out += close ? "Connection: close\r\n\r\n" : "Connection: keep-alive\r\n\r\n";
  if (!head_only) out += body;
  return out;
}

class HttpConnection;

}  // namespace

// Declared in this order so that the io_context, destroyed with the connections its handlers
// still hold, outlives none of what their destructors touch.
struct MetricsHttpServer::Impl {
  int port = 0;
  int connections = 0;  // on the io thread only
  bool stopped = false;
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  std::thread thread;

  void Accept();
};

namespace {

class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(MetricsHttpServer::Impl* server, tcp::socket s)
      : server_(server), socket_(std::move(s)), timer_(server->io) {
    ++server_->connections;
  }
  ~HttpConnection() { --server_->connections; }

  void ReadRequest() {
    Arm();
    asio::async_read_until(socket_, asio::dynamic_buffer(in_, kMaxHead), "\r\n\r\n",
                           [self = shared_from_this()](std::error_code ec, size_t n) {
                             self->OnHead(ec, n);
                           });
  }

 private:
  // Every read and write has kIdle to finish; a peer that stalls is closed.
  void Arm() {
    timer_.expires_after(kIdle);
    timer_.async_wait([self = shared_from_this()](std::error_code ec) {
      if (!ec) {
        std::error_code ignored;
        self->socket_.close(ignored);
      }
    });
  }

  void OnHead(std::error_code ec, size_t n) {
    if (ec == asio::error::not_found) {  // a head over kMaxHead
      Send(Answer(431, "Request Header Fields Too Large", "text/plain", "request head too large\n",
                  false, true),
           true);
      return;
    }
    if (ec) return;  // closed by the peer or by the timer
    // r's views point into in_: the head is erased only once the answer is made.
    Request r = Parse(std::string_view(in_).substr(0, n));
    ++served_;
    const bool close = !r.ok || r.close || r.has_body || served_ >= kMaxRequestsPerConnection;
    if (!r.ok) {
      Send(Answer(400, "Bad Request", "text/plain", "bad request\n", false, true), true);
    } else if (r.path != "/metrics") {
      Send(Answer(404, "Not Found", "text/plain", "not found: only GET /metrics\n",
                  r.method == "HEAD", close),
           close);
    } else if (r.method == "GET" || r.method == "HEAD") {
      Send(Answer(200, "OK", "text/plain; version=0.0.4; charset=utf-8",
                  metrics::Default().Render(), r.method == "HEAD", close),
           close);
    } else {
      Send(Answer(405, "Method Not Allowed", "text/plain", "only GET /metrics\n", false, close,
                  "Allow: GET, HEAD\r\n"),
           close);
    }
    in_.erase(0, n);  // a pipelined request stays for the next read
  }

  void Send(std::string out, bool close) {
    out_ = std::move(out);
    Arm();
    asio::async_write(socket_, asio::buffer(out_),
                      [self = shared_from_this(), close](std::error_code ec, size_t) {
                        if (ec || close) {
                          std::error_code ignored;
                          self->socket_.shutdown(tcp::socket::shutdown_both, ignored);
                          self->socket_.close(ignored);
                          self->timer_.cancel();
                          return;
                        }
                        self->ReadRequest();
                      });
  }

  MetricsHttpServer::Impl* server_;
  tcp::socket socket_;
  asio::steady_timer timer_;
  std::string in_, out_;
  int served_ = 0;
};

}  // namespace

void MetricsHttpServer::Impl::Accept() {
  acceptor.async_accept([this](std::error_code ec, tcp::socket s) {
    if (stopped || ec == asio::error::operation_aborted) return;
    if (!ec) {
      if (connections >= kMaxConnections) {
        std::error_code ignored;
        s.close(ignored);
      } else {
        std::make_shared<HttpConnection>(this, std::move(s))->ReadRequest();
      }
    }
    Accept();
  });
}

Result<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(const std::string& host,
                                                                    int port) {
  auto impl = std::make_unique<Impl>();
  const std::string where = host + ":" + std::to_string(port);
  std::error_code ec;
  tcp::resolver resolver(impl->io);
  auto found = resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
  if (ec || found.empty())
    return Status::IOError("metrics: cannot resolve " + where + ": " + ec.message());
  const tcp::endpoint endpoint = found.begin()->endpoint();
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Status::IOError("metrics: cannot bind " + where + ": " + ec.message());
  impl->port = impl->acceptor.local_endpoint(ec).port();
  impl->Accept();
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->io.run(); });
  return std::unique_ptr<MetricsHttpServer>(new MetricsHttpServer(std::move(impl)));
}

MetricsHttpServer::MetricsHttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MetricsHttpServer::~MetricsHttpServer() { Stop(); }

int MetricsHttpServer::port() const { return impl_->port; }

void MetricsHttpServer::Stop() {
  if (!impl_->thread.joinable()) return;
  Impl* raw = impl_.get();
  asio::post(raw->io, [raw] {
    raw->stopped = true;
    std::error_code ignored;
    raw->acceptor.close(ignored);
    raw->io.stop();
  });
  impl_->thread.join();
}

}  // namespace silt::broker
