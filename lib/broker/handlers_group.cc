// FindCoordinator and the group APIs: JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
// OffsetCommit, OffsetFetch, DescribeGroups, ListGroups, DeleteGroups. The work is the GroupCoordinator's;
// these decode, call it and encode.
#include <algorithm>

#include "broker/delayed_operation.h"
#include "broker/group_coordinator.h"
#include "broker/handlers.h"
#include "protocol/consumer_offsets.h"
#include "protocol/messages.h"

namespace silt::broker {

using protocol::ErrorCode;

namespace {

// Kafka shows a member's host as "/address".
std::string ClientHost(const std::string& peer) {
  std::string host = peer;
  size_t colon = host.rfind(':');
  if (colon != std::string::npos) host = host.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return "/" + host;
}

// Kafka's offsets.commit.timeout.ms default: how long a commit waits to be replicated.
constexpr int64_t kOffsetsCommitTimeoutMs = 5000;

// One coordinator lookup's answer (v4's Coordinator; v0-3 carry the same fields at the top).
protocol::FindCoordinatorResponse::Coordinator NoCoordinator(const std::string& key,
                                                             std::string why) {
  protocol::FindCoordinatorResponse::Coordinator c;
  c.key = key;
  c.node_id = -1;
  c.port = -1;
  c.error_code = Wire(ErrorCode::COORDINATOR_NOT_AVAILABLE);
  c.error_message = std::move(why);
  return c;
}

// The coordinator of group `key`. On a single node, this node. In a cluster (the metadata
// store knows a controller), the leader of the group's __consumer_offsets partition:
// COORDINATOR_NOT_AVAILABLE while the topic does not exist (its creation is asked for, as in
// Kafka) or the partition has no leader that clients can reach.
protocol::FindCoordinatorResponse::Coordinator FindGroupCoordinator(BrokerContext& ctx,
                                                                    const std::string& key) {
  // As in Kafka, looking for a group coordinator gets __consumer_offsets created (here in the
  // background, so this answer does not wait for it).
  ctx.groups.PrepareStorageSoon();
  protocol::FindCoordinatorResponse::Coordinator c;
  c.key = key;
  if (!ctx.metadata.Controller().has_value()) {
    c.node_id = ctx.node.node_id.value();
    c.host = ctx.node.advertised_host;
    c.port = ctx.node.advertised_port;
    return c;
  }
  auto topic = ctx.metadata.GetTopic(std::string(protocol::kConsumerOffsetsTopic));
  if (!topic.ok() || topic->partition_count <= 0) {
    return NoCoordinator(key, "__consumer_offsets does not exist yet");
  }
  int32_t p = protocol::OffsetsPartitionFor(key, topic->partition_count);
  if (p >= static_cast<int32_t>(topic->partitions.size())) {
    return NoCoordinator(key, "__consumer_offsets-" + std::to_string(p) + " is not known yet");
  }
  NodeId leader = topic->partitions[p].leader;
  if (leader.value() < 0) {
    return NoCoordinator(key, "__consumer_offsets-" + std::to_string(p) + " has no leader");
  }
  if (leader == ctx.node.node_id) {
    c.node_id = leader.value();
    c.host = ctx.node.advertised_host;
    c.port = ctx.node.advertised_port;
    return c;
  }
  for (const BrokerEndpoint& b : ctx.metadata.Brokers()) {
    if (b.id != leader) continue;
    c.node_id = b.id.value();
    c.host = b.host;
    c.port = b.port;
    return c;
  }
  return NoCoordinator(key, "the leader of __consumer_offsets-" + std::to_string(p) + ", node " +
                                std::to_string(leader.value()) + ", is not available");
}

// An OffsetCommit written to __consumer_offsets but not yet committed there: answered once the
// partition's high watermark passes the batch. Leadership lost meanwhile is NOT_COORDINATOR
// and the timeout COORDINATOR_NOT_AVAILABLE (Kafka's mapping of NOT_LEADER_OR_FOLLOWER and
// REQUEST_TIMED_OUT for offset commits); either way the client retries.
class DelayedCommit : public DelayedOperation {
 public:
  DelayedCommit(BrokerContext& ctx, std::shared_ptr<Request> req, std::string group,
                protocol::OffsetCommitResponse resp, std::shared_ptr<Partition> partition,
                Offset needed, Respond respond)
      : DelayedOperation(req->executor, &ctx.stopping),
        groups_(ctx.groups),
        group_(std::move(group)),
        req_(std::move(req)),
        resp_(std::move(resp)),
        partition_(std::move(partition)),
        needed_(needed),
        respond_(std::move(respond)) {}

  void Start(int64_t timeout_ms) {
    DelayedOperation::Start({partition_}, WatchOffset::kHighWatermark, timeout_ms);
  }

