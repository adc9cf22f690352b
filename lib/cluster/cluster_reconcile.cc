// Local reconciliation: the replica manager, __consumer_offsets, and this node's logs following the
// image.
#include "cluster/cluster_node_impl.h"

namespace silt::cluster {

using broker::LogInfo;
using broker::LogWarn;

void ClusterNode::Impl::StartReplicas() {
  broker::PartitionManager* partitions = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    partitions = services.partitions;
  }
  if (partitions == nullptr || replicas) return;
  ReplicaManagerOptions ro;
  ro.self = options.node_id;
  ro.voters = options.voters;
  ro.fetch.fetch_max_bytes = options.config.replica_fetch_max_bytes;
  ro.fetch.fetch_wait_max_ms = options.config.replica_fetch_wait_max_ms;
  ro.fetch.fetch_backoff_ms = options.config.replica_fetch_backoff_ms;
  ro.fetch.resolve_peer = [this](NodeId n) -> std::optional<Voter> {
    auto img = image();
    auto b = img->brokers().find(n.value());
    if (b == img->brokers().end() || b->second.peer_port <= 0) return std::nullopt;
    return Voter{n, b->second.peer_host, static_cast<uint16_t>(b->second.peer_port)};
  };
  ro.replica_lag_time_max_ms = options.config.replica_lag_time_max_ms;
  ro.broker_session_timeout_ms = options.config.broker_session_timeout_ms;
  ro.partitions = partitions;
  ro.image = [this] { return image(); };
  ro.propose = [this](const std::vector<MetadataRecord>& records) {
    return Propose(RandomUuid(), records, std::min(options.proposal_timeout_ms, 5000)).status();
  };
  ro.last_controller_contact_ms = [this] { return last_controller_contact_ms.load(); };
  auto rm = std::make_unique<ReplicaManager>(std::move(ro));
  rm->Start();
  std::lock_guard<std::mutex> lock(mu);
  replicas = std::move(rm);
}

int32_t ClusterNode::Impl::OffsetsReplicationFactor() const {
  int32_t rf = options.config.offsets_topic_replication_factor;
  if (rf > 0) return rf;
  return std::min<int32_t>(3, static_cast<int32_t>(options.voters.size()));
}

void ClusterNode::Impl::MaybeCreateOffsetsTopic() {
  if (!quorum->IsReadyLeader()) return;
  auto now = Clock::now();
  if (now < next_offsets_topic_try) return;
  auto img = image();
  if (img->FindTopic(std::string(protocol::kConsumerOffsetsTopic)) != nullptr) return;
  int32_t up = 0;
  for (const auto& [id, b] : img->brokers()) {
    if (!b.fenced) ++up;
  }
  if (up < OffsetsReplicationFactor()) return;
  next_offsets_topic_try = now + std::chrono::seconds(2);
  auto r = store.CreateTopicWithReplicas(std::string(protocol::kConsumerOffsetsTopic), -1, -1,
                                         {{"cleanup.policy", "compact"}});
  if (r.ok()) {
    LogInfo("controller: created " + std::string(protocol::kConsumerOffsetsTopic) + " with " +
            std::to_string(r->partition_count) + " partition(s), replication factor " +
            std::to_string(OffsetsReplicationFactor()));
  } else if (r.status().code() != Status::Code::kAlreadyExists) {
    LogWarn("controller: creating " + std::string(protocol::kConsumerOffsetsTopic) + ": " +
            r.status().ToString());
  }
}

void ClusterNode::Impl::Reconcile() {
  // The local topics first, then the image: an image is never older than the local topics
  // made from it, so a local topic missing from it was deleted.
  std::vector<broker::TopicMetadata> locals = local->ListTopics();
  auto img = image();
  // Partitions no longer assigned to this node are let go of (their files stay), so that the
  // next request for them asks the image again (NOT_LEADER_OR_FOLLOWER) instead of reaching an
  // open log; the replica manager reopens the topic's other partitions with their roles.
  std::set<std::pair<std::string, int32_t>> now_assigned;
  for (const auto& [tid, t] : img->topics()) {
    for (const auto& [p, part] : t.partitions) {
      if (std::find(part.replicas.begin(), part.replicas.end(), options.node_id) !=
          part.replicas.end()) {
        now_assigned.insert({t.name, p});
      }
    }
  }
  std::set<std::string> lost;
  for (const auto& k : assigned) {
    if (!now_assigned.count(k)) lost.insert(k.first);
  }
  assigned = std::move(now_assigned);
  for (const std::string& topic : lost) {
    LogInfo("some partitions of " + topic + " are no longer assigned here; closing them");
    store.NotifyDelete(topic);
  }
  for (const broker::TopicMetadata& t : locals) {
    const TopicImage* ti = img->FindTopic(t.name);
    if (ti == nullptr || ti->id.ToString() != t.topic_id) {
      Status s = local->DeleteTopic(t.name);
      if (!s.ok())
        LogWarn("removing the local logs of deleted topic " + t.name + ": " + s.ToString());
      continue;
    }
    const auto& want = img->configs(ConfigResource::kTopic, t.name);
    if (want != t.configs) {
      Status s = local->AlterTopicConfig(
          t.name,
          [&want](std::map<std::string, std::string>* o) {
            *o = want;
            return Status::OK();
          },
          false);
      if (!s.ok()) LogWarn("topic " + t.name + ": applying its configs: " + s.ToString());
    }
    int32_t count = static_cast<int32_t>(ti->partitions.size());
    if (count > t.partition_count) {
      Status s = local->AddPartitions(t.name, count);
      if (!s.ok()) LogWarn("topic " + t.name + ": adding partitions: " + s.ToString());
    }
  }
}

}  // namespace silt::cluster
