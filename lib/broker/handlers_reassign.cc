// ElectLeaders, AlterPartitionReassignments, ListPartitionReassignments; and the single-node
// answers of the MetadataStore's reassignment and election calls (metadata_store.h).
#include <algorithm>
#include <set>
#include <string_view>

#include "broker/handlers.h"
#include "protocol/messages_reassign.h"

namespace silt::broker {

using protocol::ErrorCode;

std::vector<Status> MetadataStore::AlterPartitionReassignments(
    const std::vector<ReassignmentTarget>& targets) {
  std::vector<Status> out;
  for (const ReassignmentTarget& t : targets) {
    auto topic = GetTopic(t.topic);
    const int32_t p = t.partition.value();
    if (!topic.ok() || p < 0 || p >= static_cast<int32_t>(topic->partitions.size())) {
      out.push_back(Status::NotFound("UNKNOWN_TOPIC_OR_PARTITION: " + t.topic + "-" +
                                     std::to_string(p)));
    } else if (!t.replicas) {
      out.push_back(Status::InvalidArgument("NO_REASSIGNMENT_IN_PROGRESS: " + t.topic + "-" +
                                            std::to_string(p)));
    } else if (*t.replicas != topic->partitions[p].replicas) {
      out.push_back(Status::InvalidArgument(
          "INVALID_REPLICA_ASSIGNMENT: this single node is the partition's only possible replica"));
    } else {
      out.push_back(Status::OK());
    }
  }
  return out;
}

std::vector<Status> MetadataStore::ElectLeaders(bool unclean,
                                                const std::vector<ElectionTarget>& targets,
                                                std::vector<ElectionTarget>* elected) {
  (void)unclean;
  std::vector<Status> out;
  if (targets.empty()) {
    // Every partition already has its only replica as leader: nothing to answer.
    if (elected) elected->clear();
    return out;
  }
  if (elected) *elected = targets;
  for (const ElectionTarget& t : targets) {
    auto topic = GetTopic(t.topic);
    const int32_t p = t.partition.value();
    if (!topic.ok() || p < 0 || p >= static_cast<int32_t>(topic->partitions.size())) {
      out.push_back(Status::NotFound("UNKNOWN_TOPIC_OR_PARTITION: " + t.topic + "-" +
                                     std::to_string(p)));
    } else {
      out.push_back(Status::InvalidArgument("ELECTION_NOT_NEEDED: " + t.topic + "-" +
                                            std::to_string(p) + " is led by its preferred replica"));
    }
  }
  return out;
}

namespace {

// The Kafka error a store's Status stands for: the name its message starts with for the codes
// only these APIs use, else the general mapping.
ErrorCode ErrorOf(const Status& s) {
  if (s.ok()) return ErrorCode::NONE;
  static constexpr std::pair<std::string_view, ErrorCode> kNamed[] = {
      {"INVALID_REPLICA_ASSIGNMENT", ErrorCode::INVALID_REPLICA_ASSIGNMENT},
      {"NO_REASSIGNMENT_IN_PROGRESS", ErrorCode::NO_REASSIGNMENT_IN_PROGRESS},
      {"ELECTION_NOT_NEEDED", ErrorCode::ELECTION_NOT_NEEDED},
      {"PREFERRED_LEADER_NOT_AVAILABLE", ErrorCode::PREFERRED_LEADER_NOT_AVAILABLE},
      {"ELIGIBLE_LEADERS_NOT_AVAILABLE", ErrorCode::ELIGIBLE_LEADERS_NOT_AVAILABLE},
      {"UNKNOWN_TOPIC_OR_PARTITION", ErrorCode::UNKNOWN_TOPIC_OR_PARTITION},
      {"INVALID_UPDATE_VERSION", ErrorCode::INVALID_UPDATE_VERSION},
  };
  const std::string& m = s.message();
  for (const auto& [name, code] : kNamed) {
    if (m.find(name) != std::string::npos) return code;
  }
  if (s.code() == Status::Code::kNotLeader) return ErrorCode::NOT_CONTROLLER;
  return protocol::ErrorCodeFromStatus(s);
}

std::optional<std::string> MessageOf(const Status& s) {
  if (s.ok()) return std::nullopt;
  return s.message();
}

}  // namespace

// ---- ElectLeaders -------------------------------------------------------------------------

Status HandleElectLeaders(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond) {
  protocol::ElectLeadersRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  protocol::ElectLeadersResponse resp;
  if (request.election_type != protocol::kElectPreferred &&
      request.election_type != protocol::kElectUnclean) {
    resp.error_code = Wire(ErrorCode::INVALID_REQUEST);
    respond(EncodeBody(resp, req->api_version));
    return Status::OK();
  }
  std::vector<MetadataStore::ElectionTarget> targets;
  if (request.topic_partitions) {
    for (const auto& t : *request.topic_partitions) {
      for (int32_t p : t.partitions) targets.push_back({t.topic, PartitionId(p)});
    }
  }
  const bool all = !request.topic_partitions.has_value();
  std::vector<MetadataStore::ElectionTarget> answered;
  std::vector<Status> results = ctx.metadata.ElectLeaders(
      request.election_type == protocol::kElectUnclean, targets, &answered);
  if (!all) answered = targets;
  for (size_t i = 0; i < answered.size() && i < results.size(); ++i) {
    auto it = std::find_if(resp.replica_election_results.begin(),
                           resp.replica_election_results.end(),
                           [&](const auto& r) { return r.topic == answered[i].topic; });
    if (it == resp.replica_election_results.end()) {
      resp.replica_election_results.push_back({answered[i].topic, {}});
      it = resp.replica_election_results.end() - 1;
    }
    it->partition_result.push_back(
        {answered[i].partition.value(), Wire(ErrorOf(results[i])), MessageOf(results[i])});
  }
  respond(EncodeBody(resp, req->api_version));
  return Status::OK();
}

// ---- AlterPartitionReassignments ----------------------------------------------------------

Status HandleAlterPartitionReassignments(BrokerContext& ctx, std::shared_ptr<Request> req,
                                         Respond respond) {
  protocol::AlterPartitionReassignmentsRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  std::vector<MetadataStore::ReassignmentTarget> targets;
  for (const auto& t : request.topics) {
    for (const auto& p : t.partitions) {
      MetadataStore::ReassignmentTarget target{t.name, PartitionId(p.partition_index),
                                               std::nullopt};
      if (p.replicas) {
        target.replicas.emplace();
        for (int32_t r : *p.replicas) target.replicas->push_back(NodeId(r));
      }
      targets.push_back(std::move(target));
    }
  }
  std::vector<Status> results = ctx.metadata.AlterPartitionReassignments(targets);
  protocol::AlterPartitionReassignmentsResponse resp;
  size_t i = 0;
  for (const auto& t : request.topics) {
    protocol::AlterPartitionReassignmentsResponse::ReassignableTopicResponse rt;
    rt.name = t.name;
    for (const auto& p : t.partitions) {
      Status s = i < results.size() ? results[i] : Status::Internal("no result");
      ++i;
      rt.partitions.push_back({p.partition_index, Wire(ErrorOf(s)), MessageOf(s)});
    }
    resp.responses.push_back(std::move(rt));
  }
  respond(EncodeBody(resp, req->api_version));
  return Status::OK();
}

// ---- ListPartitionReassignments -----------------------------------------------------------

Status HandleListPartitionReassignments(BrokerContext& ctx, std::shared_ptr<Request> req,
                                        Respond respond) {
  protocol::ListPartitionReassignmentsRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  std::set<std::pair<std::string, int32_t>> wanted;
  if (request.topics) {
    for (const auto& t : *request.topics) {
      for (int32_t p : t.partition_indexes) wanted.insert({t.name, p});
    }
  }
  auto ids = [](const std::vector<NodeId>& v) {
    std::vector<int32_t> out;
    for (NodeId n : v) out.push_back(n.value());
    return out;
  };
  protocol::ListPartitionReassignmentsResponse resp;
  for (const auto& r : ctx.metadata.ListPartitionReassignments()) {
    if (request.topics && !wanted.count({r.topic, r.partition.value()})) continue;
    if (resp.topics.empty() || resp.topics.back().name != r.topic) {
      resp.topics.push_back({r.topic, {}});
    }
    resp.topics.back().partitions.push_back({r.partition.value(), ids(r.replicas),
                                             ids(r.adding_replicas), ids(r.removing_replicas)});
  }
  respond(EncodeBody(resp, req->api_version));
  return Status::OK();
}

}  // namespace silt::broker
