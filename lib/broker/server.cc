// Server: acceptor, io threads, connection registry, graceful shutdown.
#include "broker/server.h"

#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

#include "base/metrics.h"
#include "broker/broker.h"
#include "broker/broker_metrics.h"
#include "broker/connection.h"
#include "broker/dispatch.h"
#include "broker/handler_pool.h"
#include "broker/io.h"
#include "broker/logging.h"
#include "broker/metrics_http.h"

namespace silt::broker {

struct Server::Impl {
  // Declared before `io` on purpose: handlers still queued when the io_context is destroyed
  // release connections, whose destructors use these.
  BrokerConfig config;
  std::unique_ptr<Broker> broker;
  std::unique_ptr<Dispatcher> dispatcher;
  // The request-handler threads; stopped before the broker closes (broker/handler_pool.h).
  std::unique_ptr<HandlerPool> pool;
  ConnectionEnv env;
  std::mutex mu;
  std::condition_variable cv;
  int open_connections = 0;
  std::list<std::weak_ptr<Connection>> connections;
  bool accepting = true;
  bool shut_down = false;
  std::string host;
  int port = 0;

  // /metrics (metrics.listener), and the collector it reads the partitions with.
  std::unique_ptr<MetricsHttpServer> metrics;
  int metrics_collector = 0;

  // Retention (and other periodic upkeep) runs here, never on an io thread.
  std::thread maintenance;
  void Maintain();

  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  asio::ip::tcp::acceptor acceptor{io};
  std::vector<std::thread> threads;

  void Accept();
  void OnClosed();
  // Serves a peer's connected socket (cluster mode's replica fetches): BrokerServices.
  void AdoptPeer(int fd, NodeId peer);
};

void Server::Impl::Maintain() {
  // Wakes every second for flush.ms; retention runs every log.retention.check.interval.ms.
  const auto tick = std::chrono::milliseconds(
      std::min<int64_t>(1000, config.retention_check_interval_ms));
  const auto retention_every = std::chrono::milliseconds(config.retention_check_interval_ms);
  auto next_retention = std::chrono::steady_clock::now() + retention_every;
  std::unique_lock<std::mutex> lock(mu);
  for (;;) {
    cv.wait_for(lock, tick, [this] { return shut_down; });
    if (shut_down) return;
    lock.unlock();
    auto now = std::chrono::steady_clock::now();
    bool retention = now >= next_retention;
    if (retention) next_retention = now + retention_every;
    broker->Maintain(retention);
    lock.lock();
  }
}

void Server::Impl::OnClosed() {
  std::lock_guard<std::mutex> lock(mu);
  --open_connections;
  RequestMetrics::Get().OnConnectionClosed();
  cv.notify_all();
}

void Server::Impl::Accept() {
  acceptor.async_accept(asio::make_strand(io), [this](const asio::error_code& ec,
                                                      asio::ip::tcp::socket socket) {
    if (ec) {
      if (ec == asio::error::operation_aborted) return;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (!accepting) return;  // the acceptor was closed by Shutdown()
      }
      // EMFILE and friends: log, back off briefly, keep accepting.
      LogWarn("accept: " + ec.message());
      auto timer = std::make_shared<asio::steady_timer>(io, std::chrono::milliseconds(100));
      timer->async_wait([this, timer](const asio::error_code& e) {
        if (e) return;
        std::lock_guard<std::mutex> lock(mu);
        if (accepting) Accept();
      });
      return;
    }
    std::shared_ptr<Connection> conn;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!accepting) return;
      if (open_connections >= config.max_connections) {
        asio::error_code e2;
        auto ep = socket.remote_endpoint(e2);
        LogWarn("refusing connection from " + (e2 ? std::string("?") : ep.address().to_string()) +
                ": max.connections (" + std::to_string(config.max_connections) + ") reached");
        socket.close(e2);
      } else {
        ++open_connections;
        RequestMetrics::Get().OnConnectionOpened();
        conn = std::make_shared<Connection>(std::move(socket), &env);
        std::erase_if(connections, [](const std::weak_ptr<Connection>& c) { return c.expired(); });
        connections.push_back(conn);
      }
    }
    if (conn) {
      LogDebug("connection from " + conn->peer());
      conn->Start();
    }
    // The acceptor is touched only under mu: Shutdown closes it from another thread.
    std::lock_guard<std::mutex> lock(mu);
    if (accepting) Accept();
  });
}