 protected:
  bool TryComplete(bool final) override {
    int16_t error = 0;
    if (!partition_->alive()) {
      error = Wire(ErrorCode::NOT_COORDINATOR);
    } else if (Offset hw = partition_->high_watermark(); hw < needed_) {
      if (!final) return false;
      error = Wire(ErrorCode::COORDINATOR_NOT_AVAILABLE);
    } else {
      // Committed: OffsetFetch may serve it now (and whatever was written before it).
      groups_.PublishCommitted(group_, hw);
    }
    if (error != 0) {
      for (auto& t : resp_.topics) {
        for (auto& p : t.partitions) {
          if (p.error_code == 0) p.error_code = error;
        }
      }
    }
    Respond r = std::move(respond_);
    r(EncodeBody(resp_, req_->api_version));
    return true;
  }
  void OnCompleted() override { partition_.reset(); }

 private:
  GroupCoordinator& groups_;
  const std::string group_;
  std::shared_ptr<Request> req_;
  protocol::OffsetCommitResponse resp_;
  std::shared_ptr<Partition> partition_;
  Offset needed_;
  Respond respond_;
};

}  // namespace

Status HandleFindCoordinator(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond) {
  protocol::FindCoordinatorRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  const int16_t version = req->api_version;
  // v4 batches keys (KIP-699); v0-3 name one.
  std::vector<std::string> keys = version >= 4 ? request.coordinator_keys
                                               : std::vector<std::string>{request.key};
  std::vector<protocol::FindCoordinatorResponse::Coordinator> answers;
  for (const std::string& key : keys) {
    if (request.key_type == 1) {
      // Transactions have no coordinator here.
      answers.push_back(NoCoordinator(key, "transactions are not supported"));
    } else if (request.key_type != 0) {
      // Share groups (2, v6+, KIP-932) or an unknown type: Kafka's answer to a key type it
      // does not serve.
      auto c = NoCoordinator(key, "key type " + std::to_string(request.key_type) +
                                      " is not supported");
      c.error_code = Wire(ErrorCode::INVALID_REQUEST);
      answers.push_back(std::move(c));
    } else {
      answers.push_back(FindGroupCoordinator(ctx, key));
    }
  }
  protocol::FindCoordinatorResponse resp;
  if (version >= 4) {
    resp.coordinators = std::move(answers);
  } else if (!answers.empty()) {
    const auto& a = answers.front();
    resp.error_code = a.error_code;
    resp.error_message = a.error_message;
    resp.node_id = a.node_id;
    resp.host = a.host;
    resp.port = a.port;
  }
  respond(EncodeBody(resp, version));
  return Status::OK();
}

Status HandleJoinGroup(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond) {
  protocol::JoinGroupRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  GroupCoordinator::ClientInfo client{req->client_id, ClientHost(req->peer)};
  int16_t version = req->api_version;
  ctx.groups.JoinGroup(request, version, client,
                       [respond = std::move(respond), version](protocol::JoinGroupResponse r) {
                         respond(EncodeBody(r, version));
                       });
  return Status::OK();
}

Status HandleSyncGroup(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond) {
  protocol::SyncGroupRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  int16_t version = req->api_version;
  ctx.groups.SyncGroup(request, version,
                       [respond = std::move(respond), version](protocol::SyncGroupResponse r) {
                         respond(EncodeBody(r, version));
                       });
  return Status::OK();
}

Status HandleHeartbeat(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond) {
  protocol::HeartbeatRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  respond(EncodeBody(ctx.groups.Heartbeat(request, req->api_version), req->api_version));
  return Status::OK();
}

Status HandleLeaveGroup(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond) {
  protocol::LeaveGroupRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  respond(EncodeBody(ctx.groups.LeaveGroup(request, req->api_version), req->api_version));
  return Status::OK();
}

Status HandleOffsetCommit(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond) {
  protocol::OffsetCommitRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  // As Kafka 3.x: a partition of a topic that does not exist, or past the topic's partition
  // count, is answered UNKNOWN_TOPIC_OR_PARTITION and not committed; the others are.
  protocol::OffsetCommitResponse unknown;
  protocol::OffsetCommitRequest known = request;
  known.topics.clear();
  for (const auto& t : request.topics) {
    auto meta = ctx.metadata.GetTopic(t.name);
    protocol::OffsetCommitRequest::Topic kt = t;
    kt.partitions.clear();
    protocol::OffsetCommitResponse::Topic ut;
    ut.name = t.name;
    for (const auto& p : t.partitions) {
      if (meta.ok() && p.partition_index >= 0 && p.partition_index < meta->partition_count) {
        kt.partitions.push_back(p);
      } else {
        ut.partitions.push_back({p.partition_index, Wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)});
      }
    }
    if (!kt.partitions.empty()) known.topics.push_back(std::move(kt));
    if (!ut.partitions.empty()) unknown.topics.push_back(std::move(ut));
  }
  AppendedAt at;
  protocol::OffsetCommitResponse resp;
  if (!known.topics.empty() || unknown.topics.empty()) {
    resp = ctx.groups.CommitOffsets(known, req->api_version, &at);
  }
  for (auto& t : unknown.topics) resp.topics.push_back(std::move(t));
  std::shared_ptr<Partition> partition;
  if (at.partition >= 0 && at.last_offset >= 0) {
    auto p = ctx.partitions.Get(std::string(protocol::kConsumerOffsetsTopic),
                                PartitionId(at.partition));
    // The append just went through this partition; if it is gone already, the high watermark
    // can no longer be watched and the commit is answered as written.
    if (p.ok()) partition = *p;
  }
  // Answered once committed: on a single node the high watermark is already past the batch.
  if (at.last_offset >= 0 && partition == nullptr) {
    ctx.groups.PublishCommitted(request.group_id, Offset(at.last_offset + 1));
  } else if (partition != nullptr) {
    ctx.groups.PublishCommitted(request.group_id, partition->high_watermark());
  }
  if (partition == nullptr || partition->high_watermark() > Offset(at.last_offset)) {
    respond(EncodeBody(resp, req->api_version));
    return Status::OK();
  }
  auto delayed = std::make_shared<DelayedCommit>(ctx, req, request.group_id, std::move(resp),
                                                 std::move(partition), Offset(at.last_offset + 1),
                                                 std::move(respond));
  delayed->Start(kOffsetsCommitTimeoutMs);
  return Status::OK();
}

