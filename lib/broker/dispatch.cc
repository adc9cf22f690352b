// The dispatch table: a handler per api key, joined with protocol/api_table.h's rows.
#include "broker/dispatch.h"

#include <algorithm>

#include "broker/handlers.h"
#include "broker/logging.h"
#include "protocol/api_table.h"
#include "protocol/header.h"

namespace silt::broker {
namespace {

using protocol::ApiKey;

// Where a handler runs: inline on the connection's io thread, or on the request-handler pool
// because it may wait (broker/handler_pool.h).
enum Runs { kInline, kPool };

struct HandlerRow {
  ApiKey key;
  HandlerFn fn;
  Runs runs = kInline;
};

// The APIs this broker answers. An API appears in ApiVersions exactly when it has a row here
// and in the protocol's table; the version range is the protocol's. kPool: admin requests
// (they wait for the metadata quorum in a cluster), InitProducerId (a read barrier), the group
// APIs (the coordinator appends to __consumer_offsets under its lock) and DescribeLogDirs (it
// walks the data dir). Produce and Fetch stay inline: their waits are delayed operations.
const HandlerRow kHandlers[] = {
    {ApiKey::kProduce, HandleProduce},
    {ApiKey::kFetch, HandleFetch},
    {ApiKey::kListOffsets, HandleListOffsets},
    {ApiKey::kOffsetForLeaderEpoch, HandleOffsetForLeaderEpoch},
    {ApiKey::kMetadata, HandleMetadata},
    {ApiKey::kApiVersions, HandleApiVersions},
    {ApiKey::kCreateTopics, HandleCreateTopics, kPool},
    {ApiKey::kDeleteTopics, HandleDeleteTopics, kPool},
    {ApiKey::kDeleteRecords, HandleDeleteRecords, kPool},
    {ApiKey::kInitProducerId, HandleInitProducerId, kPool},
    {ApiKey::kDescribeConfigs, HandleDescribeConfigs},
    {ApiKey::kAlterConfigs, HandleAlterConfigs, kPool},
    {ApiKey::kIncrementalAlterConfigs, HandleIncrementalAlterConfigs, kPool},
    {ApiKey::kCreatePartitions, HandleCreatePartitions, kPool},
    {ApiKey::kFindCoordinator, HandleFindCoordinator},
    {ApiKey::kJoinGroup, HandleJoinGroup, kPool},
    {ApiKey::kSyncGroup, HandleSyncGroup, kPool},
    {ApiKey::kHeartbeat, HandleHeartbeat, kPool},
    {ApiKey::kLeaveGroup, HandleLeaveGroup, kPool},
    {ApiKey::kOffsetCommit, HandleOffsetCommit, kPool},
    {ApiKey::kOffsetFetch, HandleOffsetFetch, kPool},
    {ApiKey::kDescribeGroups, HandleDescribeGroups, kPool},
    {ApiKey::kListGroups, HandleListGroups, kPool},
    {ApiKey::kDeleteGroups, HandleDeleteGroups, kPool},
    {ApiKey::kDescribeQuorum, HandleDescribeQuorum},
    {ApiKey::kSiltAppendBatches, HandleSiltAppendBatches},
    {ApiKey::kElectLeaders, HandleElectLeaders, kPool},
    {ApiKey::kAlterPartitionReassignments, HandleAlterPartitionReassignments, kPool},
    {ApiKey::kListPartitionReassignments, HandleListPartitionReassignments},
    {ApiKey::kDescribeCluster, HandleDescribeCluster},
    {ApiKey::kDescribeLogDirs, HandleDescribeLogDirs, kPool},
    {ApiKey::kDescribeProducers, HandleDescribeProducers},
    {ApiKey::kOffsetDelete, HandleOffsetDelete, kPool},
};

std::vector<ApiRow> BuildRows() {
  std::vector<ApiRow> rows;
  for (const HandlerRow& h : kHandlers) {
    const protocol::ApiInfo* info = protocol::FindApi(h.key);
    if (info == nullptr) continue;
    rows.push_back(ApiRow{static_cast<int16_t>(info->key), info->name, info->min_version,
                          info->max_version, info->first_flexible_version, h.fn,
                          h.runs == kPool});
  }
  std::sort(rows.begin(), rows.end(),
            [](const ApiRow& a, const ApiRow& b) { return a.api_key < b.api_key; });
  return rows;
}

}  // namespace

const std::vector<ApiRow>& ApiRows() {
  static const std::vector<ApiRow> rows = BuildRows();
  return rows;
}

const ApiRow* FindApi(int16_t api_key) {
  // Looked up several times per request: indexed by api key, built once.
  static const std::vector<const ApiRow*> by_key = [] {
    std::vector<const ApiRow*> v;
    for (const ApiRow& r : ApiRows()) {
      if (r.api_key < 0) continue;
      if (static_cast<size_t>(r.api_key) >= v.size()) v.resize(r.api_key + 1, nullptr);
      v[r.api_key] = &r;
    }
    return v;
  }();
  if (api_key < 0 || static_cast<size_t>(api_key) >= by_key.size()) return nullptr;
  return by_key[api_key];
}

Status Dispatcher::ParseHeader(Request* req, bool* flexible_response_header) const {
  auto frame = protocol::ParseRequestFrame(req->frame.view());
  if (!frame.ok()) return frame.status().WithContext("bad request header");
  const protocol::RequestHeader& h = frame->header;
  req->api_key = h.request_api_key;
  req->api_version = h.request_api_version;
  req->correlation_id = h.correlation_id;
  req->client_id = h.client_id.value_or("");
  const ApiRow* row = FindApi(h.request_api_key);
  if (row == nullptr) {
    return Status::InvalidArgument("unknown api key " + std::to_string(h.request_api_key) + " (" +
                                   protocol::ApiName(h.request_api_key) + ")");
  }
  bool supported = h.request_api_version >= row->min_version &&
                   h.request_api_version <= row->max_version;
  if (!supported && h.request_api_key != static_cast<int16_t>(ApiKey::kApiVersions)) {
    return Status::InvalidArgument(std::string("unsupported ") + row->name + " version " +
                                   std::to_string(h.request_api_version) + " (supported " +
                                   std::to_string(row->min_version) + "-" +
                                   std::to_string(row->max_version) + ")");
  }
  req->body_offset = frame->body.empty()
                         ? req->frame.size()
                         : static_cast<size_t>(frame->body.data() - req->frame.data());
  *flexible_response_header =
      protocol::ResponseHeaderVersion(h.request_api_key, h.request_api_version) >= 1;
  return Status::OK();
}

bool Dispatcher::RunsOnPool(int16_t api_key) const {
  const ApiRow* row = FindApi(api_key);
  return row != nullptr && row->pooled;
}

Status Dispatcher::Dispatch(std::shared_ptr<Request> req, Respond respond) const {
  const ApiRow* row = FindApi(req->api_key);
  if (row == nullptr) return Status::Internal("dispatch of an unparsed request");
  if (LogEnabled(LogLevel::kDebug)) {
    LogDebug(std::string(row->name) + " v" + std::to_string(req->api_version) + " correlation " +
             std::to_string(req->correlation_id) + " from " + req->peer + " client '" +
             req->client_id + "'");
  }
  Status s = row->handler(*ctx_, req, std::move(respond));
  if (!s.ok()) {
    return s.WithContext(std::string(row->name) + " v" + std::to_string(req->api_version));
  }
  return s;
}

}  // namespace silt::broker
