// One struct per Kafka request and response that silt serves (versions: api_table.h).
//
// Field names are Kafka's, in snake_case, with the schema name in a comment where it differs
// (clients/src/main/resources/common/message/<Name>.json in apache/kafka). A "vN+" comment says
// from which version a field is on the wire; in other versions it is neither written nor read
// and keeps its default (Kafka's default value where the schema gives one).
//
// Every message has
//   void Encode(ByteWriter& w, int16_t version) const;  // appends the body (no size, no header)
//   Status Decode(ByteReader& r, int16_t version);      // reads a body, advancing r
// Decode resets the struct first; on error it returns Truncated (input ended early) or
// Corruption (an impossible length or count) and the struct's contents are unspecified. Decode
// never allocates more than the input could describe: counts and lengths are checked against
// the bytes left first. Any version is accepted here, each field guarded by Kafka's range for
// it; which versions are served is the dispatcher's decision (api_table.h). Versions after the
// served range are coded correctly only where they add nothing but the flexible encoding.
//
// Wire integers are kept as plain ints here (they mirror the wire); handlers convert to the
// strong ids of base/ids.h at the boundary. Record sets stay opaque: RecordSet (wire.h) is a view
// into the request buffer when decoded, and may name a file slice when a Fetch response is
// encoded for zero-copy sending (see EncodeFetchResponseFrame).
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

#define SILT_WIRE_MESSAGE(Name, api)                      \
  static constexpr ApiKey kApiKey = api;                  \
  void Encode(ByteWriter& w, int16_t version) const;      \
  Status Decode(ByteReader& r, int16_t version);          \
  bool operator==(const Name&) const = default

// Kafka's "authorized operations not requested" value (INT32_MIN).
constexpr int32_t kAuthorizedOperationsOmitted = std::numeric_limits<int32_t>::min();

// ---- ApiVersions (18) -------------------------------------------------------------------

struct ApiVersionsRequest {
  std::string client_software_name;     // ClientSoftwareName v3+
  std::string client_software_version;  // ClientSoftwareVersion v3+
  SILT_WIRE_MESSAGE(ApiVersionsRequest, ApiKey::kApiVersions);
};

struct ApiVersionsResponse {
  struct ApiVersion {  // ApiVersion
    int16_t api_key = 0;      // ApiKey
    int16_t min_version = 0;  // MinVersion
    int16_t max_version = 0;  // MaxVersion
    bool operator==(const ApiVersion&) const = default;
  };
  int16_t error_code = 0;           // ErrorCode
  std::vector<ApiVersion> api_keys;  // ApiKeys
  int32_t throttle_time_ms = 0;     // ThrottleTimeMs v1+
  // v3+ tagged fields (SupportedFeatures, FinalizedFeatures...) are skipped and not written.
  SILT_WIRE_MESSAGE(ApiVersionsResponse, ApiKey::kApiVersions);
};

// The ApiVersions answer built from api_table.h: every supported API with its range.
ApiVersionsResponse MakeApiVersionsResponse();

// The ApiVersions answer to a request whose version silt does not serve: a v0 body with
// UNSUPPORTED_VERSION and the ApiVersions row alone, so the client can retry with a version in
// range. Encode it at version 0 whatever the request's version.
ApiVersionsResponse MakeUnsupportedApiVersionsResponse();

// Client side: decodes an ApiVersions response to a request of `version`, falling back to v0 as
// Kafka's clients do, because a broker that does not serve `version` answers with a v0 body
// (UNSUPPORTED_VERSION). `r` is advanced past whichever body was read.
Status DecodeApiVersionsResponse(ByteReader& r, int16_t version, ApiVersionsResponse* out);

// ---- Metadata (3) -----------------------------------------------------------------------

struct MetadataRequest {
  struct Topic {               // MetadataRequestTopic
    std::string name;          // Name (null on the wire, v10+, when empty: asked for by id)
    silt::Uuid topic_id{};     // TopicId v10+
    bool operator==(const Topic&) const = default;
  };
  // Topics: null (v1+) = all topics. In v0 an empty array means all topics, and null is
  // written as an empty array.
  std::optional<std::vector<Topic>> topics;
  bool allow_auto_topic_creation = true;              // AllowAutoTopicCreation v4+
  bool include_cluster_authorized_operations = false;  // IncludeClusterAuthorizedOperations v8-10
  bool include_topic_authorized_operations = false;    // IncludeTopicAuthorizedOperations v8+
  SILT_WIRE_MESSAGE(MetadataRequest, ApiKey::kMetadata);
};

struct MetadataResponse {
  struct Broker {                    // MetadataResponseBroker
    int32_t node_id = 0;             // NodeId
    std::string host;                // Host
    int32_t port = 0;                // Port
    std::optional<std::string> rack;  // Rack v1+
    bool operator==(const Broker&) const = default;
  };
  struct Partition {                      // MetadataResponsePartition
    int16_t error_code = 0;               // ErrorCode
    int32_t partition_index = 0;          // PartitionIndex
    int32_t leader_id = 0;                // LeaderId
    int32_t leader_epoch = -1;            // LeaderEpoch v7+
    std::vector<int32_t> replica_nodes;   // ReplicaNodes
    std::vector<int32_t> isr_nodes;       // IsrNodes
    std::vector<int32_t> offline_replicas;  // OfflineReplicas v5+
    bool operator==(const Partition&) const = default;
  };
  struct Topic {                        // MetadataResponseTopic
    int16_t error_code = 0;             // ErrorCode
    std::string name;                   // Name (nullable v12+: null when empty)
    silt::Uuid topic_id{};              // TopicId v10+
    bool is_internal = false;           // IsInternal v1+
    std::vector<Partition> partitions;  // Partitions
    int32_t topic_authorized_operations = kAuthorizedOperationsOmitted;  // v8+
    bool operator==(const Topic&) const = default;
  };
  int32_t throttle_time_ms = 0;           // ThrottleTimeMs v3+
  std::vector<Broker> brokers;            // Brokers
  std::optional<std::string> cluster_id;  // ClusterId v2+
  int32_t controller_id = -1;             // ControllerId v1+
  std::vector<Topic> topics;              // Topics
  int32_t cluster_authorized_operations = kAuthorizedOperationsOmitted;  // v8-10
  SILT_WIRE_MESSAGE(MetadataResponse, ApiKey::kMetadata);
};

