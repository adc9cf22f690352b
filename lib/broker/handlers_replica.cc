// OffsetForLeaderEpoch: where a leader epoch ends in this replica's log, the question a
// follower of a new epoch asks before it truncates (KIP-101, KIP-279), and a consumer after a
// leader change (KIP-320).
#include "broker/handlers.h"
#include "broker/logging.h"
#include "protocol/messages.h"

namespace silt::broker {

using protocol::ErrorCode;

namespace {

// Kafka's DEBUGGING_REPLICA_ID: the default of requests before v3, which may ask any replica.
constexpr int32_t kDebuggingReplicaId = -2;

}  // namespace

Status HandleOffsetForLeaderEpoch(BrokerContext& ctx, std::shared_ptr<Request> req,
                                  Respond respond) {
  protocol::OffsetForLeaderEpochRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  const bool leader_only = request.replica_id != kDebuggingReplicaId;
  protocol::OffsetForLeaderEpochResponse resp;
  for (const auto& t : request.topics) {
    protocol::OffsetForLeaderEpochResponse::Topic tr;
    tr.topic = t.topic;
    for (const auto& p : t.partitions) {
      protocol::OffsetForLeaderEpochResponse::Partition pr;
      pr.partition = p.partition;
      ErrorCode error = ErrorCode::NONE;
      auto part = ctx.partitions.Get(t.topic, PartitionId(p.partition));
      if (!part.ok()) {
        error = part.status().IsNotFound() ? ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
                                           : protocol::ErrorCodeFromStatus(part.status());
      } else {
        // KIP-320 (CurrentLeaderEpoch, v2+), then the role.
        error = (*part)->CheckLeaderEpoch(req->api_version >= 2 ? p.current_leader_epoch : -1,
                                          leader_only);
        if (error == ErrorCode::NONE) {
          auto end = (*part)->EndOffsetForEpoch(LeaderEpoch(p.leader_epoch));
          if (end.ok()) {
            pr.leader_epoch = end->epoch.value();
            pr.end_offset = end->end_offset.value();
          } else if (!(*part)->alive()) {
            error = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION;
          }
          // Otherwise UNDEFINED_EPOCH and UNDEFINED_EPOCH_OFFSET (-1, -1) with no error.
        }
      }
      pr.error_code = Wire(error);
      tr.partitions.push_back(pr);
    }
    resp.topics.push_back(std::move(tr));
  }
  respond(EncodeBody(resp, req->api_version));
  return Status::OK();
}

}  // namespace silt::broker
