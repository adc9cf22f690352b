// Partition reassignment (Kafka's KIP-455) as functions of the metadata image: the
// PartitionChangeRecords that start, complete and cancel a move of a partition's replicas.
// Nothing here proposes or does I/O; the controller (controller.h) completes reassignments on
// its ticks and ClusterNode proposes what the admin requests start or cancel.
//
// A reassignment of a partition whose replicas are O (the original set) to the target T:
// 1. start: replicas = T followed by O - T, adding_replicas = T - O, removing_replicas = O - T
//    (the new replicas start fetching from the leader as followers; the leader adds them to the
//    ISR once caught up, by the usual AlterPartition);
// 2. complete, once every replica of T is in the ISR: replicas = T, ISR = ISR ∩ T, no adding
//    or removing replicas; a leader outside T (or unable to lead) gives way to the first
//    replica of T in the ISR that can lead. A target within O completes at once when T is
//    already in the ISR.
// 3. cancel (a null target): replicas = O, ISR = ISR ∩ O, the leader re-elected from O when it
//    was one of the adding replicas.
// A new target for a partition already being reassigned starts from its original replicas
// (replicas - adding_replicas), as in Kafka.
// Every change carries the partition epoch it was decided on (expected_partition_epoch), so a
// change applied in between (an ISR change) refuses it and it is decided again.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/ids.h"
#include "base/status.h"
#include "cluster/metadata_image.h"
#include "cluster/metadata_records.h"

namespace silt::cluster {

// The reassignment throttle, silt's own topic config (Kafka's counterpart is the pair of
// leader/follower.replication.throttled.rate broker configs with the topic's
// *.replication.throttled.replicas): each leader serves the replica fetches of a partition's
// adding replicas at most this many bytes per second, over all the topic's partitions it leads
// (a token bucket holding at most one second's worth). Other replicas and consumers are never
// throttled. Unset: no throttle.
inline constexpr const char* kReassignmentThrottleKey = "replica.reassignment.throttle.bytes";

// The replicas a partition had before its reassignment (all of them when none is under way).
std::vector<NodeId> OriginalReplicas(const PartitionImage& p);
// The replicas a partition is being moved to (its replicas when no reassignment is under way).
std::vector<NodeId> TargetReplicas(const PartitionImage& p);

// The change that starts moving partition `partition` of `topic` to `target` (completed at once
// when possible, see above). InvalidArgument whose message starts with
// "INVALID_REPLICA_ASSIGNMENT" for an empty target, a replica listed twice, or one that is not a
// registered broker.
Result<PartitionChangeRecord> StartReassignment(const MetadataImage& img,
                                                const TopicImage& topic, int32_t partition,
                                                const std::vector<NodeId>& target);

// The change that cancels the partition's reassignment. InvalidArgument starting with
// "NO_REASSIGNMENT_IN_PROGRESS" when none is under way; starting with
// "INVALID_REPLICA_ASSIGNMENT" when no original replica is left in the ISR to go back to.
Result<PartitionChangeRecord> CancelReassignment(const TopicImage& topic, int32_t partition);

// The change that completes the partition's reassignment, when every target replica is in the
// ISR and one of them can lead (`can_lead` as for Elect); nullopt otherwise, and for a
// partition that is not being reassigned.
std::optional<PartitionChangeRecord> CompleteReassignment(
    const TopicImage& topic, int32_t partition, const std::function<bool(NodeId)>& can_lead);

// One partition being reassigned (ListPartitionReassignments' answer).
struct OngoingReassignment {
  std::string topic;
  int32_t partition = 0;
  std::vector<NodeId> replicas;
  std::vector<NodeId> adding_replicas;
  std::vector<NodeId> removing_replicas;
};
// Every partition of the image under reassignment, by topic name then partition.
std::vector<OngoingReassignment> OngoingReassignments(const MetadataImage& img);

// ElectLeaders (KIP-460) for one partition, on request. Preferred: the first replica leads when
// it is in the ISR and a registered, unfenced broker (else PREFERRED_LEADER_NOT_AVAILABLE;
// ELECTION_NOT_NEEDED when it leads already). Unclean: only for a partition without a leader
// that can lead (else ELECTION_NOT_NEEDED); Elect's rules with the unclean election allowed
// (ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica is live). Those refusals are InvalidArgument
// starting with the error's name; NotFound for an unknown partition.
Result<PartitionChangeRecord> DecideElection(const MetadataImage& img, const TopicImage& topic,
                                             int32_t partition, bool unclean);

// Whether `replica` is one of the adding replicas of the partition (whose replica fetches the
// reassignment throttle applies to).
bool IsAddingReplica(const PartitionImage& p, NodeId replica);

}  // namespace silt::cluster
