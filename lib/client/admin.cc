// Admin requests: topics, configs, offsets and consumer groups.
#include "client/admin.h"

#include <algorithm>
#include <thread>

#include "base/clock.h"
#include "protocol/errors.h"
#include "protocol/messages.h"

namespace silt::client {

using protocol::ErrorCode;

namespace {

// The controller (for topic changes), or any broker when the controller is unknown.
Result<Connection*> Controller(Cluster* cluster) {
  SILT_ASSIGN_OR_RETURN(auto meta, cluster->FetchMetadata(std::vector<std::string>{}, false));
  if (meta.controller_id >= 0) {
    auto c = cluster->Node(meta.controller_id);
    if (c.ok()) return *c;
  }
  return cluster->Any();
}

bool NetworkError(const Status& st) { return st.code() == Status::Code::kIOError; }

// A call at `conn`; a network failure drops the connection and asks for a retry.
template <class Req, class Resp>
Status CallAt(Cluster* cluster, Connection* conn, const Req& req, Resp* resp, bool* retry) {
  Status st = conn->Call(req, resp);
  if (!st.ok() && NetworkError(st)) {
    cluster->Drop(conn);
    *retry = true;
  }
  return st;
}

}  // namespace

Result<std::map<int32_t, int64_t>> ListOffsets(Cluster* cluster, const std::string& topic,
                                               const std::map<int32_t, int64_t>& timestamps) {
  std::map<int32_t, int64_t> out;
  std::map<int32_t, int64_t> todo = timestamps;
  bool refresh = true;
  Status st = Retrying(cluster, [&](bool* retry) -> Status {
    if (refresh) {
      auto meta = cluster->Topic(topic, false);
      if (!meta.ok()) return meta.status();
      refresh = false;
    }
    const TopicMeta* meta = cluster->Cached(topic);
    if (meta == nullptr) return Status::NotFound("topic '" + topic + "' does not exist");
    std::map<int32_t, std::vector<int32_t>> by_leader;
    for (const auto& [p, ts] : todo) {
      auto it = std::find_if(meta->partitions.begin(), meta->partitions.end(),
                             [p = p](const PartitionMeta& m) { return m.partition == p; });
      if (it == meta->partitions.end())
        return Status::InvalidArgument("topic '" + topic + "' has no partition " +
                                       std::to_string(p));
      by_leader[it->leader].push_back(p);
    }
    Status last;
    for (const auto& [leader, parts] : by_leader) {
      auto conn = cluster->Node(leader);
      if (!conn.ok()) {
        refresh = true;
        *retry = true;
        last = conn.status();
        continue;
      }
      auto version = (*conn)->RequireVersion(protocol::ApiKey::kListOffsets);
      if (!version.ok()) return version.status();
      protocol::ListOffsetsRequest req;
      req.topics.push_back({topic, {}});
      for (int32_t p : parts) {
        protocol::ListOffsetsRequest::Partition rp;
        rp.partition_index = p;
        rp.timestamp = todo[p];
        req.topics[0].partitions.push_back(rp);
      }
      protocol::ListOffsetsResponse resp;
      Status st = (*conn)->Call(req, &resp, *version);
      if (!st.ok()) {
        if (!NetworkError(st)) return st;
        cluster->Drop(*conn);
        refresh = true;
        *retry = true;
        last = st;
        continue;
      }
      for (const auto& t : resp.topics) {
        for (const auto& rp : t.partitions) {
          if (rp.error_code != 0) {
            if (!IsRetriableError(rp.error_code))
              return ErrorStatus(rp.error_code, "ListOffsets for " + topic + "/" +
                                                    std::to_string(rp.partition_index));
            refresh = true;
            *retry = true;
            last = ErrorStatus(rp.error_code, "ListOffsets");
            continue;
          }
          int64_t off = rp.offset;
          if (*version == 0) off = rp.old_style_offsets.empty() ? -1 : rp.old_style_offsets[0];
          out[rp.partition_index] = off;
          todo.erase(rp.partition_index);
        }
      }
    }
    if (!todo.empty()) {
      *retry = true;
      return last.ok() ? Status::IOError("ListOffsets: no answer for some partitions") : last;
    }
    return Status::OK();
  });
  if (!st.ok()) return st;
  return out;
}

Status CreateTopic(Cluster* cluster, const TopicSpec& spec) {
  return Retrying(cluster, [&](bool* retry) -> Status {
    SILT_ASSIGN_OR_RETURN(Connection * conn, Controller(cluster));
    protocol::CreateTopicsRequest req;
    protocol::CreateTopicsRequest::Topic t;
    t.name = spec.name;
    t.num_partitions = spec.partitions;
    t.replication_factor = spec.replication_factor;
    for (const auto& [k, v] : spec.configs) t.configs.push_back({k, v});
    req.topics.push_back(t);
    req.timeout_ms = cluster->options().request_timeout_ms;
    protocol::CreateTopicsResponse resp;
    SILT_TRY(CallAt(cluster, conn, req, &resp, retry));
    for (const auto& r : resp.topics) {
      if (r.error_code == 0) continue;
      if (r.error_code == static_cast<int16_t>(ErrorCode::TOPIC_ALREADY_EXISTS))
        return Status::AlreadyExists("topic '" + spec.name + "' already exists");
      *retry = r.error_code == static_cast<int16_t>(ErrorCode::NOT_CONTROLLER) ||
               r.error_code == static_cast<int16_t>(ErrorCode::REQUEST_TIMED_OUT);
      return ErrorStatus(r.error_code, "creating topic '" + spec.name + "'", r.error_message);
    }
    return Status::OK();
  });
}

Status DeleteTopic(Cluster* cluster, const std::string& topic) {
  return Retrying(cluster, [&](bool* retry) -> Status {
    SILT_ASSIGN_OR_RETURN(Connection * conn, Controller(cluster));
    protocol::DeleteTopicsRequest req;
    req.topic_names.push_back(topic);
    req.timeout_ms = cluster->options().request_timeout_ms;
    protocol::DeleteTopicsResponse resp;
    SILT_TRY(CallAt(cluster, conn, req, &resp, retry));
    for (const auto& r : resp.responses) {
      if (r.error_code == 0) continue;
      if (r.error_code == static_cast<int16_t>(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION))
        return Status::NotFound("topic '" + topic + "' does not exist");
      *retry = r.error_code == static_cast<int16_t>(ErrorCode::NOT_CONTROLLER);
      return ErrorStatus(r.error_code, "deleting topic '" + topic + "'");
    }
    return Status::OK();
  });
}

Status CreatePartitions(Cluster* cluster, const std::string& topic, int32_t total) {
  return Retrying(cluster, [&](bool* retry) -> Status {
    SILT_ASSIGN_OR_RETURN(Connection * conn, Controller(cluster));
    protocol::CreatePartitionsRequest req;
    req.topics.push_back({topic, total, std::nullopt});
    req.timeout_ms = cluster->options().request_timeout_ms;
    protocol::CreatePartitionsResponse resp;
    SILT_TRY(CallAt(cluster, conn, req, &resp, retry));
    for (const auto& r : resp.results) {
      if (r.error_code == 0) continue;
      if (r.error_code == static_cast<int16_t>(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION))
        return Status::NotFound("topic '" + topic + "' does not exist");
      *retry = r.error_code == static_cast<int16_t>(ErrorCode::NOT_CONTROLLER);
      return ErrorStatus(r.error_code, "adding partitions to '" + topic + "'", r.error_message);
    }
    return Status::OK();
  });
}

Result<std::vector<ConfigEntry>> DescribeTopicConfigs(Cluster* cluster, const std::string& topic) {
  std::vector<ConfigEntry> out;
  Status st = Retrying(cluster, [&](bool* retry) -> Status {
    SILT_ASSIGN_OR_RETURN(Connection * conn, cluster->Any());
    protocol::DescribeConfigsRequest req;
    req.resources.push_back({protocol::kConfigResourceTopic, topic, std::nullopt});
    protocol::DescribeConfigsResponse resp;
    SILT_TRY(CallAt(cluster, conn, req, &resp, retry));
    out.clear();
    for (const auto& r : resp.results) {
      if (r.error_code != 0) {
        if (r.error_code == static_cast<int16_t>(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION))
          return Status::NotFound("topic '" + topic + "' does not exist");
        *retry = IsRetriableError(r.error_code);
        return ErrorStatus(r.error_code, "describing the configs of '" + topic + "'",
                           r.error_message);
      }
      for (const auto& c : r.configs) {
        ConfigEntry e;
        e.name = c.name;
        e.value = c.value;
        // v0 has is_default; v1+ say where the value comes from (5 = DEFAULT_CONFIG).
        e.is_default = c.is_default || c.config_source == 5;
        e.read_only = c.read_only;
        e.sensitive = c.is_sensitive;
        out.push_back(std::move(e));
      }
    }
    return Status::OK();
  });
  if (!st.ok()) return st;
  return out;
}

Status AlterTopicConfigs(Cluster* cluster, const std::string& topic,
                         const std::map<std::string, std::string>& set,
                         const std::vector<std::string>& remove) {
  return Retrying(cluster, [&](bool* retry) -> Status {
    SILT_ASSIGN_OR_RETURN(Connection * conn, cluster->Any());
    protocol::IncrementalAlterConfigsRequest req;
    protocol::IncrementalAlterConfigsRequest::Resource res;
    res.resource_type = protocol::kConfigResourceTopic;
    res.resource_name = topic;
    using Op = protocol::IncrementalAlterConfigsRequest;
    for (const auto& [k, v] : set) res.configs.push_back({k, Op::kSet, v});
    for (const auto& k : remove) res.configs.push_back({k, Op::kDelete, std::nullopt});
    req.resources.push_back(res);
    protocol::IncrementalAlterConfigsResponse resp;
    SILT_TRY(CallAt(cluster, conn, req, &resp, retry));
    for (const auto& r : resp.responses) {
      if (r.error_code == 0) continue;
      if (r.error_code == static_cast<int16_t>(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION))
        return Status::NotFound("topic '" + topic + "' does not exist");
      *retry = IsRetriableError(r.error_code);
      return ErrorStatus(r.error_code, "altering the configs of '" + topic + "'",
                         r.error_message);
    }
    return Status::OK();
  });
}

Result<std::vector<GroupListing>> ListGroups(Cluster* cluster) {
  SILT_TRY(cluster->FetchMetadata(std::vector<std::string>{}, false).status());
  std::map<std::string, GroupListing> all;
  std::vector<int32_t> nodes;
  for (const auto& [id, hp] : cluster->brokers()) nodes.push_back(id);
  for (int32_t id : nodes) {
    Status st = Retrying(cluster, [&](bool* retry) -> Status {
      SILT_ASSIGN_OR_RETURN(Connection * conn, cluster->Node(id));
      protocol::ListGroupsRequest req;
      protocol::ListGroupsResponse resp;
      SILT_TRY(CallAt(cluster, conn, req, &resp, retry));
      if (resp.error_code != 0) {
        *retry = IsRetriableError(resp.error_code);
        return ErrorStatus(resp.error_code, "listing groups");
      }
      for (const auto& g : resp.groups) all[g.group_id] = {g.group_id, g.protocol_type};
      return Status::OK();
    });
    if (!st.ok()) return st;
  }
  std::vector<GroupListing> out;
  for (auto& [id, g] : all) out.push_back(std::move(g));
  return out;
}

Result<GroupDescription> DescribeGroup(Cluster* cluster, const std::string& group) {
  GroupDescription out;
  Status st = Retrying(cluster, [&](bool* retry) -> Status {
    auto conn = cluster->Coordinator(group);
    if (!conn.ok()) return conn.status();
    protocol::DescribeGroupsRequest req;
    req.groups.push_back(group);
    protocol::DescribeGroupsResponse resp;
    Status st = CallAt(cluster, *conn, req, &resp, retry);
    if (!st.ok()) {
      cluster->ForgetCoordinator(group);
      return st;
    }
    for (const auto& g : resp.groups) {
      if (g.error_code != 0) {
        *retry = IsRetriableError(g.error_code);
        if (g.error_code == static_cast<int16_t>(ErrorCode::NOT_COORDINATOR))
          cluster->ForgetCoordinator(group);
        return ErrorStatus(g.error_code, "describing group '" + group + "'");
      }
      out = GroupDescription{};
      out.group_id = g.group_id;
      out.state = g.group_state;
      out.protocol_type = g.protocol_type;
      out.protocol = g.protocol_data;
      for (const auto& m : g.members) {
        GroupMember gm;
        gm.member_id = m.member_id;
        gm.group_instance_id = m.group_instance_id;
        gm.client_id = m.client_id;
        gm.client_host = m.client_host;
        if (g.protocol_type == "consumer") {
          auto a = Assignment::Decode(m.member_assignment);
          if (a.ok()) gm.assignment = a->partitions;
        }
        out.members.push_back(std::move(gm));
      }
    }
    return Status::OK();
  });
  if (!st.ok()) return st;
  return out;
}

Result<std::map<std::string, std::map<int32_t, int64_t>>> FetchCommitted(
    Cluster* cluster, const std::string& group,
    const std::optional<std::vector<std::string>>& topics) {
  std::map<std::string, std::map<int32_t, int64_t>> out;
  Status st = Retrying(cluster, [&](bool* retry) -> Status {
    auto conn = cluster->Coordinator(group);
    if (!conn.ok()) return conn.status();
    auto version = (*conn)->RequireVersion(protocol::ApiKey::kOffsetFetch);
    if (!version.ok()) return version.status();
    protocol::OffsetFetchRequest req;
    req.group_id = group;
    if (topics) {
      // Every partition of the named topics.
      req.topics.emplace();
      for (const auto& t : *topics) {
        auto meta = cluster->Topic(t, false);
        if (!meta.ok()) return meta.status();
        protocol::OffsetFetchRequest::Topic rt;
        rt.name = t;
        for (const auto& p : meta->partitions) rt.partition_indexes.push_back(p.partition);
        req.topics->push_back(rt);
      }
    } else if (*version < 2) {
      return Status::Unsupported("the broker cannot list a group's committed offsets "
                                 "(OffsetFetch v2+ needed)");
    }
    protocol::OffsetFetchResponse resp;
    Status st = (*conn)->Call(req, &resp, *version);
    if (!st.ok()) {
      if (NetworkError(st)) {
        cluster->Drop(*conn);
        cluster->ForgetCoordinator(group);
        *retry = true;
      }
      return st;
    }
    if (resp.error_code != 0) {
      *retry = IsRetriableError(resp.error_code);
      if (resp.error_code == static_cast<int16_t>(ErrorCode::NOT_COORDINATOR))
        cluster->ForgetCoordinator(group);
      return ErrorStatus(resp.error_code, "fetching the offsets of group '" + group + "'");
    }
    out.clear();
    for (const auto& t : resp.topics) {
      for (const auto& p : t.partitions) {
        if (p.error_code != 0) {
          if (p.error_code == static_cast<int16_t>(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION))
            continue;
          *retry = IsRetriableError(p.error_code);
          return ErrorStatus(p.error_code, "fetching the offsets of group '" + group + "'");
        }
        if (p.committed_offset >= 0) out[t.name][p.partition_index] = p.committed_offset;
      }
    }
    return Status::OK();
  });
  if (!st.ok()) return st;
  return out;
}

Status CommitOffsetsStandalone(Cluster* cluster, const std::string& group,
                               const std::map<std::string, std::map<int32_t, int64_t>>& offsets) {
  return Retrying(cluster, [&](bool* retry) -> Status {
    auto conn = cluster->Coordinator(group);
    if (!conn.ok()) return conn.status();
    protocol::OffsetCommitRequest req;
    req.group_id = group;
    req.generation_id_or_member_epoch = -1;
    for (const auto& [topic, parts] : offsets) {
      protocol::OffsetCommitRequest::Topic t;
      t.name = topic;
      for (const auto& [p, o] : parts) {
        protocol::OffsetCommitRequest::Partition rp;
        rp.partition_index = p;
        rp.committed_offset = o;
        rp.committed_metadata = "";
        t.partitions.push_back(rp);
      }
      req.topics.push_back(t);
    }
    protocol::OffsetCommitResponse resp;
    Status st = CallAt(cluster, *conn, req, &resp, retry);
    if (!st.ok()) {
      cluster->ForgetCoordinator(group);
      return st;
    }
    for (const auto& t : resp.topics) {
      for (const auto& p : t.partitions) {
        if (p.error_code == 0) continue;
        if (p.error_code == static_cast<int16_t>(ErrorCode::UNKNOWN_MEMBER_ID) ||
            p.error_code == static_cast<int16_t>(ErrorCode::ILLEGAL_GENERATION) ||
            p.error_code == static_cast<int16_t>(ErrorCode::REBALANCE_IN_PROGRESS))
          return Status::Busy("group '" + group +
                              "' has active members; stop its consumers before resetting offsets");
        *retry = IsRetriableError(p.error_code);
        if (p.error_code == static_cast<int16_t>(ErrorCode::NOT_COORDINATOR))
          cluster->ForgetCoordinator(group);
        return ErrorStatus(p.error_code, "committing offsets of group '" + group + "'");
      }
    }
    return Status::OK();
  });
}

Status DeleteGroup(Cluster* cluster, const std::string& group) {
  return Retrying(cluster, [&](bool* retry) -> Status {
    auto conn = cluster->Coordinator(group);
    if (!conn.ok()) return conn.status();
    protocol::DeleteGroupsRequest req;
    req.groups_names.push_back(group);
    protocol::DeleteGroupsResponse resp;
    Status st = CallAt(cluster, *conn, req, &resp, retry);
    if (!st.ok()) {
      cluster->ForgetCoordinator(group);
      return st;
    }
    for (const auto& r : resp.results) {
      if (r.error_code == 0) continue;
      if (r.error_code == static_cast<int16_t>(ErrorCode::GROUP_ID_NOT_FOUND))
        return Status::NotFound("consumer group '" + group + "' does not exist");
      if (r.error_code == static_cast<int16_t>(ErrorCode::NON_EMPTY_GROUP))
        return Status::Busy("consumer group '" + group + "' has active members");
      *retry = IsRetriableError(r.error_code);
      if (r.error_code == static_cast<int16_t>(ErrorCode::NOT_COORDINATOR))
        cluster->ForgetCoordinator(group);
      return ErrorStatus(r.error_code, "deleting group '" + group + "'");
    }
    return Status::OK();
  });
}

Result<ClusterDescription> DescribeCluster(
    Cluster* cluster, const std::optional<std::vector<std::string>>& topics) {
  SILT_ASSIGN_OR_RETURN(protocol::MetadataResponse meta,
                        cluster->FetchMetadata(topics, /*allow_auto_create=*/false));
  ClusterDescription d;
  d.cluster_id = meta.cluster_id;
  d.controller_id = meta.controller_id;
  for (const auto& b : meta.brokers) d.brokers.push_back({b.node_id, b.host, b.port, b.rack});
  std::sort(d.brokers.begin(), d.brokers.end(),
            [](const BrokerInfo& a, const BrokerInfo& b) { return a.node_id < b.node_id; });
  for (const auto& t : meta.topics) {
    if (t.error_code == protocol::ToWire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION))
      return Status::NotFound("topic '" + t.name + "' does not exist");
    TopicInfo ti;
    ti.name = t.name;
    if (!t.topic_id.is_zero()) ti.topic_id = t.topic_id.ToString();
    ti.internal = t.is_internal;
    ti.error_code = t.error_code;
    for (const auto& p : t.partitions)
      ti.partitions.push_back({p.partition_index, p.leader_id, p.leader_epoch, p.error_code,
                               p.replica_nodes, p.isr_nodes, p.offline_replicas});
    std::sort(ti.partitions.begin(), ti.partitions.end(),
              [](const PartitionInfo& a, const PartitionInfo& b) {
                return a.partition < b.partition;
              });
    d.topics.push_back(std::move(ti));
  }
  std::sort(d.topics.begin(), d.topics.end(),
            [](const TopicInfo& a, const TopicInfo& b) { return a.name < b.name; });
  return d;
}

