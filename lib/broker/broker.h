// A broker node: owns the parts the handlers are given (broker/context.h) and their order of
// start-up and shutdown. On a single node these are the data directory as metadata store and
// log provider, the partition manager, a file-backed producer id allocator, the node identity
// and the group coordinator over __consumer_offsets.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "base/status.h"
#include "broker/cluster_mode.h"
#include "broker/config.h"
#include "broker/dynamic_config.h"
#include "broker/fetch_session.h"
#include "broker/context.h"
#include "storage/offset_checkpoint.h"

namespace silt::storage {
class LogCleaner;
}

namespace silt::broker {

class GroupCoordinator;
class GroupOwnership;
class ConsumerOffsetsTopic;
class LocalMetadataStore;

class Broker {
 public:
  // Opens (creating if needed) the data directory named by config.data_dir, recovering it, and
  // loads or creates the cluster identity and the producer id counter. With `cluster`, its
  // metadata store and log provider serve the handlers (cluster/cluster_node.h).
  static Result<std::unique_ptr<Broker>> Open(const BrokerConfig& config,
                                              std::unique_ptr<ClusterMode> cluster = nullptr);
  ~Broker();

  const BrokerConfig& config() const { return config_; }
  const NodeIdentity& node() const { return node_; }
  // Where clients are told to connect; set once the listener is bound, before serving.
  void SetAdvertised(const std::string& host, int port);
  // The listener is bound and the advertised address set: in cluster mode, the node registers
  // and gets `adopt_peer_connection` (the server's way to serve a peer's connection).
  void Serving(std::function<void(int fd, NodeId peer)> adopt_peer_connection = nullptr);

  // The handlers' view of this broker.
  BrokerContext& context() { return *context_; }
  MetadataStore& metadata();
  PartitionManager& partitions() { return *partitions_; }
  GroupCoordinator& groups() { return *groups_; }

  // Periodic upkeep, called by the server's maintenance thread: time-based flushes (flush.ms)
  // of every open partition; with `retention`, also deletes segments past retention and writes
  // the data dir's checkpoints. In cluster mode, every kHighWatermarkCheckpointMs also writes
  // replication-offset-checkpoint. Returns the number of segments deleted.
  int Maintain(bool retention);
  // Writes replication-offset-checkpoint now (cluster mode only; a single node has none): the
  // high watermark of every partition that has been given a role, beside the entries read at
  // start-up for partitions not opened since. Also done at Close().
  Status CheckpointHighWatermarks();
  // Kafka's replica.high.watermark.checkpoint.interval.ms default.
  static constexpr int64_t kHighWatermarkCheckpointMs = 5000;

  bool stopping() const { return stopping_.load(); }
  // Delayed operations answer at once from now on; the group coordinator stops.
  void BeginShutdown();
  // Flushes and closes the data directory (marks a clean shutdown).
  Status Close();

 private:
  explicit Broker(const BrokerConfig& config);
  Status StartGroupCoordinator();

  BrokerConfig config_;
  NodeIdentity node_;
  std::atomic<bool> stopping_{false};
  bool closed_ = false;
  std::unique_ptr<LocalMetadataStore> store_;
  // Between the data dir it keeps logs in and the partitions that read them.
  std::unique_ptr<ClusterMode> cluster_;
  std::unique_ptr<PartitionManager> partitions_;
  std::unique_ptr<ProducerIdAllocator> producer_ids_;
  // Declared after what they write through, so they go first.
  std::unique_ptr<ConsumerOffsetsTopic> offsets_log_;
  std::unique_ptr<GroupCoordinator> groups_;
  // Cluster mode: loads and unloads the coordinator's groups as leaderships change.
  std::unique_ptr<GroupOwnership> ownership_;
  // Compacts cleanup.policy=compact topics (__consumer_offsets included) in the background.
  std::unique_ptr<storage::LogCleaner> cleaner_;
  // The BROKER configs changed at run time (cluster mode: kept in the metadata log; nullptr
  // when the cluster mode keeps none).
  std::unique_ptr<DynamicBrokerConfig> dynamic_config_;
  std::unique_ptr<FetchSessionCache> fetch_sessions_;
  std::unique_ptr<BrokerContext> context_;
  // replication-offset-checkpoint: as read at start-up, updated at each write.
  std::mutex hw_checkpoint_write_mu_;  // taken first
  std::mutex hw_checkpoint_mu_;        // guards hw_checkpoint_
  storage::OffsetCheckpointMap hw_checkpoint_;
  std::atomic<int64_t> last_hw_checkpoint_ms_{0};
};

}  // namespace silt::broker