// ---- Produce (0) ------------------------------------------------------------------------

struct ProduceRequest {
  struct PartitionData {  // PartitionProduceData
    int32_t index = 0;    // Index
    RecordSet records;    // Records (a view into the request buffer)
    bool operator==(const PartitionData&) const = default;
  };
  struct TopicData {                          // TopicProduceData
    std::string name;                         // Name
    std::vector<PartitionData> partition_data;  // PartitionData
    bool operator==(const TopicData&) const = default;
  };
  std::optional<std::string> transactional_id;  // TransactionalId v3+
  int16_t acks = 0;                             // Acks
  int32_t timeout_ms = 0;                       // TimeoutMs
  std::vector<TopicData> topic_data;            // TopicData
  SILT_WIRE_MESSAGE(ProduceRequest, ApiKey::kProduce);
};

struct ProduceResponse {
  struct RecordError {                                   // BatchIndexAndErrorMessage
    int32_t batch_index = 0;                              // BatchIndex
    std::optional<std::string> batch_index_error_message;  // BatchIndexErrorMessage
    bool operator==(const RecordError&) const = default;
  };
  struct PartitionResponse {                  // PartitionProduceResponse
    int32_t index = 0;                        // Index
    int16_t error_code = 0;                   // ErrorCode
    int64_t base_offset = 0;                  // BaseOffset
    int64_t log_append_time_ms = -1;          // LogAppendTimeMs v2+
    int64_t log_start_offset = -1;            // LogStartOffset v5+
    std::vector<RecordError> record_errors;   // RecordErrors v8+
    std::optional<std::string> error_message;  // ErrorMessage v8+
    bool operator==(const PartitionResponse&) const = default;
  };
  struct TopicResponse {                                 // TopicProduceResponse
    std::string name;                                    // Name
    std::vector<PartitionResponse> partition_responses;  // PartitionResponses
    bool operator==(const TopicResponse&) const = default;
  };
  std::vector<TopicResponse> responses;  // Responses
  int32_t throttle_time_ms = 0;          // ThrottleTimeMs v1+
  SILT_WIRE_MESSAGE(ProduceResponse, ApiKey::kProduce);
};

// ---- Fetch (1) --------------------------------------------------------------------------

struct FetchRequest {
  struct Partition {                   // FetchPartition
    int32_t partition = 0;             // Partition
    int32_t current_leader_epoch = -1;  // CurrentLeaderEpoch v9+
    int64_t fetch_offset = 0;          // FetchOffset
    int64_t log_start_offset = -1;     // LogStartOffset v5+
    int32_t partition_max_bytes = 0;   // PartitionMaxBytes
    bool operator==(const Partition&) const = default;
  };
  struct Topic {                        // FetchTopic
    std::string topic;                  // Topic
    std::vector<Partition> partitions;  // Partitions
    bool operator==(const Topic&) const = default;
  };
  struct ForgottenTopic {              // ForgottenTopic
    std::string topic;                 // Topic
    std::vector<int32_t> partitions;   // Partitions
    bool operator==(const ForgottenTopic&) const = default;
  };
  int32_t replica_id = -1;          // ReplicaId (-1 = consumer, >= 0 = follower broker)
  int32_t max_wait_ms = 0;          // MaxWaitMs
  int32_t min_bytes = 0;            // MinBytes
  int32_t max_bytes = 0x7fffffff;   // MaxBytes v3+
  int8_t isolation_level = 0;       // IsolationLevel v4+ (0 read_uncommitted, 1 read_committed)
  int32_t session_id = 0;           // SessionId v7+
  int32_t session_epoch = -1;       // SessionEpoch v7+
  std::vector<Topic> topics;        // Topics
  std::vector<ForgottenTopic> forgotten_topics_data;  // ForgottenTopicsData v7+
  std::string rack_id;              // RackId v11+
  SILT_WIRE_MESSAGE(FetchRequest, ApiKey::kFetch);
};

struct FetchResponse {
  struct AbortedTransaction {  // AbortedTransaction
    int64_t producer_id = 0;   // ProducerId
    int64_t first_offset = 0;  // FirstOffset
    bool operator==(const AbortedTransaction&) const = default;
  };
  struct Partition {                    // PartitionData
    int32_t partition_index = 0;        // PartitionIndex
    int16_t error_code = 0;             // ErrorCode
    int64_t high_watermark = 0;         // HighWatermark
    int64_t last_stable_offset = -1;    // LastStableOffset v4+
    int64_t log_start_offset = -1;      // LogStartOffset v5+
    std::optional<std::vector<AbortedTransaction>> aborted_transactions;  // v4+, nullable
    int32_t preferred_read_replica = -1;  // PreferredReadReplica v11+
    // Records: decoded as a view into the response buffer. The bytes are opaque here: a record
    // set may end in a partial batch (the broker cuts at max_bytes), which the consumer treats
    // as the end of the data.
    RecordSet records;
    bool operator==(const Partition&) const = default;
  };
  struct TopicResponse {                // FetchableTopicResponse
    std::string topic;                  // Topic
    std::vector<Partition> partitions;  // Partitions
    bool operator==(const TopicResponse&) const = default;
  };
  int32_t throttle_time_ms = 0;         // ThrottleTimeMs v1+
  int16_t error_code = 0;               // ErrorCode v7+
  int32_t session_id = 0;               // SessionId v7+
  std::vector<TopicResponse> responses;  // Responses
  SILT_WIRE_MESSAGE(FetchResponse, ApiKey::kFetch);

