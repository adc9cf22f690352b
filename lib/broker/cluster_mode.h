// The seam cluster mode plugs into a Broker: a metadata store and log provider that replace the
// data directory's own (lib/cluster implements it over the replicated metadata image). Without
// one the broker is a single node, exactly as before.
#pragma once

#include <functional>

#include "base/ids.h"
#include "base/status.h"
#include "broker/metadata_store.h"
#include "broker/node.h"
#include "broker/producer_ids.h"

namespace silt::broker {

class BrokerConfigStore;
class LocalMetadataStore;
class PartitionManager;

// What the broker hands cluster mode once it serves: its partitions (the replica manager sets
// each one's role, leader or follower, from the metadata) and a way to serve a peer's
// Kafka-protocol connection (a follower's replica fetches arriving at the peer address).
struct BrokerServices {
  PartitionManager* partitions = nullptr;
  // Serves the connected socket `fd` (ownership passes; any preamble already read) like a
  // client connection whose requests carry Request::peer_node = `peer`. Thread-safe; after
  // the broker stops it closes `fd` at once.
  std::function<void(int fd, NodeId peer)> adopt_peer_connection;
  // Takes this node's dynamic broker configs again from broker_configs() (called after each
  // new image is reconciled). Thread-safe; may be empty.
  std::function<void()> reload_broker_configs;
};

class ClusterMode {
 public:
  virtual ~ClusterMode() = default;

  // Called by Broker::Open once the data directory is open and the node identity loaded. `local`
  // (the data dir, where this node keeps the logs it leads) and `node` outlive this object;
  // `node`'s advertised address is set before Serving() is called. A non-OK Status fails Open.
  virtual Status Start(LocalMetadataStore* local, const NodeIdentity* node) = 0;
  // What the handlers use instead of the data dir's store; valid after Start.
  virtual MetadataStore& metadata() = 0;
  virtual LogProvider& logs() = 0;
  // Producer ids unique across the cluster; nullptr: the data dir's own counter.
  virtual ProducerIdAllocator* producer_ids() { return nullptr; }
  // Where the dynamic broker configs are kept (the metadata log); valid after Start. nullptr:
  // cluster mode keeps none, and BROKER resources are read-only.
  virtual BrokerConfigStore* broker_configs() { return nullptr; }
  // The listener is bound and the advertised address known: the node announces itself.
  // `services` stay valid until Stop() returns.
  virtual void Serving(const BrokerServices& services) = 0;
  // Stops the cluster's threads; later metadata changes fail, reads keep answering from the last
  // image. Idempotent; blocks at most for the node's controlled shutdown (handing its
  // leaderships over, bounded by controlled.shutdown.timeout.ms) and then briefly.
  virtual void Stop() = 0;
};

}  // namespace silt::broker
