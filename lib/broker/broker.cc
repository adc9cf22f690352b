// Broker state: data dir, partitions, producer ids, cluster identity.
#include "broker/broker.h"

#include <random>

#include "base/file.h"
#include "base/random.h"
#include "broker/group_coordinator.h"
#include "broker/logging.h"
#include "broker/offset_store.h"
#include "format/batch_header.h"

namespace silt::broker {
namespace {

// <data-dir>/meta.properties, Kafka's file: version=1, cluster.id, node.id.
constexpr const char* kMetaFile = "meta.properties";
// <data-dir>/silt-producer-ids: "next.producer.id=N". Ids are handed out in blocks so the file is
// rewritten once per block; ids of a block unused at a crash are skipped, never reused.
constexpr const char* kProducerIdFile = "silt-producer-ids";
constexpr int64_t kProducerIdBlock = 1000;

std::string NewClusterId() {
  // 16 random bytes in URL-safe base64 without padding: the shape of Kafka's cluster ids.
  static const char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::random_device rd;
  std::string out;
  for (int i = 0; i < 22; ++i) out.push_back(kAlphabet[rd() % 64]);
  return out;
}

std::map<std::string, std::string> ParseProperties(const std::string& text) {
  std::map<std::string, std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.empty() || line[0] == '#') continue;
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

// Rebuilds a partition's producer table from the batch headers in its log.
Status ReplayProducers(storage::PartitionLog* log, ProducerStateTable* table) {
  Offset next = log->log_start_offset();
  Offset end = log->log_end_offset();
  std::string hdr;
  while (next < end) {
    auto r = log->Read(next, 16 << 20, end, true);
    if (!r.ok()) return r.status();
    if (r->slices.empty() || r->next_offset <= next) break;
    for (const storage::FileSlice& s : r->slices) {
      int64_t pos = s.position;
      int64_t limit = s.position + s.length;
      while (pos + format::kBatchHeaderSize <= limit) {
        SILT_TRY(s.file->PRead(pos, format::kBatchHeaderSize, &hdr));
        if (hdr.size() < static_cast<size_t>(format::kBatchHeaderSize)) break;
        format::BatchHeader h = format::DecodeBatchHeader(hdr);
        if (h.size() < format::kBatchHeaderSize) break;
        table->Replay(h);
        pos += h.size();
      }
    }
    next = r->next_offset;
  }
  return Status::OK();
}

}  // namespace

// ---- PartitionState ---------------------------------------------------------------------

PartitionState::LogRef PartitionState::Log() {
  LogRef ref{std::shared_lock<std::shared_mutex>(log_mu_), log_};
  return ref;
}

void PartitionState::MarkDeleted() {
  std::unique_lock<std::shared_mutex> lock(log_mu_);
  log_ = nullptr;
}

void PartitionState::Watch(std::weak_ptr<AppendWatcher> w) {
  std::lock_guard<std::mutex> lock(watch_mu_);
  // Drop the dead ones now and then so a partition nobody writes to does not collect them.
  if (watchers_.size() >= 64) {
    std::erase_if(watchers_, [](const std::weak_ptr<AppendWatcher>& x) { return x.expired(); });
  }
  watchers_.push_back(std::move(w));
}

void PartitionState::NotifyWatchers() {
  std::vector<std::weak_ptr<AppendWatcher>> ws;
  {
    std::lock_guard<std::mutex> lock(watch_mu_);
    ws.swap(watchers_);
  }
  for (auto& w : ws) {
    if (auto p = w.lock()) p->OnAppend();
  }
}

// ---- Broker -----------------------------------------------------------------------------

Broker::Broker(const BrokerConfig& config) : config_(config) {}

Broker::~Broker() {
  if (!closed_) (void)Close();
}

Status Broker::StartGroupCoordinator() {
  GroupCoordinatorOptions o;
  o.min_session_timeout_ms = config_.group_min_session_timeout_ms;
  o.max_session_timeout_ms = config_.group_max_session_timeout_ms;
  o.initial_rebalance_delay_ms = config_.group_initial_rebalance_delay_ms;
  o.offsets_retention_ms = config_.offsets_retention_ms;
  o.offsets_retention_check_interval_ms = config_.offsets_retention_check_interval_ms;
  o.offset_metadata_max_bytes = config_.offset_metadata_max_bytes;
  offsets_log_ = std::make_unique<ConsumerOffsetsTopic>(this, config_.offsets_topic_num_partitions);
  groups_ = std::make_unique<GroupCoordinator>(o, offsets_log_.get());
  Status s = groups_->Load();
  if (!s.ok()) return s.WithContext("loading __consumer_offsets");
  groups_->Start();
  return Status::OK();
}

Result<std::unique_ptr<Broker>> Broker::Open(const BrokerConfig& config) {
  std::unique_ptr<Broker> b(new Broker(config));
  storage::DataDir::Options opts;
  opts.read_only = false;
  opts.create = true;
  opts.defaults = config.log_defaults;
  opts.default_partitions = config.num_partitions;
  SILT_ASSIGN_OR_RETURN(b->dir_, storage::DataDir::Open(config.data_dir, opts));
  if (b->dir_->read_only()) {
    return Status::InvalidArgument(config.data_dir +
                                   ": opens read-only (a copy of a Kafka broker's directory?); "
                                   "serve needs a writable silt data directory");
  }
  SILT_TRY(b->LoadMeta());
  SILT_TRY(b->StartGroupCoordinator());
  if (config.log_cleaner_enable) {
    storage::CleanerOptions co;
    co.backoff_ms = config.log_cleaner_backoff_ms;
    b->cleaner_ = std::make_unique<storage::LogCleaner>(b->dir_->path(), co);
    SILT_TRY(b->cleaner_->Start(b->dir_.get()));
  }
  return b;
}

Status Broker::LoadMeta() {
  std::string meta_path = JoinPath(config_.data_dir, kMetaFile);
  std::map<std::string, std::string> meta;
  if (PathExists(meta_path)) {
    SILT_ASSIGN_OR_RETURN(std::string text, ReadFile(meta_path));
    meta = ParseProperties(text);
  }
  std::string stored = meta.count("cluster.id") ? meta["cluster.id"] : "";
  if (!config_.cluster_id.empty() && !stored.empty() && stored != config_.cluster_id) {
    return Status::InvalidArgument("cluster.id " + config_.cluster_id + " does not match " +
                                   stored + " stored in " + meta_path);
  }
  cluster_id_ = !stored.empty() ? stored : !config_.cluster_id.empty() ? config_.cluster_id
                                                                      : NewClusterId();
  if (stored.empty() || meta["node.id"] != std::to_string(config_.node_id)) {
    std::string text = "#silt broker identity\nversion=1\ncluster.id=" + cluster_id_ +
                       "\nnode.id=" + std::to_string(config_.node_id) + "\n";
    SILT_TRY(WriteFileAtomic(meta_path, text));
  }

  std::string pid_path = JoinPath(config_.data_dir, kProducerIdFile);
  if (PathExists(pid_path)) {
    SILT_ASSIGN_OR_RETURN(std::string text, ReadFile(pid_path));
    auto m = ParseProperties(text);
    try {
      next_producer_id_ = std::stoll(m["next.producer.id"]);
    } catch (...) {
      return Status::Corruption(pid_path + ": no valid next.producer.id");
    }
  }
  producer_id_limit_ = next_producer_id_;
  return Status::OK();
}

void Broker::SetAdvertised(const std::string& host, int port) {
  advertised_host_ = host;
  advertised_port_ = port;
}

std::vector<storage::TopicInfo> Broker::ListTopics() {
  std::lock_guard<std::mutex> lock(mu_);
  return dir_->ListTopics();
}

Result<storage::TopicInfo> Broker::GetTopic(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  return dir_->GetTopic(name);
}

Result<storage::TopicInfo> Broker::GetOrCreateTopic(const std::string& name,
                                                    bool allow_auto_create) {
  std::lock_guard<std::mutex> lock(mu_);
  auto t = dir_->GetTopic(name);
  if (t.ok() || !t.status().IsNotFound() || !allow_auto_create || !config_.auto_create_topics) {
    return t;
  }
  auto created = dir_->CreateTopic(name, NewTopicId(), config_.num_partitions, {});
  if (created.ok()) {
    LogInfo("auto-created topic " + name + " with " + std::to_string(config_.num_partitions) +
            " partition(s)");
  }
  return created;
}

Result<storage::TopicInfo> Broker::CreateTopic(const std::string& name, int32_t partitions,
                                               const std::map<std::string, std::string>& configs) {
  std::lock_guard<std::mutex> lock(mu_);
  auto t = dir_->CreateTopic(name, NewTopicId(), partitions, configs);
  if (t.ok()) {
    LogInfo("created topic " + name + " with " + std::to_string(partitions) + " partition(s)");
  }
  return t;
}

Status Broker::DeleteTopic(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = partitions_.begin(); it != partitions_.end();) {
    if (it->first.first == name) {
      it->second->MarkDeleted();
      it->second->NotifyWatchers();
      it = partitions_.erase(it);
    } else {
      ++it;
    }
  }
  Status s = dir_->DeleteTopic(name);
  if (s.ok()) LogInfo("deleted topic " + name);
  return s;
}