// Serves the commits of `group` that its partition's high watermark has passed since they were
// written (a follower that caught up after the commit was answered with a timeout).
void PublishCommittedOf(BrokerContext& ctx, const std::string& group) {
  const std::string topic(protocol::kConsumerOffsetsTopic);
  auto meta = ctx.metadata.GetTopic(topic);
  if (!meta.ok() || meta->partition_count <= 0) return;
  auto p = ctx.partitions.Find(
      topic, PartitionId(protocol::OffsetsPartitionFor(group, meta->partition_count)));
  if (p) ctx.groups.PublishCommitted(group, p->high_watermark());
}

Status HandleOffsetFetch(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond) {
  protocol::OffsetFetchRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  // v0-1 have no null topics: an empty array means "none asked".
  if (req->api_version < 2 && !request.topics) request.topics.emplace();
  if (req->api_version < 8) {
    PublishCommittedOf(ctx, request.group_id);
    respond(EncodeBody(ctx.groups.FetchOffsets(request, req->api_version), req->api_version));
    return Status::OK();
  }
  // v8+ batch groups (KIP-709): each is answered as a v7 request for that group alone.
  protocol::OffsetFetchResponse resp;
  for (const auto& g : request.groups) {
    protocol::OffsetFetchRequest one;
    one.group_id = g.group_id;
    one.require_stable = request.require_stable;
    if (g.topics) {
      one.topics.emplace();
      for (const auto& t : *g.topics) one.topics->push_back({t.name, t.partition_indexes});
    }
    PublishCommittedOf(ctx, g.group_id);
    protocol::OffsetFetchResponse r = ctx.groups.FetchOffsets(one, 7);
    protocol::OffsetFetchResponse::Group gr;
    gr.group_id = g.group_id;
    gr.error_code = r.error_code;
    for (auto& t : r.topics) {
      protocol::OffsetFetchResponse::GroupTopic gt;
      gt.name = std::move(t.name);
      for (auto& p : t.partitions) {
        gt.partitions.push_back({p.partition_index, p.committed_offset, p.committed_leader_epoch,
                                 std::move(p.metadata), p.error_code});
      }
      gr.topics.push_back(std::move(gt));
    }
    resp.groups.push_back(std::move(gr));
  }
  respond(EncodeBody(resp, req->api_version));
  return Status::OK();
}

Status HandleDescribeGroups(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond) {
  protocol::DescribeGroupsRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  respond(EncodeBody(ctx.groups.DescribeGroups(request, req->api_version), req->api_version));
  return Status::OK();
}

Status HandleListGroups(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond) {
  protocol::ListGroupsRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  respond(EncodeBody(ctx.groups.ListGroups(request), req->api_version));
  return Status::OK();
}

Status HandleDeleteGroups(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond) {
  protocol::DeleteGroupsRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  respond(EncodeBody(ctx.groups.DeleteGroups(request), req->api_version));
  return Status::OK();
}

}  // namespace silt::broker
