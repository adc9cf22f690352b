// The describe APIs that admin tools use: DescribeLogDirs (35), OffsetDelete (47),
// DescribeCluster (60) and DescribeProducers (61). Same conventions as messages.h (Kafka's
// field names in snake_case, the schema's name in a comment where it differs, "vN+" for the
// first version a field is on the wire); kept in their own header so the core messages stay
// short. Versions served: api_table.cc.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "base/coding.h"
#include "base/status.h"
#include "protocol/api_table.h"
#include "protocol/wire.h"

namespace silt::protocol {

#define SILT_DESCRIBE_MESSAGE(api)                   \
  static constexpr ApiKey kApiKey = api;             \
  void Encode(ByteWriter& w, int16_t version) const; \
  Status Decode(ByteReader& r, int16_t version);

// ---- DescribeLogDirs (35) ---------------------------------------------------------------
// Flexible from v2; v3 adds the top-level error, v4 the volume's total and usable bytes.

struct DescribeLogDirsRequest {
  struct Topic {                       // DescribableLogDirTopic
    std::string topic;                 // Topic
    std::vector<int32_t> partitions;   // Partitions
    bool operator==(const Topic&) const = default;
  };
  std::optional<std::vector<Topic>> topics;  // Topics (null: every topic)
  SILT_DESCRIBE_MESSAGE(ApiKey::kDescribeLogDirs)
};

struct DescribeLogDirsResponse {
  struct Partition {               // DescribeLogDirsPartition
    int32_t partition_index = 0;   // PartitionIndex
    int64_t partition_size = 0;    // PartitionSize (bytes of the log's segments)
    int64_t offset_lag = 0;        // OffsetLag (log end minus high watermark)
    bool is_future_key = false;    // IsFutureKey
    bool operator==(const Partition&) const = default;
  };
  struct Topic {                         // DescribeLogDirsTopic
    std::string name;                    // Name
    std::vector<Partition> partitions;   // Partitions
    bool operator==(const Topic&) const = default;
  };
  struct Result {                  // DescribeLogDirsResult
    int16_t error_code = 0;        // ErrorCode
    std::string log_dir;           // LogDir (absolute path)
    std::vector<Topic> topics;     // Topics
    int64_t total_bytes = -1;      // TotalBytes v4+
    int64_t usable_bytes = -1;     // UsableBytes v4+
    bool operator==(const Result&) const = default;
  };
  int32_t throttle_time_ms = 0;   // ThrottleTimeMs
  int16_t error_code = 0;         // ErrorCode v3+
  std::vector<Result> results;    // Results
  SILT_DESCRIBE_MESSAGE(ApiKey::kDescribeLogDirs)
};

// ---- OffsetDelete (47) ------------------------------------------------------------------
// v0 only, not flexible (KIP-496).

struct OffsetDeleteRequest {
  struct Partition {               // OffsetDeleteRequestPartition
    int32_t partition_index = 0;   // PartitionIndex
    bool operator==(const Partition&) const = default;
  };
  struct Topic {                        // OffsetDeleteRequestTopic
    std::string name;                   // Name
    std::vector<Partition> partitions;  // Partitions
    bool operator==(const Topic&) const = default;
  };
  std::string group_id;       // GroupId
  std::vector<Topic> topics;  // Topics
  SILT_DESCRIBE_MESSAGE(ApiKey::kOffsetDelete)
};

struct OffsetDeleteResponse {
  struct Partition {               // OffsetDeleteResponsePartition
    int32_t partition_index = 0;   // PartitionIndex
    int16_t error_code = 0;        // ErrorCode
    bool operator==(const Partition&) const = default;
  };
  struct Topic {                        // OffsetDeleteResponseTopic
    std::string name;                   // Name
    std::vector<Partition> partitions;  // Partitions
    bool operator==(const Topic&) const = default;
  };
  int16_t error_code = 0;         // ErrorCode (the group's)
  int32_t throttle_time_ms = 0;   // ThrottleTimeMs
  std::vector<Topic> topics;      // Topics
  SILT_DESCRIBE_MESSAGE(ApiKey::kOffsetDelete)
};

// ---- DescribeCluster (60) ---------------------------------------------------------------
// Flexible from v0 (KIP-700); v1 adds the endpoint type (1 brokers, 2 controllers).

struct DescribeClusterRequest {
  static constexpr int8_t kBrokers = 1;
  static constexpr int8_t kControllers = 2;
  bool include_cluster_authorized_operations = false;  // IncludeClusterAuthorizedOperations
  int8_t endpoint_type = kBrokers;                     // EndpointType v1+
  SILT_DESCRIBE_MESSAGE(ApiKey::kDescribeCluster)
};

struct DescribeClusterResponse {
  struct Broker {                      // DescribeClusterBroker
    int32_t broker_id = 0;             // BrokerId
    std::string host;                  // Host
    int32_t port = 0;                  // Port
    std::optional<std::string> rack;   // Rack
    bool operator==(const Broker&) const = default;
  };
  int32_t throttle_time_ms = 0;                // ThrottleTimeMs
  int16_t error_code = 0;                      // ErrorCode
  std::optional<std::string> error_message;    // ErrorMessage
  int8_t endpoint_type = 1;                    // EndpointType v1+
  std::string cluster_id;                      // ClusterId
  int32_t controller_id = -1;                  // ControllerId
  std::vector<Broker> brokers;                 // Brokers
  int32_t cluster_authorized_operations = std::numeric_limits<int32_t>::min();
  SILT_DESCRIBE_MESSAGE(ApiKey::kDescribeCluster)
};

// ---- DescribeProducers (61) -------------------------------------------------------------
// Flexible from v0 (KIP-664): the idempotent producers a partition's leader knows.

struct DescribeProducersRequest {
  struct Topic {                             // TopicRequest
    std::string name;                        // Name
    std::vector<int32_t> partition_indexes;  // PartitionIndexes
    bool operator==(const Topic&) const = default;
  };
  std::vector<Topic> topics;  // Topics
  SILT_DESCRIBE_MESSAGE(ApiKey::kDescribeProducers)
};

struct DescribeProducersResponse {
  struct Producer {                        // ProducerState
    int64_t producer_id = 0;               // ProducerId
    int32_t producer_epoch = 0;            // ProducerEpoch
    int32_t last_sequence = -1;            // LastSequence
    int64_t last_timestamp = -1;           // LastTimestamp
    int32_t coordinator_epoch = 0;         // CoordinatorEpoch
    int64_t current_txn_start_offset = -1; // CurrentTxnStartOffset
    bool operator==(const Producer&) const = default;
  };
  struct Partition {                           // PartitionResponse
    int32_t partition_index = 0;               // PartitionIndex
    int16_t error_code = 0;                    // ErrorCode
    std::optional<std::string> error_message;  // ErrorMessage
    std::vector<Producer> active_producers;    // ActiveProducers
    bool operator==(const Partition&) const = default;
  };
  struct Topic {                         // TopicResponse
    std::string name;                    // Name
    std::vector<Partition> partitions;   // Partitions
    bool operator==(const Topic&) const = default;
  };
  int32_t throttle_time_ms = 0;  // ThrottleTimeMs
  std::vector<Topic> topics;     // Topics
  SILT_DESCRIBE_MESSAGE(ApiKey::kDescribeProducers)
};

#undef SILT_DESCRIBE_MESSAGE

}  // namespace silt::protocol
