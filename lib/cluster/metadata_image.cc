// MetadataImage and MetadataStateMachine (metadata_image.h).
#include "cluster/metadata_image.h"

#include <algorithm>
#include <set>

#include "base/coding.h"
#include "base/topic_name.h"

namespace silt::cluster {

namespace {

Status Refuse(RecordType t, const std::string& why) {
  return Status::InvalidArgument(std::string(RecordTypeName(t)) + ": " + why);
}

bool Contains(const std::vector<NodeId>& v, NodeId n) {
  return std::find(v.begin(), v.end(), n) != v.end();
}

// The rules every partition state keeps: distinct, non-negative replicas (not necessarily
// registered yet: a broker may register after its assignment); an ISR that is a non-empty subset
// of the replicas (the ISR is never emptied); a leader from the ISR, or none.
Status CheckPartition(RecordType t, const PartitionImage& p) {
  if (p.replicas.empty()) return Refuse(t, "no replicas");
  std::set<int32_t> seen;
  for (NodeId n : p.replicas) {
    if (n.value() < 0) return Refuse(t, "replica id " + std::to_string(n.value()));
    if (!seen.insert(n.value()).second) return Refuse(t, "a replica is listed twice");
  }
  if (p.isr.empty()) return Refuse(t, "an empty ISR");
  std::set<int32_t> in_isr;
  for (NodeId n : p.isr) {
    if (!Contains(p.replicas, n)) {
      return Refuse(t, "ISR member " + std::to_string(n.value()) + " is not a replica");
    }
    if (!in_isr.insert(n.value()).second) return Refuse(t, "an ISR member is listed twice");
  }
  if (p.leader.value() != kNoLeader && !Contains(p.isr, p.leader)) {
    return Refuse(t, "leader " + std::to_string(p.leader.value()) + " is not in the ISR");
  }
  for (NodeId n : p.adding_replicas) {
    if (!Contains(p.replicas, n)) {
      return Refuse(t, "adding replica " + std::to_string(n.value()) + " is not a replica");
    }
    if (Contains(p.removing_replicas, n)) {
      return Refuse(t, "replica " + std::to_string(n.value()) + " is both added and removed");
    }
  }
  for (NodeId n : p.removing_replicas) {
    if (!Contains(p.replicas, n)) {
      return Refuse(t, "removing replica " + std::to_string(n.value()) + " is not a replica");
    }
  }
  if (p.removing_replicas.size() >= p.replicas.size()) {
    return Refuse(t, "every replica is being removed");
  }
  return Status::OK();
}

}  // namespace

const std::map<std::string, std::string>& MetadataImage::configs(ConfigResource type,
                                                                 const std::string& name) const {
  static const std::map<std::string, std::string> kNone;
  auto it = configs_.find({type, name});
  return it == configs_.end() ? kNone : it->second;
}

const TopicImage* MetadataImage::FindTopic(std::string_view name) const {
  auto it = topic_ids_.find(std::string(name));
  return it == topic_ids_.end() ? nullptr : topics_.at(it->second).get();
}

const TopicImage* MetadataImage::FindTopic(const Uuid& id) const {
  auto it = topics_.find(id);
  return it == topics_.end() ? nullptr : it->second.get();
}

TopicImage& MetadataImage::Mutable(TopicsView::Map::iterator it) {
  // Apply works on a copy of an image that stays alive meanwhile, so a topic not yet changed
  // by this Apply is shared with it (use_count > 1) and is copied here, once; the copy is this
  // image's alone (use_count 1) and later records of the Apply change it in place. Nobody can
  // share it before the image is published, after which it never changes.
  if (it->second.use_count() > 1) it->second = std::make_shared<TopicImage>(*it->second);
  return *it->second;
}

bool MetadataImage::operator==(const MetadataImage& o) const {
  if (brokers_ != o.brokers_ || topic_ids_ != o.topic_ids_ || configs_ != o.configs_ ||
      next_producer_id_ != o.next_producer_id_ ||
      reserved_producer_id_ != o.reserved_producer_id_ || cluster_id_ != o.cluster_id_ ||
      topics_.size() != o.topics_.size())
    return false;
  for (auto a = topics_.begin(), b = o.topics_.begin(); a != topics_.end(); ++a, ++b) {
    if (a->first != b->first) return false;
    if (a->second != b->second && !(*a->second == *b->second)) return false;
  }
  return true;
}

Result<MetadataImage> MetadataImage::Apply(const std::vector<MetadataRecord>& records) const {
  MetadataImage next = *this;
  for (size_t i = 0; i < records.size(); ++i) {
    Status s = next.ApplyOne(records[i]);
    if (!s.ok()) {
      return s.WithContext("record " + std::to_string(i) + " of " + std::to_string(records.size()));
    }
  }
  return next;
}

Status MetadataImage::ApplyOne(const MetadataRecord& rec) {
  RecordType t = TypeOf(rec);
  if (auto* r = std::get_if<RegisterBrokerRecord>(&rec)) {
    if (r->broker_id.value() < 0) return Refuse(t, "negative broker id");
    if (r->port <= 0 || r->port > 65535) return Refuse(t, "port " + std::to_string(r->port));
    // A re-registration (a new incarnation) replaces the old one and starts fenced.
    if (r->peer_port < 0 || r->peer_port > 65535) {
      return Refuse(t, "peer port " + std::to_string(r->peer_port));
    }
    brokers_[r->broker_id.value()] = BrokerImage{
        r->broker_id, r->incarnation_id, r->host, r->port, true, r->peer_host, r->peer_port};
    return Status::OK();
  }
  if (auto* r = std::get_if<ClusterIdRecord>(&rec)) {
    if (r->cluster_id.empty()) return Refuse(t, "empty cluster id");
    if (!cluster_id_.empty() && cluster_id_ != r->cluster_id) {
      return Refuse(t,
                    "cluster id " + r->cluster_id + " differs from this cluster's " + cluster_id_);
    }
    cluster_id_ = r->cluster_id;
    return Status::OK();
  }
  if (auto* r = std::get_if<FenceBrokerRecord>(&rec)) {
    auto it = brokers_.find(r->broker_id.value());
    if (it == brokers_.end())
      return Refuse(t, "unknown broker " + std::to_string(r->broker_id.value()));
    it->second.fenced = true;
    return Status::OK();
  }
  if (auto* r = std::get_if<UnfenceBrokerRecord>(&rec)) {
    auto it = brokers_.find(r->broker_id.value());
    if (it == brokers_.end())
      return Refuse(t, "unknown broker " + std::to_string(r->broker_id.value()));
    it->second.fenced = false;
    return Status::OK();
  }
  if (auto* r = std::get_if<TopicRecord>(&rec)) {
    Status valid = ValidateTopicName(r->name);
    if (!valid.ok()) return Refuse(t, valid.message());
    if (r->topic_id.is_reserved()) return Refuse(t, "reserved topic id");
    if (topic_ids_.count(r->name)) return Refuse(t, "topic '" + r->name + "' exists");
    if (topics_.count(r->topic_id))
      return Refuse(t, "topic id " + r->topic_id.ToString() + " exists");
    topics_[r->topic_id] = std::make_shared<TopicImage>(TopicImage{r->name, r->topic_id, {}});
    topic_ids_[r->name] = r->topic_id;
    return Status::OK();
  }
  if (auto* r = std::get_if<PartitionRecord>(&rec)) {
    auto it = topics_.find(r->topic_id);
    if (it == topics_.end()) return Refuse(t, "unknown topic id " + r->topic_id.ToString());
    if (r->partition_id.value() < 0) return Refuse(t, "negative partition id");
    if (it->second->partitions.count(r->partition_id.value())) {
      return Refuse(t, "partition " + std::to_string(r->partition_id.value()) + " exists");
    }
    PartitionImage p{r->replicas,        r->isr,
                     r->leader,          r->leader_epoch,
                     r->partition_epoch, r->removing_replicas,
                     r->adding_replicas};
    SILT_TRY(CheckPartition(t, p));
    Mutable(it).partitions[r->partition_id.value()] = std::move(p);
    return Status::OK();
  }
  if (auto* r = std::get_if<PartitionChangeRecord>(&rec)) {
    auto it = topics_.find(r->topic_id);
    if (it == topics_.end()) return Refuse(t, "unknown topic id " + r->topic_id.ToString());
    auto pit = it->second->partitions.find(r->partition_id.value());
    if (pit == it->second->partitions.end()) {
      return Refuse(t, "unknown partition " + std::to_string(r->partition_id.value()));
    }
    PartitionImage p = pit->second;
    if (r->expected_partition_epoch >= 0 && r->expected_partition_epoch != p.partition_epoch) {
      return Refuse(t, "INVALID_UPDATE_VERSION: decided on partition epoch " +
                           std::to_string(r->expected_partition_epoch) + ", now " +
                           std::to_string(p.partition_epoch));
    }
    if (r->replicas) p.replicas = *r->replicas;
    if (r->isr) p.isr = *r->isr;
    if (r->removing_replicas) p.removing_replicas = *r->removing_replicas;
    if (r->adding_replicas) p.adding_replicas = *r->adding_replicas;
    bool leader_changed = r->leader.value() != kNoLeaderChange && r->leader != p.leader;
    if (r->leader.value() != kNoLeaderChange) p.leader = r->leader;
    SILT_TRY(CheckPartition(t, p));
    // Kafka's rules: every change bumps the partition epoch; a new leader bumps the leader epoch.
    p.partition_epoch += 1;
    if (leader_changed) p.leader_epoch = LeaderEpoch(p.leader_epoch.value() + 1);
    Mutable(it).partitions[r->partition_id.value()] = std::move(p);
    return Status::OK();
  }
  if (auto* r = std::get_if<AlterPartitionRecord>(&rec)) {
    auto it = topics_.find(r->topic_id);
    if (it == topics_.end()) {
      return Refuse(t, "UNKNOWN_TOPIC_OR_PARTITION: unknown topic id " + r->topic_id.ToString());
    }
    auto pit = it->second->partitions.find(r->partition_id.value());
    if (pit == it->second->partitions.end()) {
      return Refuse(t, "UNKNOWN_TOPIC_OR_PARTITION: unknown partition " +
                           std::to_string(r->partition_id.value()));
    }
    PartitionImage p = pit->second;
    // Kafka's order of checks (the controller's AlterPartition handling): who sends, from
    // which epoch, based on which version of the state, then the new ISR itself.
    if (r->leader != p.leader || r->leader_epoch != p.leader_epoch) {
      return Refuse(t, "FENCED_LEADER_EPOCH: node " + std::to_string(r->leader.value()) +
                           " at leader epoch " + std::to_string(r->leader_epoch.value()) +
                           "; the leader is " + std::to_string(p.leader.value()) + " at epoch " +
                           std::to_string(p.leader_epoch.value()));
    }
    if (r->partition_epoch != p.partition_epoch) {
      return Refuse(t, "INVALID_UPDATE_VERSION: based on partition epoch " +
                           std::to_string(r->partition_epoch) + ", now " +
                           std::to_string(p.partition_epoch));
    }
    if (r->new_isr.empty() || !Contains(r->new_isr, p.leader)) {
      return Refuse(t, "INVALID_REQUEST: the ISR must hold the leader");
    }
    for (NodeId n : r->new_isr) {
      if (Contains(p.isr, n)) continue;
      auto b = brokers_.find(n.value());
      if (b == brokers_.end() || b->second.fenced) {
        return Refuse(t, "INELIGIBLE_REPLICA: " + std::to_string(n.value()) +
                             " is not a registered, unfenced broker");
      }
    }
    p.isr = r->new_isr;
    Status valid = CheckPartition(t, p);
    if (!valid.ok()) return Status::InvalidArgument("INVALID_REQUEST: " + valid.message());
    p.partition_epoch += 1;
    Mutable(it).partitions[r->partition_id.value()] = std::move(p);
    return Status::OK();
  }
  if (auto* r = std::get_if<RemoveTopicRecord>(&rec)) {
    auto it = topics_.find(r->topic_id);
    if (it == topics_.end()) return Refuse(t, "unknown topic id " + r->topic_id.ToString());
    configs_.erase({ConfigResource::kTopic, it->second->name});
    topic_ids_.erase(it->second->name);
    topics_.erase(it);
    return Status::OK();
  }
  if (auto* r = std::get_if<ConfigRecord>(&rec)) {
    if (r->resource_type != ConfigResource::kTopic && r->resource_type != ConfigResource::kBroker) {
      return Refuse(t, "resource type " + std::to_string(static_cast<int>(r->resource_type)));
    }
    if (r->name.empty()) return Refuse(t, "empty config name");
    if (r->resource_type == ConfigResource::kTopic && !topic_ids_.count(r->resource_name)) {
      return Refuse(t, "unknown topic '" + r->resource_name + "'");
    }
    // A BROKER resource is the cluster default ("") or one broker's id, in decimal.
    if (r->resource_type == ConfigResource::kBroker && !r->resource_name.empty() &&
        (r->resource_name.size() > 9 ||
         !std::all_of(r->resource_name.begin(), r->resource_name.end(),
                      [](char c) { return c >= '0' && c <= '9'; }))) {
      return Refuse(t, "broker resource '" + r->resource_name + "' is not a broker id");
    }
    auto& m = configs_[{r->resource_type, r->resource_name}];
    if (r->value) {
      m[r->name] = *r->value;
    } else {
      m.erase(r->name);
      if (m.empty()) configs_.erase({r->resource_type, r->resource_name});
    }
    return Status::OK();
  }
  if (auto* r = std::get_if<ProducerIdsRecord>(&rec)) {
    if (r->reserved_producer_id.value() >= 0) {
      if (r->reserved_producer_id <= reserved_producer_id_) {
        return Refuse(t, "reserved producer id " + std::to_string(r->reserved_producer_id.value()) +
                             " does not advance past " +
                             std::to_string(reserved_producer_id_.value()));
      }
      if (r->next_producer_id <= r->reserved_producer_id) {
        return Refuse(t, "next producer id " + std::to_string(r->next_producer_id.value()) +
                             " is not above the reserved id " +
                             std::to_string(r->reserved_producer_id.value()));
      }
      reserved_producer_id_ = r->reserved_producer_id;
      next_producer_id_ = std::max(next_producer_id_, r->next_producer_id);
      return Status::OK();
    }
    if (r->next_producer_id <= next_producer_id_) {
      return Refuse(t, "next producer id " + std::to_string(r->next_producer_id.value()) +
                           " does not advance past " + std::to_string(next_producer_id_.value()));
    }
    next_producer_id_ = r->next_producer_id;
    return Status::OK();
  }
  return Refuse(t, "not applicable");
}

std::vector<MetadataRecord> MetadataImage::ToRecords() const {
  std::vector<MetadataRecord> out;
  if (!cluster_id_.empty()) out.push_back(ClusterIdRecord{cluster_id_});
  for (const auto& [id, b] : brokers_) {
    out.push_back(
        RegisterBrokerRecord{b.id, b.incarnation_id, b.host, b.port, b.peer_host, b.peer_port});
    if (!b.fenced) out.push_back(UnfenceBrokerRecord{b.id});
  }
  for (const auto& [id, topic] : topics()) {
    out.push_back(TopicRecord{topic.name, topic.id});
    for (const auto& [p, part] : topic.partitions) {
      out.push_back(PartitionRecord{PartitionId(p), topic.id, part.replicas, part.isr, part.leader,
                                    part.leader_epoch, part.partition_epoch,
                                    part.removing_replicas, part.adding_replicas});
    }
  }
  for (const auto& [key, m] : configs_) {
    for (const auto& [name, value] : m) {
      out.push_back(ConfigRecord{key.first, key.second, name, value});
    }
  }
  if (next_producer_id_.value() > 0 || reserved_producer_id_.value() >= 0) {
    out.push_back(ProducerIdsRecord{NodeId(-1), next_producer_id_, reserved_producer_id_});
  }
  return out;
}

std::string EncodeApplyResult(const Status& s) {
  std::string out;
  ByteWriter w(&out);
  int8_t code = 0;
  if (!s.ok()) code = s.code() == Status::Code::kInvalidArgument ? 2 : 1;
  w.I8(code);
  std::string_view msg = s.message();
  if (msg.size() > 32767) msg = msg.substr(0, 32767);
  w.I16(static_cast<int16_t>(msg.size()));
  w.Raw(msg);
  return out;
}

Status DecodeApplyResult(std::string_view bytes) {
  ByteReader r(bytes);
  int8_t code = 0;
  int16_t n = 0;
  std::string_view msg;
  if (!r.I8(&code) || !r.I16(&n) || n < 0 || !r.Bytes(static_cast<size_t>(n), &msg)) {
    return Status::Corruption("metadata apply result: damaged");
  }
  if (code == 0) return Status::OK();
  if (code == 2) return Status::InvalidArgument(msg);
  return Status::Corruption(msg);
}

MetadataStateMachine::MetadataStateMachine() : image_(std::make_shared<const MetadataImage>()) {}

std::shared_ptr<const MetadataImage> MetadataStateMachine::image() const {
  std::lock_guard<std::mutex> lock(mu_);
  return image_;
}

std::string MetadataStateMachine::Apply(std::string_view command) {
  auto records = DecodeCommand(command);
  if (!records.ok()) {
    // A command this build cannot read (e.g. a newer record version) is a no-op here, reported
    // to its proposer; every node on this version skips it alike.
    Status s = records.status();
    return EncodeApplyResult(
        s.code() == Status::Code::kInvalidArgument ? Status::Corruption(s.message()) : s);
  }
  auto current = image();
  auto next = current->Apply(*records);
  if (!next.ok()) return EncodeApplyResult(next.status());
  auto fresh = std::make_shared<const MetadataImage>(std::move(next).value());
  {
    std::lock_guard<std::mutex> lock(mu_);
    image_ = std::move(fresh);
  }
  return EncodeApplyResult(Status::OK());
}

std::string MetadataStateMachine::Snapshot() { return EncodeCommand(image()->ToRecords()); }

Status MetadataStateMachine::Restore(std::string_view snapshot) {
  SILT_ASSIGN_OR_RETURN(auto records, DecodeCommand(snapshot));
  auto rebuilt = MetadataImage().Apply(records);
  if (!rebuilt.ok()) {
    return Status::Corruption("metadata snapshot does not apply: " + rebuilt.status().message());
  }
  auto fresh = std::make_shared<const MetadataImage>(std::move(rebuilt).value());
  std::lock_guard<std::mutex> lock(mu_);
  image_ = std::move(fresh);
  return Status::OK();
}

}  // namespace silt::cluster
