// `silt serve`'s network server: a TCP listener speaking the Kafka protocol over a Broker.
//
// Threads: one io_context run by config.io_threads threads (num.network.threads, 2 by default).
// Each connection is served on its own strand, so its requests are decoded, handled and answered
// in order while different connections proceed in parallel. Nothing on an io thread waits:
// reads and writes are asynchronous, sendfile(2) runs on a non-blocking socket, and the
// handlers that may wait run on the request-handler pool (broker/handler_pool.h,
// num.io.threads), whose bounded queue pushes back on the sockets when it is full.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "broker/cluster_mode.h"
#include "broker/config.h"

namespace silt::broker {

class Broker;

class Server {
 public:
  // Opens the data directory, binds the listener (port 0 picks a free port), starts the io
  // threads and logs "listening on HOST:PORT".
  // With `cluster`, the broker runs in cluster mode (broker/cluster_mode.h).
  static Result<std::unique_ptr<Server>> Start(const BrokerConfig& config,
                                               std::unique_ptr<ClusterMode> cluster = nullptr);
  ~Server();  // Shutdown() if not done yet

  // The bound address.
  const std::string& host() const;
  int port() const;
  // The bound port of /metrics (metrics.listener), or -1 when it is off.
  int metrics_port() const;
  Broker& broker();

  // Graceful stop: stop accepting, stop reading new requests, answer those already read (long
  // polls answer at once), then stop the threads and close the data dir cleanly. Idempotent.
  Status Shutdown();

 private:
  struct Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace silt::broker
