// ApiVersions, Metadata and InitProducerId.
#include "base/topic_name.h"
#include "base/uuid.h"
#include "broker/dispatch.h"
#include "broker/handlers.h"
#include "broker/logging.h"
#include "protocol/consumer_offsets.h"
#include "protocol/messages.h"

namespace silt::broker {

using protocol::ErrorCode;

// ---- ApiVersions ------------------------------------------------------------------------

Status HandleApiVersions(BrokerContext&, std::shared_ptr<Request> req, Respond respond) {
  protocol::ApiVersionsResponse resp;
  for (const ApiRow& row : ApiRows()) {
    resp.api_keys.push_back({row.api_key, row.min_version, row.max_version});
  }
  const ApiRow* self = FindApi(static_cast<int16_t>(protocol::ApiKey::kApiVersions));
  if (req->api_version > self->max_version || req->api_version < self->min_version) {
    // A client newer than us: answer in v0 with UNSUPPORTED_VERSION and our ranges, so it can
    // retry with a version we speak. The body of its request is not decoded.
    resp.error_code = Wire(ErrorCode::UNSUPPORTED_VERSION);
    respond(EncodeBody(resp, 0));
    return Status::OK();
  }
  protocol::ApiVersionsRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  respond(EncodeBody(resp, req->api_version));
  return Status::OK();
}

// ---- Metadata ---------------------------------------------------------------------------

namespace {

protocol::MetadataResponse::Topic DescribeTopic(BrokerContext& ctx, const TopicMetadata& t) {
  protocol::MetadataResponse::Topic out;
  out.name = t.name;
  // Topic ids are kept in base64 (partition.metadata's form); one that does not parse (a
  // hand-edited file) goes out as the zero uuid, Kafka's "no id".
  if (auto id = Uuid::Parse(t.topic_id); id.ok()) out.topic_id = *id;
  out.is_internal = t.internal;
  for (const PartitionAssignment& a : t.partitions) {
    protocol::MetadataResponse::Partition part;
    part.partition_index = a.partition.value();
    part.leader_id = a.leader.value();
    // Cluster mode: a partition whose leader was fenced with no in-sync replica to take over.
    if (a.leader.value() < 0) part.error_code = Wire(ErrorCode::LEADER_NOT_AVAILABLE);
    // A leader here whose lease ran out (cut off from the controller for its session) answers
    // every produce and fetch NOT_LEADER_OR_FOLLOWER: naming itself leader would send clients
    // straight back to it, refresh after refresh, while the rest of the cluster has elected
    // another (a client asking this node keeps its old view). No leader instead: clients ask
    // again, and another broker's answer names the new one. Kafka names itself here.
    if (a.leader == ctx.node.node_id) {
      if (auto p = ctx.partitions.Find(t.name, a.partition);
          p && p->is_leader() && !p->serves_as_leader()) {
        part.leader_id = -1;
        part.error_code = Wire(ErrorCode::LEADER_NOT_AVAILABLE);
      }
    }
    part.leader_epoch = a.leader_epoch.value();
    for (NodeId n : a.replicas) part.replica_nodes.push_back(n.value());
    for (NodeId n : a.isr) part.isr_nodes.push_back(n.value());
    for (NodeId n : a.offline_replicas) part.offline_replicas.push_back(n.value());
    out.partitions.push_back(std::move(part));
  }
  return out;
}

}  // namespace

Status HandleMetadata(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond) {
  protocol::MetadataRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  protocol::MetadataResponse resp;
  std::vector<BrokerEndpoint> brokers = ctx.metadata.Brokers();
  if (brokers.empty()) {
    resp.brokers.push_back({ctx.node.node_id.value(), ctx.node.advertised_host, ctx.node.advertised_port, std::nullopt});
  }
  for (const BrokerEndpoint& b : brokers) {
    resp.brokers.push_back({b.id.value(), b.host, b.port, std::nullopt});
  }
  resp.cluster_id = ctx.node.cluster_id;
  resp.controller_id = ctx.metadata.Controller().value_or(ctx.node.node_id).value();
  bool all = !request.topics.has_value() || (req->api_version == 0 && request.topics->empty());
  if (all) {
    for (const TopicMetadata& t : ctx.metadata.ListTopics())
      resp.topics.push_back(DescribeTopic(ctx, t));
  } else {
    // Before v4 there is no AllowAutoTopicCreation field: the broker setting decides.
    bool allow_auto = req->api_version < 4 || request.allow_auto_topic_creation;
    const bool caught_up = ctx.metadata.CaughtUp();
    for (const auto& want : *request.topics) {
      if (want.name.empty() && !want.topic_id.is_zero()) {
        // v10+: asked for by topic id alone.
        std::optional<TopicMetadata> found;
        std::string id = want.topic_id.ToString();
        for (TopicMetadata& t : ctx.metadata.ListTopics()) {
          if (t.topic_id == id) found = std::move(t);
        }
        if (found) {
          resp.topics.push_back(DescribeTopic(ctx, *found));
        } else {
          protocol::MetadataResponse::Topic t;
          t.topic_id = want.topic_id;
          t.error_code = Wire(ErrorCode::UNKNOWN_TOPIC_ID);
          resp.topics.push_back(std::move(t));
        }
        continue;
      }
      if (!ValidateTopicName(want.name).ok()) {
        protocol::MetadataResponse::Topic t;
        t.name = want.name;
        t.error_code = Wire(ErrorCode::INVALID_TOPIC_EXCEPTION);
        resp.topics.push_back(std::move(t));
        continue;
      }
      // A node still catching up with the metadata log neither denies nor creates a topic its
      // image lacks: it says LEADER_NOT_AVAILABLE, which clients retry without forgetting the
      // topic. (UNKNOWN_TOPIC_OR_PARTITION made librdkafka drop the topic's partitions and then
      // restore its producer state out of step: sequence errors, an epoch bump, and the batches
      // it had in flight written a second time under the new epoch.)
      auto info = ctx.metadata.GetOrCreateTopic(want.name, allow_auto && caught_up);
      if (info.ok()) {
        resp.topics.push_back(DescribeTopic(ctx, *info));
        continue;
      }
      protocol::MetadataResponse::Topic t;
      t.name = want.name;
      // Busy: an auto-creation under way in a cluster (answered at once; the client asks
      // again), LEADER_NOT_AVAILABLE as Kafka answers while it creates the topic.
      t.error_code = info.status().IsNotFound()
                         ? Wire(caught_up ? ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
                                          : ErrorCode::LEADER_NOT_AVAILABLE)
                     : info.status().IsBusy() ? Wire(ErrorCode::LEADER_NOT_AVAILABLE)
                                              : Wire(protocol::ErrorCodeFromStatus(info.status()));
      if (!info.status().IsNotFound() && !info.status().IsBusy()) {
        LogWarn("metadata for topic " + want.name + ": " + info.status().ToString());
      }
      resp.topics.push_back(std::move(t));
    }
  }
  respond(EncodeBody(resp, req->api_version));
  return Status::OK();
}

// ---- InitProducerId ---------------------------------------------------------------------

Status HandleInitProducerId(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond) {
  protocol::InitProducerIdRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  protocol::InitProducerIdResponse resp;
  // v3+ may carry the producer's current id and epoch (KIP-360). Without a transactional id
  // Kafka hands out a new id whatever they are, and so does silt.
  if (request.transactional_id.has_value()) {
    // Transactions are not supported: say so in a way clients treat as fatal, not retriable.
    resp.error_code = Wire(ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
  } else {
    auto pid = ctx.producer_ids.Allocate();
    if (pid.ok()) {
      resp.producer_id = pid->value();
      resp.producer_epoch = 0;
      LogDebug("producer id " + std::to_string(pid->value()) + " for " + req->peer);
    } else if (pid.status().IsBusy()) {
      // Not now (a cluster node whose metadata has not caught up, no controller in reach):
      // Kafka's own answer while its producer-id block is not ready, which clients retry.
      LogWarn("producer id for " + req->peer + " not yet: " + pid.status().ToString());
      resp.error_code = Wire(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS);
    } else {
      LogError("allocating a producer id: " + pid.status().ToString());
      resp.error_code = Wire(protocol::ErrorCodeFromStatus(pid.status()));
    }
  }
  respond(EncodeBody(resp, req->api_version));
  return Status::OK();
}

// ---- DescribeQuorum ---------------------------------------------------------------------

// KIP-595's view of the metadata log (`__cluster_metadata` partition 0), answered by the Raft
// leader only, as Kafka's controllers do: other nodes answer NOT_LEADER_OR_FOLLOWER for the
// partition, and a single node, which has no quorum, UNKNOWN_TOPIC_OR_PARTITION.
Status HandleDescribeQuorum(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond) {
  protocol::DescribeQuorumRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  std::optional<QuorumState> q = ctx.metadata.Quorum();
  protocol::DescribeQuorumResponse resp;
  for (const auto& t : request.topics) {
    protocol::DescribeQuorumResponse::Topic rt;
    rt.topic_name = t.topic_name;
    for (const auto& p : t.partitions) {
      protocol::DescribeQuorumResponse::Partition rp;
      rp.partition_index = p.partition_index;
      if (!q || t.topic_name != protocol::kClusterMetadataTopic || p.partition_index != 0) {
        rp.error_code = Wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
      } else if (!q->is_ready_leader) {
        rp.error_code = Wire(ErrorCode::NOT_LEADER_OR_FOLLOWER);
        rp.leader_id = q->leader ? q->leader->value() : -1;
        rp.leader_epoch = static_cast<int32_t>(q->term);
      } else {
        rp.leader_id = ctx.node.node_id.value();
        rp.leader_epoch = static_cast<int32_t>(q->term);
        rp.high_watermark = q->commit_index;
        for (const QuorumVoterState& v : q->voters)
          rp.current_voters.push_back({.replica_id = v.id.value(), .log_end_offset = v.log_end});
      }
      rt.partitions.push_back(std::move(rp));
    }
    resp.topics.push_back(std::move(rt));
  }
  // v2+ (KIP-853): each voter's endpoint. A silt node serves the controller's requests on its
  // one listener, named PLAINTEXT as in its advertised.listeners.
  if (q && q->is_ready_leader) {
    std::vector<BrokerEndpoint> brokers = ctx.metadata.Brokers();
    for (const QuorumVoterState& v : q->voters) {
      protocol::DescribeQuorumResponse::Node n;
      n.node_id = v.id.value();
      for (const BrokerEndpoint& b : brokers) {
        if (b.id == v.id) {
          n.listeners.push_back({"PLAINTEXT", b.host, static_cast<uint16_t>(b.port)});
        }
      }
      resp.nodes.push_back(std::move(n));
    }
  }
  respond(EncodeBody(resp, req->api_version));
  return Status::OK();
}

}  // namespace silt::broker
