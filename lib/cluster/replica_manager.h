// The replica manager: gives every partition this node holds a replica of the role the metadata
// image says (Kafka's ReplicaManager.applyDelta / makeLeaders / makeFollowers), runs the replica
// fetchers for the partitions it follows, and, on the partitions it leads, shrinks and expands the
// ISR through the controller (Kafka's Partition.maybeShrinkIsr / maybeExpandIsr and
// AlterPartitionManager).
//
// - Roles: for each partition whose replicas include this node, the broker's Partition (from
//   PartitionManager, opened here: cluster mode's LogProvider opens logs only for this thread,
//   so no client request meets a partition before it has its role) gets BecomeLeader (leader
//   epoch, partition epoch, replicas, ISR) when the image names this node leader, or
//   BecomeFollower (epoch, leader) and a place in the leader's fetcher otherwise, whenever the
//   leader, the leader epoch or the Partition object changed. A leader whose ISR changed in the
//   image gets SetIsr. Partitions no longer assigned here leave the fetchers (cluster mode closes
//   them; their files stay).
// - ISR: every replica.lag.time.max.ms / 2 the leader drops followers not caught up for
//   replica.lag.time.max.ms (Kafka's rule: a follower at the leader's log end is caught up);
//   every tick it adds a follower whose log end is at least the high watermark and the leader
//   epoch's start offset, if it fetched within the lag and its broker is unfenced (KIP-841). A change is an AlterPartitionRecord (the leader's epoch and the
//   partition epoch it was based on) proposed to the controller, one in flight per partition;
//   the image's apply checks it (metadata_records.h). The ISR used for the high watermark is the
//   maximal one (Kafka's maximalIsr): an addition counts at once, a removal only once the image
//   shows it; a refused change falls back to the image's ISR.
// - Isolation: while this node's heartbeats have gone unanswered by a ready controller for
//   broker.session.timeout.ms, its partitions stop leading (BecomeFollower of no leader:
//   NOT_LEADER_OR_FOLLOWER to producers), until a heartbeat is answered and the image still
//   names it leader.
//
// Thread-safety: Start/Stop/Wake from any thread; the work runs on the manager's own thread and,
// for proposals, on one more.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <optional>
#include <vector>

#include "base/ids.h"
#include "base/status.h"
#include "broker/partition.h"
#include "cluster/metadata_image.h"
#include "cluster/replica_fetcher.h"
#include "cluster/voters.h"

namespace silt::broker {
class PartitionManager;
}

namespace silt::cluster {

struct ReplicaManagerOptions {
  NodeId self;
  std::vector<Voter> voters;
  ReplicaFetchConfig fetch;
  int32_t replica_lag_time_max_ms = 10000;    // replica.lag.time.max.ms (Kafka: 30000)
  int32_t broker_session_timeout_ms = 1500;  // broker.session.timeout.ms
  broker::PartitionManager* partitions = nullptr;
  // The current metadata image.
  std::function<std::shared_ptr<const MetadataImage>()> image;
  // Proposes records to the controller; OK once applied on this node (blocks, bounded).
  std::function<Status(const std::vector<MetadataRecord>&)> propose;
  // MonotonicMs of the last heartbeat a ready controller answered (this node's own, when it is
  // the ready controller).
  std::function<int64_t()> last_controller_contact_ms;
};

// True on the replica manager's thread while it opens partitions: cluster mode's LogProvider
// opens a replica's log only then.
bool OpeningForReplicaManager();

// ISR decisions, pure functions (Kafka's Partition.getOutOfSyncReplicas and isFollowerInSync).
// `now_ms` and the followers' last_caught_up_ms are on the same monotonic clock.
//
// The ISR without the followers not caught up for `lag_max_ms` (the leader `self` always stays);
// nullopt when nobody is dropped.
std::optional<std::vector<NodeId>> ShrinkIsr(const std::vector<NodeId>& isr, NodeId self,
                                             const std::vector<broker::Partition::FollowerState>& followers,
                                             Offset leader_log_end, int64_t now_ms,
                                             int64_t lag_max_ms);
// The ISR with every replica outside it whose log end is at least `high_watermark` and
// `epoch_start` (the leader epoch's start offset); nullopt when nobody is added.
std::optional<std::vector<NodeId>> ExpandIsr(const std::vector<NodeId>& isr,
                                             const std::vector<NodeId>& replicas,
                                             const std::vector<broker::Partition::FollowerState>& followers,
                                             Offset high_watermark, Offset epoch_start);

// The followers that may join the ISR now: on a broker the image has unfenced (KIP-841),
// fetching within `lag_max_ms`, and, for one the leader has seen leave the ISR (the controller
// dropped it: fenced, or in a controlled shutdown), fetching again since it left
// (`left_isr_ms`: node id -> MonotonicMs of the change). Without the last rule a broker in
// controlled shutdown, still unfenced and with a recent last fetch, was added back at once, and
// leader and controller traded the ISR change back and forth, each one bumping the partition
// epoch on which the controller's own elections were decided.
std::vector<broker::Partition::FollowerState> IsrCandidates(
    const std::vector<broker::Partition::FollowerState>& followers,
    const std::set<int32_t>& unfenced, const std::map<int32_t, int64_t>& left_isr_ms,
    int64_t now_ms, int64_t lag_max_ms);

class ReplicaManager {
 public:
  explicit ReplicaManager(ReplicaManagerOptions options);
  ~ReplicaManager();  // Stop()
  ReplicaManager(const ReplicaManager&) = delete;
  ReplicaManager& operator=(const ReplicaManager&) = delete;

  // Starts the manager's threads (call once the node's image is caught up).
  void Start();
  // Runs a reconciliation soon (a new image, a request that met a partition not yet opened).
  void Wake();
  // Stops the fetchers and the threads. Idempotent.
  void Stop();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace silt::cluster