Result<std::optional<QuorumDescription>> DescribeQuorum(Cluster* cluster, int32_t controller_id) {
  std::optional<QuorumDescription> out;
  int32_t target = controller_id;
  Status st = Retrying(cluster, [&](bool* retry) -> Status {
    if (target < 0) {
      SILT_ASSIGN_OR_RETURN(auto meta, cluster->FetchMetadata(std::vector<std::string>{}, false));
      target = meta.controller_id;
    }
    auto conn = target >= 0 ? cluster->Node(target) : cluster->Any();
    if (!conn.ok()) {
      target = -1;
      *retry = true;
      return conn.status();
    }
    if ((*conn)->Version(protocol::ApiKey::kDescribeQuorum) < 0) return Status::OK();
    protocol::DescribeQuorumRequest req;
    req.topics.push_back({protocol::kClusterMetadataTopic, {{0}}});
    protocol::DescribeQuorumResponse resp;
    SILT_TRY(CallAt(cluster, *conn, req, &resp, retry));
    if (resp.error_code != 0) {
      *retry = IsRetriableError(resp.error_code);
      return ErrorStatus(resp.error_code, "describing the metadata quorum");
    }
    for (const auto& t : resp.topics) {
      for (const auto& p : t.partitions) {
        if (p.error_code == static_cast<int16_t>(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION))
          return Status::OK();
        if (p.error_code == static_cast<int16_t>(ErrorCode::NOT_LEADER_OR_FOLLOWER)) {
          // The answer names the leader when the node knows it; else ask Metadata again.
          target = p.leader_id >= 0 && p.leader_id != target ? p.leader_id : -1;
          *retry = true;
          return ErrorStatus(p.error_code, "describing the metadata quorum");
        }
        if (p.error_code != 0) {
          *retry = IsRetriableError(p.error_code);
          return ErrorStatus(p.error_code, "describing the metadata quorum");
        }
        QuorumDescription d;
        d.leader_id = p.leader_id;
        d.leader_epoch = p.leader_epoch;
        d.high_watermark = p.high_watermark;
        auto copy = [](const auto& from, std::vector<QuorumReplica>* to) {
          for (const auto& r : from)
            to->push_back({r.replica_id, r.log_end_offset, r.last_fetch_timestamp,
                           r.last_caught_up_timestamp});
          std::sort(to->begin(), to->end(), [](const QuorumReplica& a, const QuorumReplica& b) {
            return a.replica_id < b.replica_id;
          });
        };
        copy(p.current_voters, &d.voters);
        copy(p.observers, &d.observers);
        out = std::move(d);
        return Status::OK();
      }
    }
    return Status::Corruption("DescribeQuorum answer without the metadata partition");
  });
  if (!st.ok()) return st;
  return out;
}

}  // namespace silt::client

