// Partition reassignment (reassignment.h).
#include "cluster/reassignment.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "cluster/controller.h"

namespace silt::cluster {
namespace {

bool Contains(const std::vector<NodeId>& v, NodeId n) {
  return std::find(v.begin(), v.end(), n) != v.end();
}

std::vector<NodeId> Minus(const std::vector<NodeId>& a, const std::vector<NodeId>& b) {
  std::vector<NodeId> out;
  for (NodeId n : a) {
    if (!Contains(b, n)) out.push_back(n);
  }
  return out;
}

std::vector<NodeId> Intersect(const std::vector<NodeId>& a, const std::vector<NodeId>& b) {
  std::vector<NodeId> out;
  for (NodeId n : a) {
    if (Contains(b, n)) out.push_back(n);
  }
  return out;
}

const PartitionImage* Find(const TopicImage& t, int32_t p) {
  auto it = t.partitions.find(p);
  return it == t.partitions.end() ? nullptr : &it->second;
}

// The completion of `p` towards `target` as a change of `base` (the record to fill), or false
// when some target replica is not in the ISR or none of them can lead.
bool FillCompletion(const PartitionImage& p, const std::vector<NodeId>& target,
                    const std::function<bool(NodeId)>& can_lead, PartitionChangeRecord* out) {
  for (NodeId n : target) {
    if (!Contains(p.isr, n)) return false;
  }
  std::vector<NodeId> isr = Intersect(p.isr, target);
  NodeId leader = p.leader;
  if (leader.value() == kNoLeader || !Contains(isr, leader) || !can_lead(leader)) {
    leader = NodeId(kNoLeader);
    for (NodeId n : target) {
      if (Contains(isr, n) && can_lead(n)) {
        leader = n;
        break;
      }
    }
    if (leader.value() == kNoLeader) return false;
  }
  out->replicas = target;
  out->isr = isr;
  out->leader = leader == p.leader ? NodeId(kNoLeaderChange) : leader;
  out->adding_replicas = std::vector<NodeId>{};
  out->removing_replicas = std::vector<NodeId>{};
  return true;
}

}  // namespace

std::vector<NodeId> OriginalReplicas(const PartitionImage& p) {
  return Minus(p.replicas, p.adding_replicas);
}

std::vector<NodeId> TargetReplicas(const PartitionImage& p) {
  return Minus(p.replicas, p.removing_replicas);
}

bool IsAddingReplica(const PartitionImage& p, NodeId replica) {
  return Contains(p.adding_replicas, replica);
}

Result<PartitionChangeRecord> StartReassignment(const MetadataImage& img,
                                                const TopicImage& topic, int32_t partition,
                                                const std::vector<NodeId>& target) {
  const PartitionImage* p = Find(topic, partition);
  if (p == nullptr) {
    return Status::NotFound("UNKNOWN_TOPIC_OR_PARTITION: " + topic.name + "-" +
                            std::to_string(partition));
  }
  if (target.empty()) {
    return Status::InvalidArgument("INVALID_REPLICA_ASSIGNMENT: an empty replica list");
  }
  std::set<int32_t> seen;
  for (NodeId n : target) {
    if (!seen.insert(n.value()).second) {
      return Status::InvalidArgument("INVALID_REPLICA_ASSIGNMENT: replica " +
                                     std::to_string(n.value()) + " is listed twice");
    }
    if (!img.brokers().count(n.value())) {
      return Status::InvalidArgument("INVALID_REPLICA_ASSIGNMENT: " + std::to_string(n.value()) +
                                     " is not a registered broker");
    }
  }
  const std::vector<NodeId> original = OriginalReplicas(*p);
  PartitionChangeRecord r;
  r.partition_id = PartitionId(partition);
  r.topic_id = topic.id;
  r.expected_partition_epoch = p->partition_epoch;
  std::vector<NodeId> removing = Minus(original, target);
  std::vector<NodeId> adding = Minus(target, original);
  std::vector<NodeId> replicas = target;
  replicas.insert(replicas.end(), removing.begin(), removing.end());
  // Started from the original replicas: a partition already being reassigned drops the adding
  // replicas that the new target does not keep (they leave the ISR with it).
  std::vector<NodeId> isr = Intersect(p->isr, replicas);
  if (isr.empty()) {
    return Status::InvalidArgument(
        "INVALID_REPLICA_ASSIGNMENT: no replica of the ISR would be left");
  }
  if (adding.empty()) {
    // A target within the original replicas completes at once when it is all in sync.
    PartitionImage now = *p;
    now.isr = isr;
    if (FillCompletion(now, target, [](NodeId) { return true; }, &r)) {
      if (r.isr == p->isr) r.isr.reset();
      return r;
    }
  }
  r.replicas = replicas;
  if (isr != p->isr) r.isr = isr;
  if (!Contains(isr, p->leader) && p->leader.value() != kNoLeader) {
    r.leader = isr.front();
  }
  r.adding_replicas = adding;
  r.removing_replicas = removing;
  return r;
}

Result<PartitionChangeRecord> CancelReassignment(const TopicImage& topic, int32_t partition) {
  const PartitionImage* p = Find(topic, partition);
  if (p == nullptr) {
    return Status::NotFound("UNKNOWN_TOPIC_OR_PARTITION: " + topic.name + "-" +
                            std::to_string(partition));
  }
  if (!p->reassigning()) {
    return Status::InvalidArgument("NO_REASSIGNMENT_IN_PROGRESS: " + topic.name + "-" +
                                   std::to_string(partition));
  }
  const std::vector<NodeId> original = OriginalReplicas(*p);
  std::vector<NodeId> isr = Intersect(p->isr, original);
  if (isr.empty()) {
    return Status::InvalidArgument(
        "INVALID_REPLICA_ASSIGNMENT: no original replica is in the ISR to go back to");
  }
  PartitionChangeRecord r;
  r.partition_id = PartitionId(partition);
  r.topic_id = topic.id;
  r.expected_partition_epoch = p->partition_epoch;
  r.replicas = original;
  if (isr != p->isr) r.isr = isr;
  if (p->leader.value() != kNoLeader && !Contains(isr, p->leader)) {
    r.leader = NodeId(kNoLeader);
    for (NodeId n : original) {
      if (Contains(isr, n)) {
        r.leader = n;
        break;
      }
    }
  }
  r.adding_replicas = std::vector<NodeId>{};
  r.removing_replicas = std::vector<NodeId>{};
  return r;
}

std::optional<PartitionChangeRecord> CompleteReassignment(
    const TopicImage& topic, int32_t partition, const std::function<bool(NodeId)>& can_lead) {
  const PartitionImage* p = Find(topic, partition);
  if (p == nullptr || !p->reassigning()) return std::nullopt;
  PartitionChangeRecord r;
  r.partition_id = PartitionId(partition);
  r.topic_id = topic.id;
  r.expected_partition_epoch = p->partition_epoch;
  if (!FillCompletion(*p, TargetReplicas(*p), can_lead, &r)) return std::nullopt;
  if (r.isr == p->isr) r.isr.reset();
  return r;
}

Result<PartitionChangeRecord> DecideElection(const MetadataImage& img, const TopicImage& topic,
                                             int32_t partition, bool unclean) {
  const PartitionImage* p = Find(topic, partition);
  const std::string name = topic.name + "-" + std::to_string(partition);
  if (p == nullptr) return Status::NotFound("UNKNOWN_TOPIC_OR_PARTITION: " + name);
  auto live = [&](NodeId n) {
    auto it = img.brokers().find(n.value());
    return it != img.brokers().end() && !it->second.fenced;
  };
  PartitionChangeRecord r;
  r.partition_id = PartitionId(partition);
  r.topic_id = topic.id;
  r.expected_partition_epoch = p->partition_epoch;
  if (!unclean) {
    const NodeId preferred = p->replicas.front();
    if (p->leader == preferred) {
      return Status::InvalidArgument("ELECTION_NOT_NEEDED: " + name + " is led by its preferred "
                                     "replica " + std::to_string(preferred.value()));
    }
    if (!Contains(p->isr, preferred) || !live(preferred)) {
      return Status::InvalidArgument("PREFERRED_LEADER_NOT_AVAILABLE: replica " +
                                     std::to_string(preferred.value()) + " of " + name +
                                     " is not a live member of the ISR");
    }
    r.leader = preferred;
    return r;
  }
  if (p->leader.value() != kNoLeader && live(p->leader)) {
    return Status::InvalidArgument("ELECTION_NOT_NEEDED: " + name + " has the live leader " +
                                   std::to_string(p->leader.value()));
  }
  Election e = Elect(*p, live, /*unclean_allowed=*/true);
  if (e.leader.value() == kNoLeader) {
    return Status::InvalidArgument("ELIGIBLE_LEADERS_NOT_AVAILABLE: no replica of " + name +
                                   " is live");
  }
  r.leader = e.leader;
  if (e.isr != p->isr) r.isr = e.isr;
  return r;
}

std::vector<OngoingReassignment> OngoingReassignments(const MetadataImage& img) {
  std::vector<OngoingReassignment> out;
  for (const auto& [id, t] : img.topics()) {
    for (const auto& [p, part] : t.partitions) {
      if (!part.reassigning()) continue;
      out.push_back(OngoingReassignment{t.name, p, part.replicas, part.adding_replicas,
                                        part.removing_replicas});
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::tie(a.topic, a.partition) < std::tie(b.topic, b.partition);
  });
  return out;
}

}  // namespace silt::cluster
