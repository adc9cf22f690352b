// Helpers of the subcommands' network mode (-b/--bootstrap-server): the flag, connecting, and
// the Admin of either mode.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "cmd/command.h"

namespace silt::client {
class Admin;
class Cluster;
}

namespace silt::cmd {

// Adds -b/--bootstrap-server to `app`, bound to g->bootstrap.
void AddBootstrapOption(CLI::App* app, GlobalOptions* g);

// True when the command runs against a cluster rather than a data directory.
inline bool NetworkMode(const GlobalOptions& g) { return !g.bootstrap.empty(); }

// Connects to the cluster named by g.bootstrap (the first reachable broker).
Result<std::unique_ptr<client::Cluster>> ConnectCluster(const GlobalOptions& g);

// The admin of the cluster (with -b) or of the data directory, opened writable (taking its
// lock) when `writable`; a data dir's Admin::Close() must then be called to release it cleanly.
Result<std::unique_ptr<client::Admin>> OpenAdmin(const GlobalOptions& g, bool writable);

}  // namespace silt::cmd
