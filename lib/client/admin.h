// Admin operations over the network, as standard Kafka requests (so they work against silt and
// Apache Kafka alike): topics (CreateTopics, DeleteTopics, CreatePartitions, Metadata,
// DescribeConfigs, IncrementalAlterConfigs), offsets (ListOffsets) and consumer groups
// (ListGroups, DescribeGroups, OffsetFetch, OffsetCommit, DeleteGroups). Each function retries
// retriable errors (leader or coordinator moving, a topic just created) until the cluster's
// retry time passes, and turns Kafka error codes into a Status naming the code.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "client/cluster.h"
#include "client/consumer_protocol.h"

namespace silt::client {

// ListOffsets for `partition -> timestamp` of one topic (timestamp -1 latest, -2 earliest, else
// the first offset whose timestamp is >= it, or -1 when there is none), asked of each leader.
Result<std::map<int32_t, int64_t>> ListOffsets(Cluster* cluster, const std::string& topic,
                                               const std::map<int32_t, int64_t>& timestamps);

struct TopicSpec {
  std::string name;
  int32_t partitions = -1;           // -1: broker default
  int16_t replication_factor = -1;   // -1: broker default
  std::map<std::string, std::string> configs;
};
Status CreateTopic(Cluster* cluster, const TopicSpec& spec);
Status DeleteTopic(Cluster* cluster, const std::string& topic);
// Grows a topic to `total` partitions (CreatePartitions).
Status CreatePartitions(Cluster* cluster, const std::string& topic, int32_t total);

struct ConfigEntry {
  std::string name;
  std::optional<std::string> value;
  bool is_default = false;
  bool read_only = false;
  bool sensitive = false;
};
// DescribeConfigs of a topic: every config the broker reports.
Result<std::vector<ConfigEntry>> DescribeTopicConfigs(Cluster* cluster, const std::string& topic);
// IncrementalAlterConfigs: sets `set` and deletes `remove` on a topic.
Status AlterTopicConfigs(Cluster* cluster, const std::string& topic,
                         const std::map<std::string, std::string>& set,
                         const std::vector<std::string>& remove);

struct GroupListing {
  std::string group_id;
  std::string protocol_type;
};
// ListGroups of every broker, merged and sorted.
Result<std::vector<GroupListing>> ListGroups(Cluster* cluster);

struct GroupMember {
  std::string member_id;
  std::optional<std::string> group_instance_id;
  std::string client_id;
  std::string client_host;
  TopicPartitions assignment;  // decoded when the protocol type is "consumer"
};
struct GroupDescription {
  std::string group_id;
  std::string state;          // Kafka's names: Empty, Stable, PreparingRebalance, Dead...
  std::string protocol_type;
  std::string protocol;       // the assignor, e.g. "range"
  std::vector<GroupMember> members;
};
// DescribeGroups at the group's coordinator. A group the coordinator does not know comes back
// with state "Dead" (Kafka's answer), not an error.
Result<GroupDescription> DescribeGroup(Cluster* cluster, const std::string& group);

// OffsetFetch: committed offsets of every partition the group has committed (topic -> partition
// -> offset); offsets of -1 (nothing committed) are left out.
Result<std::map<std::string, std::map<int32_t, int64_t>>> FetchCommitted(
    Cluster* cluster, const std::string& group,
    const std::optional<std::vector<std::string>>& topics = std::nullopt);

// OffsetCommit outside any generation (generation -1, empty member id), which Kafka accepts only
// while the group has no members: what `group reset-offsets --execute` uses.
Status CommitOffsetsStandalone(Cluster* cluster, const std::string& group,
                               const std::map<std::string, std::map<int32_t, int64_t>>& offsets);

// DeleteGroups: NotFound for an unknown group; Busy (NON_EMPTY_GROUP) while it has members.
Status DeleteGroup(Cluster* cluster, const std::string& group);

// ---- the cluster view (`silt cluster`) -----------------------------------------------------

struct BrokerInfo {
  int32_t node_id = 0;
  std::string host;
  int32_t port = 0;
  std::optional<std::string> rack;
};

struct PartitionInfo {
  int32_t partition = 0;
  int32_t leader = -1;        // -1: no leader
  int32_t leader_epoch = -1;  // -1: not reported (Metadata below v7)
  int16_t error_code = 0;     // e.g. LEADER_NOT_AVAILABLE, as the broker answered it
  std::vector<int32_t> replicas;
  std::vector<int32_t> isr;
  std::vector<int32_t> offline_replicas;
};

struct TopicInfo {
  std::string name;
  std::optional<std::string> topic_id;  // Metadata v10+ only
  bool internal = false;
  int16_t error_code = 0;
  std::vector<PartitionInfo> partitions;  // ascending
};

struct ClusterDescription {
  std::optional<std::string> cluster_id;  // Metadata v2+
  int32_t controller_id = -1;             // -1: unknown (or Metadata v0)
  std::vector<BrokerInfo> brokers;        // ascending node id
  std::vector<TopicInfo> topics;          // sorted by name
};

// One Metadata request (standard Kafka, so it works against Apache Kafka too): the brokers, the
// controller and, for `topics` (nullopt: every topic), each partition's leader, leader epoch,
// replicas, ISR and offline replicas. Topics are never auto-created. NotFound naming the first
// topic of `topics` the cluster does not know.
Result<ClusterDescription> DescribeCluster(
    Cluster* cluster, const std::optional<std::vector<std::string>>& topics);

// The metadata quorum (KIP-595's DescribeQuorum of `__cluster_metadata` partition 0), as its
// leader, the controller, reports it.
struct QuorumReplica {
  int32_t replica_id = 0;
  int64_t log_end_offset = -1;         // -1: unknown
  int64_t last_fetch_ms = -1;          // wall clock, -1: unknown (or v0)
  int64_t last_caught_up_ms = -1;
};
struct QuorumDescription {
  int32_t leader_id = -1;
  int32_t leader_epoch = -1;     // the Raft term
  int64_t high_watermark = -1;   // the commit index
  std::vector<QuorumReplica> voters;     // ascending id
  std::vector<QuorumReplica> observers;  // ascending id
};

// DescribeQuorum at the controller (`controller_id` from Metadata, or -1 to look it up),
// following NOT_LEADER_OR_FOLLOWER to the leader it names. nullopt when there is no metadata
// quorum to describe: a single silt node (UNKNOWN_TOPIC_OR_PARTITION) or a broker that does not
// serve the API (ZooKeeper-mode Kafka).
Result<std::optional<QuorumDescription>> DescribeQuorum(Cluster* cluster, int32_t controller_id);

// ---- one interface for both modes --------------------------------------------------------

// topic -> partition -> committed offset.
using CommittedOffsets = std::map<std::string, std::map<int32_t, int64_t>>;

struct TopicListing {
  std::string name;
  int32_t partitions = 0;
  bool internal = false;  // __consumer_offsets
};

struct PartitionDescription {
  int32_t partition = 0;
  std::optional<int32_t> leader;  // none in a data dir (no nodes there)
  std::vector<int32_t> replicas;  // empty in a data dir
  std::vector<int32_t> isr;
  std::vector<int32_t> offline_replicas;  // over the network only
  int64_t log_start_offset = 0;
  int64_t log_end_offset = 0;
  std::optional<int64_t> size_bytes;  // data dir only (no DescribeLogDirs over the network yet)
  std::optional<int64_t> segments;    // data dir only
};

struct TopicDescription {
  std::string name;
  // Over the network, from Metadata v10+ (null from a broker that serves only older versions).
  std::optional<std::string> topic_id;
  bool internal = false;
  int32_t partition_count = 0;
  std::vector<PartitionDescription> partitions;  // ascending
  std::map<std::string, std::string> configs;    // overrides
  std::map<std::string, std::string> effective_configs;
};

// Topic and group administration, the same calls on a data directory (LocalAdmin, in
// local_admin.h) and on a cluster (NewNetAdmin). Results are plain structs; the CLI formats
// them once for both. Missing topics and groups are NotFound with a message naming them.
class Admin {
 public:
  virtual ~Admin() = default;

