// The data directory as the broker's metadata store.
#include "broker/local_metadata_store.h"

#include "base/random.h"
#include "broker/logging.h"
#include "protocol/consumer_offsets.h"
#include "storage/data_dir.h"
#include "storage/partition_log.h"

namespace silt::broker {

Result<TopicMetadata> MetadataStore::GetOrCreateTopic(const std::string& name,
                                                      bool allow_auto_create) {
  auto t = GetTopic(name);
  if (t.ok() || !t.status().IsNotFound() || !allow_auto_create || !auto_create_topics()) return t;
  auto created = CreateTopic(name, -1, {});
  if (created.ok()) {
    LogInfo("auto-created topic " + name + " with " + std::to_string(created->partition_count) +
            " partition(s)");
    return created;
  }
  // Created meanwhile by another request.
  if (created.status().code() == Status::Code::kAlreadyExists) return GetTopic(name);
  return created;
}

namespace {

TopicMetadata Describe(const storage::TopicInfo& t, NodeId local) {
  TopicMetadata out;
  out.name = t.name;
  out.topic_id = t.topic_id;
  out.partition_count = t.partitions;
  out.configs = t.configs;
  out.internal = protocol::IsInternalTopic(t.name);
  out.partitions.reserve(t.partitions);
  for (int32_t p = 0; p < t.partitions; ++p) {
    out.partitions.push_back(PartitionAssignment{PartitionId(p), local, LeaderEpoch(0), {local},
                                                 {local}});
  }
  return out;
}

}  // namespace

LocalMetadataStore::LocalMetadataStore(const BrokerConfig& config, NodeId local)
    : config_(config), local_(local) {}

LocalMetadataStore::~LocalMetadataStore() = default;

Result<std::unique_ptr<LocalMetadataStore>> LocalMetadataStore::Open(const BrokerConfig& config,
                                                                     NodeId local) {
  std::unique_ptr<LocalMetadataStore> s(new LocalMetadataStore(config, local));
  storage::DataDir::Options opts;
  opts.read_only = false;
  opts.create = true;
  opts.defaults = config.log_defaults;
  opts.default_partitions = config.num_partitions;
  SILT_ASSIGN_OR_RETURN(s->dir_, storage::DataDir::Open(config.data_dir, opts));
  if (s->dir_->read_only()) {
    return Status::InvalidArgument(config.data_dir +
                                   ": opens read-only (a copy of a Kafka broker's directory?); "
                                   "serve needs a writable silt data directory");
  }
  return s;
}

std::vector<TopicMetadata> LocalMetadataStore::ListTopics() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TopicMetadata> out;
  if (!dir_) return out;
  for (const storage::TopicInfo& t : dir_->ListTopics()) out.push_back(Describe(t, local_));
  return out;
}

Result<TopicMetadata> LocalMetadataStore::GetTopic(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!dir_) return Status::InvalidArgument("the broker is closed");
  SILT_ASSIGN_OR_RETURN(storage::TopicInfo t, dir_->GetTopic(name));
  return Describe(t, local_);
}

Result<TopicMetadata> LocalMetadataStore::CreateTopic(
    const std::string& name, int32_t partitions, const std::map<std::string, std::string>& configs) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!dir_) return Status::InvalidArgument("the broker is closed");
  // Logged by the caller, which knows why (a CreateTopics request, an auto-creation).
  SILT_ASSIGN_OR_RETURN(storage::TopicInfo t, dir_->CreateTopic(name, NewTopicId(), partitions, configs));
  return Describe(t, local_);
}

Result<TopicMetadata> LocalMetadataStore::CreateTopicWithId(
    const std::string& name, const Uuid& topic_id, int32_t partitions,
    const std::map<std::string, std::string>& configs) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!dir_) return Status::InvalidArgument("the broker is closed");
  SILT_ASSIGN_OR_RETURN(storage::TopicInfo t, dir_->CreateTopic(name, topic_id, partitions, configs));
  return Describe(t, local_);
}

Status LocalMetadataStore::DeleteTopic(const std::string& name) {
  // The partitions let go of their logs before the directory closes and removes them.
  if (on_delete_) on_delete_(name);
  std::lock_guard<std::mutex> lock(mu_);
  if (!dir_) return Status::InvalidArgument("the broker is closed");
  Status s = dir_->DeleteTopic(name);
  if (s.ok()) LogInfo("deleted topic " + name);
  return s;
}

Status LocalMetadataStore::AddPartitions(const std::string& name, int32_t new_total) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!dir_) return Status::InvalidArgument("the broker is closed");
  Status s = dir_->AddPartitions(name, new_total);
  if (s.ok()) {
    LogInfo("topic " + name + " now has " + std::to_string(new_total) + " partition(s)");
  }
  return s;
}

Result<storage::LogConfig> LocalMetadataStore::TopicConfig(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!dir_) return Status::InvalidArgument("the broker is closed");
  return dir_->TopicConfig(name);
}

Status LocalMetadataStore::AlterTopicConfig(const std::string& name, const ConfigEdit& edit,
                                            bool validate_only) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!dir_) return Status::InvalidArgument("the broker is closed");
  SILT_ASSIGN_OR_RETURN(storage::TopicInfo t, dir_->GetTopic(name));
  std::map<std::string, std::string> next = t.configs;
  SILT_TRY(edit(&next));
  for (const auto& [k, v] : next) {
    if (!storage::LogConfig::IsKnownKey(k)) {
      return Status::InvalidArgument("Unknown topic config name: " + k);
    }
  }
  storage::LogConfig probe = dir_->defaults();
  SILT_TRY(probe.Apply(next));
  if (validate_only || next == t.configs) return Status::OK();
  std::vector<std::string> removed;
  for (const auto& [k, v] : t.configs) {
    if (next.count(k) == 0) removed.push_back(k);
  }
  // Stored as `silt topic alter-config` stores it; the data dir hands it to the open logs.
  SILT_TRY(dir_->AlterTopicConfig(name, next, removed));
  std::string text;
  for (const auto& [k, v] : next) text += (text.empty() ? "" : ", ") + k + "=" + v;
  LogInfo("topic " + name + ": config overrides now {" + text + "}");
  return Status::OK();
}

Status LocalMetadataStore::SetLogDefaults(const storage::LogConfig& defaults) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!dir_) return Status::InvalidArgument("the broker is closed");
  dir_->SetDefaults(defaults);
  return Status::OK();
}

Result<std::shared_ptr<storage::PartitionLog>> LocalMetadataStore::OpenLog(const std::string& topic,
                                                                          PartitionId partition) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!dir_) return Status::InvalidArgument("the broker is closed");
  SILT_ASSIGN_OR_RETURN(storage::TopicInfo t, dir_->GetTopic(topic));
  if (partition.value() < 0 || partition.value() >= t.partitions) {
    return Status::NotFound(topic + "-" + std::to_string(partition.value()) +
                            ": no such partition");
  }
  return dir_->SharedPartition(topic, partition.value());
}

Status LocalMetadataStore::Checkpoint() {
  std::lock_guard<std::mutex> lifetime(lifetime_mu_);
  if (!dir_) return Status::OK();
  return dir_->Checkpoint();
}

Status LocalMetadataStore::Close() {
  std::lock_guard<std::mutex> lifetime(lifetime_mu_);
  std::lock_guard<std::mutex> lock(mu_);
  if (!dir_) return Status::OK();
  Status s = dir_->Close();
  dir_.reset();
  return s;
}

}  // namespace silt::broker
