// The client side of SiltAppendBatches, silt's own offset-preserving append into a mirror
// topic (protocol/messages.h; the broker side is broker/handlers_mirror.cc): what `silt
// replicate` uses to copy batches into a silt cluster at their own offsets.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "client/cluster.h"

namespace silt::client {

// True when the broker `cluster` talks to for metadata advertises SiltAppendBatches (a silt
// broker; Apache Kafka does not). IOError when no broker answers.
Result<bool> SupportsMirrorAppend(Cluster* cluster);

// A SiltAppendBatches answer.
struct MirrorAppendResult {
  int16_t error_code = 0;  // NONE, SILT_OFFSET_MISMATCH, POLICY_VIOLATION, CORRUPT_MESSAGE...
  std::string error_message;
  int64_t log_end_offset = -1;  // the partition's log end after the call, also on an error
  int64_t high_watermark = -1;
  int64_t log_start_offset = -1;
  // True when an earlier attempt of this call may have appended before its answer was lost
  // (a network error or REQUEST_TIMED_OUT, then a retry): a SILT_OFFSET_MISMATCH may then be
  // this call's own batches, already in the log.
  bool retried_after_unknown = false;
};

// Sends `batches` (whole v2 batches with their offsets; empty: only asks for the log end) to
// the leader of topic-partition with `expected` as the log end the caller believes, waiting up
// to `timeout_ms` for the high watermark to pass them. Retriable errors (leader moves, a
// topic just created, a broken connection, REQUEST_TIMED_OUT) refresh the metadata and retry
// until the cluster's retry time passes; the last retriable failure is then returned as a
// Status. Every other answer, errors included, comes back as a MirrorAppendResult.
// Unsupported when the leader does not serve SiltAppendBatches.
Result<MirrorAppendResult> MirrorAppend(Cluster* cluster, const std::string& topic,
                                        int32_t partition, int64_t expected,
                                        std::string_view batches, int timeout_ms);

}  // namespace silt::client