void Server::Impl::AdoptPeer(int fd, NodeId peer) {
  std::shared_ptr<Connection> conn;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!accepting) {
      ::close(fd);
      return;
    }
    sockaddr_storage sa{};
    socklen_t len = sizeof(sa);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
      ::close(fd);
      return;
    }
    asio::ip::tcp::socket socket(asio::make_strand(io));
    asio::error_code ec;
    socket.assign(sa.ss_family == AF_INET6 ? asio::ip::tcp::v6() : asio::ip::tcp::v4(), fd, ec);
    if (ec) {
      LogWarn("peer connection from node " + std::to_string(peer.value()) + ": " + ec.message());
      ::close(fd);
      return;
    }
    socket.non_blocking(true, ec);
    ++open_connections;
    RequestMetrics::Get().OnPeerConnectionAdopted();  // OnClosed counts it out like any other
    conn = std::make_shared<Connection>(std::move(socket), &env, peer.value());
    std::erase_if(connections, [](const std::weak_ptr<Connection>& c) { return c.expired(); });
    connections.push_back(conn);
  }
  LogDebug("peer connection from node " + std::to_string(peer.value()) + " (" + conn->peer() + ")");
  conn->Start();
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() { (void)Shutdown(); }

const std::string& Server::host() const { return impl_->host; }
int Server::port() const { return impl_->port; }
int Server::metrics_port() const { return impl_->metrics ? impl_->metrics->port() : -1; }
Broker& Server::broker() { return *impl_->broker; }

