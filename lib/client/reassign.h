// Partition reassignment and leader elections over the network, as Kafka's admin client does
// them: AlterPartitionReassignments, ListPartitionReassignments (KIP-455) and ElectLeaders
// (KIP-460), sent to the controller; plus a balanced plan for a set of brokers (the plan file's
// JSON is cmd/topic_reassign.cc's).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "client/cluster.h"

namespace silt::client {

// One partition of a plan: where its replicas go (nullopt in a cancel).
struct PartitionMove {
  std::string topic;
  int32_t partition = 0;
  std::optional<std::vector<int32_t>> replicas;
  bool operator==(const PartitionMove&) const = default;
};

// The answer for one partition: 0, or Kafka's error code with its message.
struct PartitionOutcome {
  std::string topic;
  int32_t partition = 0;
  int16_t error_code = 0;
  std::string message;
};

// AlterPartitionReassignments with `moves` (a move without replicas cancels). The per-partition
// outcomes; a failure of the request as a whole is the Status.
Result<std::vector<PartitionOutcome>> AlterPartitionReassignments(
    Cluster* cluster, const std::vector<PartitionMove>& moves);

struct Reassignment {
  std::string topic;
  int32_t partition = 0;
  std::vector<int32_t> replicas;
  std::vector<int32_t> adding_replicas;
  std::vector<int32_t> removing_replicas;
};
// ListPartitionReassignments of every partition being reassigned.
Result<std::vector<Reassignment>> ListPartitionReassignments(Cluster* cluster);

// ElectLeaders (v2 when the broker has it): the preferred replica, or with `unclean` the first
// live one where none is in sync. Empty `partitions`: every partition.
Result<std::vector<PartitionOutcome>> ElectLeaders(
    Cluster* cluster, bool unclean, const std::vector<std::pair<std::string, int32_t>>& partitions);

// A balanced plan: every partition of `current` (topic -> partition -> replicas; each keeps its
// replication factor) over `brokers` round-robin, as Kafka's tool does: partition k of the plan
// (counted over the topics in name order) gets brokers k, k+1, ... (mod their count), so
// replicas and preferred leaders spread evenly. InvalidArgument when a partition has more
// replicas than there are brokers, or `brokers` is empty or lists one twice.
Result<std::vector<PartitionMove>> GeneratePlan(
    const std::map<std::string, std::map<int32_t, std::vector<int32_t>>>& current,
    const std::vector<int32_t>& brokers);

}  // namespace silt::client