// ---- NetAdmin: the Admin interface over the functions above ----------------------------------

namespace silt::client {
namespace {

class NetAdmin : public Admin {
 public:
  explicit NetAdmin(std::unique_ptr<Cluster> c) : c_(std::move(c)) {}

  Result<std::vector<TopicListing>> ListTopics() override {
    SILT_ASSIGN_OR_RETURN(protocol::MetadataResponse meta, c_->FetchMetadata(std::nullopt, false));
    std::vector<TopicListing> out;
    for (const auto& t : meta.topics) {
      if (t.error_code != 0) continue;
      out.push_back({t.name, static_cast<int32_t>(t.partitions.size()), t.is_internal});
    }
    std::sort(out.begin(), out.end(),
              [](const TopicListing& a, const TopicListing& b) { return a.name < b.name; });
    return out;
  }

  Result<TopicDescription> DescribeTopic(const std::string& topic) override {
    SILT_ASSIGN_OR_RETURN(TopicMeta meta, c_->Topic(topic, false));
    std::map<int32_t, int64_t> earliest_q, latest_q;
    for (const auto& p : meta.partitions) {
      earliest_q[p.partition] = -2;
      latest_q[p.partition] = -1;
    }
    SILT_ASSIGN_OR_RETURN(auto starts, client::ListOffsets(c_.get(), topic, earliest_q));
    SILT_ASSIGN_OR_RETURN(auto ends, client::ListOffsets(c_.get(), topic, latest_q));
    TopicDescription d;
    d.name = topic;
    d.topic_id = meta.topic_id;
    d.internal = meta.internal;
    d.partition_count = static_cast<int32_t>(meta.partitions.size());
    for (const auto& p : meta.partitions) {
      PartitionDescription pd;
      pd.partition = p.partition;
      pd.leader = p.leader;
      pd.replicas = p.replicas;
      pd.isr = p.isr;
      pd.offline_replicas = p.offline_replicas;
      pd.log_start_offset = starts[p.partition];
      pd.log_end_offset = ends[p.partition];
      d.partitions.push_back(std::move(pd));
    }
    // Configs are best effort: an old broker may not answer DescribeConfigs.
    auto configs = DescribeTopicConfigs(c_.get(), topic);
    if (configs.ok()) {
      for (const auto& e : *configs) {
        std::string v = e.sensitive ? "(sensitive)" : e.value.value_or("");
        d.effective_configs[e.name] = v;
        if (!e.is_default) d.configs[e.name] = v;
      }
    }
    return d;
  }

