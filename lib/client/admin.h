// Admin operations over the network, as standard Kafka requests (so they work against silt and
// Apache Kafka alike): topics (CreateTopics, DeleteTopics, CreatePartitions, Metadata,
// DescribeConfigs, IncrementalAlterConfigs), offsets (ListOffsets) and consumer groups
// (ListGroups, DescribeGroups, OffsetFetch, OffsetCommit, DeleteGroups). Each function retries
// retriable errors (leader or coordinator moving, a topic just created) until the cluster's
// retry time passes, and turns Kafka error codes into a Status naming the code.
#pragma once

#include <cstdint>
#include <map>
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

}  // namespace silt::client
