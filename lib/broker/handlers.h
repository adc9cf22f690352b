// The request handlers (one function per API) and helpers they share. Internal to lib/broker;
// the table that names them is in dispatch.cc.
#pragma once

#include <memory>
#include <string>

#include "base/coding.h"
#include "base/status.h"
#include "broker/broker_metrics.h"
#include "broker/context.h"
#include "broker/request.h"
#include "protocol/errors.h"

namespace silt::broker {

Status HandleApiVersions(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond);
Status HandleMetadata(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond);
Status HandleProduce(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond);
Status HandleInitProducerId(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond);
Status HandleFetch(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond);
Status HandleListOffsets(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond);
Status HandleOffsetForLeaderEpoch(BrokerContext& ctx, std::shared_ptr<Request> req,
                                  Respond respond);
Status HandleCreateTopics(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond);
Status HandleDeleteTopics(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond);
Status HandleCreatePartitions(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond);
Status HandleDeleteRecords(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond);
Status HandleDescribeConfigs(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond);
Status HandleAlterConfigs(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond);
Status HandleIncrementalAlterConfigs(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond);
Status HandleFindCoordinator(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond);
Status HandleJoinGroup(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond);
Status HandleSyncGroup(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond);
Status HandleHeartbeat(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond);
Status HandleLeaveGroup(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond);
Status HandleOffsetCommit(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond);
Status HandleOffsetFetch(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond);
Status HandleDescribeGroups(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond);
Status HandleListGroups(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond);
Status HandleDeleteGroups(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond);
Status HandleDescribeQuorum(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond);
// silt's own (handlers_mirror.cc).
Status HandleSiltAppendBatches(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond);
Status HandleElectLeaders(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond);
Status HandleAlterPartitionReassignments(BrokerContext& ctx, std::shared_ptr<Request> req,
                                         Respond respond);
Status HandleListPartitionReassignments(BrokerContext& ctx, std::shared_ptr<Request> req,
                                        Respond respond);
Status HandleDescribeCluster(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond);
Status HandleDescribeLogDirs(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond);
Status HandleDescribeProducers(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond);
Status HandleOffsetDelete(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond);

// Decodes req's body as `Msg` at req's version; the whole body must be consumed.
template <typename Msg>
Status DecodeBody(const Request& req, Msg* msg) {
  ByteReader r(req.body());
  Status s = msg->Decode(r, req.api_version);
  if (!s.ok()) return s.WithContext("decoding request body");
  return Status::OK();
}

// Encodes `msg` at `version` as a whole in-memory response body, and counts its error codes
// (silt_request_errors_total).
template <typename Msg>
Response EncodeBody(const Msg& msg, int16_t version) {
  RequestMetrics::Get().OnResponseMessage(msg);
  std::string out;
  ByteWriter w(&out);
  msg.Encode(w, version);
  return Response::FromBytes(std::move(out));
}

inline int16_t Wire(protocol::ErrorCode c) { return protocol::ToWire(c); }

}  // namespace silt::broker
