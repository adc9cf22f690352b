// The image as the broker's metadata store, log provider and dynamic-config store.
#include "cluster/cluster_node_impl.h"

namespace silt::cluster {

using broker::LogInfo;
using broker::LogWarn;

namespace {

bool IsOffsetsTopic(const std::string& topic) { return topic == protocol::kConsumerOffsetsTopic; }

broker::TopicMetadata Describe(const MetadataImage& img, const TopicImage& t) {
  broker::TopicMetadata out;
  out.name = t.name;
  out.topic_id = t.id.ToString();
  out.partition_count = static_cast<int32_t>(t.partitions.size());
  out.configs = img.configs(ConfigResource::kTopic, t.name);
  out.internal = protocol::IsInternalTopic(t.name);
  for (const auto& [p, part] : t.partitions) {
    out.partitions.push_back(broker::PartitionAssignment{PartitionId(p), part.leader,
                                                         part.leader_epoch, part.replicas,
                                                         part.isr, OfflineReplicas(img, part)});
  }
  return out;
}

// A ConfigRecord for each key whose value differs between `current` and `next`, a null value
// for each key `next` drops: only what changed, so that concurrent changes of other keys stay.
std::vector<MetadataRecord> ConfigChanges(ConfigResource resource, const std::string& name,
                                          const std::map<std::string, std::string>& current,
                                          const std::map<std::string, std::string>& next) {
  std::vector<MetadataRecord> records;
  for (const auto& [k, v] : next) {
    auto it = current.find(k);
    if (it == current.end() || it->second != v) records.push_back(ConfigRecord{resource, name, k, v});
  }
  for (const auto& [k, v] : current) {
    if (!next.count(k)) records.push_back(ConfigRecord{resource, name, k, std::nullopt});
  }
  return records;
}

Status CheckConfigs(const storage::LogConfig& defaults,
                    const std::map<std::string, std::string>& configs) {
  for (const auto& [k, v] : configs) {
    if (!storage::LogConfig::IsKnownKey(k)) {
      return Status::InvalidArgument("Unknown topic config name: " + k);
    }
  }
  storage::LogConfig probe = defaults;
  return probe.Apply(configs);
}

}  // namespace

// ---- the image as metadata store --------------------------------------------------------

bool ImageStore::CaughtUp() const { return node_->is_registered.load(); }

bool ImageStore::auto_create_topics() const { return node_->options.config.auto_create_topics; }

Result<broker::TopicMetadata> ImageStore::GetOrCreateTopic(const std::string& name,
                                                           bool allow_auto_create) {
  auto t = GetTopic(name);
  if (t.ok() || !t.status().IsNotFound() || !allow_auto_create || !auto_create_topics()) return t;
  std::lock_guard<std::mutex> lock(create_mu_);
  if (create_stopping_) return Status::Busy("the node is shutting down");
  if (creating_.size() < kMaxAutoCreates && creating_.insert(name).second) {
    create_queue_.push_back(name);
    if (!creator_.joinable()) creator_ = std::thread([this] { AutoCreateLoop(); });
    create_cv_.notify_one();
  }
  return Status::Busy("topic '" + name + "' is being created");
}

void ImageStore::AutoCreateLoop() {
  std::unique_lock<std::mutex> lock(create_mu_);
  for (;;) {
    create_cv_.wait(lock, [this] { return create_stopping_ || !create_queue_.empty(); });
    if (create_stopping_) return;
    std::string name = std::move(create_queue_.front());
    create_queue_.pop_front();
    lock.unlock();
    auto created = CreateTopic(name, -1, {});
    if (created.ok()) {
      LogInfo("auto-created topic " + name + " with " +
              std::to_string(created->partition_count) + " partition(s)");
    } else if (created.status().code() != Status::Code::kAlreadyExists) {
      LogWarn("auto-creating topic " + name + ": " + created.status().ToString());
    }
    lock.lock();
    creating_.erase(name);
  }
}

void ImageStore::StopAutoCreate() {
  {
    std::lock_guard<std::mutex> lock(create_mu_);
    create_stopping_ = true;
    create_cv_.notify_all();
  }
  if (creator_.joinable()) creator_.join();
}

std::vector<broker::TopicMetadata> ImageStore::ListTopics() {
  auto img = node_->image();
  std::map<std::string, broker::TopicMetadata> by_name;
  for (const auto& [id, t] : img->topics()) by_name[t.name] = Describe(*img, t);
  std::vector<broker::TopicMetadata> out;
  for (auto& [name, t] : by_name) out.push_back(std::move(t));
  return out;
}

Result<broker::TopicMetadata> ImageStore::GetTopic(const std::string& name) {
  auto img = node_->image();
  const TopicImage* t = img->FindTopic(name);
  if (t == nullptr) return Status::NotFound("topic '" + name + "' does not exist");
  return Describe(*img, *t);
}

// Auto-created topics (and CreateTopic without a factor) get default.replication.factor.
Result<broker::TopicMetadata> ImageStore::CreateTopic(
    const std::string& name, int32_t partitions,
    const std::map<std::string, std::string>& configs) {
  return CreateTopicWithReplicas(name, partitions,
                                 node_->options.config.default_replication_factor, configs);
}

// The replicas asked for (CheckRegistered), proposed as ProposeTopic says. A fenced broker's
// replicas leave the ISR once the controller sees it fenced.
Result<broker::TopicMetadata> ImageStore::CreateTopicWithAssignment(
    const std::string& name, const std::vector<std::vector<NodeId>>& assignment,
    const std::map<std::string, std::string>& configs) {
  SILT_TRY(ValidateTopicName(name));
  if (IsOffsetsTopic(name)) return Status::InvalidArgument("__consumer_offsets is placed by the cluster");
  if (assignment.empty()) return Status::InvalidArgument("no partitions");
  SILT_TRY(CheckConfigs(LogDefaults(), configs));
  auto img = node_->image();
  if (img->FindTopic(name) != nullptr) {
    return Status::AlreadyExists("topic '" + name + "' already exists");
  }
  SILT_TRY(CheckRegistered(*img, assignment));
  return ProposeTopic(name, assignment, configs);
}

// Placed replicas (PlaceReplicas), proposed as ProposeTopic says.
Result<broker::TopicMetadata> ImageStore::CreateTopicWithReplicas(
    const std::string& name, int32_t partitions, int32_t replication_factor,
    const std::map<std::string, std::string>& configs) {
  SILT_TRY(ValidateTopicName(name));
  if (IsOffsetsTopic(name)) {
    // Whoever asks (the controller, a FindCoordinator, a commit), the topic is made the same.
    partitions = node_->options.config.offsets_topic_num_partitions;
    replication_factor = node_->OffsetsReplicationFactor();
  }
  if (partitions == -1) partitions = node_->options.config.num_partitions;
  if (partitions <= 0) return Status::InvalidArgument("number of partitions must be at least 1");
  SILT_TRY(CheckConfigs(LogDefaults(), configs));
  auto img = node_->image();
  if (img->FindTopic(name) != nullptr) {
    return Status::AlreadyExists("topic '" + name + "' already exists");
  }
  SILT_ASSIGN_OR_RETURN(auto placement, PlaceReplicas(*img, partitions, replication_factor));
  return ProposeTopic(name, placement, configs);
}

// Every replica of a new partition starts in sync (all are empty), as in Kafka, and the first
// leads (the preferred leader).
Result<broker::TopicMetadata> ImageStore::ProposeTopic(
    const std::string& name, const std::vector<std::vector<NodeId>>& replicas,
    const std::map<std::string, std::string>& configs) {
  const Uuid id = NewTopicId();
  std::vector<MetadataRecord> records{TopicRecord{name, id}};
  for (size_t p = 0; p < replicas.size(); ++p) {
    records.push_back(PartitionRecord{PartitionId(static_cast<int32_t>(p)), id, replicas[p],
                                      replicas[p], replicas[p][0], LeaderEpoch(0), 0});
  }
  for (const auto& [k, v] : configs) {
    records.push_back(ConfigRecord{ConfigResource::kTopic, name, k, v});
  }
  auto r = ProposeVisible(records);
  if (!r.ok()) {
    if (r.status().message().find("' exists") != std::string::npos) {
      return Status::AlreadyExists("topic '" + name + "' already exists");
    }
    return r.status();
  }
  return GetTopic(name);
}

Result<RaftIndex> ImageStore::ProposeVisible(const std::vector<MetadataRecord>& records) {
  SILT_ASSIGN_OR_RETURN(RaftIndex index, node_->Propose(records));
  if (std::this_thread::get_id() == node_->member.get_id()) return index;
  const int64_t t0 = MonotonicMs();
  Status s = node_->AwaitEveryBroker(
      index, std::max(100, node_->options.config.broker_session_timeout_ms));
  if (!s.ok()) {
    LogWarn("metadata change " + std::to_string(index.value()) + " committed; answered before " +
            "every broker applied it: " + s.ToString());
  } else {
    broker::LogDebug("metadata change " + std::to_string(index.value()) +
                     " applied by every unfenced broker " + std::to_string(MonotonicMs() - t0) +
                     " ms after its commit here");
  }
  return index;
}

// Each partition of a manual assignment names at least one replica, every one a registered
// broker (a fenced one may be named, as in Kafka).
Status ImageStore::CheckRegistered(const MetadataImage& img,
                                   const std::vector<std::vector<NodeId>>& assignment) {
  for (const auto& replicas : assignment) {
    if (replicas.empty()) return Status::InvalidArgument("a partition without replicas");
    for (NodeId b : replicas) {
      if (img.brokers().count(b.value()) == 0) {
        return Status::InvalidArgument("broker " + std::to_string(b.value()) +
                                       " is not registered in the cluster");
      }
    }
  }
  return Status::OK();
}

Status ImageStore::DeleteTopic(const std::string& name) {
  auto img = node_->image();
  const TopicImage* t = img->FindTopic(name);
  if (t == nullptr) return Status::NotFound("topic '" + name + "' does not exist");
  SILT_TRY(ProposeVisible({RemoveTopicRecord{t->id}}).status());
  LogInfo("deleted topic " + name + " from the cluster metadata");
  // This node's logs go now; the other nodes' when they see the image without it.
  NotifyDelete(name);
  if (node_->local->GetTopic(name).ok()) {
    Status s = node_->local->DeleteTopic(name);
    if (!s.ok()) LogWarn("removing the local logs of " + name + ": " + s.ToString());
  }
  return Status::OK();
}

Status ImageStore::AddPartitions(const std::string& name, int32_t new_total) {
  return AddPartitionsWithAssignment(name, new_total, {});
}

// `assignment` empty: the new partitions are placed (PlaceReplicas); otherwise entry i holds the
// replicas of partition have + i, each a registered broker.
Status ImageStore::AddPartitionsWithAssignment(
    const std::string& name, int32_t new_total,
    const std::vector<std::vector<NodeId>>& assignment) {
  auto img = node_->image();
  const TopicImage* t = img->FindTopic(name);
  if (t == nullptr) return Status::NotFound("topic '" + name + "' does not exist");
  int32_t have = static_cast<int32_t>(t->partitions.size());
  if (new_total <= have) {
    return Status::InvalidArgument("topic " + name + " has " + std::to_string(have) +
                                   " partitions; the new total must be larger");
  }
  // New partitions get as many replicas as the topic's first partition has.
  int32_t factor = t->partitions.empty()
                       ? 1
                       : static_cast<int32_t>(t->partitions.begin()->second.replicas.size());
  std::vector<std::vector<NodeId>> placement;
  if (assignment.empty()) {
    SILT_ASSIGN_OR_RETURN(placement, PlaceReplicas(*img, new_total - have, factor));
  } else {
    if (static_cast<int32_t>(assignment.size()) != new_total - have) {
      return Status::InvalidArgument("one assignment per new partition is needed");
    }
    SILT_TRY(CheckRegistered(*img, assignment));
    placement = assignment;
  }
  std::vector<MetadataRecord> records;
  for (int32_t p = have; p < new_total; ++p) {
    const auto& replicas = placement[p - have];
    records.push_back(PartitionRecord{
        PartitionId(p), t->id, replicas, replicas, replicas[0], LeaderEpoch(0), 0});
  }
  SILT_TRY(ProposeVisible(records).status());
  LogInfo("topic " + name + " now has " + std::to_string(new_total) +
          " partition(s) in the "
          "cluster metadata");
  return Status::OK();
}

Status ImageStore::SetLogDefaults(const storage::LogConfig& defaults) {
  {
    std::lock_guard<std::mutex> lock(defaults_mu_);
    log_defaults_ = defaults;
  }
  // The logs this node keeps (every replica's) follow them at once.
  return node_->local->SetLogDefaults(defaults);
}

storage::LogConfig ImageStore::LogDefaults() {
  std::lock_guard<std::mutex> lock(defaults_mu_);
  return log_defaults_ ? *log_defaults_ : node_->options.config.log_defaults;
}

std::string ImageBrokerConfigs::Name(bool cluster_default) const {
  return cluster_default ? std::string() : std::to_string(node_->options.node_id.value());
}

Result<broker::BrokerConfigStore::Configs> ImageBrokerConfigs::Load(bool cluster_default) {
  auto img = node_->image();
  return img->configs(ConfigResource::kBroker, Name(cluster_default));
}

Status ImageBrokerConfigs::Store(bool cluster_default, const Configs& current,
                                 const Configs& next) {
  std::vector<MetadataRecord> records =
      ConfigChanges(ConfigResource::kBroker, Name(cluster_default), current, next);
  if (records.empty()) return Status::OK();
  return node_->Propose(records).status();
}

Result<storage::LogConfig> ImageStore::TopicConfig(const std::string& name) {
  auto img = node_->image();
  if (img->FindTopic(name) == nullptr)
    return Status::NotFound("topic '" + name + "' does not exist");
  storage::LogConfig c = LogDefaults();
  SILT_TRY(c.Apply(img->configs(ConfigResource::kTopic, name)));
  return c;
}

Status ImageStore::AlterTopicConfig(const std::string& name, const ConfigEdit& edit,
                                    bool validate_only) {
  auto img = node_->image();
  if (img->FindTopic(name) == nullptr)
    return Status::NotFound("topic '" + name + "' does not exist");
  const std::map<std::string, std::string> current = img->configs(ConfigResource::kTopic, name);
  std::map<std::string, std::string> next = current;
  SILT_TRY(edit(&next));
  SILT_TRY(CheckConfigs(LogDefaults(), next));
  if (validate_only || next == current) return Status::OK();
  SILT_TRY(ProposeVisible(ConfigChanges(ConfigResource::kTopic, name, current, next)).status());
  // This node's open logs take it now; the others' when they see the image.
  if (node_->local->GetTopic(name).ok()) {
    return node_->local->AlterTopicConfig(
        name,
        [&next](std::map<std::string, std::string>* o) {
          *o = next;
          return Status::OK();
        },
        false);
  }
  return Status::OK();
}

std::vector<broker::BrokerEndpoint> ImageStore::Brokers() {
  std::vector<broker::BrokerEndpoint> out;
  // Held for the loop: a range-for keeps only the last temporary alive, not the image.
  auto img = node_->image();
  for (const auto& [id, b] : img->brokers()) {
    if (!b.fenced) out.push_back(broker::BrokerEndpoint{b.id, b.host, b.port});
  }
  return out;
}

std::optional<NodeId> ImageStore::Controller() {
  return node_->quorum ? node_->quorum->leader().value_or(NodeId(-1)) : NodeId(-1);
}

std::optional<broker::QuorumState> ImageStore::Quorum() {
  broker::QuorumState q;
  if (!node_->quorum) return q;
  q.leader = node_->quorum->leader();
  q.term = static_cast<int64_t>(node_->quorum->term().value());
  q.commit_index = static_cast<int64_t>(node_->quorum->committed_index().value());
  q.applied_index = static_cast<int64_t>(node_->quorum->applied_index().value());
  q.is_ready_leader = node_->quorum->IsReadyLeader();
  auto ends = node_->quorum->voter_log_ends();
  for (const Voter& v : node_->options.voters) {
    broker::QuorumVoterState s{v.id, -1};
    for (const auto& e : ends)
      if (e.id == v.id) s.log_end = static_cast<int64_t>(e.log_end.value());
    q.voters.push_back(s);
  }
  std::sort(q.voters.begin(), q.voters.end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
  auto img = node_->image();
  for (const auto& [id, b] : img->brokers())
    if (b.fenced) q.fenced_brokers.push_back(b.id);
  return q;
}

namespace {

// Decides one partition change on the current image and proposes it; a change refused because
// the partition moved on meanwhile (INVALID_UPDATE_VERSION) is decided again, twice at most.
template <class Decide>
Status ProposePartitionChange(ClusterNode::Impl* node, const std::string& topic, Decide decide) {
  Status last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto img = node->image();
    const TopicImage* t = img->FindTopic(topic);
    if (t == nullptr) return Status::NotFound("UNKNOWN_TOPIC_OR_PARTITION: " + topic);
    Result<PartitionChangeRecord> change = decide(*img, *t);
    if (!change.ok()) return change.status();
    last = node->Propose({*change}).status();
    if (last.ok() || last.message().find("INVALID_UPDATE_VERSION") == std::string::npos) {
      return last;
    }
    // The partition moved on in the controller's image: decide again once ours has too.
    const auto seen = node->quorum->applied_index();
    node->WaitImage(100, [&] { return node->quorum->applied_index() != seen; });
  }
  return last;
}

}  // namespace

std::vector<Status> ImageStore::AlterPartitionReassignments(
    const std::vector<ReassignmentTarget>& targets) {
  std::vector<Status> out;
  for (const ReassignmentTarget& target : targets) {
    const int32_t p = target.partition.value();
    Status s = ProposePartitionChange(
        node_, target.topic,
        [&](const MetadataImage& img, const TopicImage& t) -> Result<PartitionChangeRecord> {
          if (!target.replicas) return CancelReassignment(t, p);
          return StartReassignment(img, t, p, *target.replicas);
        });
    if (s.ok()) {
      LogInfo("partition " + target.topic + "-" + std::to_string(p) +
              (target.replicas ? ": reassignment started" : ": reassignment cancelled"));
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<broker::MetadataStore::OngoingReassignment> ImageStore::ListPartitionReassignments() {
  std::vector<OngoingReassignment> out;
  for (auto& r : OngoingReassignments(*node_->image())) {
    out.push_back({r.topic, PartitionId(r.partition), r.replicas, r.adding_replicas,
                   r.removing_replicas});
  }
  return out;
}

std::vector<Status> ImageStore::ElectLeaders(bool unclean,
                                             const std::vector<ElectionTarget>& targets,
                                             std::vector<ElectionTarget>* elected) {
  std::vector<ElectionTarget> todo = targets;
  const bool all = targets.empty();
  if (all) {
    // Every partition that needs an election of this type.
    auto img = node_->image();
    for (const auto& [id, t] : img->topics()) {
      for (const auto& [p, part] : t.partitions) {
        if (DecideElection(*img, t, p, unclean).ok()) todo.push_back({t.name, PartitionId(p)});
      }
    }
  }
  std::vector<Status> out;
  for (const ElectionTarget& target : todo) {
    out.push_back(ProposePartitionChange(
        node_, target.topic,
        [&](const MetadataImage& img, const TopicImage& t) -> Result<PartitionChangeRecord> {
          return DecideElection(img, t, target.partition.value(), unclean);
        }));
  }
  if (elected) *elected = std::move(todo);
  return out;
}

int64_t ImageStore::ReplicaFetchAllowance(const std::string& topic, PartitionId partition,
                                          NodeId follower) {
  auto img = node_->image();
  const TopicImage* t = img->FindTopic(topic);
  if (t == nullptr) return -1;
  auto p = t->partitions.find(partition.value());
  if (p == t->partitions.end() || !IsAddingReplica(p->second, follower)) return -1;
  const auto& configs = img->configs(ConfigResource::kTopic, topic);
  auto c = configs.find(kReassignmentThrottleKey);
  if (c == configs.end()) return -1;
  int64_t rate = 0;
  try {
    rate = std::stoll(c->second);
  } catch (...) {
    return -1;
  }
  if (rate <= 0) return -1;
  const int64_t now = MonotonicMs();
  std::lock_guard<std::mutex> lock(throttle_mu_);
  auto [it, fresh] = throttle_.try_emplace(topic);
  ThrottleBucket& b = it->second;
  if (fresh || b.rate != rate) {
    b.rate = rate;
    b.tokens = std::min<double>(b.tokens, static_cast<double>(rate));
    if (fresh) b.tokens = static_cast<double>(rate) / 10;
    b.last_ms = now;
  }
  b.tokens = std::min<double>(static_cast<double>(rate),
                              b.tokens + static_cast<double>(rate) * (now - b.last_ms) / 1000.0);
  b.last_ms = now;
  return b.tokens >= 1 ? static_cast<int64_t>(b.tokens) : 0;
}

void ImageStore::ChargeReplicaFetch(const std::string& topic, int64_t bytes) {
  std::lock_guard<std::mutex> lock(throttle_mu_);
  auto it = throttle_.find(topic);
  if (it != throttle_.end()) it->second.tokens -= static_cast<double>(bytes);
}

Result<std::shared_ptr<storage::PartitionLog>> ImageStore::OpenLog(const std::string& topic,
                                                                   PartitionId partition) {
  auto img = node_->image();
  const TopicImage* t = img->FindTopic(topic);
  if (t == nullptr) return Status::NotFound("topic '" + topic + "' does not exist");
  auto it = t->partitions.find(partition.value());
  if (it == t->partitions.end()) {
    return Status::NotFound(topic + "-" + std::to_string(partition.value()) +
                            ": no such partition");
  }
  const auto& replicas = it->second.replicas;
  if (std::find(replicas.begin(), replicas.end(), node_->options.node_id) == replicas.end()) {
    return Status::NotLeader(topic + "-" + std::to_string(partition.value()) + " is led by node " +
                             std::to_string(it->second.leader.value()) + " (no replica here)");
  }
  // With a broker behind it, only the replica manager opens a replica (and gives it its role
  // before any request can use it); anyone else is told to retry, and the manager is woken.
  // That holds from the moment the broker serves, before the manager exists (it starts once
  // this node is registered): a partition opened by a request then would act as a single
  // node's leader, ISR {this node}, and acknowledge acks=all alone — a node restarted within
  // its session, still leader in the image, did exactly that and lost acknowledged records.
  if (!OpeningForReplicaManager()) {
    // Under mu: Stop() takes the manager away under it before destroying it.
    std::lock_guard<std::mutex> lock(node_->mu);
    if (node_->replicas || node_->services.partitions != nullptr) {
      if (node_->replicas) node_->replicas->Wake();
      return Status::NotLeader(topic + "-" + std::to_string(partition.value()) +
                               ": the replica is not open here yet");
    }
  }
  {
    // The data dir keeps the topic under the image's id, with every partition the image has.
    std::lock_guard<std::mutex> lock(local_mu_);
    int32_t count = static_cast<int32_t>(t->partitions.size());
    auto have = node_->local->GetTopic(topic);
    if (!have.ok()) {
      if (!have.status().IsNotFound()) return have.status();
      SILT_TRY(
          node_->local
              ->CreateTopicWithId(topic, t->id, count, img->configs(ConfigResource::kTopic, topic))
              .status());
    } else if (have->topic_id != t->id.ToString()) {
      return Status::NotLeader(topic +
                               ": the local logs are of an older topic of that name "
                               "(being removed)");
    } else if (have->partition_count < count) {
      SILT_TRY(node_->local->AddPartitions(topic, count));
    }
  }
  return node_->local->OpenLog(topic, partition);
}

}  // namespace silt::cluster
