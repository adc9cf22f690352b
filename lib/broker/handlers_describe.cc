// The describe APIs of admin tools: DescribeCluster, DescribeLogDirs, DescribeProducers, and
// OffsetDelete (the group coordinator's work; this decodes, checks topics and encodes).
#include <sys/statvfs.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "broker/group_coordinator.h"
#include "broker/handlers.h"
#include "broker/logging.h"
#include "broker/partition.h"
#include "protocol/messages_describe.h"

namespace silt::broker {

using protocol::ErrorCode;

namespace {

// Kafka's AclOperation codes of the operations a cluster supports (AclEntry's supported
// operations for CLUSTER): with no authorizer every one of them is allowed.
int32_t AllClusterOperations() {
  int32_t bits = 0;
  for (int op : {5 /*CREATE*/, 7 /*ALTER*/, 8 /*DESCRIBE*/, 9 /*CLUSTER_ACTION*/,
                 10 /*DESCRIBE_CONFIGS*/, 11 /*ALTER_CONFIGS*/, 12 /*IDEMPOTENT_WRITE*/}) {
    bits |= 1 << op;
  }
  return bits;
}

// Whether this node holds a replica of `a` (every partition, on a single node).
bool HostedHere(const BrokerContext& ctx, const PartitionAssignment& a) {
  if (a.replicas.empty()) return true;
  return std::find(a.replicas.begin(), a.replicas.end(), ctx.node.node_id) != a.replicas.end();
}

// The partition named, or the wire error for it: UNKNOWN_TOPIC_OR_PARTITION for a topic or
// partition that does not exist, NOT_LEADER_OR_FOLLOWER where another node leads.
std::shared_ptr<Partition> LeaderPartition(BrokerContext& ctx, const std::string& topic,
                                           int32_t partition, int16_t* error) {
  auto meta = ctx.metadata.GetTopic(topic);
  if (!meta.ok() || partition < 0 || partition >= meta->partition_count) {
    *error = Wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
    return nullptr;
  }
  auto p = ctx.partitions.Get(topic, PartitionId(partition));
  if (!p.ok()) {
    *error = Wire(p.status().IsNotFound() ? ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
                                          : protocol::ErrorCodeFromStatus(p.status()));
    return nullptr;
  }
  if (!(*p)->is_leader()) {
    *error = Wire(ErrorCode::NOT_LEADER_OR_FOLLOWER);
    return nullptr;
  }
  *error = 0;
  return *p;
}

}  // namespace

// ---- DescribeCluster --------------------------------------------------------------------

Status HandleDescribeCluster(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond) {
  protocol::DescribeClusterRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  protocol::DescribeClusterResponse resp;
  resp.endpoint_type = request.endpoint_type;
  resp.cluster_id = ctx.node.cluster_id;
  if (request.endpoint_type != protocol::DescribeClusterRequest::kBrokers) {
    // As a Kafka broker answers: controllers are described by a controller's listener.
    resp.error_code = Wire(ErrorCode::UNSUPPORTED_ENDPOINT_TYPE);
    resp.error_message = "The broker does not support endpoint type " +
                         std::to_string(request.endpoint_type);
    respond(EncodeBody(resp, req->api_version));
    return Status::OK();
  }
  resp.controller_id = ctx.metadata.Controller().value_or(ctx.node.node_id).value();
  std::vector<BrokerEndpoint> brokers = ctx.metadata.Brokers();
  if (brokers.empty()) {
    brokers.push_back({ctx.node.node_id, ctx.node.advertised_host, ctx.node.advertised_port});
  }
  for (const BrokerEndpoint& b : brokers) {
    resp.brokers.push_back({b.id.value(), b.host, b.port, std::nullopt});
  }
  if (request.include_cluster_authorized_operations) {
    resp.cluster_authorized_operations = AllClusterOperations();
  }
  respond(EncodeBody(resp, req->api_version));
  return Status::OK();
}

// ---- DescribeLogDirs --------------------------------------------------------------------

Status HandleDescribeLogDirs(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond) {
  protocol::DescribeLogDirsRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  protocol::DescribeLogDirsResponse resp;
  protocol::DescribeLogDirsResponse::Result dir;
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(ctx.config.data_dir, ec);
  dir.log_dir = (ec ? std::filesystem::path(ctx.config.data_dir) : abs).lexically_normal().string();
  if (dir.log_dir.size() > 1 && dir.log_dir.back() == '/') dir.log_dir.pop_back();
  struct statvfs vfs;
  if (::statvfs(ctx.config.data_dir.c_str(), &vfs) == 0) {
    dir.total_bytes = static_cast<int64_t>(vfs.f_blocks) * static_cast<int64_t>(vfs.f_frsize);
    dir.usable_bytes = static_cast<int64_t>(vfs.f_bavail) * static_cast<int64_t>(vfs.f_frsize);
  }
  // Topic -> the partitions asked for (all of the topic's when the request names none).
  std::map<std::string, std::vector<int32_t>> wanted;
  std::vector<TopicMetadata> topics = ctx.metadata.ListTopics();
  if (!request.topics) {
    for (const TopicMetadata& t : topics) {
      auto& ps = wanted[t.name];
      for (int32_t i = 0; i < t.partition_count; ++i) ps.push_back(i);
    }
  } else {
    for (const auto& t : *request.topics) {
      auto& ps = wanted[t.topic];
      ps.insert(ps.end(), t.partitions.begin(), t.partitions.end());
    }
  }
  for (const auto& want : wanted) {
    const std::string& name = want.first;
    const std::vector<int32_t>& ps = want.second;
    auto meta = std::find_if(topics.begin(), topics.end(),
                             [&](const TopicMetadata& t) { return t.name == name; });
    if (meta == topics.end()) continue;  // Kafka leaves out what it does not host
    protocol::DescribeLogDirsResponse::Topic tr;
    tr.name = name;
    std::vector<int32_t> sorted = ps;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    for (int32_t p : sorted) {
      if (p < 0 || p >= meta->partition_count) continue;
      if (p < static_cast<int32_t>(meta->partitions.size()) &&
          !HostedHere(ctx, meta->partitions[p])) {
        continue;
      }
      auto part = ctx.partitions.Get(name, PartitionId(p));
      if (!part.ok()) continue;
      protocol::DescribeLogDirsResponse::Partition pr;
      pr.partition_index = p;
      pr.partition_size = (*part)->size_bytes();
      // Kafka's lag of a current log: how far the high watermark is past the log end (never
      // on a leader, whose high watermark trails its log end); unknown (-1) on a follower.
      pr.offset_lag = (*part)->is_leader()
                          ? std::max<int64_t>((*part)->high_watermark().value() -
                                                  (*part)->log_end_offset().value(),
                                              0)
                          : -1;
      tr.partitions.push_back(pr);
    }
    if (!tr.partitions.empty()) dir.topics.push_back(std::move(tr));
  }
  resp.results.push_back(std::move(dir));
  respond(EncodeBody(resp, req->api_version));
  return Status::OK();
}

// ---- DescribeProducers ------------------------------------------------------------------

Status HandleDescribeProducers(BrokerContext& ctx, std::shared_ptr<Request> req,
                               Respond respond) {
  protocol::DescribeProducersRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  protocol::DescribeProducersResponse resp;
  for (const auto& t : request.topics) {
    protocol::DescribeProducersResponse::Topic tr;
    tr.name = t.name;
    for (int32_t p : t.partition_indexes) {
      protocol::DescribeProducersResponse::Partition pr;
      pr.partition_index = p;
      std::shared_ptr<Partition> part = LeaderPartition(ctx, t.name, p, &pr.error_code);
      if (part != nullptr) {
        for (const Partition::ProducerSummary& s : part->ActiveProducers()) {
          protocol::DescribeProducersResponse::Producer out;
          out.producer_id = s.producer_id.value();
          out.producer_epoch = s.epoch;
          out.last_sequence = s.last_sequence;
          out.last_timestamp = s.last_timestamp;
          out.coordinator_epoch = -1;  // no transactions: no coordinator
          out.current_txn_start_offset = -1;
          pr.active_producers.push_back(out);
        }
      }
      tr.partitions.push_back(std::move(pr));
    }
    resp.topics.push_back(std::move(tr));
  }
  respond(EncodeBody(resp, req->api_version));
  return Status::OK();
}

// ---- OffsetDelete -----------------------------------------------------------------------

Status HandleOffsetDelete(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond) {
  protocol::OffsetDeleteRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  // As Kafka: a partition of a topic that does not exist is refused on its own; the rest go to
  // the coordinator.
  std::vector<std::pair<std::string, int32_t>> known;
  std::vector<std::pair<std::pair<std::string, int32_t>, int16_t>> answers;
  for (const auto& t : request.topics) {
    auto meta = ctx.metadata.GetTopic(t.name);
    for (const auto& p : t.partitions) {
      std::pair<std::string, int32_t> tp{t.name, p.partition_index};
      if (!meta.ok() || p.partition_index < 0 || p.partition_index >= meta->partition_count) {
        answers.push_back({tp, Wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)});
      } else {
        known.push_back(tp);
        answers.push_back({tp, 0});
      }
    }
  }
  std::vector<int16_t> errors;
  int16_t group_error = ctx.groups.DeleteOffsets(request.group_id, known, &errors);
  protocol::OffsetDeleteResponse resp;
  if (group_error != 0) {
    // Kafka's error response: the group's error and no topics.
    resp.error_code = group_error;
    respond(EncodeBody(resp, req->api_version));
    return Status::OK();
  }
  size_t next = 0;
  for (auto& [tp, error] : answers) {
    if (error == 0) error = errors[next++];
    if (resp.topics.empty() || resp.topics.back().name != tp.first) {
      resp.topics.emplace_back();
      resp.topics.back().name = tp.first;
    }
    resp.topics.back().partitions.push_back({tp.second, error});
  }
  respond(EncodeBody(resp, req->api_version));
  return Status::OK();
}

}  // namespace silt::broker
