// FindCoordinator and the group APIs: JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
// OffsetCommit, OffsetFetch, DescribeGroups, ListGroups, DeleteGroups. The work is the GroupCoordinator's;
// these decode, call it and encode.
#include "broker/group_coordinator.h"
#include "broker/handlers.h"
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

}  // namespace

Status HandleFindCoordinator(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond) {
  protocol::FindCoordinatorRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  protocol::FindCoordinatorResponse resp;
  if (request.key_type != 0) {
    // Transactions (key type 1) have no coordinator here.
    resp.error_code = Wire(ErrorCode::COORDINATOR_NOT_AVAILABLE);
    resp.error_message = "transactions are not supported";
    resp.node_id = -1;
    resp.port = -1;
  } else {
    // As in Kafka, looking for a group coordinator gets __consumer_offsets created (here in
    // the background, so this answer does not wait for it).
    ctx.groups.PrepareStorageSoon();
    resp.node_id = ctx.node.node_id.value();
    resp.host = ctx.node.advertised_host;
    resp.port = ctx.node.advertised_port;
  }
  respond(EncodeBody(resp, req->api_version));
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
  respond(EncodeBody(ctx.groups.CommitOffsets(request, req->api_version), req->api_version));
  return Status::OK();
}

Status HandleOffsetFetch(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond) {
  protocol::OffsetFetchRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  // v0-1 have no null topics: an empty array means "none asked".
  if (req->api_version < 2 && !request.topics) request.topics.emplace();
  respond(EncodeBody(ctx.groups.FetchOffsets(request, req->api_version), req->api_version));
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
  respond(EncodeBody(ctx.groups.ListGroups(), req->api_version));
  return Status::OK();
}

Status HandleDeleteGroups(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond) {
  protocol::DeleteGroupsRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  respond(EncodeBody(ctx.groups.DeleteGroups(request), req->api_version));
  return Status::OK();
}

}  // namespace silt::broker
