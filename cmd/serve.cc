// `silt serve`: run a broker that speaks the Kafka protocol over a data directory, alone or, with
// a voter list (--peers / controller.quorum.voters), as one node of a cluster.
// Flags override the properties file (-c), which overrides the defaults.
#include <CLI/CLI.hpp>

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>

#include "broker/config.h"
#include "broker/logging.h"
#include "broker/server.h"
#include "cluster/cluster_node.h"
#include "cluster/voters.h"
#include "cmd/cli_util.h"
#include "cmd/command.h"
#include "cmd/usage.h"
#include "offsets/local.h"

namespace silt::cmd {
namespace {

struct ServeFlags {
  std::string config_file;
  std::string data_dir;
  std::string listen;
  std::string advertised;
  std::string metrics_listen;
  int32_t node_id = -1;
  std::string peers;
  std::string peer_listen;
  std::string cluster_id;
  std::vector<std::string> sets;
  std::string log_level = "info";
};

int RunServe(const ServeFlags& f, GlobalOptions* global) {
  broker::LogLevel level;
  if (!broker::ParseLogLevel(f.log_level, &level)) {
    return Fail("--log-level: expected debug, info, warn or error, got '" + f.log_level + "'");
  }
  broker::SetLogLevel(level);

  broker::BrokerConfig config;
  config.data_dir = global->data_dir;
  if (!f.config_file.empty()) {
    Status s = broker::LoadServerProperties(f.config_file, &config);
    if (!s.ok()) return Fail(s);
  }
  for (const std::string& kv : f.sets) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) return Fail("--set: expected key=value, got '" + kv + "'");
    Status s = broker::ApplyServerProperty(&config, kv.substr(0, eq), kv.substr(eq + 1));
    if (s.IsNotFound())
      return Fail("--set: unknown broker config '" + kv.substr(0, eq) + "'" +
                  DidYouMean(kv.substr(0, eq), broker::KnownServerProperties()));
    if (!s.ok()) return Fail(s.message().empty() ? s.ToString() : "--set: " + s.message());
  }
  if (!f.data_dir.empty()) config.data_dir = f.data_dir;
  if (!f.listen.empty()) {
    Status s = broker::ParseHostPort(f.listen, &config.listen_host, &config.listen_port);
    if (!s.ok()) return Fail("--listen: " + s.message());
  }
  if (!f.advertised.empty()) {
    Status s = broker::ParseHostPort(f.advertised, &config.advertised_host, &config.advertised_port);
    if (!s.ok()) return Fail("--advertised-listener: " + s.message());
  }
  if (!f.metrics_listen.empty()) {
    Status s = broker::ParseHostPort(f.metrics_listen, &config.metrics_host, &config.metrics_port);
    if (!s.ok()) return Fail("--metrics: " + s.message());
  }
  if (f.node_id >= 0) config.node_id = f.node_id;
  if (!f.peers.empty()) config.quorum_voters = f.peers;
  if (!f.cluster_id.empty()) config.cluster_id = f.cluster_id;
  if (Status st = CheckCanCreateDataDir(config.data_dir); !st.ok()) return Fail(st);

  // Cluster mode: checked before anything is opened, so a wrong node id, cluster id or a lost
  // Raft directory is refused with the data dir untouched.
  std::unique_ptr<cluster::ClusterNode> cluster_node;
  static std::mutex fatal_mu;
  static std::string fatal_message;
  if (!config.quorum_voters.empty()) {
    auto voters = cluster::ParseVoters(config.quorum_voters);
    if (!voters.ok()) return Fail("--peers: " + voters.status().message());
    if (config.node_id <= 0) return Fail("cluster mode needs a positive --node-id (node.id)");
    cluster::ClusterNodeOptions o;
    o.node_id = NodeId(config.node_id);
    o.voters = *voters;
    if (!cluster::FindVoter(*voters, o.node_id)) {
      // A broker-only node (Kafka's process.roles=broker): its peer address is its own.
      if (f.peer_listen.empty()) {
        return Fail("node " + std::to_string(config.node_id) + " is not in --peers: a "
                    "broker-only node needs --peer-listen HOST:PORT");
      }
      auto peer = cluster::ParseVoters(std::to_string(config.node_id) + "@" + f.peer_listen);
      if (!peer.ok()) return Fail("--peer-listen: " + peer.status().message());
      o.broker_peer = peer->front();
    } else if (!f.peer_listen.empty()) {
      return Fail("--peer-listen is for a broker-only node; a voter binds its --peers entry");
    }
    o.cluster_id = config.cluster_id;
    o.config = config;
    o.on_fatal = [](const Status& s) {
      {
        std::lock_guard<std::mutex> lock(fatal_mu);
        fatal_message = s.message();
      }
      kill(getpid(), SIGTERM);  // wakes the sigwait below; shutdown runs there
    };
    auto node = cluster::ClusterNode::Create(std::move(o));
    if (!node.ok()) return Fail(node.status().message());
    cluster_node = std::move(node).value();
    // meta.properties may have supplied it.
    config.cluster_id = cluster_node->cluster_id();
  }
  // A key of a stock Kafka file that means nothing here is noted; one no broker knows is most
  // likely a typo, and is named with the nearest key.
  for (const std::string& k : config.ignored_keys) {
    broker::BrokerConfig scratch;
    if (broker::ApplyServerProperty(&scratch, k, "").IsNotFound())
      broker::LogWarn("unknown config key '" + k + "' in " + f.config_file +
                      DidYouMean(k, broker::KnownServerProperties()) + "; ignored");
    else
      broker::LogWarn("config key '" + k + "' has no effect on this broker; ignored");
  }