  virtual Result<std::vector<TopicListing>> ListTopics() = 0;  // sorted by name
  virtual Result<TopicDescription> DescribeTopic(const std::string& topic) = 0;
  virtual Status CreateTopic(const TopicSpec& spec) = 0;
  virtual Status DeleteTopic(const std::string& topic) = 0;
  // Long work (a data dir removing a deleted topic's files) reports how far it is through `fn`:
  // `done` of `total` units (partition directories), every quarter second or so, on the calling
  // thread. Admins whose work is not long ignore it.
  using ProgressFn = std::function<void(int64_t done, int64_t total)>;
  virtual void SetProgress(ProgressFn fn) {}
  // Grows `topic` to `total` partitions.
  virtual Status CreatePartitions(const std::string& topic, int32_t total) = 0;
  virtual Status AlterTopicConfigs(const std::string& topic,
                                   const std::map<std::string, std::string>& set,
                                   const std::vector<std::string>& remove) = 0;
  // partition -> offset for partition -> timestamp (-2 earliest, -1 latest, else the first
  // offset whose timestamp is >= it, or -1 when there is none).
  virtual Result<std::map<int32_t, int64_t>> ListOffsets(
      const std::string& topic, const std::map<int32_t, int64_t>& timestamps) = 0;

  virtual Result<std::vector<GroupListing>> ListGroups() = 0;  // sorted by group id
  // State "Dead" for a group that does not exist (Kafka's answer), not an error. A data dir
  // has no live members: its groups are "Empty".
  virtual Result<GroupDescription> DescribeGroup(const std::string& group) = 0;
  // Committed offsets (all topics, or only `topics`); partitions without one are left out.
  virtual Result<CommittedOffsets> FetchCommitted(
      const std::string& group, const std::optional<std::vector<std::string>>& topics) = 0;
  // Commits outside any generation: allowed only while the group has no members.
  virtual Status CommitOffsets(const std::string& group, const CommittedOffsets& offsets) = 0;
  // NotFound for an unknown group; Busy while it has members.
  virtual Status DeleteGroup(const std::string& group) = 0;

  // Makes the changes durable and releases what the admin holds (a data dir's lock).
  virtual Status Close() { return Status::OK(); }
};

// The network implementation over `cluster`, which it owns.
std::unique_ptr<Admin> NewNetAdmin(std::unique_ptr<Cluster> cluster);

}  // namespace silt::client