Status Broker::AddPartitions(const std::string& name, int32_t new_total) {
  std::lock_guard<std::mutex> lock(mu_);
  Status s = dir_->AddPartitions(name, new_total);
  if (s.ok()) {
    LogInfo("topic " + name + " now has " + std::to_string(new_total) + " partition(s)");
  }
  return s;
}

Result<storage::LogConfig> Broker::TopicConfig(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  return dir_->TopicConfig(name);
}

Result<std::map<std::string, std::string>> Broker::TopicOverrides(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  SILT_ASSIGN_OR_RETURN(storage::TopicInfo t, dir_->GetTopic(name));
  return t.configs;
}

Status Broker::AlterTopicConfig(const std::string& name, const ConfigEdit& edit,
                                bool validate_only) {
  std::lock_guard<std::mutex> lock(mu_);
  SILT_ASSIGN_OR_RETURN(storage::TopicInfo t, dir_->GetTopic(name));
  std::map<std::string, std::string> next = t.configs;
  SILT_TRY(edit(&next));
  for (const auto& [k, v] : next) {
    if (!storage::LogConfig::IsKnownKey(k)) {
      return Status::InvalidArgument("Unknown topic config name: " + k);
    }
  }
  storage::LogConfig probe = config_.log_defaults;
  SILT_TRY(probe.Apply(next));
  if (validate_only || next == t.configs) return Status::OK();
  std::vector<std::string> removed;
  for (const auto& [k, v] : t.configs) {
    if (next.count(k) == 0) removed.push_back(k);
  }
  SILT_TRY(dir_->AlterTopicConfig(name, next, removed));
  std::string text;
  for (const auto& [k, v] : next) text += (text.empty() ? "" : ", ") + k + "=" + v;
  LogInfo("topic " + name + ": config overrides now {" + text + "}");
  return Status::OK();
}

