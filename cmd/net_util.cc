// Network-mode helpers (see net_util.h).
#include "cmd/net_util.h"

#include <CLI/CLI.hpp>

#include "client/admin.h"
#include "client/cluster.h"
#include "client/local_admin.h"
#include "cmd/cli_util.h"
#include "storage/data_dir.h"

namespace silt::cmd {

void AddBootstrapOption(CLI::App* app, GlobalOptions* g) {
  app->add_option("-b,--bootstrap-server", g->bootstrap,
                  "work over the network against the Kafka cluster at HOST:PORT[,HOST:PORT...] "
                  "instead of a data directory")
      ->type_name("HOST:PORT");
}

Result<std::unique_ptr<client::Cluster>> ConnectCluster(const GlobalOptions& g) {
  SILT_ASSIGN_OR_RETURN(auto bootstrap, client::ParseBootstrap(g.bootstrap));
  client::ClusterOptions o;
  o.bootstrap = std::move(bootstrap);
  o.client_id = "silt";
  return client::Cluster::Connect(o);
}

Result<std::unique_ptr<client::Admin>> OpenAdmin(const GlobalOptions& g, bool writable) {
  if (NetworkMode(g)) {
    SILT_ASSIGN_OR_RETURN(std::unique_ptr<client::Cluster> c, ConnectCluster(g));
    return client::NewNetAdmin(std::move(c));
  }
  SILT_ASSIGN_OR_RETURN(std::unique_ptr<storage::DataDir> dir, OpenDataDir(g, writable));
  return client::NewLocalAdmin(std::move(dir));
}

}  // namespace silt::cmd