Result<std::unique_ptr<Server>> Server::Start(const BrokerConfig& config,
                                             std::unique_ptr<ClusterMode> cluster) {
  // sendfile(2) to a socket the peer has closed raises SIGPIPE; a broker must see EPIPE instead.
  signal(SIGPIPE, SIG_IGN);
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  SILT_ASSIGN_OR_RETURN(impl->broker, Broker::Open(config, std::move(cluster)));
  impl->dispatcher = std::make_unique<Dispatcher>(&impl->broker->context());
  Impl* raw = impl.get();
  impl->env.dispatcher = impl->dispatcher.get();
  impl->env.max_request_bytes = config.socket_request_max_bytes;
  impl->env.max_in_flight = config.max_in_flight_per_connection;
  impl->pool = std::make_unique<HandlerPool>(config.handler_threads, config.queued_max_requests);
  impl->env.pool = impl->pool.get();
  impl->env.on_closed = [raw] { raw->OnClosed(); };

  asio::error_code ec;
  asio::ip::address addr = asio::ip::make_address(config.listen_host, ec);
  if (ec) {
    // A host name: resolve it.
    asio::ip::tcp::resolver resolver(impl->io);
    auto results = resolver.resolve(config.listen_host, std::to_string(config.listen_port), ec);
    if (ec || results.empty()) {
      return Status::InvalidArgument("cannot resolve listen host '" + config.listen_host +
                                     "': " + ec.message());
    }
    addr = results.begin()->endpoint().address();
  }
  asio::ip::tcp::endpoint ep(addr, static_cast<unsigned short>(config.listen_port));
  impl->acceptor.open(ep.protocol(), ec);
  if (!ec) impl->acceptor.set_option(asio::ip::tcp::acceptor::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(ep, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status::IOError("cannot listen on " + config.listen_host + ":" +
                           std::to_string(config.listen_port) + ": " + ec.message());
  }
  auto bound = impl->acceptor.local_endpoint(ec);
  impl->host = bound.address().to_string();
  impl->port = bound.port();
  std::string adv_host = config.advertised_host;
  if (adv_host.empty()) {
    adv_host = impl->host;
    // Clients cannot connect to the wildcard address: advertise loopback instead.
    if (adv_host == "0.0.0.0" || adv_host == "::") adv_host = "127.0.0.1";
  }
  int adv_port = config.advertised_port >= 0 ? config.advertised_port : impl->port;
  impl->broker->SetAdvertised(adv_host, adv_port);
  impl->broker->Serving([raw](int fd, NodeId peer) { raw->AdoptPeer(fd, peer); });

  if (config.metrics_port >= 0) {
    (void)RequestMetrics::Get();  // every request series exists from the first scrape
    impl->metrics_collector = AddBrokerCollector(&impl->broker->partitions(),
                                                 &impl->broker->metadata(),
                                                 &impl->broker->groups(),
                                                 impl->broker->node().node_id);
    auto m = MetricsHttpServer::Start(config.metrics_host, config.metrics_port);
    if (!m.ok()) {
      metrics::Default().RemoveCollector(impl->metrics_collector);
      return m.status();
    }
    impl->metrics = std::move(m).value();
    LogInfo("metrics on http://" + config.metrics_host + ":" +
            std::to_string(impl->metrics->port()) + "/metrics");
  }

  impl->work.emplace(asio::make_work_guard(impl->io));
  impl->Accept();
  int n = std::max(1, config.io_threads);
  for (int i = 0; i < n; ++i) impl->threads.emplace_back([raw] { raw->io.run(); });
  impl->maintenance = std::thread([raw] { raw->Maintain(); });
  std::string shown = bound.address().is_v6() ? "[" + impl->host + "]" : impl->host;
  LogInfo("listening on " + shown + ":" + std::to_string(impl->port) + " (advertised " +
          adv_host + ":" + std::to_string(adv_port) + ", node " + std::to_string(config.node_id) +
          ", cluster " + impl->broker->node().cluster_id + ", data dir " + config.data_dir + ", " +
          std::to_string(n) + " network threads, " + std::to_string(impl->pool->threads()) +
          " request handler threads)");
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Status Server::Shutdown() {
  Impl& s = *impl_;
  std::vector<std::shared_ptr<Connection>> conns;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.shut_down) return Status::OK();
    s.shut_down = true;
    s.accepting = false;
    for (auto& w : s.connections) {
      if (auto c = w.lock()) conns.push_back(std::move(c));
    }
    s.connections.clear();
  }
  s.cv.notify_all();  // wakes the maintenance thread, which sees shut_down
  if (s.metrics) {
    s.metrics->Stop();
    metrics::Default().RemoveCollector(s.metrics_collector);
  }
  if (s.maintenance.joinable()) s.maintenance.join();
  LogInfo("shutting down: " + std::to_string(conns.size()) + " connection(s) open");
  asio::post(s.io, [&s] {
    std::lock_guard<std::mutex> lock(s.mu);
    asio::error_code ec;
    s.acceptor.close(ec);
  });
  s.broker->BeginShutdown();
  for (auto& c : conns) c->StopReading();
  conns.clear();
  {
    // In-flight requests get a few seconds to be answered; then connections are cut.
    std::unique_lock<std::mutex> lock(s.mu);
    if (!s.cv.wait_for(lock, std::chrono::seconds(5), [&s] { return s.open_connections == 0; })) {
      LogWarn("shutdown: " + std::to_string(s.open_connections) +
              " connection(s) still busy after 5s; closing them");
    }
  }
  // Handlers still running answer into connections that are gone; none may outlive the broker.
  s.pool->Stop();
  s.work.reset();
  s.io.stop();
  for (auto& t : s.threads) t.join();
  s.threads.clear();
  Status st = s.broker->Close();
  if (st.ok()) {
    LogInfo("shutdown complete; data dir closed cleanly");
  } else {
    LogError("closing the data dir: " + st.ToString());
  }
  return st;
}

}  // namespace silt::broker