  // Zero-copy encoding: appends the body to `w` like Encode, and describes it in `pieces` as
  // buffer ranges of w's string and, for each record set with a `file`, a file piece. Sending
  // the pieces in order (write the ranges, sendfile the slices) puts exactly the encoded body on
  // the wire. Pieces cover only what is written from w.position() at the call onwards.
  void EncodePieces(ByteWriter& w, int16_t version, std::vector<Piece>* pieces) const;
};

// A Fetch response frame ready for zero-copy sending: `buffer` holds the size prefix, header and
// every encoded byte except file-backed record sets, and `pieces` lists, in wire order, ranges of
// `buffer` and file slices. The size prefix counts the file bytes too.
struct ResponsePieces {
  std::string buffer;
  std::vector<Piece> pieces;
  // Total bytes on the wire, size prefix included.
  int64_t wire_size() const;
  // The frame as one string, with file pieces filled by `read_file(slice, out)` (tests, and
  // callers that cannot sendfile). Returns the first error `read_file` reports.
  template <typename ReadFile>
  Status Flatten(ReadFile&& read_file, std::string* out) const {
    for (const Piece& p : pieces) {
      if (p.file) {
        Status s = read_file(*p.file, out);
        if (!s.ok()) return s;
      } else {
        out->append(buffer, p.begin, p.end - p.begin);
      }
    }
    return Status::OK();
  }
};

// Builds a Fetch response frame (size, response header v0/v1 per the table, body) in pieces.
void EncodeFetchResponseFrame(int32_t correlation_id, int16_t version, const FetchResponse& body,
                              ResponsePieces* out);

// ---- ListOffsets (2) --------------------------------------------------------------------

struct ListOffsetsRequest {
  struct Partition {                    // ListOffsetsPartition
    int32_t partition_index = 0;        // PartitionIndex
    int32_t current_leader_epoch = -1;  // CurrentLeaderEpoch v4+
    int64_t timestamp = 0;              // Timestamp (-1 latest, -2 earliest)
    int32_t max_num_offsets = 1;        // MaxNumOffsets v0 only
    bool operator==(const Partition&) const = default;
  };
  struct Topic {                        // ListOffsetsTopic
    std::string name;                   // Name
    std::vector<Partition> partitions;  // Partitions
    bool operator==(const Topic&) const = default;
  };
  int32_t replica_id = -1;     // ReplicaId
  int8_t isolation_level = 0;  // IsolationLevel v2+
  std::vector<Topic> topics;   // Topics
  SILT_WIRE_MESSAGE(ListOffsetsRequest, ApiKey::kListOffsets);
};

struct ListOffsetsResponse {
  struct Partition {                         // ListOffsetsPartitionResponse
    int32_t partition_index = 0;             // PartitionIndex
    int16_t error_code = 0;                  // ErrorCode
    std::vector<int64_t> old_style_offsets;  // OldStyleOffsets v0 only
    int64_t timestamp = -1;                  // Timestamp v1+
    int64_t offset = -1;                     // Offset v1+
    int32_t leader_epoch = -1;               // LeaderEpoch v4+
    bool operator==(const Partition&) const = default;
  };
  struct Topic {                        // ListOffsetsTopicResponse
    std::string name;                   // Name
    std::vector<Partition> partitions;  // Partitions
    bool operator==(const Topic&) const = default;
  };
  int32_t throttle_time_ms = 0;  // ThrottleTimeMs v2+
  std::vector<Topic> topics;     // Topics
  SILT_WIRE_MESSAGE(ListOffsetsResponse, ApiKey::kListOffsets);
};

// ---- FindCoordinator (10) ---------------------------------------------------------------

struct FindCoordinatorRequest {
  std::string key;                        // Key v0-3
  int8_t key_type = 0;                    // KeyType v1+ (0 group, 1 transaction)
  std::vector<std::string> coordinator_keys;  // CoordinatorKeys v4+ (batched lookups)
  SILT_WIRE_MESSAGE(FindCoordinatorRequest, ApiKey::kFindCoordinator);
};

struct FindCoordinatorResponse {
  struct Coordinator {                         // Coordinator v4+
    std::string key;                           // Key
    int32_t node_id = -1;                      // NodeId
    std::string host;                          // Host
    int32_t port = -1;                         // Port
    int16_t error_code = 0;                    // ErrorCode
    std::optional<std::string> error_message;  // ErrorMessage
    bool operator==(const Coordinator&) const = default;
  };
  int32_t throttle_time_ms = 0;              // ThrottleTimeMs v1+
  int16_t error_code = 0;                    // ErrorCode v0-3
  std::optional<std::string> error_message;  // ErrorMessage v1-3
  int32_t node_id = 0;                       // NodeId v0-3
  std::string host;                          // Host v0-3
  int32_t port = 0;                          // Port v0-3
  std::vector<Coordinator> coordinators;     // Coordinators v4+
  SILT_WIRE_MESSAGE(FindCoordinatorResponse, ApiKey::kFindCoordinator);
};

// ---- JoinGroup (11) ---------------------------------------------------------------------

