// The single-node metadata store and log provider: the data directory itself. Every partition
// is led by this node, at leader epoch 0, with itself as the only replica and in-sync replica.
//
// Thread-safety: all methods may be called from any thread; data dir calls are serialised by
// one mutex, held only for the call (opening a log holds it while that log recovers).
#pragma once

#include <memory>
#include <mutex>

#include "base/uuid.h"
#include "broker/config.h"
#include "broker/metadata_store.h"

namespace silt::storage {
class DataDir;
}

namespace silt::broker {

class LocalMetadataStore : public MetadataStore, public LogProvider {
 public:
  // Opens (creating if needed) config.data_dir for writing, recovering it. InvalidArgument for
  // a directory that opens read-only (a copy of a Kafka broker's).
  static Result<std::unique_ptr<LocalMetadataStore>> Open(const BrokerConfig& config, NodeId local);
  ~LocalMetadataStore() override;

  std::vector<TopicMetadata> ListTopics() override;
  Result<TopicMetadata> GetTopic(const std::string& name) override;
  Result<TopicMetadata> CreateTopic(const std::string& name, int32_t partitions,
                                    const std::map<std::string, std::string>& configs) override;
  // CreateTopic with the id the caller gives (cluster mode: the id in the metadata image).
  Result<TopicMetadata> CreateTopicWithId(const std::string& name, const Uuid& topic_id,
                                          int32_t partitions,
                                          const std::map<std::string, std::string>& configs);
  Status DeleteTopic(const std::string& name) override;
  Status AddPartitions(const std::string& name, int32_t new_total) override;
  Result<storage::LogConfig> TopicConfig(const std::string& name) override;
  Status SetLogDefaults(const storage::LogConfig& defaults) override;
  Status AlterTopicConfig(const std::string& name, const ConfigEdit& edit,
                          bool validate_only) override;

  Result<std::shared_ptr<storage::PartitionLog>> OpenLog(const std::string& topic,
                                                         PartitionId partition) override;

  // For the broker's own upkeep (the log cleaner works on the data dir's logs).
  storage::DataDir* data_dir() { return dir_.get(); }
  // Writes the recovery-point and log-start checkpoints (periodic upkeep). Not under the
  // store's mutex: the data dir serialises its own checkpoint writes, and an fsync must not
  // hold up topic lookups.
  Status Checkpoint();
  // Flushes and closes the directory (marks a clean shutdown). Later calls fail.
  Status Close();

 protected:
  bool auto_create_topics() const override { return config_.auto_create_topics; }

 private:
  LocalMetadataStore(const BrokerConfig& config, NodeId local);

  const BrokerConfig config_;
  const NodeId local_;
  std::mutex lifetime_mu_;  // held by Close while dir_ goes, and by Checkpoint
  std::mutex mu_;           // serialises dir_ calls
  std::unique_ptr<storage::DataDir> dir_;
};

}  // namespace silt::broker
