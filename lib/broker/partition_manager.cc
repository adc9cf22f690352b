// Partitions opened on first use, each under its own lock.
#include "broker/partition_manager.h"

#include "broker/logging.h"
#include "storage/partition_log.h"

namespace silt::broker {

PartitionManager::~PartitionManager() { ShutdownAll(); }

Result<std::shared_ptr<Partition>> PartitionManager::Get(const std::string& topic,
                                                         PartitionId partition) {
  KeyView key{topic, partition.value()};
  std::shared_ptr<Slot> slot;
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    if (closed_) return Status::InvalidArgument("the broker is shutting down");
    auto it = slots_.find(key);
    if (it != slots_.end()) {
      slot = it->second;
      // The common case: open already, and no lock but the map's is needed.
      if (slot->partition && slot->partition->alive()) return slot->partition;
    }
  }
  if (!slot) {
    std::unique_lock<std::shared_mutex> lock(mu_);
    if (closed_) return Status::InvalidArgument("the broker is shutting down");
    auto it = slots_.find(key);
    if (it == slots_.end()) {
      it = slots_.emplace(Key{topic, partition.value()}, std::make_shared<Slot>()).first;
    }
    slot = it->second;
  }
  std::lock_guard<std::mutex> open(slot->open_mu);
  if (slot->partition && slot->partition->alive()) return slot->partition;
  const std::string name = topic + "-" + std::to_string(partition.value());
  if (!slot->failed.ok()) return slot->failed;
  auto opened = logs_->OpenLog(topic, partition);
  if (!opened.ok()) {
    if (!opened.status().IsCorruption() && opened.status().code() != Status::Code::kIOError)
      return opened.status();
    // Damage that recovery may not cut (below the recovery point: it was fsynced), or a disk
    // that fails: the partition stays offline until a restart, as a failed log directory does
    // in Kafka, and is not reopened (and logged again) for every request.
    slot->failed = Status::IOError(name + " is offline: " + opened.status().message());
    slot->has_failed.store(true);
    any_failed_.store(true);
    LogError(slot->failed.message() +
             (opened.status().IsCorruption()
                  ? " (silt verify-crc --repair quarantines the damage; then restart)"
                  : ""));
    return slot->failed;
  }
  std::shared_ptr<storage::PartitionLog> log = std::move(opened).value();
  for (const storage::RecoveryCut& c : log->recovery_cuts()) {
    LogWarn("recovery of " + name + " cut " + std::to_string(c.bytes) + " bytes at position " +
            std::to_string(c.position) + " of " + c.file + " (" + c.reason + ")" +
            (c.quarantine_path.empty() ? "" : "; they are kept in " + c.quarantine_path));
  }
  SILT_ASSIGN_OR_RETURN(std::shared_ptr<Partition> p,
                        Partition::Open(topic, partition, std::move(log), local_, LeaderEpoch(0)));
  if (hints_) {
    Offset hint = hints_(topic, partition);
    if (hint.value() >= 0) p->SetHighWatermarkHint(hint);
  }
  {
    // A shutdown that ran while the partition opened must not miss it.
    std::unique_lock<std::shared_mutex> lock(mu_);
    if (!closed_) {
      slot->partition = p;
      return p;
    }
  }
  p->Shutdown();
  return Status::InvalidArgument("the broker is shutting down");
}

std::shared_ptr<Partition> PartitionManager::Find(const std::string& topic,
                                                  PartitionId partition) const {
  KeyView key{topic, partition.value()};
  std::shared_lock<std::shared_mutex> lock(mu_);
  auto it = slots_.find(key);
  if (it == slots_.end() || !it->second->partition || !it->second->partition->alive())
    return nullptr;
  return it->second->partition;
}

std::vector<std::shared_ptr<Partition>> PartitionManager::Opened() const {
  std::vector<std::shared_ptr<Partition>> out;
  std::shared_lock<std::shared_mutex> lock(mu_);
  for (const auto& [k, s] : slots_) {
    if (s->partition) out.push_back(s->partition);
  }
  return out;
}

std::vector<std::pair<std::string, int32_t>> PartitionManager::Offline() const {
  std::vector<std::pair<std::string, int32_t>> out;
  // Asked at every heartbeat: no scan of every partition while none has ever failed.
  if (!any_failed_.load() && !Partition::AnyEverOffline()) return out;
  std::shared_lock<std::shared_mutex> lock(mu_);
  for (const auto& [k, s] : slots_)
    if (s->has_failed.load() || (s->partition && s->partition->offline()))
      out.emplace_back(k.topic, k.partition);
  return out;
}

void PartitionManager::RemoveTopic(const std::string& topic) {
  std::vector<std::shared_ptr<Slot>> removed;
  {
    std::unique_lock<std::shared_mutex> lock(mu_);
    for (auto it = slots_.begin(); it != slots_.end();) {
      if (it->first.topic == topic) {
        removed.push_back(it->second);
        it = slots_.erase(it);
      } else {
        ++it;
      }
    }
  }
  // Out of the map now: nobody else writes these slots, and an opening in progress is waited
  // for through open_mu.
  for (auto& s : removed) {
    std::lock_guard<std::mutex> open(s->open_mu);
    if (s->partition) s->partition->Shutdown();
  }
}

int PartitionManager::Maintain(bool retention) {
  int deleted = 0;
  for (auto& p : Opened()) {
    // A periodic flush that fails takes the partition offline as a failed append flush does:
    // what it covered may be lost, so nothing more is served from it.
    if (Status f = p->MaybeFlush(); !f.ok() && !p->offline()) (void)p->TakeOfflineAfter(f);
    if (!retention) continue;
    auto n = p->ApplyRetention();
    if (!n.ok()) {
      LogError("retention on " + p->name() + ": " + n.status().ToString());
    } else if (*n > 0) {
      LogInfo("retention deleted " + std::to_string(*n) + " segment(s) of " + p->name() +
              "; log start now " + std::to_string(p->log_start_offset().value()));
      deleted += *n;
    }
  }
  return deleted;
}

void PartitionManager::WakeAll() {
  for (auto& p : Opened()) p->WakeAll();
}

void PartitionManager::ShutdownAll() {
  std::unordered_map<Key, std::shared_ptr<Slot>, KeyHash, KeyEq> slots;
  {
    std::unique_lock<std::shared_mutex> lock(mu_);
    closed_ = true;
    slots.swap(slots_);
  }
  for (auto& [k, s] : slots) {
    std::lock_guard<std::mutex> open(s->open_mu);
    std::shared_ptr<Partition> p = s->partition;
    if (!p) continue;
    // A clean shutdown leaves a snapshot at the log end: the next start replays nothing.
    Status snap = p->WriteProducerSnapshot();
    if (!snap.ok()) LogWarn("producer snapshot of " + p->name() + ": " + snap.ToString());
    p->Shutdown();
  }
}

}  // namespace silt::broker