  Status CreateTopic(const TopicSpec& spec) override { return client::CreateTopic(c_.get(), spec); }
  Status DeleteTopic(const std::string& topic) override {
    return client::DeleteTopic(c_.get(), topic);
  }
  Status CreatePartitions(const std::string& topic, int32_t total) override {
    return client::CreatePartitions(c_.get(), topic, total);
  }
  Status AlterTopicConfigs(const std::string& topic, const std::map<std::string, std::string>& set,
                           const std::vector<std::string>& remove) override {
    return client::AlterTopicConfigs(c_.get(), topic, set, remove);
  }
  Result<std::map<int32_t, int64_t>> ListOffsets(
      const std::string& topic, const std::map<int32_t, int64_t>& timestamps) override {
    return client::ListOffsets(c_.get(), topic, timestamps);
  }
  Result<std::vector<GroupListing>> ListGroups() override { return client::ListGroups(c_.get()); }
  Result<GroupDescription> DescribeGroup(const std::string& group) override {
    return client::DescribeGroup(c_.get(), group);
  }
  Result<CommittedOffsets> FetchCommitted(
      const std::string& group, const std::optional<std::vector<std::string>>& topics) override {
    return client::FetchCommitted(c_.get(), group, topics);
  }
  Status CommitOffsets(const std::string& group, const CommittedOffsets& offsets) override {
    return CommitOffsetsStandalone(c_.get(), group, offsets);
  }
  Status DeleteGroup(const std::string& group) override {
    return client::DeleteGroup(c_.get(), group);
  }

 private:
  std::unique_ptr<Cluster> c_;
};

}  // namespace

std::unique_ptr<Admin> NewNetAdmin(std::unique_ptr<Cluster> cluster) {
  return std::make_unique<NetAdmin>(std::move(cluster));
}

}  // namespace silt::client
