// Cluster view: bootstrap, per-broker connections, metadata cache, coordinators.
#include "client/cluster.h"

#include <algorithm>
#include <thread>

#include "base/clock.h"

namespace silt::client {

using protocol::ErrorCode;

bool IsRetriableError(int16_t code) {
  auto c = static_cast<ErrorCode>(code);
  // CORRUPT_MESSAGE is retriable for Kafka, but a batch the broker rejects as malformed will be
  // rejected again: retrying it only delays the error.
  if (c == ErrorCode::CORRUPT_MESSAGE) return false;
  return protocol::IsRetriable(c);
}

Status ErrorStatus(int16_t code, const std::string& context,
                   const std::optional<std::string>& message) {
  std::string m = context + ": " + protocol::ErrorName(code);
  if (message && !message->empty()) m += " (" + *message + ")";
  if (code == static_cast<int16_t>(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION) ||
      code == static_cast<int16_t>(ErrorCode::GROUP_ID_NOT_FOUND))
    return Status::NotFound(m);
  if (code == static_cast<int16_t>(ErrorCode::TOPIC_ALREADY_EXISTS))
    return Status::AlreadyExists(m);
  if (code == static_cast<int16_t>(ErrorCode::MESSAGE_TOO_LARGE) ||
      code == static_cast<int16_t>(ErrorCode::RECORD_LIST_TOO_LARGE))
    return Status::TooLarge(m);
  return Status::IOError(m);
}

Cluster::~Cluster() = default;

Result<std::unique_ptr<Cluster>> Cluster::Connect(const ClusterOptions& options) {
  std::unique_ptr<Cluster> c(new Cluster(options));
  SILT_TRY(c->Any().status());
  return c;
}

Result<Connection*> Cluster::Any() {
  // The bootstrap connection is kept apart from the per-broker ones: those may have pipelined
  // requests outstanding (the producer's), and a metadata call must not read their answers.
  if (bootstrap_ && !bootstrap_->broken()) return bootstrap_.get();
  std::string tried;
  Status last;
  // Bootstrap servers first, then any broker learnt from metadata.
  std::vector<HostPort> candidates = options_.bootstrap;
  for (const auto& [id, hp] : brokers_) candidates.push_back(hp);
  for (size_t i = 0; i < candidates.size(); ++i) {
    const HostPort& hp = candidates[(next_bootstrap_ + i) % candidates.size()];
    auto conn = Connection::Open(hp, options_.client_id, options_.request_timeout_ms);
    if (conn.ok()) {
      next_bootstrap_ = (next_bootstrap_ + i) % candidates.size();
      bootstrap_ = std::move(*conn);
      return bootstrap_.get();
    }
    last = conn.status();
    if (!tried.empty()) tried += ", ";
    tried += hp.ToString();
  }
  if (candidates.size() == 1) return last;
  return Status::IOError("cannot reach any broker (" + tried + "): " + last.message());
}

Result<Connection*> Cluster::Node(int32_t node_id) {
  auto it = nodes_.find(node_id);
  if (it != nodes_.end() && it->second && !it->second->broken()) return it->second.get();
  auto b = brokers_.find(node_id);
  if (b == brokers_.end())
    return Status::IOError("broker " + std::to_string(node_id) + " is not in the metadata");
  SILT_ASSIGN_OR_RETURN(auto conn,
                        Connection::Open(b->second, options_.client_id, options_.request_timeout_ms));
  nodes_[node_id] = std::move(conn);
  return nodes_[node_id].get();
}

void Cluster::Drop(Connection* c) {
  if (c == nullptr) return;
  if (bootstrap_.get() == c) {
    bootstrap_.reset();
    return;
  }
  for (auto it = nodes_.begin(); it != nodes_.end(); ++it) {
    if (it->second.get() == c) {
      nodes_.erase(it);
      return;
    }
  }
}

Result<protocol::MetadataResponse> Cluster::FetchMetadata(
    const std::optional<std::vector<std::string>>& topics, bool allow_auto_create) {
  protocol::MetadataRequest req;
  if (topics) {
    req.topics.emplace();
    for (const auto& t : *topics) req.topics->push_back({.name = t});
  }
  req.allow_auto_topic_creation = allow_auto_create;
  protocol::MetadataResponse resp;
  Status st;
  for (int attempt = 0; attempt < 3; ++attempt) {
    SILT_ASSIGN_OR_RETURN(Connection * conn, Any());
    st = conn->Call(req, &resp);
    if (st.ok()) break;
    Drop(conn);
    if (st.code() != Status::Code::kIOError) return st;
  }
  if (!st.ok()) return st;
  brokers_.clear();
  for (const auto& b : resp.brokers) brokers_[b.node_id] = HostPort{b.host, b.port};
  for (const auto& t : resp.topics) {
    TopicMeta m;
    m.name = t.name;
    if (!t.topic_id.is_zero()) m.topic_id = t.topic_id.ToString();
    m.error_code = t.error_code;
    m.internal = t.is_internal;
    for (const auto& p : t.partitions) {
      PartitionMeta pm;
      pm.partition = p.partition_index;
      pm.leader = p.leader_id;
      pm.leader_epoch = p.leader_epoch;
      pm.error_code = p.error_code;
      pm.replicas = p.replica_nodes;
      pm.isr = p.isr_nodes;
      pm.offline_replicas = p.offline_replicas;
      m.partitions.push_back(std::move(pm));
    }
    std::sort(m.partitions.begin(), m.partitions.end(),
              [](const PartitionMeta& a, const PartitionMeta& b) { return a.partition < b.partition; });
    topics_[t.name] = std::move(m);
  }
  return resp;
}

Result<TopicMeta> Cluster::Topic(const std::string& topic, bool allow_auto_create) {
  const int64_t deadline = MonotonicMs() + options_.retry_timeout_ms;
  int backoff = options_.retry_backoff_ms;
  for (;;) {
    SILT_TRY(FetchMetadata(std::vector<std::string>{topic}, allow_auto_create).status());
    auto it = topics_.find(topic);
    int16_t code = static_cast<int16_t>(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
    if (it != topics_.end()) {
      code = it->second.error_code;
      if (code == 0) {
        bool all_led = !it->second.partitions.empty();
        for (const auto& p : it->second.partitions)
          if (p.leader < 0) all_led = false;
        if (all_led) return it->second;
        code = static_cast<int16_t>(ErrorCode::LEADER_NOT_AVAILABLE);
      }
    }
    // An unknown topic is final when it may not be created; right after a create (or an
    // auto-create) it is retried like a leader election.
    bool unknown = code == static_cast<int16_t>(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
    bool retry = IsRetriableError(code) && (!unknown || allow_auto_create);
    if (!retry || MonotonicMs() >= deadline) {
      if (unknown) return Status::NotFound("topic '" + topic + "' does not exist");
      return ErrorStatus(code, "metadata for topic '" + topic + "'");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff));
    backoff = std::min(backoff * 2, 1000);
  }
}

const TopicMeta* Cluster::Cached(const std::string& topic) const {
  auto it = topics_.find(topic);
  return it == topics_.end() ? nullptr : &it->second;
}

Result<Connection*> Cluster::Coordinator(const std::string& group) {
  auto known = coordinators_.find(group);
  if (known != coordinators_.end()) {
    auto conn = Node(known->second);
    if (conn.ok()) return *conn;
    coordinators_.erase(known);
  }
  const int64_t deadline = MonotonicMs() + options_.retry_timeout_ms;
  int backoff = options_.retry_backoff_ms;
  for (;;) {
    SILT_ASSIGN_OR_RETURN(Connection * any, Any());
    protocol::FindCoordinatorRequest req;
    req.key = group;
    req.key_type = 0;
    protocol::FindCoordinatorResponse resp;
    Status st = any->Call(req, &resp);
    if (!st.ok()) {
      Drop(any);
      if (st.code() != Status::Code::kIOError || MonotonicMs() >= deadline) return st;
    } else if (resp.error_code == 0) {
      brokers_[resp.node_id] = HostPort{resp.host, resp.port};
      coordinators_[group] = resp.node_id;
      return Node(resp.node_id);
    } else if (!IsRetriableError(resp.error_code) || MonotonicMs() >= deadline) {
      return ErrorStatus(resp.error_code, "finding the coordinator of group '" + group + "'",
                         resp.error_message);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff));
    backoff = std::min(backoff * 2, 1000);
  }
}

}  // namespace silt::client
