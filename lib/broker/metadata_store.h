// What the broker knows of topics and where their partitions live: the metadata store
// interface. On a single node it is the data directory (broker/local_metadata_store.h); in a
// cluster it will be the image of the replicated metadata log, with leaders, epochs and ISRs
// decided by the controller. Handlers ask it, never the data dir.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/ids.h"
#include "base/status.h"
#include "storage/log_config.h"

namespace silt::storage {
class PartitionLog;
}

namespace silt::broker {

// One partition's placement: its leader, the leader's epoch, the replicas and the in-sync ones.
struct PartitionAssignment {
  PartitionId partition;
  NodeId leader;
  LeaderEpoch leader_epoch{0};
  std::vector<NodeId> replicas;
  std::vector<NodeId> isr;
  std::vector<NodeId> offline_replicas;  // replicas on brokers that are down (cluster mode)
};

// A broker clients may connect to, at its advertised address.
struct BrokerEndpoint {
  NodeId id;
  std::string host;
  int32_t port = 0;
};

struct TopicMetadata {
  std::string name;
  std::string topic_id;  // Kafka's Uuid in base64 (as in partition.metadata)
  int32_t partition_count = 0;
  std::map<std::string, std::string> configs;  // overrides only
  std::vector<PartitionAssignment> partitions;  // index = partition id
  bool internal = false;                        // __consumer_offsets
};

// The metadata quorum as one node sees it (DescribeQuorum, `silt cluster`, /metrics).
struct QuorumVoterState {
  NodeId id;
  int64_t log_end = -1;  // last Raft index known to be on that voter; -1 unknown (not leader)
};
struct QuorumState {
  std::optional<NodeId> leader;  // the Raft leader (the controller), if known
  int64_t term = 0;              // Raft term (DescribeQuorum's LeaderEpoch)
  int64_t commit_index = 0;      // DescribeQuorum's HighWatermark
  int64_t applied_index = 0;
  bool is_ready_leader = false;  // this node leads and may act as controller
  std::vector<QuorumVoterState> voters;  // every static voter, ascending id
  std::vector<NodeId> fenced_brokers;    // registered brokers fenced now, ascending
};

class MetadataStore {
 public:
  virtual ~MetadataStore() = default;

  virtual std::vector<TopicMetadata> ListTopics() = 0;
  // NotFound for a missing topic.
  virtual Result<TopicMetadata> GetTopic(const std::string& name) = 0;
  // Creates a topic (the store mints its id). partitions = -1: num.partitions. AlreadyExists,
  // InvalidArgument for a bad name or config (naming the key).
  virtual Result<TopicMetadata> CreateTopic(const std::string& name, int32_t partitions,
                                            const std::map<std::string, std::string>& configs) = 0;
  // CreateTopic with `replication_factor` replicas per partition, which the caller has checked
  // against Brokers() (1 on a single node, where this is CreateTopic).
  virtual Result<TopicMetadata> CreateTopicWithReplicas(
      const std::string& name, int32_t partitions, int32_t replication_factor,
      const std::map<std::string, std::string>& configs) {
    (void)replication_factor;
    return CreateTopic(name, partitions, configs);
  }
  // CreateTopic with the replicas of each partition given (CreateTopics' assignments): entry p
  // lists partition p's replicas, the first its preferred leader. The caller has checked their
  // shape (same count everywhere, no broker twice) and that every broker is in Brokers(); the
  // store refuses a broker it does not know with InvalidArgument. On a single node every entry
  // is this node alone, and this is CreateTopic.
  virtual Result<TopicMetadata> CreateTopicWithAssignment(
      const std::string& name, const std::vector<std::vector<NodeId>>& assignment,
      const std::map<std::string, std::string>& configs) {
    return CreateTopic(name, static_cast<int32_t>(assignment.size()), configs);
  }
  virtual Status DeleteTopic(const std::string& name) = 0;
  virtual Status AddPartitions(const std::string& name, int32_t new_total) = 0;
  // AddPartitions with the replicas of each new partition given (CreatePartitions'
  // assignments): entry i lists the replicas of partition (current count + i), checked by the
  // caller as for CreateTopicWithAssignment. On a single node this is AddPartitions.
  virtual Status AddPartitionsWithAssignment(const std::string& name, int32_t new_total,
                                             const std::vector<std::vector<NodeId>>& assignment) {
    (void)assignment;
    return AddPartitions(name, new_total);
  }
  // The effective config: broker defaults with the topic's overrides applied.
  virtual Result<storage::LogConfig> TopicConfig(const std::string& name) = 0;
  // Changes a topic's config overrides in one step: `edit` is given a copy of the current
  // overrides to rewrite (it must not call back into the store; a non-OK Status abandons the
  // change and is returned as is). The result is checked like any topic config
  // (InvalidArgument naming the key) and, unless `validate_only`, stored and applied at once to
  // the topic's open partitions. NotFound for a missing topic.
  using ConfigEdit = std::function<Status(std::map<std::string, std::string>* overrides)>;
  virtual Status AlterTopicConfig(const std::string& name, const ConfigEdit& edit,
                                  bool validate_only) = 0;