struct JoinGroupRequest {
  struct Protocol {       // JoinGroupRequestProtocol
    std::string name;     // Name
    std::string metadata;  // Metadata (bytes)
    bool operator==(const Protocol&) const = default;
  };
  std::string group_id;                          // GroupId
  int32_t session_timeout_ms = 0;                // SessionTimeoutMs
  int32_t rebalance_timeout_ms = -1;             // RebalanceTimeoutMs v1+
  std::string member_id;                         // MemberId
  std::optional<std::string> group_instance_id;  // GroupInstanceId v5+
  std::string protocol_type;                     // ProtocolType
  std::vector<Protocol> protocols;               // Protocols
  SILT_WIRE_MESSAGE(JoinGroupRequest, ApiKey::kJoinGroup);
};

struct JoinGroupResponse {
  struct Member {                                  // JoinGroupResponseMember
    std::string member_id;                         // MemberId
    std::optional<std::string> group_instance_id;  // GroupInstanceId v5+
    std::string metadata;                          // Metadata (bytes)
    bool operator==(const Member&) const = default;
  };
  int32_t throttle_time_ms = 0;  // ThrottleTimeMs v2+
  int16_t error_code = 0;        // ErrorCode
  int32_t generation_id = -1;    // GenerationId
  std::string protocol_name;     // ProtocolName
  std::string leader;            // Leader
  std::string member_id;         // MemberId
  std::vector<Member> members;   // Members
  SILT_WIRE_MESSAGE(JoinGroupResponse, ApiKey::kJoinGroup);
};

// ---- SyncGroup (14) ---------------------------------------------------------------------

struct SyncGroupRequest {
  struct Assignment {        // SyncGroupRequestAssignment
    std::string member_id;   // MemberId
    std::string assignment;  // Assignment (bytes)
    bool operator==(const Assignment&) const = default;
  };
  std::string group_id;                          // GroupId
  int32_t generation_id = 0;                     // GenerationId
  std::string member_id;                         // MemberId
  std::optional<std::string> group_instance_id;  // GroupInstanceId v3+
  std::vector<Assignment> assignments;           // Assignments
  SILT_WIRE_MESSAGE(SyncGroupRequest, ApiKey::kSyncGroup);
};

struct SyncGroupResponse {
  int32_t throttle_time_ms = 0;  // ThrottleTimeMs v1+
  int16_t error_code = 0;        // ErrorCode
  std::string assignment;        // Assignment (bytes)
  SILT_WIRE_MESSAGE(SyncGroupResponse, ApiKey::kSyncGroup);
};

// ---- Heartbeat (12) ---------------------------------------------------------------------

struct HeartbeatRequest {
  std::string group_id;                          // GroupId
  int32_t generation_id = 0;                     // GenerationId
  std::string member_id;                         // MemberId
  std::optional<std::string> group_instance_id;  // GroupInstanceId v3+
  SILT_WIRE_MESSAGE(HeartbeatRequest, ApiKey::kHeartbeat);
};

struct HeartbeatResponse {
  int32_t throttle_time_ms = 0;  // ThrottleTimeMs v1+
  int16_t error_code = 0;        // ErrorCode
  SILT_WIRE_MESSAGE(HeartbeatResponse, ApiKey::kHeartbeat);
};

// ---- LeaveGroup (13) --------------------------------------------------------------------

struct LeaveGroupRequest {
  struct Member {                                  // MemberIdentity
    std::string member_id;                         // MemberId
    std::optional<std::string> group_instance_id;  // GroupInstanceId
    bool operator==(const Member&) const = default;
  };
  std::string group_id;         // GroupId
  std::string member_id;        // MemberId v0-2
  std::vector<Member> members;  // Members v3+
  SILT_WIRE_MESSAGE(LeaveGroupRequest, ApiKey::kLeaveGroup);
};

struct LeaveGroupResponse {
  struct Member {                                  // MemberResponse
    std::string member_id;                         // MemberId
    std::optional<std::string> group_instance_id;  // GroupInstanceId
    int16_t error_code = 0;                        // ErrorCode
    bool operator==(const Member&) const = default;
  };
  int32_t throttle_time_ms = 0;  // ThrottleTimeMs v1+
  int16_t error_code = 0;        // ErrorCode
  std::vector<Member> members;   // Members v3+
  SILT_WIRE_MESSAGE(LeaveGroupResponse, ApiKey::kLeaveGroup);
};

// ---- OffsetCommit (8) -------------------------------------------------------------------

struct OffsetCommitRequest {
  struct Partition {                                // OffsetCommitRequestPartition
    int32_t partition_index = 0;                    // PartitionIndex
    int64_t committed_offset = 0;                   // CommittedOffset
    int32_t committed_leader_epoch = -1;            // CommittedLeaderEpoch v6+
    int64_t commit_timestamp = -1;                  // CommitTimestamp v1 only
    std::optional<std::string> committed_metadata;  // CommittedMetadata
    bool operator==(const Partition&) const = default;
  };
  struct Topic {                        // OffsetCommitRequestTopic
    std::string name;                   // Name
    std::vector<Partition> partitions;  // Partitions
    bool operator==(const Topic&) const = default;
  };
  std::string group_id;                          // GroupId
  int32_t generation_id_or_member_epoch = -1;    // GenerationIdOrMemberEpoch v1+
  std::string member_id;                         // MemberId v1+
  std::optional<std::string> group_instance_id;  // GroupInstanceId v7+
  int64_t retention_time_ms = -1;                // RetentionTimeMs v2-4
  std::vector<Topic> topics;                     // Topics
  SILT_WIRE_MESSAGE(OffsetCommitRequest, ApiKey::kOffsetCommit);
};

