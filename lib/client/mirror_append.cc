// SiltAppendBatches at the partition leader, with retries. See mirror_append.h.
#include "client/mirror_append.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "base/clock.h"
#include "protocol/errors.h"
#include "protocol/messages.h"

namespace silt::client {

using protocol::ErrorCode;

Result<bool> SupportsMirrorAppend(Cluster* cluster) {
  SILT_ASSIGN_OR_RETURN(Connection * conn, cluster->Any());
  return conn->Version(protocol::ApiKey::kSiltAppendBatches) >= 0;
}

Result<MirrorAppendResult> MirrorAppend(Cluster* cluster, const std::string& topic,
                                        int32_t partition, int64_t expected,
                                        std::string_view batches, int timeout_ms) {
  const int64_t deadline = MonotonicMs() + cluster->options().retry_timeout_ms;
  int backoff = cluster->options().retry_backoff_ms;
  // The cache may predate the topic or its new partitions: then metadata is fetched first.
  bool refresh = true;
  if (const TopicMeta* cached = cluster->Cached(topic)) {
    refresh = std::none_of(cached->partitions.begin(), cached->partitions.end(),
                           [&](const PartitionMeta& m) { return m.partition == partition; });
  }
  bool unknown_outcome = false;
  const std::string where = topic + "-" + std::to_string(partition);
  for (;;) {
    Status failure;
    do {
      if (refresh) {
        auto meta = cluster->Topic(topic, false);
        if (!meta.ok()) {
          failure = meta.status();
          if (failure.IsNotFound()) return failure;
          break;
        }
        refresh = false;
      }
      const TopicMeta* meta = cluster->Cached(topic);
      auto it =
          meta == nullptr
              ? std::vector<PartitionMeta>::const_iterator()
              : std::find_if(meta->partitions.begin(), meta->partitions.end(),
                             [&](const PartitionMeta& m) { return m.partition == partition; });
      if (meta == nullptr || it == meta->partitions.end()) {
        return Status::NotFound("topic '" + topic + "' has no partition " +
                                std::to_string(partition));
      }
      auto conn = cluster->Node(it->leader);
      if (!conn.ok()) {
        failure = conn.status();
        refresh = true;
        break;
      }
      if ((*conn)->Version(protocol::ApiKey::kSiltAppendBatches) < 0) {
        return Status::Unsupported("broker " + (*conn)->address().ToString() +
                                   " does not serve SiltAppendBatches (not a silt broker?)");
      }
      protocol::SiltAppendBatchesRequest req;
      req.topic = topic;
      req.partition = partition;
      req.expected_offset = expected;
      req.timeout_ms = timeout_ms;
      req.records.bytes = batches;
      protocol::SiltAppendBatchesResponse resp;
      // The broker answers within timeout_ms of the append; the margin covers the transfer.
      Status st = (*conn)->Call(req, &resp, 0, std::max(timeout_ms, 0) + (*conn)->timeout_ms());
      if (!st.ok()) {
        if (st.code() != Status::Code::kIOError) return st;
        cluster->Drop(*conn);
        if (!batches.empty()) unknown_outcome = true;
        failure = st.WithContext("SiltAppendBatches to " + where);
        refresh = true;
        break;
      }
      if (resp.error_code == protocol::ToWire(ErrorCode::REQUEST_TIMED_OUT) ||
          (resp.error_code != 0 && IsRetriableError(resp.error_code))) {
        if (resp.error_code == protocol::ToWire(ErrorCode::REQUEST_TIMED_OUT) ||
            resp.error_code == protocol::ToWire(ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND)) {
          unknown_outcome = true;  // in the leader's log, perhaps committed later
        }
        failure = ErrorStatus(resp.error_code, "SiltAppendBatches to " + where, resp.error_message);
        refresh = true;
        break;
      }
      MirrorAppendResult out;
      out.error_code = resp.error_code;
      out.error_message = resp.error_message.value_or("");
      out.log_end_offset = resp.log_end_offset;
      out.high_watermark = resp.high_watermark;
      out.log_start_offset = resp.log_start_offset;
      out.retried_after_unknown = unknown_outcome;
      return out;
    } while (false);
    if (MonotonicMs() >= deadline) return failure;
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff));
    backoff = std::min(backoff * 2, 1000);
  }
}

}  // namespace silt::client
