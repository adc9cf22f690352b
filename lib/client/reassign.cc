// Partition reassignment and leader elections over the network (reassign.h).
#include "client/reassign.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include "base/clock.h"
#include "protocol/errors.h"
#include "protocol/messages_reassign.h"

namespace silt::client {

using protocol::ErrorCode;

namespace {

// The controller, or any broker when it is unknown; a network failure drops the connection and
// asks for a retry.
template <class Req, class Resp>
Status CallController(Cluster* cluster, const Req& req, Resp* resp, bool* retry) {
  SILT_ASSIGN_OR_RETURN(auto meta, cluster->FetchMetadata(std::vector<std::string>{}, false));
  Result<Connection*> conn = meta.controller_id >= 0 ? cluster->Node(meta.controller_id)
                                                     : cluster->Any();
  if (!conn.ok()) conn = cluster->Any();
  if (!conn.ok()) {
    *retry = true;
    return conn.status();
  }
  if ((*conn)->Version(Req::kApiKey) < 0) {
    return Status::Unsupported(std::string("the broker does not serve ") +
                               protocol::ApiName(static_cast<int16_t>(Req::kApiKey)));
  }
  Status st = (*conn)->Call(req, resp);
  if (!st.ok() && st.code() == Status::Code::kIOError) {
    cluster->Drop(*conn);
    *retry = true;
  }
  return st;
}

}  // namespace

Result<std::vector<PartitionOutcome>> AlterPartitionReassignments(
    Cluster* cluster, const std::vector<PartitionMove>& moves) {
  protocol::AlterPartitionReassignmentsRequest req;
  req.timeout_ms = cluster->options().request_timeout_ms;
  for (const PartitionMove& m : moves) {
    if (req.topics.empty() || req.topics.back().name != m.topic) req.topics.push_back({m.topic, {}});
    req.topics.back().partitions.push_back({m.partition, m.replicas});
  }
  std::vector<PartitionOutcome> out;
  Status st = Retrying(cluster, [&](bool* retry) -> Status {
    protocol::AlterPartitionReassignmentsResponse resp;
    SILT_TRY(CallController(cluster, req, &resp, retry));
    if (resp.error_code != 0) {
      *retry = resp.error_code == static_cast<int16_t>(ErrorCode::NOT_CONTROLLER);
      return ErrorStatus(resp.error_code, "reassigning partitions", resp.error_message);
    }
    out.clear();
    for (const auto& t : resp.responses) {
      for (const auto& p : t.partitions) {
        if (p.error_code == static_cast<int16_t>(ErrorCode::NOT_CONTROLLER)) {
          *retry = true;
          return ErrorStatus(p.error_code, "reassigning partitions", p.error_message);
        }
        out.push_back({t.name, p.partition_index, p.error_code, p.error_message.value_or("")});
      }
    }
    return Status::OK();
  });
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<Reassignment>> ListPartitionReassignments(Cluster* cluster) {
  std::vector<Reassignment> out;
  Status st = Retrying(cluster, [&](bool* retry) -> Status {
    protocol::ListPartitionReassignmentsRequest req;
    req.timeout_ms = cluster->options().request_timeout_ms;
    protocol::ListPartitionReassignmentsResponse resp;
    SILT_TRY(CallController(cluster, req, &resp, retry));
    if (resp.error_code != 0) {
      *retry = protocol::IsRetriable(static_cast<ErrorCode>(resp.error_code));
      return ErrorStatus(resp.error_code, "listing reassignments", resp.error_message);
    }
    out.clear();
    for (const auto& t : resp.topics) {
      for (const auto& p : t.partitions) {
        out.push_back({t.name, p.partition_index, p.replicas, p.adding_replicas,
                       p.removing_replicas});
      }
    }
    return Status::OK();
  });
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<PartitionOutcome>> ElectLeaders(
    Cluster* cluster, bool unclean, const std::vector<std::pair<std::string, int32_t>>& partitions) {
  protocol::ElectLeadersRequest req;
  req.election_type = unclean ? protocol::kElectUnclean : protocol::kElectPreferred;
  req.timeout_ms = cluster->options().request_timeout_ms;
  if (!partitions.empty()) {
    req.topic_partitions.emplace();
    for (const auto& [t, p] : partitions) {
      if (req.topic_partitions->empty() || req.topic_partitions->back().topic != t) {
        req.topic_partitions->push_back({t, {}});
      }
      req.topic_partitions->back().partitions.push_back(p);
    }
  }
  std::vector<PartitionOutcome> out;
  Status st = Retrying(cluster, [&](bool* retry) -> Status {
    protocol::ElectLeadersResponse resp;
    SILT_TRY(CallController(cluster, req, &resp, retry));
    if (resp.error_code != 0) {
      *retry = protocol::IsRetriable(static_cast<ErrorCode>(resp.error_code));
      return ErrorStatus(resp.error_code, "electing leaders");
    }
    out.clear();
    for (const auto& t : resp.replica_election_results) {
      for (const auto& p : t.partition_result) {
        out.push_back({t.topic, p.partition_id, p.error_code, p.error_message.value_or("")});
      }
    }
    return Status::OK();
  });
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<PartitionMove>> GeneratePlan(
    const std::map<std::string, std::map<int32_t, std::vector<int32_t>>>& current,
    const std::vector<int32_t>& brokers) {
  if (brokers.empty()) return Status::InvalidArgument("no brokers to place replicas on");
  std::set<int32_t> unique(brokers.begin(), brokers.end());
  if (unique.size() != brokers.size()) {
    return Status::InvalidArgument("a broker is listed twice");
  }
  std::vector<int32_t> sorted(unique.begin(), unique.end());
  const size_t n = sorted.size();
  std::vector<PartitionMove> out;
  size_t k = 0;
  for (const auto& [topic, parts] : current) {
    for (const auto& [p, replicas] : parts) {
      if (replicas.size() > n) {
        return Status::InvalidArgument(topic + "-" + std::to_string(p) + " has " +
                                       std::to_string(replicas.size()) + " replicas, more than "
                                       "the " + std::to_string(n) + " brokers given");
      }
      std::vector<int32_t> target;
      for (size_t i = 0; i < replicas.size(); ++i) target.push_back(sorted[(k + i) % n]);
      ++k;
      out.push_back({topic, p, target});
    }
  }
  return out;
}

}  // namespace silt::client