struct OffsetCommitResponse {
  struct Partition {              // OffsetCommitResponsePartition
    int32_t partition_index = 0;  // PartitionIndex
    int16_t error_code = 0;       // ErrorCode
    bool operator==(const Partition&) const = default;
  };
  struct Topic {                        // OffsetCommitResponseTopic
    std::string name;                   // Name
    std::vector<Partition> partitions;  // Partitions
    bool operator==(const Topic&) const = default;
  };
  int32_t throttle_time_ms = 0;  // ThrottleTimeMs v3+
  std::vector<Topic> topics;     // Topics
  SILT_WIRE_MESSAGE(OffsetCommitResponse, ApiKey::kOffsetCommit);
};

// ---- OffsetFetch (9) --------------------------------------------------------------------

struct OffsetFetchRequest {
  struct Topic {                              // OffsetFetchRequestTopic
    std::string name;                         // Name
    std::vector<int32_t> partition_indexes;   // PartitionIndexes
    bool operator==(const Topic&) const = default;
  };
  std::string group_id;  // GroupId
  // Topics: null (v2+) = every partition the group has committed. In v0-1 null is written as
  // an empty array.
  std::optional<std::vector<Topic>> topics;
  SILT_WIRE_MESSAGE(OffsetFetchRequest, ApiKey::kOffsetFetch);
};

struct OffsetFetchResponse {
  struct Partition {                          // OffsetFetchResponsePartition
    int32_t partition_index = 0;              // PartitionIndex
    int64_t committed_offset = -1;            // CommittedOffset
    int32_t committed_leader_epoch = -1;      // CommittedLeaderEpoch v5+
    std::optional<std::string> metadata;      // Metadata
    int16_t error_code = 0;                   // ErrorCode
    bool operator==(const Partition&) const = default;
  };
  struct Topic {                        // OffsetFetchResponseTopic
    std::string name;                   // Name
    std::vector<Partition> partitions;  // Partitions
    bool operator==(const Topic&) const = default;
  };
  int32_t throttle_time_ms = 0;  // ThrottleTimeMs v3+
  std::vector<Topic> topics;     // Topics
  int16_t error_code = 0;        // ErrorCode v2+
  SILT_WIRE_MESSAGE(OffsetFetchResponse, ApiKey::kOffsetFetch);
};

// ---- InitProducerId (22) ----------------------------------------------------------------

struct InitProducerIdRequest {
  std::optional<std::string> transactional_id;  // TransactionalId
  int32_t transaction_timeout_ms = 0;           // TransactionTimeoutMs
  SILT_WIRE_MESSAGE(InitProducerIdRequest, ApiKey::kInitProducerId);
};

struct InitProducerIdResponse {
  int32_t throttle_time_ms = 0;  // ThrottleTimeMs
  int16_t error_code = 0;        // ErrorCode
  int64_t producer_id = -1;      // ProducerId
  int16_t producer_epoch = 0;    // ProducerEpoch
  SILT_WIRE_MESSAGE(InitProducerIdResponse, ApiKey::kInitProducerId);
};

// ---- CreateTopics (19) ------------------------------------------------------------------

struct CreateTopicsRequest {
  struct Assignment {                   // CreatableReplicaAssignment
    int32_t partition_index = 0;        // PartitionIndex
    std::vector<int32_t> broker_ids;    // BrokerIds
    bool operator==(const Assignment&) const = default;
  };
  struct Config {                      // CreatableTopicConfig
    std::string name;                  // Name
    std::optional<std::string> value;  // Value
    bool operator==(const Config&) const = default;
  };
  struct Topic {                          // CreatableTopic
    std::string name;                     // Name
    int32_t num_partitions = 0;           // NumPartitions (-1 = broker default)
    int16_t replication_factor = 0;       // ReplicationFactor (-1 = broker default)
    std::vector<Assignment> assignments;  // Assignments
    std::vector<Config> configs;          // Configs
    bool operator==(const Topic&) const = default;
  };
  std::vector<Topic> topics;   // Topics
  int32_t timeout_ms = 60000;  // timeoutMs
  bool validate_only = false;  // validateOnly v1+
  SILT_WIRE_MESSAGE(CreateTopicsRequest, ApiKey::kCreateTopics);
};

struct CreateTopicsResponse {
  struct Topic {                               // CreatableTopicResult
    std::string name;                          // Name
    int16_t error_code = 0;                    // ErrorCode
    std::optional<std::string> error_message;  // ErrorMessage v1+
    bool operator==(const Topic&) const = default;
  };
  int32_t throttle_time_ms = 0;  // ThrottleTimeMs v2+
  std::vector<Topic> topics;     // Topics
  SILT_WIRE_MESSAGE(CreateTopicsResponse, ApiKey::kCreateTopics);
};

// ---- DeleteTopics (20) ------------------------------------------------------------------

struct DeleteTopicsRequest {
  std::vector<std::string> topic_names;  // TopicNames
  int32_t timeout_ms = 0;                // TimeoutMs
  SILT_WIRE_MESSAGE(DeleteTopicsRequest, ApiKey::kDeleteTopics);
};

struct DeleteTopicsResponse {
  struct TopicResult {       // DeletableTopicResult
    std::string name;        // Name
    int16_t error_code = 0;  // ErrorCode
    bool operator==(const TopicResult&) const = default;
  };
  int32_t throttle_time_ms = 0;        // ThrottleTimeMs v1+
  std::vector<TopicResult> responses;  // Responses
  SILT_WIRE_MESSAGE(DeleteTopicsResponse, ApiKey::kDeleteTopics);
};

// ---- DescribeGroups (15) ----------------------------------------------------------------

