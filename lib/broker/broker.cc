// A broker node's parts, wired together, started and stopped in order.
#include "broker/broker.h"

#include <algorithm>

#include "base/clock.h"
#include "base/file.h"
#include "broker/group_coordinator.h"
#include "broker/group_ownership.h"
#include "broker/local_metadata_store.h"
#include "broker/logging.h"
#include "broker/offset_store.h"
#include "offsets/local.h"
#include "storage/log_cleaner.h"

namespace silt::broker {

Broker::Broker(const BrokerConfig& config) : config_(config) {}

Broker::~Broker() {
  if (!closed_) (void)Close();
}

MetadataStore& Broker::metadata() {
  if (cluster_) return cluster_->metadata();
  return *store_;
}

Status Broker::StartGroupCoordinator() {
  GroupCoordinatorOptions o;
  o.min_session_timeout_ms = config_.group_min_session_timeout_ms;
  o.max_session_timeout_ms = config_.group_max_session_timeout_ms;
  o.initial_rebalance_delay_ms = config_.group_initial_rebalance_delay_ms;
  o.offsets_retention_ms = config_.offsets_retention_ms;
  o.offsets_retention_check_interval_ms = config_.offsets_retention_check_interval_ms;
  o.offset_metadata_max_bytes = config_.offset_metadata_max_bytes;
  if (!cluster_) {
    // Offsets of local consumers kept in silt-groups/ by older versions go into
    // __consumer_offsets first, through the data dir's own logs, before partitions wrap them.
    // (A cluster's topic is the metadata's, not the data dir's: nothing to migrate into.)
    offsets::LocalOffsets::Options lo;
    lo.default_partitions = config_.offsets_topic_num_partitions;
    auto migrated = offsets::LocalOffsets::Open(store_->data_dir(), lo);
    if (!migrated.ok()) return migrated.status().WithContext("migrating silt-groups/");
  }
  // In a cluster, __consumer_offsets is a topic of the cluster's metadata like any other,
  // replicated, and its partitions are served where they are led.
  offsets_log_ = std::make_unique<ConsumerOffsetsTopic>(&metadata(), partitions_.get(),
                                                        config_.data_dir,
                                                        config_.offsets_topic_num_partitions);
  SILT_TRY(offsets_log_->Lock());
  groups_ = std::make_unique<GroupCoordinator>(o, offsets_log_.get());
  if (cluster_) {
    // Groups are loaded partition by partition as this node comes to lead them.
    groups_->UseOwnedPartitions(config_.offsets_topic_num_partitions);
    ownership_ = std::make_unique<GroupOwnership>(&metadata(), groups_.get(),
                                                  NodeId(config_.node_id));
    GroupOwnership* own = ownership_.get();
    metadata().SetChangeListener([own] { own->Poke(); });
    ownership_->Start();
  } else {
    Status s = groups_->Load();
    if (!s.ok()) return s.WithContext("loading __consumer_offsets");
  }
  groups_->Start();
  return Status::OK();
}

Result<std::unique_ptr<Broker>> Broker::Open(const BrokerConfig& config,
                                             std::unique_ptr<ClusterMode> cluster) {
  std::unique_ptr<Broker> b(new Broker(config));
  NodeId local(config.node_id);
  SILT_ASSIGN_OR_RETURN(b->store_, LocalMetadataStore::Open(config, local));
  if (!cluster) {
    SILT_ASSIGN_OR_RETURN(b->dynamic_config_, DynamicBrokerConfig::Open(config));
    if (!b->dynamic_config_->Get(true).empty() || !b->dynamic_config_->Get(false).empty()) {
      SILT_TRY(b->store_->SetLogDefaults(b->dynamic_config_->Effective().log_defaults));
    }
  }
  SILT_ASSIGN_OR_RETURN(b->node_, NodeIdentity::Load(config.data_dir, local, config.cluster_id));
  SILT_ASSIGN_OR_RETURN(b->producer_ids_, FileProducerIdAllocator::Open(config.data_dir));
  LogProvider* logs = b->store_.get();
  if (cluster) {
    b->cluster_ = std::move(cluster);
    SILT_TRY(b->cluster_->Start(b->store_.get(), &b->node_));
    logs = &b->cluster_->logs();
    // Filled from the metadata image once the node has reconciled one (Serving's hook).
    if (BrokerConfigStore* kept = b->cluster_->broker_configs()) {
      b->dynamic_config_ = DynamicBrokerConfig::OpenWith(config, kept);
    }
  }
  b->partitions_ = std::make_unique<PartitionManager>(logs, local);
  PartitionManager* pm = b->partitions_.get();
  b->store_->SetDeleteListener([pm](const std::string& topic) { pm->RemoveTopic(topic); });
  if (b->cluster_) {
    Broker* raw = b.get();
    b->cluster_->metadata().SetDeleteListener([pm, raw](const std::string& topic) {
      pm->RemoveTopic(topic);
      // A topic created again under the name starts with no hint.
      std::lock_guard<std::mutex> lock(raw->hw_checkpoint_mu_);
      std::erase_if(raw->hw_checkpoint_, [&](const auto& e) { return e.first.first == topic; });
    });
    // Each replica's high watermark at the last clean stop: the start of its high watermark
    // when it is given a role (Partition::SetHighWatermarkHint).
    auto cp = storage::ReadOffsetCheckpoint(
        JoinPath(config.data_dir, storage::kReplicationCheckpointFile));
    if (cp.ok()) {
      b->hw_checkpoint_ = std::move(cp).value();
    } else if (!cp.status().IsNotFound()) {
      LogWarn("ignoring " + cp.status().ToString());
    }
    pm->SetHighWatermarkHints([raw](const std::string& topic, PartitionId p) {
      std::lock_guard<std::mutex> lock(raw->hw_checkpoint_mu_);
      auto it = raw->hw_checkpoint_.find({topic, p.value()});
      return it == raw->hw_checkpoint_.end() ? kInvalidOffset : Offset(it->second);
    });
  }
  SILT_TRY(b->StartGroupCoordinator());
  if (config.log_cleaner_enable) {
    storage::CleanerOptions co;
    co.backoff_ms = config.log_cleaner_backoff_ms;
    b->cleaner_ = std::make_unique<storage::LogCleaner>(config.data_dir, co);
    SILT_TRY(b->cleaner_->Start(b->store_->data_dir()));
  }
  ProducerIdAllocator* pids = b->producer_ids_.get();
  if (b->cluster_ && b->cluster_->producer_ids()) pids = b->cluster_->producer_ids();
  FetchSessionCache::Options so;
  so.max_slots = static_cast<size_t>(std::max(0, config.max_incremental_fetch_session_cache_slots));
  b->fetch_sessions_ = std::make_unique<FetchSessionCache>(so);
  b->context_.reset(new BrokerContext{b->config_, b->node_, b->metadata(), *b->partitions_,
                                      *pids, *b->groups_, b->stopping_,
                                      b->dynamic_config_.get(), b->fetch_sessions_.get()});
  return b;
}

void Broker::SetAdvertised(const std::string& host, int port) {
  node_.advertised_host = host;
  node_.advertised_port = port;
}

Status Broker::CheckpointHighWatermarks() {
  if (!cluster_ || !partitions_) return Status::OK();
  // One writer at a time; the map's lock is not held across the fsyncs (partitions opening
  // read their hints through it).
  std::lock_guard<std::mutex> writing(hw_checkpoint_write_mu_);
  storage::OffsetCheckpointMap entries;
  {
    std::lock_guard<std::mutex> lock(hw_checkpoint_mu_);
    for (const auto& p : partitions_->Opened()) {
      // A partition with no role yet has its high watermark at the log end it opened with,
      // which says nothing about what is committed: its old entry (if any) stays.
      if (!p->alive() || !p->role_set()) continue;
      hw_checkpoint_[{p->topic(), p->partition().value()}] = p->high_watermark().value();
    }
    entries = hw_checkpoint_;
  }
  last_hw_checkpoint_ms_ = MonotonicMs();
  return storage::WriteOffsetCheckpoint(
      JoinPath(config_.data_dir, storage::kReplicationCheckpointFile), entries);
}

int Broker::Maintain(bool retention) {
  int deleted = partitions_->Maintain(retention);
  if (cluster_ && MonotonicMs() - last_hw_checkpoint_ms_ >= kHighWatermarkCheckpointMs) {
    Status h = CheckpointHighWatermarks();
    if (!h.ok()) LogError("writing " + std::string(storage::kReplicationCheckpointFile) + ": " +
                          h.ToString());
  }
  if (retention) {
    // Not under any broker lock: writing the checkpoint files fsyncs, which must not hold up
    // the produce and fetch paths.
    Status c = store_->Checkpoint();
    if (!c.ok()) LogError("writing checkpoints: " + c.ToString());
  }
  return deleted;
}

void Broker::Serving(std::function<void(int fd, NodeId peer)> adopt_peer_connection) {
  if (!cluster_) return;
  BrokerServices services;
  services.partitions = partitions_.get();
  services.adopt_peer_connection = std::move(adopt_peer_connection);
  if (dynamic_config_) {
    services.reload_broker_configs = [this] {
      Status s = dynamic_config_->Reload(&metadata());
      if (!s.ok()) LogWarn("taking the dynamic broker configs of the metadata: " + s.ToString());
    };
  }
  cluster_->Serving(services);
}

void Broker::BeginShutdown() {
  stopping_.store(true);
  if (ownership_) ownership_->Stop();
  if (cluster_) cluster_->Stop();
  if (groups_) groups_->Shutdown();
  if (partitions_) partitions_->WakeAll();
}

Status Broker::Close() {
  if (closed_) return Status::OK();
  closed_ = true;
  // The coordinator's timer may be writing through the partitions: stop it first (and what
  // loads partitions into it before that).
  if (ownership_) ownership_->Stop();
  if (groups_) groups_->Shutdown();
  if (cluster_) cluster_->Stop();
  // The cleaner works on the data dir's logs: stop it before they close.
  if (cleaner_) cleaner_->Stop();
  if (Status h = CheckpointHighWatermarks(); !h.ok()) {
    LogError("writing " + std::string(storage::kReplicationCheckpointFile) + ": " + h.ToString());
  }
  if (partitions_) partitions_->ShutdownAll();
  if (!store_) return Status::OK();  // Open() failed before the directory was opened
  return store_->Close();
}

}  // namespace silt::broker