  // The brokers clients may use (Metadata's brokers). Empty: this node alone, as on a single
  // node; a cluster store lists the registered, unfenced brokers.
  // Replaces the topic defaults (the broker's log.* configs, dynamic ones applied) for every
  // topic without an override, live partitions included. Unsupported where the store cannot.
  virtual Status SetLogDefaults(const storage::LogConfig&) {
    return Status::Unsupported("dynamic broker configs are not supported here");
  }
  virtual std::vector<BrokerEndpoint> Brokers() { return {}; }
  // False while this node's view may still lack committed changes: a cluster node that has
  // just started answers from an image the metadata log is still being replayed into, so a
  // topic missing from it may well exist. A single node's store is always caught up.
  virtual bool CaughtUp() const { return true; }
  // The controller's node id (NodeId(-1) while there is none). nullopt: this node.
  virtual std::optional<NodeId> Controller() { return std::nullopt; }
  // The metadata quorum's state as this node knows it. nullopt: no quorum (a single node).
  virtual std::optional<QuorumState> Quorum() { return std::nullopt; }

  // Partition reassignment (Kafka's KIP-455) and leader elections (KIP-460). Each answers one
  // Status per entry, in order: OK, NotFound for an unknown topic or partition, or
  // InvalidArgument whose message starts with Kafka's error name (INVALID_REPLICA_ASSIGNMENT,
  // NO_REASSIGNMENT_IN_PROGRESS, ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE,
  // ELIGIBLE_LEADERS_NOT_AVAILABLE). A reassignment returns once started (the controller
  // completes it when the new replicas are in sync); an election once applied. The defaults
  // answer as Kafka does with one broker: its own replicas are the only valid target, there is
  // never a reassignment to cancel or list, and no election is needed.
  struct ReassignmentTarget {
    std::string topic;
    PartitionId partition;
    std::optional<std::vector<NodeId>> replicas;  // nullopt: cancel the reassignment
  };
  virtual std::vector<Status> AlterPartitionReassignments(
      const std::vector<ReassignmentTarget>& targets);
  struct OngoingReassignment {
    std::string topic;
    PartitionId partition;
    std::vector<NodeId> replicas;
    std::vector<NodeId> adding_replicas;
    std::vector<NodeId> removing_replicas;
  };
  // Every partition being reassigned, by topic and partition.
  virtual std::vector<OngoingReassignment> ListPartitionReassignments() { return {}; }
  struct ElectionTarget {
    std::string topic;
    PartitionId partition;
  };
  // `unclean`: elect the first live replica where no in-sync one can lead; else the preferred
  // (first) replica. An empty `targets` means every partition, and then only the partitions that
  // needed an election are answered (`elected` gets them; otherwise it is `targets`).
  virtual std::vector<Status> ElectLeaders(bool unclean, const std::vector<ElectionTarget>& targets,
                                           std::vector<ElectionTarget>* elected);

  // The reassignment throttle (cluster mode; lib/cluster/reassignment.h): how many bytes a
  // replica fetch by `follower` may read from the partition now, when the follower is one of
  // the partition's adding replicas and the topic sets replica.reassignment.throttle.bytes;
  // -1 (the default) when no throttle applies. What such a read returned is then charged with
  // ChargeReplicaFetch. Thread-safe.
  virtual int64_t ReplicaFetchAllowance(const std::string& topic, PartitionId partition,
                                        NodeId follower) {
    return -1;
  }
  virtual void ChargeReplicaFetch(const std::string& topic, int64_t bytes) {}

  // GetTopic, creating the topic with num.partitions when it is missing and both the broker
  // (auto.create.topics.enable) and the request allow it. Called on io threads: a store whose
  // creation waits on other nodes starts it in the background and answers Busy (the caller
  // says LEADER_NOT_AVAILABLE, which clients retry).
  virtual Result<TopicMetadata> GetOrCreateTopic(const std::string& name,
                                                 bool allow_auto_create);

  // Called with a topic's name just before its deletion, so that whoever serves its
  // partitions lets go of them first. One listener; set before serving.
  void SetDeleteListener(std::function<void(const std::string& topic)> fn) {
    on_delete_ = std::move(fn);
  }
  // Called, from the store's own thread, after the metadata changed (topics, leaders, epochs):
  // it must not block. One listener; set before serving. A single node's store, which changes
  // only through its own calls, never calls it.
  void SetChangeListener(std::function<void()> fn) { on_change_ = std::move(fn); }

 protected:
  virtual bool auto_create_topics() const = 0;
  std::function<void(const std::string&)> on_delete_;
  std::function<void()> on_change_;
};

// Where a partition's log comes from: the data dir on this node.
class LogProvider {
 public:
  virtual ~LogProvider() = default;
  // The open log of one partition, opened (and recovered) on first use. NotFound when the
  // topic or partition does not exist.
  virtual Result<std::shared_ptr<storage::PartitionLog>> OpenLog(const std::string& topic,
                                                                 PartitionId partition) = 0;
};

}  // namespace silt::broker