struct DescribeGroupsRequest {
  std::vector<std::string> groups;           // Groups
  bool include_authorized_operations = false;  // IncludeAuthorizedOperations v3+
  SILT_WIRE_MESSAGE(DescribeGroupsRequest, ApiKey::kDescribeGroups);
};

struct DescribeGroupsResponse {
  struct Member {                                  // DescribedGroupMember
    std::string member_id;                         // MemberId
    std::optional<std::string> group_instance_id;  // GroupInstanceId v4+
    std::string client_id;                         // ClientId
    std::string client_host;                       // ClientHost
    std::string member_metadata;                   // MemberMetadata (bytes)
    std::string member_assignment;                 // MemberAssignment (bytes)
    bool operator==(const Member&) const = default;
  };
  struct Group {                  // DescribedGroup
    int16_t error_code = 0;       // ErrorCode
    std::string group_id;         // GroupId
    std::string group_state;      // GroupState
    std::string protocol_type;    // ProtocolType
    std::string protocol_data;    // ProtocolData
    std::vector<Member> members;  // Members
    int32_t authorized_operations = kAuthorizedOperationsOmitted;  // AuthorizedOperations v3+
    bool operator==(const Group&) const = default;
  };
  int32_t throttle_time_ms = 0;  // ThrottleTimeMs v1+
  std::vector<Group> groups;     // Groups
  SILT_WIRE_MESSAGE(DescribeGroupsResponse, ApiKey::kDescribeGroups);
};

// ---- ListGroups (16) --------------------------------------------------------------------

struct ListGroupsRequest {
  SILT_WIRE_MESSAGE(ListGroupsRequest, ApiKey::kListGroups);
};

struct ListGroupsResponse {
  struct Group {               // ListedGroup
    std::string group_id;      // GroupId
    std::string protocol_type;  // ProtocolType
    bool operator==(const Group&) const = default;
  };
  int32_t throttle_time_ms = 0;  // ThrottleTimeMs v1+
  int16_t error_code = 0;        // ErrorCode
  std::vector<Group> groups;     // Groups
  SILT_WIRE_MESSAGE(ListGroupsResponse, ApiKey::kListGroups);
};

// ---- DescribeConfigs (32) ---------------------------------------------------------------

// ResourceType of DescribeConfigs, AlterConfigs and IncrementalAlterConfigs (Kafka's
// ConfigResource.Type ids).
constexpr int8_t kConfigResourceTopic = 2;
constexpr int8_t kConfigResourceBroker = 4;

struct DescribeConfigsRequest {
  struct Resource {                    // DescribeConfigsResource
    int8_t resource_type = 0;          // ResourceType (2 topic, 4 broker)
    std::string resource_name;         // ResourceName
    std::optional<std::vector<std::string>> configuration_keys;  // null = all
    bool operator==(const Resource&) const = default;
  };
  std::vector<Resource> resources;     // Resources
  bool include_synonyms = false;       // IncludeSynonyms v1+
  bool include_documentation = false;  // IncludeDocumentation v3+
  SILT_WIRE_MESSAGE(DescribeConfigsRequest, ApiKey::kDescribeConfigs);
};

struct DescribeConfigsResponse {
  struct Synonym {                     // DescribeConfigsSynonym
    std::string name;                  // Name
    std::optional<std::string> value;  // Value
    int8_t source = 0;                 // Source
    bool operator==(const Synonym&) const = default;
  };
  struct Config {                              // DescribeConfigsResourceResult
    std::string name;                          // Name
    std::optional<std::string> value;          // Value
    bool read_only = false;                    // ReadOnly
    bool is_default = false;                   // IsDefault v0 only
    int8_t config_source = -1;                 // ConfigSource v1+
    bool is_sensitive = false;                 // IsSensitive
    std::vector<Synonym> synonyms;             // Synonyms v1+
    int8_t config_type = 0;                    // ConfigType v3+
    std::optional<std::string> documentation;  // Documentation v3+
    bool operator==(const Config&) const = default;
  };
  struct ResourceResult {                      // DescribeConfigsResult
    int16_t error_code = 0;                    // ErrorCode
    std::optional<std::string> error_message;  // ErrorMessage
    int8_t resource_type = 0;                  // ResourceType
    std::string resource_name;                 // ResourceName
    std::vector<Config> configs;               // Configs
    bool operator==(const ResourceResult&) const = default;
  };
  int32_t throttle_time_ms = 0;         // ThrottleTimeMs
  std::vector<ResourceResult> results;  // Results
  SILT_WIRE_MESSAGE(DescribeConfigsResponse, ApiKey::kDescribeConfigs);
};

// ---- AlterConfigs (33) ------------------------------------------------------------------
// The legacy form: each resource's dynamic configs are replaced as a whole by those given.

struct AlterConfigsRequest {
  struct Config {                      // AlterableConfig
    std::string name;                  // Name
    std::optional<std::string> value;  // Value
    bool operator==(const Config&) const = default;
  };
  struct Resource {               // AlterConfigsResource
    int8_t resource_type = 0;     // ResourceType (2 topic, 4 broker)
    std::string resource_name;    // ResourceName
    std::vector<Config> configs;  // Configs
    bool operator==(const Resource&) const = default;
  };
  std::vector<Resource> resources;  // Resources
  bool validate_only = false;       // ValidateOnly
  SILT_WIRE_MESSAGE(AlterConfigsRequest, ApiKey::kAlterConfigs);
};

