// The records of the metadata log, their binary encoding, and the commands made of them.
//
// Kafka's KRaft records are the model: the same record kinds, the same field names (in the
// comments, so grep finds the spec), and the type numbers of Kafka's apiKeys. The encoding is
// silt's own (big-endian, fixed width), not Kafka's flexible versions:
//
//   Record => frame_version type version body
//     frame_version  int8   1
//     type           int16  RecordType below (Kafka's apiKey of the record)
//     version        int16  the body's version: 2 for PartitionChange, 1 for Partition,
//                           RegisterBroker and ProducerIds, 0 for every other type (a reader
//                           takes every version up to its own)
//   string          => length int16, bytes; a nullable string has length -1 for null
//   uuid            => 16 bytes
//   [T]             => count int32, T...; a nullable array has count -1 for null
//
//   RegisterBroker v1  (RegisterBrokerRecord)  broker_id int32, incarnation_id uuid,
//                                              host string, port int32,
//                                              peer_host string, peer_port int32 (v1; v0:
//                                              "" and 0, the voter list's address applies)
//   Topic v0           (TopicRecord)           name string, topic_id uuid
//   Partition v0       (PartitionRecord)       partition_id int32, topic_id uuid,
//                                              replicas [int32], isr [int32], leader int32,
//                                              leader_epoch int32, partition_epoch int32,
//                                              removing_replicas [int32] (v1),
//                                              adding_replicas [int32] (v1; v0: both empty)
//   Config v0          (ConfigRecord)          resource_type int8 (2 topic, 4 broker),
//                                              resource_name string, name string,
//                                              value nullable string (null: deleted)
//   PartitionChange v1 (PartitionChangeRecord) partition_id int32, topic_id uuid,
//                                              isr nullable [int32], leader int32 (-2: no
//                                              change, -1: none), replicas nullable [int32],
//                                              expected_partition_epoch int32 (v1; -1: any; v0
//                                              has no such field and applies unconditionally),
//                                              removing_replicas nullable [int32] (v2),
//                                              adding_replicas nullable [int32] (v2; null or
//                                              absent: unchanged)
//   FenceBroker v0     (FenceBrokerRecord)     broker_id int32
//   UnfenceBroker v0   (UnfenceBrokerRecord)   broker_id int32
//   RemoveTopic v0     (RemoveTopicRecord)     topic_id uuid
//   ProducerIds v1     (ProducerIdsRecord)     broker_id int32, next_producer_id int64,
//                                              reserved_producer_id int64 (v1; v0: -1)
//   ClusterId v0       (silt's ClusterIdRecord) cluster_id string   (type 1000, no Kafka
//                                              counterpart: the first record of every cluster's
//                                              log; a different id later is refused)
//   AlterPartition v0  (silt's AlterPartitionRecord, type 1001: Kafka's AlterPartition request
//                      as a record, so that its checks run in every node's apply)
//                                              partition_id int32, topic_id uuid,
//                                              leader int32 (the sender), leader_epoch int32,
//                                              partition_epoch int32 (the state it was based
//                                              on), new_isr [int32]
//
//   Command => count int32, [length int32, Record]   (one Raft entry; applied all or nothing)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/ids.h"
#include "base/status.h"
#include "base/uuid.h"

