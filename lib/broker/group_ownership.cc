// GroupOwnership: the coordinator's partitions follow this node's leaderships of
// __consumer_offsets (see group_ownership.h).
#include "broker/group_ownership.h"

#include <chrono>
#include <set>

#include "broker/group_coordinator.h"
#include "broker/logging.h"
#include "broker/metadata_store.h"
#include "protocol/consumer_offsets.h"

namespace silt::broker {

GroupOwnership::GroupOwnership(MetadataStore* metadata, GroupCoordinator* groups, NodeId local,
                               int64_t recheck_ms)
    : metadata_(metadata), groups_(groups), local_(local), recheck_ms_(recheck_ms) {}

GroupOwnership::~GroupOwnership() { Stop(); }

void GroupOwnership::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { Loop(); });
}

void GroupOwnership::Poke() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    poked_ = true;
  }
  cv_.notify_all();
}

void GroupOwnership::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GroupOwnership::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    poked_ = false;
    lock.unlock();
    Reconcile();
    lock.lock();
    cv_.wait_for(lock, std::chrono::milliseconds(recheck_ms_),
                 [this] { return stopping_ || poked_; });
  }
}

void GroupOwnership::Reconcile() {
  auto topic = metadata_->GetTopic(std::string(protocol::kConsumerOffsetsTopic));
  std::map<int32_t, LeaderEpoch> led;
  if (topic.ok()) {
    if (topic->partition_count != count_) {
      // The topic as it exists decides where groups live (a count other than
      // offsets.topic.num.partitions, when it was made elsewhere with another).
      count_ = topic->partition_count;
      loaded_.clear();
      groups_->UseOwnedPartitions(count_);
    }
    for (const PartitionAssignment& a : topic->partitions) {
      if (a.leader == local_) led[a.partition.value()] = a.leader_epoch;
    }
  } else if (!topic.status().IsNotFound()) {
    LogWarn("group coordinator: reading __consumer_offsets' leaders: " +
            topic.status().ToString());
    return;
  }
  for (auto it = loaded_.begin(); it != loaded_.end();) {
    auto now = led.find(it->first);
    if (now == led.end()) {
      groups_->UnloadPartition(it->first);
      it = loaded_.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& [p, epoch] : led) {
    auto was = loaded_.find(p);
    if (was != loaded_.end() && was->second == epoch) continue;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
    }
    // A new leader epoch reloads: the log may hold what another leader wrote meanwhile.
    Status s = groups_->LoadPartition(p);
    if (!s.ok()) {
      // Right after an election the replica manager may not have opened the partition with
      // its new role yet: that is retried at the next pass and not worth a warning.
      if (s.code() == Status::Code::kNotLeader) {
        LogDebug("group coordinator: " + s.ToString() + " (retried)");
      } else {
        LogWarn("group coordinator: " + s.ToString() + " (retried)");
      }
      loaded_.erase(p);
      continue;
    }
    loaded_[p] = epoch;
  }
}

}  // namespace silt::broker
