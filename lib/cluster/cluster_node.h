// ClusterNode: `silt serve` in cluster mode. It runs the node's voter of the metadata quorum
// (RaftQuorum over the data dir's silt-metadata-raft/), serves the broker's metadata from the
// quorum's image, forwards metadata changes to the controller, and registers the node.
//
// - Metadata (broker::MetadataStore): topics, partitions, leaders, epochs and configs come from
//   the current MetadataImage. CreateTopic/DeleteTopic/AddPartitions/AlterTopicConfig build
//   metadata records (placement.h for new partitions) and propose them: on the controller
//   directly, elsewhere through a ForwardRequest to the controller's peer address
//   (controller_channel.h); they return once the change has been applied to this node's image.
// - Logs (broker::LogProvider): partitions this node holds a replica of are opened, in the data
//   dir (created there with the image's topic id on first use); once a broker serves, only by
//   the replica manager (replica_manager.h), which sets each one's role first. Any other
//   partition of a known topic is Status::NotLeader (NOT_LEADER_OR_FOLLOWER on the wire).
//   __consumer_offsets is such a topic too: the ready controller creates it
//   (offsets.topic.num.partitions partitions, offsets.topic.replication.factor replicas,
//   compacted) once enough brokers are up, and the store's change listener is told of each new
//   image (the broker's group coordinator follows its leaderships).
// - Replication: the replica manager (started once registered) follows the image: roles,
//   replica fetchers over "SILTKAFK" connections (which this node's broker serves for its
//   followers), ISR changes as AlterPartitionRecords, and an isolated leader's step-down.
// - Registration: once serving, the node proposes [ClusterIdRecord, RegisterBrokerRecord,
//   UnfenceBrokerRecord] as one command (retried until applied). The first command of a new
//   cluster's log so carries its cluster id, and a node with another cluster id is refused; so is
//   a node whose image shows another cluster id. Either is fatal: on_fatal is called once.
// - Producer ids: blocks of 1000 from the controller (a ProducerIdsRecord advancing the image's
//   next id by one block; the block is the 1000 ids below it), so they are unique cluster-wide.
//   The producer ids of batches appended to a mirror topic are reserved the same way (a
//   ProducerIdsRecord with reserved_producer_id, through the end of their block): every node
//   skips the reserved ids from then on, in the block it holds too, once its image has the
//   record (the leader that appended before it answers; another node as soon as the metadata
//   log reaches it). So before it hands out an id, a node passes a read barrier
//   (read_barrier.h): the controller confirms it still leads and names its commit index, and
//   the node waits for its image to apply that far; a reservation acknowledged before the
//   InitProducerId arrived is then in the image it checks. One round trip to the controller
//   serves every InitProducerId that arrived before it was sent; past read_barrier_timeout_ms
//   the request is answered with a retriable error (Status::Busy: COORDINATOR_LOAD_IN_PROGRESS).
// - Liveness: every broker.heartbeat.interval.ms a node sends a heartbeat to the controller
//   (from a thread of its own; the answer counts once the node's image has the controller's);
//   the ready controller proposes what its Controller (controller.h) decides: fencing and
//   unfencing, elections from the ISR, ISR removals, preferred leaders.
// - Controlled shutdown: Stop() first asks the controller to move this node's leaderships away
//   (ForwardKind::kShutdown) and waits, at most controlled.shutdown.timeout.ms, until the image
//   shows it leads nothing.
// - Once registered (so caught up with the log), a background thread deletes the local logs of
//   topics the image no longer has and keeps the local topics' configs and partition counts in
//   line with the image.
//
// Threads: the quorum's completions run inline on its loop thread and only fulfil promises;
// proposals block the calling thread (an io thread for admin requests) for at most
// proposal_timeout_ms. Each forwarded connection to the controller gets a thread.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/ids.h"
#include "base/status.h"
#include "broker/cluster_mode.h"
#include "broker/config.h"
#include "cluster/voters.h"

namespace silt::cluster {

struct ClusterNodeOptions {
  NodeId node_id;
  // The metadata quorum's voters. A node whose id is not among them is a broker-only node
  // (Kafka's process.roles=broker): it needs broker_peer, holds no Raft log and follows the
  // controller's image (metadata_observer.h).
  std::vector<Voter> voters;
  // A broker-only node's own peer address (replica fetches from its followers come there; it
  // is in its registration, so the other nodes find it). Ignored for a voter.
  std::optional<Voter> broker_peer;
  std::string cluster_id;       // what CheckNodeDirectory returned
  broker::BrokerConfig config;  // the broker's (data dir, topic defaults)
  // The metadata quorum's Raft timers. The election timeout (libraft draws each one between it
  // and twice it) stays below broker.session.timeout.ms, so that a new controller is usually
  // in place before the other brokers' sessions run out when the controller dies.
  unsigned election_timeout_ms = 500;
  unsigned heartbeat_timeout_ms = 100;
  int proposal_timeout_ms = 15000;
  // How long a producer id waits for the read barrier (see Producer ids above).
  int read_barrier_timeout_ms = 2000;
  // For tests: called on the quorum's thread before each metadata command is applied to this
  // node's image (it may block there, holding the image back).
  std::function<void()> before_apply;
  // Called once, from a cluster thread, when this node must not go on (another cluster id).
  std::function<void(const Status&)> on_fatal;
};

class ClusterNode final : public broker::ClusterMode {
 public:
  // Validates the options and checks the data dir (node_directory.h): InvalidArgument naming
  // what is wrong. Nothing is started yet.
  static Result<std::unique_ptr<ClusterNode>> Create(ClusterNodeOptions options);
  ~ClusterNode() override;

  // Starts the quorum (IOError when the peer address cannot be bound) and records the node as
  // a voter in meta.properties.
  Status Start(broker::LocalMetadataStore* local, const broker::NodeIdentity* node) override;
  broker::MetadataStore& metadata() override;
  broker::LogProvider& logs() override;
  broker::ProducerIdAllocator* producer_ids() override;
  // BROKER ConfigRecords of the image: the cluster default ("") and this node's id.
  broker::BrokerConfigStore* broker_configs() override;
  void Serving(const broker::BrokerServices& services) override;
  // Controlled shutdown first (see above; skipped when controlled.shutdown.enable is false,
  // before registration, or when no other broker is unfenced), then the threads and the quorum.
  void Stop() override;

  // The cluster id this node runs with (given, or recorded in meta.properties).
  const std::string& cluster_id() const;

  struct Impl;

 private:
  explicit ClusterNode(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace silt::cluster
