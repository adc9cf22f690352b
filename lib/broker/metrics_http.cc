// The /metrics HTTP server (see metrics_http.h). The only file that includes httplib.h.
#include "broker/metrics_http.h"

#include <httplib.h>

#include <thread>

#include "base/metrics.h"

namespace silt::broker {

struct MetricsHttpServer::Impl {
  httplib::Server http;
  std::thread thread;
  int port = 0;
};

Result<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(const std::string& host,
                                                                    int port) {
  auto impl = std::make_unique<Impl>();
  httplib::Server& s = impl->http;
  // Scrapes are small and rare: two threads are plenty, and bound what a flood can take.
  s.new_task_queue = [] { return new httplib::ThreadPool(2); };
  s.set_read_timeout(5, 0);
  s.set_write_timeout(5, 0);
  s.set_keep_alive_max_count(10);
  s.Get("/metrics", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics::Default().Render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  s.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.status == 404) res.set_content("not found: only GET /metrics\n", "text/plain");
  });
  if (port == 0) {
    impl->port = s.bind_to_any_port(host);
    if (impl->port < 0) return Status::IOError("metrics: cannot bind " + host + ":0");
  } else {
    if (!s.bind_to_port(host, port))
      return Status::IOError("metrics: cannot bind " + host + ":" + std::to_string(port));
    impl->port = port;
  }
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->http.listen_after_bind(); });
  return std::unique_ptr<MetricsHttpServer>(new MetricsHttpServer(std::move(impl)));
}

MetricsHttpServer::MetricsHttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MetricsHttpServer::~MetricsHttpServer() { Stop(); }

int MetricsHttpServer::port() const { return impl_->port; }

void MetricsHttpServer::Stop() {
  if (!impl_->thread.joinable()) return;
  impl_->http.stop();
  impl_->thread.join();
}

}  // namespace silt::broker
