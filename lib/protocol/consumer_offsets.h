// The records of Kafka's internal topic `__consumer_offsets`: committed offsets and consumer
// group metadata, in Kafka's own layouts so a data directory moves between silt and Kafka.
//
// Every record's key and value start with an int16 version that says which schema follows
// (Kafka's group-coordinator/src/main/resources/common/message/*.json):
//
//   key version 0, 1   OffsetCommitKey     group:string topic:string partition:int32
//   key version 2      GroupMetadataKey    group:string
//   key version 3+     records of the newer consumer protocol (KIP-848): not decoded here
//
//   OffsetCommitValue  v0: offset:int64 metadata:string commitTimestamp:int64
//                      v1: ... commitTimestamp:int64 expireTimestamp:int64
//                      v2: as v0
//                      v3: offset:int64 leaderEpoch:int32 metadata:string commitTimestamp:int64
//                      v4: v3 with flexible encodings (compact strings, tagged fields)
//   GroupMetadataValue protocolType:string generation:int32 protocol:nullable_string
//                      leader:nullable_string currentStateTimestamp:int64 (v2+)
//                      members:[memberId:string groupInstanceId:nullable_string (v3+)
//                               clientId:string clientHost:string rebalanceTimeout:int32 (v1+)
//                               sessionTimeout:int32 subscription:bytes assignment:bytes]
//                      v4: v3 with flexible encodings
//
// A record with a null value is a tombstone: the offset (or the group) is deleted. The topic is
// compacted on these keys. A group's records all live in partition
// OffsetsPartitionFor(group, n), the same partition Kafka picks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace silt::protocol {

inline constexpr const char* kConsumerOffsetsTopic = "__consumer_offsets";
// silt's own internal topic: the checkpoints of `silt replicate` into a cluster (one record per
// source, compacted; replicate/cluster_sink.h).
inline constexpr const char* kReplicateCheckpointTopic = "__silt_replicate";
// Topics Metadata marks internal (is_internal): Kafka's offsets topic and silt's own.
inline bool IsInternalTopic(std::string_view topic) {
  return topic == kConsumerOffsetsTopic || topic == kReplicateCheckpointTopic;
}

// Java's String.hashCode() of `s` (UTF-8 here, hashed as the UTF-16 code units Java sees).
int32_t JavaStringHashCode(std::string_view s);
// Kafka's partition for a group: Utils.abs(groupId.hashCode()) % partitions, where Utils.abs
// maps INT32_MIN to 0.
int32_t OffsetsPartitionFor(std::string_view group, int32_t partitions);

struct OffsetCommitKey {
  std::string group;
  std::string topic;
  int32_t partition = 0;
  bool operator==(const OffsetCommitKey&) const = default;
};

struct GroupMetadataKey {
  std::string group;
  bool operator==(const GroupMetadataKey&) const = default;
};

// A decoded key. kind tells which member is meaningful.
struct ConsumerOffsetsKey {
  enum class Kind { kOffsetCommit, kGroupMetadata, kOther };
  Kind kind = Kind::kOther;
  int16_t version = -1;
  OffsetCommitKey offset;     // kOffsetCommit
  GroupMetadataKey metadata;  // kGroupMetadata
};

struct OffsetCommitValue {
  int16_t version = 3;
  int64_t offset = -1;
  int32_t leader_epoch = -1;  // v3+
  std::string metadata;
  int64_t commit_timestamp = -1;
  int64_t expire_timestamp = -1;  // v1 only
  bool operator==(const OffsetCommitValue&) const = default;
};

struct GroupMetadataValue {
  struct Member {
    std::string member_id;
    std::optional<std::string> group_instance_id;  // v3+
    std::string client_id;
    std::string client_host;
    int32_t rebalance_timeout = -1;  // v1+ (v0: the session timeout applies)
    int32_t session_timeout = 0;
    std::string subscription;
    std::string assignment;
    bool operator==(const Member&) const = default;
  };
  int16_t version = 3;
  std::string protocol_type;
  int32_t generation = 0;
  std::optional<std::string> protocol;
  std::optional<std::string> leader;
  int64_t current_state_timestamp = -1;  // v2+
  std::vector<Member> members;
  bool operator==(const GroupMetadataValue&) const = default;
};

// Keys. Decoding a key whose version is 3 or more succeeds with Kind::kOther.
std::string EncodeOffsetCommitKey(const OffsetCommitKey& k);  // written as version 1
std::string EncodeGroupMetadataKey(const GroupMetadataKey& k);  // version 2
Result<ConsumerOffsetsKey> DecodeConsumerOffsetsKey(std::string_view bytes);

// Values, at value.version (0-4). Decode fails (Corruption/Truncated) on a bad or unknown
// version, on a short value and on trailing bytes.
std::string EncodeOffsetCommitValue(const OffsetCommitValue& v);
Result<OffsetCommitValue> DecodeOffsetCommitValue(std::string_view bytes);
std::string EncodeGroupMetadataValue(const GroupMetadataValue& v);
Result<GroupMetadataValue> DecodeGroupMetadataValue(std::string_view bytes);

}  // namespace silt::protocol