  // Block the stop signals in every thread (the io threads inherit this mask) and wait for them
  // here, so shutdown runs on this thread and never inside a signal handler. SIGPIPE is ignored:
  // a client that goes away shows up as a write error, not a dead broker.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto server = broker::Server::Start(config, std::move(cluster_node));
  if (!server.ok()) {
    // Start-up failures end like every other command's errors: one line, exit 2.
    const Status& st = server.status();
    if (st.IsBusy()) {
      if (auto pid = offsets::RunningBrokerPid(config.data_dir))
        return Fail("cannot start: a broker (pid " + std::to_string(*pid) +
                    ") is already running on data directory " + config.data_dir +
                    "; stop it, or give this one another -d DIR");
    }
    return Fail("cannot start: " + (st.message().empty() ? st.ToString() : st.message()));
  }
  int sig = 0;
  sigwait(&stop, &sig);
  std::string fatal;
  {
    std::lock_guard<std::mutex> lock(fatal_mu);
    fatal = fatal_message;
  }
  if (fatal.empty()) {
    broker::LogInfo(std::string("received ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") +
                    ", shutting down");
  }
  Status s = (*server)->Shutdown();
  if (!fatal.empty()) return Fail(fatal);
  return s.ok() ? kExitOk : kExitError;
}

}  // namespace

RunFn RegisterServe(CLI::App* sub, GlobalOptions* global) {
  auto f = std::make_shared<ServeFlags>();
  sub->add_option("-c,--config", f->config_file,
                  "server.properties file (Kafka's key names); flags override it")
      ->type_name("FILE");
  sub->add_option("-d,--data-dir", f->data_dir,
                  "data directory (default: log.dirs, else $SILT_DATA_DIR, else ./silt-data)")
      ->type_name("DIR");
  sub->add_option("--listen", f->listen,
                  "address to listen on, HOST:PORT (default 127.0.0.1:9092; port 0 picks one)");
  sub->add_option("--advertised-listener", f->advertised,
                  "HOST:PORT clients are told to connect to (default: the bound address)");
  sub->add_option("--metrics", f->metrics_listen,
                  "serve Prometheus metrics at http://HOST:PORT/metrics (metrics.listener; "
                  "default: off)")
      ->type_name("HOST:PORT");
  sub->add_option("--node-id", f->node_id, "this broker's node id (default 0)")
      ->check(NonNegative());
  sub->add_option("--peers", f->peers,
                  "cluster mode: every node's peer address, ID@HOST:PORT,... "
                  "(controller.quorum.voters); this node binds its own entry");
  sub->add_option("--peer-listen", f->peer_listen,
                  "cluster mode, a node not in --peers (a broker only, no vote): its own peer "
                  "address")
      ->type_name("HOST:PORT");
  sub->add_option("--cluster-id", f->cluster_id,
                  "cluster id, the same on every node (cluster.id; required for a new node)");
  sub->add_option("--set", f->sets, "set a broker config, key=value (repeatable)");
  sub->add_option("--log-level", f->log_level, "debug, info, warn or error (default info)");
  return [f, global] { return RunServe(*f, global); };
}

}  // namespace silt::cmd