Result<std::shared_ptr<PartitionState>> Broker::Partition(const std::string& topic,
                                                          int32_t partition) {
  std::lock_guard<std::mutex> lock(mu_);
  auto key = std::make_pair(topic, partition);
  auto it = partitions_.find(key);
  if (it != partitions_.end()) return it->second;
  SILT_ASSIGN_OR_RETURN(storage::TopicInfo t, dir_->GetTopic(topic));
  if (partition < 0 || partition >= t.partitions) {
    return Status::NotFound(topic + "-" + std::to_string(partition) + ": no such partition");
  }
  SILT_ASSIGN_OR_RETURN(storage::PartitionLog * log, dir_->Partition(topic, partition));
  auto state = std::make_shared<PartitionState>(topic, partition, log);
  SILT_TRY(ReplayProducers(log, &state->producers));
  std::weak_ptr<PartitionState> weak = state;
  log->SetAppendListener([weak](Offset) {
    if (auto s = weak.lock()) s->NotifyWatchers();
  });
  partitions_[key] = state;
  return state;
}

Result<int64_t> Broker::AllocateProducerId() {
  std::lock_guard<std::mutex> lock(mu_);
  if (next_producer_id_ >= producer_id_limit_) {
    int64_t limit = next_producer_id_ + kProducerIdBlock;
    SILT_TRY(WriteFileAtomic(JoinPath(config_.data_dir, kProducerIdFile),
                             "next.producer.id=" + std::to_string(limit) + "\n"));
    producer_id_limit_ = limit;
  }
  return next_producer_id_++;
}

int Broker::Maintain(bool retention) {
  std::vector<std::shared_ptr<PartitionState>> states;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [k, s] : partitions_) states.push_back(s);
  }
  int deleted = 0;
  for (auto& s : states) {
    auto log = s->Log();
    if (!log) continue;
    Status f = log->MaybeFlush();
    if (!f.ok()) {
      LogError("flush of " + s->topic() + "-" + std::to_string(s->partition()) + ": " +
               f.ToString());
    }
    if (!retention) continue;
    auto n = log->ApplyRetention();
    if (!n.ok()) {
      LogError("retention on " + s->topic() + "-" + std::to_string(s->partition()) + ": " +
               n.status().ToString());
    } else if (*n > 0) {
      LogInfo("retention deleted " + std::to_string(*n) + " segment(s) of " + s->topic() + "-" +
              std::to_string(s->partition()) + "; log start now " +
              std::to_string(log->log_start_offset().value()));
      deleted += *n;
    }
  }
  if (retention) {
    // Not under mu_: writing the checkpoint files fsyncs, which must not hold up the produce
    // and fetch paths' partition lookups. dir_lifetime_mu_ keeps Close from destroying the
    // directory meanwhile; the directory serializes its own calls.
    std::lock_guard<std::mutex> lock(dir_lifetime_mu_);
    if (dir_) {
      Status c = dir_->Checkpoint();
      if (!c.ok()) LogError("writing checkpoints: " + c.ToString());
    }
  }
  return deleted;
}

void Broker::BeginShutdown() {
  stopping_.store(true);
  if (groups_) groups_->Shutdown();
  std::vector<std::shared_ptr<PartitionState>> states;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [k, s] : partitions_) states.push_back(s);
  }
  for (auto& s : states) s->NotifyWatchers();
}

Status Broker::Close() {
  // Outside mu_: the coordinator's timer may be writing through this broker.
  if (groups_) groups_->Shutdown();
  // The cleaner works on the data dir's logs: stop it before they close.
  if (cleaner_) cleaner_->Stop();
  std::lock_guard<std::mutex> lifetime(dir_lifetime_mu_);
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return Status::OK();
  closed_ = true;
  if (!dir_) return Status::OK();  // Open() failed before the directory was opened
  for (auto& [k, s] : partitions_) s->MarkDeleted();
  partitions_.clear();
  Status s = dir_->Close();
  dir_.reset();
  return s;
}

}  // namespace silt::broker