namespace silt::cluster {

enum class RecordType : int16_t {
  kRegisterBroker = 0,
  kTopic = 2,
  kPartition = 3,
  kConfig = 4,
  kPartitionChange = 5,
  kFenceBroker = 7,
  kUnfenceBroker = 8,
  kRemoveTopic = 9,
  kProducerIds = 15,
  kClusterId = 1000,  // silt's own
  kAlterPartition = 1001,  // silt's own
};

inline constexpr int8_t kRecordFrameVersion = 1;
inline constexpr int32_t kNoLeader = -1;
inline constexpr int32_t kNoLeaderChange = -2;

enum class ConfigResource : int8_t { kTopic = 2, kBroker = 4 };

struct RegisterBrokerRecord {
  NodeId broker_id;
  Uuid incarnation_id;  // IncarnationId: new on every start of the broker process
  std::string host;     // the advertised client endpoint
  int32_t port = 0;
  // A broker-only node's peer address (replica fetches from it go there); "" and 0 for a
  // voter, whose peer address is the voter list's.
  std::string peer_host = {};
  int32_t peer_port = 0;
  bool operator==(const RegisterBrokerRecord&) const = default;
};
struct TopicRecord {
  std::string name;
  Uuid topic_id;
  bool operator==(const TopicRecord&) const = default;
};
struct PartitionRecord {
  PartitionId partition_id;
  Uuid topic_id;
  std::vector<NodeId> replicas;
  std::vector<NodeId> isr;
  NodeId leader{kNoLeader};
  LeaderEpoch leader_epoch{0};
  int32_t partition_epoch = 0;
  // A reassignment in progress (KIP-455): the replicas being added (they are in `replicas`,
  // not yet all in the ISR) and those to drop once it completes. Both empty otherwise.
  std::vector<NodeId> removing_replicas = {};
  std::vector<NodeId> adding_replicas = {};
  bool operator==(const PartitionRecord&) const = default;
};
struct ConfigRecord {
  ConfigResource resource_type = ConfigResource::kTopic;
  std::string resource_name;  // the topic name, or the broker id in decimal
  std::string name;
  std::optional<std::string> value;  // nullopt: the config is deleted
  bool operator==(const ConfigRecord&) const = default;
};
struct PartitionChangeRecord {
  PartitionId partition_id;
  Uuid topic_id;
  std::optional<std::vector<NodeId>> isr;       // nullopt: unchanged
  NodeId leader{kNoLeaderChange};               // kNoLeaderChange: unchanged
  std::optional<std::vector<NodeId>> replicas;  // nullopt: unchanged
  // The partition epoch the change was decided on: applied only while the partition is still
  // at it (another change in between, such as a leader's ISR change, refuses the command with
  // INVALID_UPDATE_VERSION and the controller decides again). -1: unconditionally.
  int32_t expected_partition_epoch = -1;
  std::optional<std::vector<NodeId>> removing_replicas = {};  // nullopt: unchanged
  std::optional<std::vector<NodeId>> adding_replicas = {};    // nullopt: unchanged
  bool operator==(const PartitionChangeRecord&) const = default;
};
struct FenceBrokerRecord {
  NodeId broker_id;
  bool operator==(const FenceBrokerRecord&) const = default;
};
struct UnfenceBrokerRecord {
  NodeId broker_id;
  bool operator==(const UnfenceBrokerRecord&) const = default;
};
struct RemoveTopicRecord {
  Uuid topic_id;
  bool operator==(const RemoveTopicRecord&) const = default;
};
// A block of producer ids granted to a broker (the ids below next_producer_id down to the
// previous block's end), or, with reserved_producer_id >= 0, a reservation: no broker may hand
// out an id at or below reserved_producer_id any more, even from a block it already holds
// (batches copied into a mirror topic keep the source cluster's producer ids; a producer given
// one of them here would meet that producer's sequence state). A reservation applies only
// when it raises the reserved id and its next_producer_id is above it; the image's next id
// becomes the larger of the two. A block applies only when it advances the next id.
struct ProducerIdsRecord {
  NodeId broker_id;             // the broker the block went to, or that asked for the reservation
  ProducerId next_producer_id;  // the first id of the next block
  ProducerId reserved_producer_id{-1};  // -1: a block (v0 has no such field)
  bool operator==(const ProducerIdsRecord&) const = default;
};

struct ClusterIdRecord {
  std::string cluster_id;  // cluster.id, as every node's meta.properties records it
  bool operator==(const ClusterIdRecord&) const = default;
};

// A partition leader's request to change the ISR (Kafka's AlterPartition), applied only when it
// is based on the partition's current state: `leader` is the leader and `leader_epoch` its epoch
// (else FENCED_LEADER_EPOCH), `partition_epoch` the current partition epoch (else
// INVALID_UPDATE_VERSION), `new_isr` a non-empty subset of the replicas holding the leader
// whose added members are registered, unfenced brokers (else INVALID_REQUEST /
// INELIGIBLE_REPLICA). The refusal's message starts with that Kafka error name. Applied, it
// sets the ISR and bumps the partition epoch, as a PartitionChange does.
struct AlterPartitionRecord {
  PartitionId partition_id;
  Uuid topic_id;
  NodeId leader;
  LeaderEpoch leader_epoch{0};
  int32_t partition_epoch = 0;
  std::vector<NodeId> new_isr;
  bool operator==(const AlterPartitionRecord&) const = default;
};

using MetadataRecord =
    std::variant<RegisterBrokerRecord, TopicRecord, PartitionRecord, ConfigRecord,
                 PartitionChangeRecord, FenceBrokerRecord, UnfenceBrokerRecord, RemoveTopicRecord,
                 ProducerIdsRecord, ClusterIdRecord, AlterPartitionRecord>;

RecordType TypeOf(const MetadataRecord& r);
const char* RecordTypeName(RecordType t);

// One record, framed (frame_version, type, version 0, body).
std::string EncodeRecord(const MetadataRecord& r);
// The inverse. Unsupported for a frame version, type or record version this build does not know
// (naming them); Corruption for a body that is short or has bytes left over.
Result<MetadataRecord> DecodeRecord(std::string_view bytes);

// A command: records applied together, all or nothing.
std::string EncodeCommand(const std::vector<MetadataRecord>& records);
Result<std::vector<MetadataRecord>> DecodeCommand(std::string_view bytes);

}  // namespace silt::cluster
