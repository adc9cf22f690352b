// Helpers of the subcommands' network mode (-b/--bootstrap-server): the flag and connecting.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "cmd/command.h"

namespace silt::client {
class Cluster;
}

namespace silt::cmd {

// Adds -b/--bootstrap-server to `app`, bound to g->bootstrap.
void AddBootstrapOption(CLI::App* app, GlobalOptions* g);

// True when the command runs against a cluster rather than a data directory.
inline bool NetworkMode(const GlobalOptions& g) { return !g.bootstrap.empty(); }

// Connects to the cluster named by g.bootstrap (the first reachable broker).
Result<std::unique_ptr<client::Cluster>> ConnectCluster(const GlobalOptions& g);

}  // namespace silt::cmd
