// This node's identity: its node id, the cluster it belongs to, and where clients reach it.
// The cluster id and node id are kept in the data dir's `meta.properties` (Kafka's file:
// version=1, cluster.id, node.id) so that a node restarted on its directory keeps them.
#pragma once

#include <string>

#include "base/ids.h"
#include "base/status.h"

namespace silt::broker {

struct NodeIdentity {
  NodeId node_id{0};
  std::string cluster_id;
  // Where clients are told to connect; set once the listener is bound, before serving.
  std::string advertised_host;
  int advertised_port = 0;

  // Reads `<data_dir>/meta.properties`, creating it (with `cluster_id`, or a new id when that
  // is empty) when missing. InvalidArgument when `cluster_id` is given and differs from the one
  // stored.
  static Result<NodeIdentity> Load(const std::string& data_dir, NodeId node_id,
                                   const std::string& cluster_id);
};

}  // namespace silt::broker
