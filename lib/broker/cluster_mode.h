// The seam cluster mode plugs into a Broker: a metadata store and log provider that replace the
// data directory's own (lib/cluster implements it over the replicated metadata image). Without
// one the broker is a single node, exactly as before.
#pragma once

#include "base/status.h"
#include "broker/metadata_store.h"
#include "broker/node.h"
#include "broker/producer_ids.h"

namespace silt::broker {

class LocalMetadataStore;

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
  // The listener is bound and the advertised address known: the node announces itself.
  virtual void Serving() = 0;
  // Stops the cluster's threads; later metadata changes fail, reads keep answering from the last
  // image. Idempotent; blocks at most for the node's controlled shutdown (handing its
  // leaderships over, bounded by controlled.shutdown.timeout.ms) and then briefly.
  virtual void Stop() = 0;
};

}  // namespace silt::broker
