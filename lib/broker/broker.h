// The broker's state behind the handlers: the data directory, per-partition state (producer
// sequences, fetches waiting for data), producer id allocation and cluster identity.
//
// Thread-safety: every method may be called from any io thread. Topic metadata calls are
// serialised by one mutex (the data dir is not thread-safe); partition logs are thread-safe
// themselves; a partition's producer checks and its append run under that partition's mutex, so
// sequence checks and offsets assigned agree.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "broker/config.h"
#include "broker/producer_state.h"
#include "storage/data_dir.h"
#include "storage/log_cleaner.h"
#include "storage/partition_log.h"

namespace silt::broker {

// Something waiting for appends to a partition (a long-polling Fetch).
class AppendWatcher {
 public:
  virtual ~AppendWatcher() = default;
  // Called from the appending thread, outside any partition lock; must not block.
  virtual void OnAppend() = 0;
};

class PartitionState {
 public:
  PartitionState(std::string topic, int32_t partition, storage::PartitionLog* log)
      : topic_(std::move(topic)), partition_(partition), log_(log) {}

  const std::string& topic() const { return topic_; }
  int32_t partition() const { return partition_; }

  // Holds the log open (shared) so that a concurrent topic deletion waits; nullptr if deleted.
  struct LogRef {
    std::shared_lock<std::shared_mutex> lock;
    storage::PartitionLog* log = nullptr;
    explicit operator bool() const { return log != nullptr; }
    storage::PartitionLog* operator->() const { return log; }
  };
  LogRef Log();

  // Guards `producers` and makes check+append+record atomic for this partition.
  std::mutex produce_mu;
  ProducerStateTable producers;

  // Registers `w` to be told once about the next append (weakly held).
  void Watch(std::weak_ptr<AppendWatcher> w);
  // Tells (and forgets) every registered watcher.
  void NotifyWatchers();

  // Marks the partition gone (topic deleted); waits for users of Log() to finish.
  void MarkDeleted();

 private:
  std::string topic_;
  int32_t partition_;
  std::shared_mutex log_mu_;
  storage::PartitionLog* log_;
  std::mutex watch_mu_;
  std::vector<std::weak_ptr<AppendWatcher>> watchers_;
};

class GroupCoordinator;
class ConsumerOffsetsTopic;

class Broker {
 public:
  // Opens (creating if needed) the data directory named by config.data_dir, recovering it, and
  // loads or creates the cluster identity and the producer id counter.
  static Result<std::unique_ptr<Broker>> Open(const BrokerConfig& config);
  ~Broker();

  const BrokerConfig& config() const { return config_; }
  int32_t node_id() const { return config_.node_id; }
  const std::string& cluster_id() const { return cluster_id_; }
  // Where clients are told to connect; set once the listener is bound.
  void SetAdvertised(const std::string& host, int port);
  const std::string& advertised_host() const { return advertised_host_; }
  int advertised_port() const { return advertised_port_; }

  // ---- topics (serialised) ----
  std::vector<storage::TopicInfo> ListTopics();
  Result<storage::TopicInfo> GetTopic(const std::string& name);
  // GetTopic, creating the topic with num.partitions when it is missing, auto-creation is on
  // and `allow_auto_create`. NotFound when it does not exist and is not created.
  Result<storage::TopicInfo> GetOrCreateTopic(const std::string& name, bool allow_auto_create);
  Result<storage::TopicInfo> CreateTopic(const std::string& name, int32_t partitions,
                                         const std::map<std::string, std::string>& configs);
  Status DeleteTopic(const std::string& name);
  Status AddPartitions(const std::string& name, int32_t new_total);
  Result<storage::LogConfig> TopicConfig(const std::string& name);
  Result<std::map<std::string, std::string>> TopicOverrides(const std::string& name);
  // Changes a topic's config overrides in one step: `edit` is given a copy of the current
  // overrides to rewrite (it runs under the topic lock and must not call back into the broker;
  // a non-OK Status abandons the change and is returned as is). The result is checked like any
  // topic config (InvalidArgument naming the key: unknown keys, bad values) and, unless
  // `validate_only`, stored exactly as `silt topic alter-config` stores it and applied at once
  // to the topic's open partition logs (retention, segment size, cleanup.policy,
  // max.message.bytes... take effect without a restart). NotFound for a missing topic.
  using ConfigEdit = std::function<Status(std::map<std::string, std::string>* overrides)>;
  Status AlterTopicConfig(const std::string& name, const ConfigEdit& edit, bool validate_only);

  // The state of one partition, opening its log (and replaying its producer state) on first
  // use. NotFound for a missing topic or partition.
  Result<std::shared_ptr<PartitionState>> Partition(const std::string& topic, int32_t partition);

  // A new producer id (InitProducerId), unique across restarts.
  Result<int64_t> AllocateProducerId();

  // The group coordinator (consumer groups and committed offsets, kept in __consumer_offsets).
  GroupCoordinator& groups() { return *groups_; }

  // Periodic upkeep, called by the server's maintenance thread: time-based flushes (flush.ms)
  // of every open partition; with `retention`, also deletes segments past retention and writes
  // the data dir's checkpoints. Returns the number of segments deleted.
  int Maintain(bool retention);

  // Set when shutting down: long-polling fetches answer at once.
  bool stopping() const { return stopping_.load(); }
  void BeginShutdown();
  // Flushes and closes the data directory (marks a clean shutdown).
  Status Close();

 private:
  explicit Broker(const BrokerConfig& config);
  Status LoadMeta();
  Status StartGroupCoordinator();

  BrokerConfig config_;
  std::string cluster_id_;
  std::string advertised_host_;
  int advertised_port_ = 0;
  std::atomic<bool> stopping_{false};

  std::mutex dir_lifetime_mu_;  // held by Close while dir_ goes, and by the checkpoint writer
  std::mutex mu_;  // guards dir_ calls, partitions_, producer ids
  std::unique_ptr<storage::DataDir> dir_;
  std::map<std::pair<std::string, int32_t>, std::shared_ptr<PartitionState>> partitions_;
  int64_t next_producer_id_ = 0;
  int64_t producer_id_limit_ = 0;  // ids below this are covered by the persisted block
  bool closed_ = false;
  // Declared last: the coordinator writes through the broker, so it goes first.
  std::unique_ptr<ConsumerOffsetsTopic> offsets_log_;
  std::unique_ptr<GroupCoordinator> groups_;
  // Compacts cleanup.policy=compact topics (__consumer_offsets included) in the background.
  std::unique_ptr<storage::LogCleaner> cleaner_;
};

}  // namespace silt::broker
