// The messages of partition reassignment and leader election (versions: api_table.h), in the
// shape of messages.h: ElectLeaders (43, KIP-460), AlterPartitionReassignments (45) and
// ListPartitionReassignments (46, KIP-455). Field names are Kafka's, in snake_case.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/coding.h"
#include "base/status.h"
#include "protocol/api_table.h"

namespace silt::protocol {

#define SILT_REASSIGN_MESSAGE(Name, api)              \
  static constexpr ApiKey kApiKey = api;              \
  void Encode(ByteWriter& w, int16_t version) const;  \
  Status Decode(ByteReader& r, int16_t version);      \
  bool operator==(const Name&) const = default

// ---- ElectLeaders (43; flexible from v2) -------------------------------------------------

// ElectionType: 0 elects the preferred replica, 1 the first live replica when no in-sync one is
// left (an unclean election).
inline constexpr int8_t kElectPreferred = 0;
inline constexpr int8_t kElectUnclean = 1;

struct ElectLeadersRequest {
  struct TopicPartitions {             // TopicPartitions
    std::string topic;                 // Topic
    std::vector<int32_t> partitions;   // Partitions
    bool operator==(const TopicPartitions&) const = default;
  };
  int8_t election_type = kElectPreferred;                    // ElectionType v1+
  std::optional<std::vector<TopicPartitions>> topic_partitions;  // TopicPartitions (null: all)
  int32_t timeout_ms = 60000;                                // TimeoutMs
  SILT_REASSIGN_MESSAGE(ElectLeadersRequest, ApiKey::kElectLeaders);
};

struct ElectLeadersResponse {
  struct PartitionResult {                     // PartitionResult
    int32_t partition_id = 0;                  // PartitionId
    int16_t error_code = 0;                    // ErrorCode
    std::optional<std::string> error_message;  // ErrorMessage
    bool operator==(const PartitionResult&) const = default;
  };
  struct ReplicaElectionResult {                    // ReplicaElectionResult
    std::string topic;                              // Topic
    std::vector<PartitionResult> partition_result;  // PartitionResult
    bool operator==(const ReplicaElectionResult&) const = default;
  };
  int32_t throttle_time_ms = 0;                                 // ThrottleTimeMs
  int16_t error_code = 0;                                       // ErrorCode v1+
  std::vector<ReplicaElectionResult> replica_election_results;  // ReplicaElectionResults
  SILT_REASSIGN_MESSAGE(ElectLeadersResponse, ApiKey::kElectLeaders);
};

// ---- AlterPartitionReassignments (45; flexible from v0) -----------------------------------

struct AlterPartitionReassignmentsRequest {
  struct ReassignablePartition {                 // ReassignablePartition
    int32_t partition_index = 0;                 // PartitionIndex
    std::optional<std::vector<int32_t>> replicas;  // Replicas (null: cancel the reassignment)
    bool operator==(const ReassignablePartition&) const = default;
  };
  struct ReassignableTopic {                         // ReassignableTopic
    std::string name;                                // Name
    std::vector<ReassignablePartition> partitions;  // Partitions
    bool operator==(const ReassignableTopic&) const = default;
  };
  int32_t timeout_ms = 60000;             // TimeoutMs
  std::vector<ReassignableTopic> topics;  // Topics
  SILT_REASSIGN_MESSAGE(AlterPartitionReassignmentsRequest,
                        ApiKey::kAlterPartitionReassignments);
};

struct AlterPartitionReassignmentsResponse {
  struct ReassignablePartitionResponse {       // ReassignablePartitionResponse
    int32_t partition_index = 0;               // PartitionIndex
    int16_t error_code = 0;                    // ErrorCode
    std::optional<std::string> error_message;  // ErrorMessage
    bool operator==(const ReassignablePartitionResponse&) const = default;
  };
  struct ReassignableTopicResponse {                         // ReassignableTopicResponse
    std::string name;                                        // Name
    std::vector<ReassignablePartitionResponse> partitions;  // Partitions
    bool operator==(const ReassignableTopicResponse&) const = default;
  };
  int32_t throttle_time_ms = 0;                       // ThrottleTimeMs
  int16_t error_code = 0;                             // ErrorCode
  std::optional<std::string> error_message;           // ErrorMessage
  std::vector<ReassignableTopicResponse> responses;  // Responses
  SILT_REASSIGN_MESSAGE(AlterPartitionReassignmentsResponse,
                        ApiKey::kAlterPartitionReassignments);
};

// ---- ListPartitionReassignments (46; flexible from v0) ------------------------------------

struct ListPartitionReassignmentsRequest {
  struct Topic {                             // ListPartitionReassignmentsTopics
    std::string name;                        // Name
    std::vector<int32_t> partition_indexes;  // PartitionIndexes
    bool operator==(const Topic&) const = default;
  };
  int32_t timeout_ms = 60000;                // TimeoutMs
  std::optional<std::vector<Topic>> topics;  // Topics (null: every partition)
  SILT_REASSIGN_MESSAGE(ListPartitionReassignmentsRequest, ApiKey::kListPartitionReassignments);
};

struct ListPartitionReassignmentsResponse {
  struct OngoingPartitionReassignment {      // OngoingPartitionReassignment
    int32_t partition_index = 0;             // PartitionIndex
    std::vector<int32_t> replicas;           // Replicas
    std::vector<int32_t> adding_replicas;    // AddingReplicas
    std::vector<int32_t> removing_replicas;  // RemovingReplicas
    bool operator==(const OngoingPartitionReassignment&) const = default;
  };
  struct OngoingTopicReassignment {                        // OngoingTopicReassignment
    std::string name;                                      // Name
    std::vector<OngoingPartitionReassignment> partitions;  // Partitions
    bool operator==(const OngoingTopicReassignment&) const = default;
  };
  int32_t throttle_time_ms = 0;                   // ThrottleTimeMs
  int16_t error_code = 0;                         // ErrorCode
  std::optional<std::string> error_message;       // ErrorMessage
  std::vector<OngoingTopicReassignment> topics;  // Topics
  SILT_REASSIGN_MESSAGE(ListPartitionReassignmentsResponse, ApiKey::kListPartitionReassignments);
};

#undef SILT_REASSIGN_MESSAGE

}  // namespace silt::protocol
