// The /metrics endpoint: a small HTTP/1.1 server (asio, kept inside metrics_http.cc) on a
// thread of its own, serving GET /metrics from metrics::Default() in Prometheus text format
// 0.0.4 (HEAD with GET's headers). Another path is 404, another method 405; keep-alive and
// pipelined requests are served in order; a bad head is 400, one over 16 KiB 431, and a request
// with a body is answered and its connection closed. At most 64 connections, 5 s to read or
// write each request. Rendering runs on the server's thread and takes no lock an io thread holds
// for long: the request path only does atomic adds.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"

namespace silt::broker {

class MetricsHttpServer {
 public:
  // Binds host:port (port 0 picks a free one) and starts serving. IOError when the address
  // cannot be bound.
  static Result<std::unique_ptr<MetricsHttpServer>> Start(const std::string& host, int port);
  ~MetricsHttpServer();  // Stop()

  int port() const;
  // Stops accepting and joins the thread. Idempotent.
  void Stop();

  struct Impl;

 private:
  explicit MetricsHttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace silt::broker