struct AlterConfigsResponse {
  struct Result {                              // AlterConfigsResourceResponse
    int16_t error_code = 0;                    // ErrorCode
    std::optional<std::string> error_message;  // ErrorMessage
    int8_t resource_type = 0;                  // ResourceType
    std::string resource_name;                 // ResourceName
    bool operator==(const Result&) const = default;
  };
  int32_t throttle_time_ms = 0;   // ThrottleTimeMs
  std::vector<Result> responses;  // Responses
  SILT_WIRE_MESSAGE(AlterConfigsResponse, ApiKey::kAlterConfigs);
};

// ---- CreatePartitions (37) --------------------------------------------------------------

struct CreatePartitionsRequest {
  struct Assignment {                 // CreatePartitionsAssignment
    std::vector<int32_t> broker_ids;  // BrokerIds
    bool operator==(const Assignment&) const = default;
  };
  struct Topic {                                         // CreatePartitionsTopic
    std::string name;                                    // Name
    int32_t count = 0;                                   // Count (new total)
    std::optional<std::vector<Assignment>> assignments;  // Assignments (null = broker picks)
    bool operator==(const Topic&) const = default;
  };
  std::vector<Topic> topics;   // Topics
  int32_t timeout_ms = 0;      // TimeoutMs
  bool validate_only = false;  // ValidateOnly
  SILT_WIRE_MESSAGE(CreatePartitionsRequest, ApiKey::kCreatePartitions);
};

struct CreatePartitionsResponse {
  struct TopicResult {                         // CreatePartitionsTopicResult
    std::string name;                          // Name
    int16_t error_code = 0;                    // ErrorCode
    std::optional<std::string> error_message;  // ErrorMessage
    bool operator==(const TopicResult&) const = default;
  };
  int32_t throttle_time_ms = 0;      // ThrottleTimeMs
  std::vector<TopicResult> results;  // Results
  SILT_WIRE_MESSAGE(CreatePartitionsResponse, ApiKey::kCreatePartitions);
};

// ---- DeleteRecords (21) -----------------------------------------------------------------

struct DeleteRecordsRequest {
  struct Partition {              // DeleteRecordsPartition
    int32_t partition_index = 0;  // PartitionIndex
    int64_t offset = 0;           // Offset (-1 = high watermark)
    bool operator==(const Partition&) const = default;
  };
  struct Topic {                        // DeleteRecordsTopic
    std::string name;                   // Name
    std::vector<Partition> partitions;  // Partitions
    bool operator==(const Topic&) const = default;
  };
  std::vector<Topic> topics;  // Topics
  int32_t timeout_ms = 0;     // TimeoutMs
  SILT_WIRE_MESSAGE(DeleteRecordsRequest, ApiKey::kDeleteRecords);
};

struct DeleteRecordsResponse {
  struct Partition {              // DeleteRecordsPartitionResult
    int32_t partition_index = 0;  // PartitionIndex
    int64_t low_watermark = 0;    // LowWatermark
    int16_t error_code = 0;       // ErrorCode
    bool operator==(const Partition&) const = default;
  };
  struct Topic {                        // DeleteRecordsTopicResult
    std::string name;                   // Name
    std::vector<Partition> partitions;  // Partitions
    bool operator==(const Topic&) const = default;
  };
  int32_t throttle_time_ms = 0;  // ThrottleTimeMs
  std::vector<Topic> topics;     // Topics
  SILT_WIRE_MESSAGE(DeleteRecordsResponse, ApiKey::kDeleteRecords);
};

// ---- OffsetForLeaderEpoch (23) ----------------------------------------------------------

struct OffsetForLeaderEpochRequest {
  struct Partition {                    // OffsetForLeaderPartition
    int32_t partition = 0;              // Partition
    int32_t current_leader_epoch = -1;  // CurrentLeaderEpoch v2+
    int32_t leader_epoch = 0;           // LeaderEpoch
    bool operator==(const Partition&) const = default;
  };
  struct Topic {                        // OffsetForLeaderTopic
    std::string topic;                  // Topic
    std::vector<Partition> partitions;  // Partitions
    bool operator==(const Topic&) const = default;
  };
  int32_t replica_id = -2;    // ReplicaId v3+ (-2 = debugging consumer, -1 = consumer)
  std::vector<Topic> topics;  // Topics
  SILT_WIRE_MESSAGE(OffsetForLeaderEpochRequest, ApiKey::kOffsetForLeaderEpoch);
};

struct OffsetForLeaderEpochResponse {
  struct Partition {            // EpochEndOffset
    int16_t error_code = 0;     // ErrorCode
    int32_t partition = 0;      // Partition
    int32_t leader_epoch = -1;  // LeaderEpoch v1+
    int64_t end_offset = -1;    // EndOffset
    bool operator==(const Partition&) const = default;
  };
  struct Topic {                        // OffsetForLeaderTopicResult
    std::string topic;                  // Topic
    std::vector<Partition> partitions;  // Partitions
    bool operator==(const Topic&) const = default;
  };
  int32_t throttle_time_ms = 0;  // ThrottleTimeMs v2+
  std::vector<Topic> topics;     // Topics
  SILT_WIRE_MESSAGE(OffsetForLeaderEpochResponse, ApiKey::kOffsetForLeaderEpoch);
};

// ---- DeleteGroups (42) ------------------------------------------------------------------

struct DeleteGroupsRequest {
  std::vector<std::string> groups_names;  // GroupsNames
  SILT_WIRE_MESSAGE(DeleteGroupsRequest, ApiKey::kDeleteGroups);
};

struct DeleteGroupsResponse {
  struct Result {            // DeletableGroupResult
    std::string group_id;    // GroupId
    int16_t error_code = 0;  // ErrorCode
    bool operator==(const Result&) const = default;
  };
  int32_t throttle_time_ms = 0;  // ThrottleTimeMs
  std::vector<Result> results;   // Results
  SILT_WIRE_MESSAGE(DeleteGroupsResponse, ApiKey::kDeleteGroups);
};

