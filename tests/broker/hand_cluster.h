// A broker in (test) cluster mode whose partitions are given roles by hand: cluster mode reduced
// to the data dir's own metadata and logs, the services the broker hands over once it serves,
// and peer connections made the way cluster mode hands over a socket
// (BrokerServices::adopt_peer_connection), so that a test can fetch as a follower.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "broker/cluster_mode.h"
#include "broker/local_metadata_store.h"
#include "broker/partition.h"
#include "broker/partition_manager.h"
#include "broker_test_util.h"

namespace silt::broker::testing {

class HandCluster : public ClusterMode {
 public:
  explicit HandCluster(BrokerServices* out) : out_(out) {}
  Status Start(LocalMetadataStore* local, const NodeIdentity*) override {
    local_ = local;
    return Status::OK();
  }
  MetadataStore& metadata() override { return *local_; }
  LogProvider& logs() override { return *local_; }
  void Serving(const BrokerServices& services) override { *out_ = services; }
  void Stop() override {}

 private:
  BrokerServices* out_;
  LocalMetadataStore* local_ = nullptr;
};

// Node `node_id` on 127.0.0.1, an ephemeral port and a temporary data dir; `config` may set
// more (the metrics listener) before the start.
struct HandClusterBroker {
  explicit HandClusterBroker(BrokerConfig c = {}, int node_id = 1) : config(std::move(c)) {
    SetLogLevel(LogLevel::kError);
    data_dir = TempDir();
    config.listen_host = "127.0.0.1";
    config.listen_port = 0;
    config.data_dir = data_dir;
    config.node_id = node_id;
    Start();
  }
  ~HandClusterBroker() {
    server.reset();
    (void)RemoveAll(data_dir);
  }
  void Start() {
    auto s = Server::Start(config, std::make_unique<HandCluster>(&services));
    REQUIRE_MESSAGE(s.ok(), s.status().ToString());
    server = std::move(s).value();
    port = server->port();
    REQUIRE(services.adopt_peer_connection);
  }
  void Restart() {
    REQUIRE(server->Shutdown().ok());
    server.reset();
    services = {};
    Start();
  }
  std::shared_ptr<Partition> Get(const std::string& topic) {
    auto r = services.partitions->Get(topic, PartitionId(0));
    REQUIRE_MESSAGE(r.ok(), r.status().ToString());
    return *r;
  }
  // A connection that the broker serves as node `peer`'s peer connection.
  std::unique_ptr<Client> Peer(NodeId peer) {
    int lfd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(lfd >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(lfd, 1) == 0);
    socklen_t len = sizeof a;
    REQUIRE(::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    auto c = std::make_unique<Client>(ntohs(a.sin_port));
    int fd = ::accept(lfd, nullptr, nullptr);
    ::close(lfd);
    REQUIRE(fd >= 0);
    services.adopt_peer_connection(fd, peer);
    return c;
  }

  BrokerConfig config;
  std::string data_dir;
  BrokerServices services;
  std::unique_ptr<Server> server;
  int port = 0;
};

}  // namespace silt::broker::testing
