// libFuzzer target: a request frame as the broker receives it (the bytes after the size prefix).
// ParseRequestFrame reads the header; for an api and version in the api table the body is then
// decoded as that request, and as that response too (the client's side of the same codec).
// Whatever decodes must encode again. Any input may be rejected, none may crash.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/coding.h"
#include "protocol/api_table.h"
#include "protocol/header.h"
#include "protocol/messages.h"
#include "protocol/messages_describe.h"
#include "protocol/messages_reassign.h"

using namespace silt;
using namespace silt::protocol;

namespace {

template <typename T>
void DecodeAs(std::string_view body, int16_t version) {
  T m;
  ByteReader r(body);
  if (!m.Decode(r, version).ok()) return;
  std::string out;
  ByteWriter w(&out);
  m.Encode(w, version);
}

template <typename Request, typename Response>
bool Try(int16_t key, std::string_view body, int16_t version) {
  if (static_cast<int16_t>(Request::kApiKey) != key) return false;
  static_assert(Request::kApiKey == Response::kApiKey);
  DecodeAs<Request>(body, version);
  DecodeAs<Response>(body, version);
  return true;
}

void DecodeBody(int16_t key, std::string_view body, int16_t version) {
  // One pair per row of the api table (checked below: every key must be found).
  bool found =
      Try<ProduceRequest, ProduceResponse>(key, body, version) ||
      Try<FetchRequest, FetchResponse>(key, body, version) ||
      Try<ListOffsetsRequest, ListOffsetsResponse>(key, body, version) ||
      Try<MetadataRequest, MetadataResponse>(key, body, version) ||
      Try<OffsetCommitRequest, OffsetCommitResponse>(key, body, version) ||
      Try<OffsetFetchRequest, OffsetFetchResponse>(key, body, version) ||
      Try<FindCoordinatorRequest, FindCoordinatorResponse>(key, body, version) ||
      Try<JoinGroupRequest, JoinGroupResponse>(key, body, version) ||
      Try<HeartbeatRequest, HeartbeatResponse>(key, body, version) ||
      Try<LeaveGroupRequest, LeaveGroupResponse>(key, body, version) ||
      Try<SyncGroupRequest, SyncGroupResponse>(key, body, version) ||
      Try<DescribeGroupsRequest, DescribeGroupsResponse>(key, body, version) ||
      Try<ListGroupsRequest, ListGroupsResponse>(key, body, version) ||
      Try<ApiVersionsRequest, ApiVersionsResponse>(key, body, version) ||
      Try<CreateTopicsRequest, CreateTopicsResponse>(key, body, version) ||
      Try<DeleteTopicsRequest, DeleteTopicsResponse>(key, body, version) ||
      Try<DeleteRecordsRequest, DeleteRecordsResponse>(key, body, version) ||
      Try<InitProducerIdRequest, InitProducerIdResponse>(key, body, version) ||
      Try<OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse>(key, body, version) ||
      Try<DescribeConfigsRequest, DescribeConfigsResponse>(key, body, version) ||
      Try<AlterConfigsRequest, AlterConfigsResponse>(key, body, version) ||
      Try<CreatePartitionsRequest, CreatePartitionsResponse>(key, body, version) ||
      Try<DeleteGroupsRequest, DeleteGroupsResponse>(key, body, version) ||
      Try<IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse>(key, body, version) ||
      Try<DescribeQuorumRequest, DescribeQuorumResponse>(key, body, version) ||
      Try<SiltAppendBatchesRequest, SiltAppendBatchesResponse>(key, body, version) ||
      Try<ElectLeadersRequest, ElectLeadersResponse>(key, body, version) ||
      Try<AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse>(key, body,
                                                                                 version) ||
      Try<ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse>(key, body,
                                                                               version) ||
      Try<DescribeLogDirsRequest, DescribeLogDirsResponse>(key, body, version) ||
      Try<OffsetDeleteRequest, OffsetDeleteResponse>(key, body, version) ||
      Try<DescribeClusterRequest, DescribeClusterResponse>(key, body, version) ||
      Try<DescribeProducersRequest, DescribeProducersResponse>(key, body, version);
  // A supported api without a decoder here means this target fell behind the api table.
  if (!found) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view frame(reinterpret_cast<const char*>(data), size);
  if (size >= kFrameSizeBytes) (void)ParseFrameSize(frame.substr(0, kFrameSizeBytes));
  auto f = ParseRequestFrame(frame);
  if (!f.ok() || !f->supported) return 0;
  DecodeBody(f->header.request_api_key, f->body, f->header.request_api_version);
  return 0;
}