// ---- IncrementalAlterConfigs (44) -------------------------------------------------------

struct IncrementalAlterConfigsRequest {
  // ConfigOperation values (Kafka's AlterConfigOp.OpType).
  static constexpr int8_t kSet = 0;
  static constexpr int8_t kDelete = 1;       // back to the default; Value is ignored
  static constexpr int8_t kAppend = 2;       // list configs only
  static constexpr int8_t kSubtract = 3;     // list configs only
  struct Config {                      // AlterableConfig
    std::string name;                  // Name
    int8_t config_operation = kSet;    // ConfigOperation
    std::optional<std::string> value;  // Value
    bool operator==(const Config&) const = default;
  };
  struct Resource {               // AlterConfigsResource
    int8_t resource_type = 0;     // ResourceType (2 topic, 4 broker)
    std::string resource_name;    // ResourceName
    std::vector<Config> configs;  // Configs
    bool operator==(const Resource&) const = default;
  };
  std::vector<Resource> resources;  // Resources
  bool validate_only = false;       // ValidateOnly
  SILT_WIRE_MESSAGE(IncrementalAlterConfigsRequest, ApiKey::kIncrementalAlterConfigs);
};

struct IncrementalAlterConfigsResponse {
  struct Result {                              // AlterConfigsResourceResponse
    int16_t error_code = 0;                    // ErrorCode
    std::optional<std::string> error_message;  // ErrorMessage
    int8_t resource_type = 0;                  // ResourceType
    std::string resource_name;                 // ResourceName
    bool operator==(const Result&) const = default;
  };
  int32_t throttle_time_ms = 0;  // ThrottleTimeMs
  std::vector<Result> responses;  // Responses
  SILT_WIRE_MESSAGE(IncrementalAlterConfigsResponse, ApiKey::kIncrementalAlterConfigs);
};

// ---- DescribeQuorum (55) ----------------------------------------------------------------
// KIP-595. The metadata log is Kafka's `__cluster_metadata` partition 0; only the controller
// (the Raft leader) answers it, others answer NOT_LEADER_OR_FOLLOWER for the partition.

inline constexpr const char* kClusterMetadataTopic = "__cluster_metadata";

struct DescribeQuorumRequest {
  struct Partition {              // PartitionData
    int32_t partition_index = 0;  // PartitionIndex
    bool operator==(const Partition&) const = default;
  };
  struct Topic {                        // TopicData
    std::string topic_name;             // TopicName
    std::vector<Partition> partitions;  // Partitions
    bool operator==(const Topic&) const = default;
  };
  std::vector<Topic> topics;  // Topics
  SILT_WIRE_MESSAGE(DescribeQuorumRequest, ApiKey::kDescribeQuorum);
};

struct DescribeQuorumResponse {
  struct ReplicaState {                    // ReplicaState
    int32_t replica_id = 0;                // ReplicaId
    int64_t log_end_offset = -1;           // LogEndOffset (-1 unknown)
    int64_t last_fetch_timestamp = -1;     // LastFetchTimestamp v1+
    int64_t last_caught_up_timestamp = -1; // LastCaughtUpTimestamp v1+
    bool operator==(const ReplicaState&) const = default;
  };
  struct Partition {                          // PartitionData
    int32_t partition_index = 0;              // PartitionIndex
    int16_t error_code = 0;                   // ErrorCode
    int32_t leader_id = -1;                   // LeaderId
    int32_t leader_epoch = -1;                // LeaderEpoch (the Raft term)
    int64_t high_watermark = -1;              // HighWatermark (the commit index)
    std::vector<ReplicaState> current_voters;  // CurrentVoters
    std::vector<ReplicaState> observers;       // Observers
    bool operator==(const Partition&) const = default;
  };
  struct Topic {                        // TopicData
    std::string topic_name;             // TopicName
    std::vector<Partition> partitions;  // Partitions
    bool operator==(const Topic&) const = default;
  };
  int16_t error_code = 0;     // ErrorCode
  std::vector<Topic> topics;  // Topics
  SILT_WIRE_MESSAGE(DescribeQuorumResponse, ApiKey::kDescribeQuorum);
};

// ---- SiltAppendBatches (10000, silt's own) ----------------------------------------------
//
// Not a Kafka API: silt's offset-preserving append, used by `silt replicate` to copy batches
// into a mirror topic at their own offsets (see lib/protocol/README.md and silt-serve(1)).
// One partition per request; answered like acks=all, once the high watermark passes the
// appended batches. v0 only, not flexible.

struct SiltAppendBatchesRequest {
  std::string topic;             // Topic
  int32_t partition = 0;         // Partition
  int64_t expected_offset = 0;   // ExpectedOffset: the destination log end the sender believes
  int32_t timeout_ms = 30000;    // TimeoutMs: how long to wait for the high watermark
  RecordSet records;             // Records: whole v2 batches carrying their offsets; empty asks
                                 // for the log end only
  SILT_WIRE_MESSAGE(SiltAppendBatchesRequest, ApiKey::kSiltAppendBatches);
};

struct SiltAppendBatchesResponse {
  int16_t error_code = 0;                     // ErrorCode
  std::optional<std::string> error_message;   // ErrorMessage
  int64_t log_end_offset = -1;                // LogEndOffset: after the call (also on error)
  int64_t high_watermark = -1;                // HighWatermark
  int64_t log_start_offset = -1;              // LogStartOffset
  SILT_WIRE_MESSAGE(SiltAppendBatchesResponse, ApiKey::kSiltAppendBatches);
};

#undef SILT_WIRE_MESSAGE

}  // namespace silt::protocol
