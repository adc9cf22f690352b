// Network-mode helpers (see net_util.h).
#include "cmd/net_util.h"

#include <CLI/CLI.hpp>

#include "client/cluster.h"

namespace silt::cmd {

void AddBootstrapOption(CLI::App* app, GlobalOptions* g) {
  app->add_option("-b,--bootstrap-server", g->bootstrap,
                  "work over the network against the Kafka cluster at HOST:PORT[,HOST:PORT...] "
                  "instead of a data directory");
}

Result<std::unique_ptr<client::Cluster>> ConnectCluster(const GlobalOptions& g) {
  SILT_ASSIGN_OR_RETURN(auto bootstrap, client::ParseBootstrap(g.bootstrap));
  client::ClusterOptions o;
  o.bootstrap = std::move(bootstrap);
  o.client_id = "silt";
  return client::Cluster::Connect(o);
}

}  // namespace silt::cmd
