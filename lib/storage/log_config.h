// Per-topic storage configuration, under Kafka's config names, with parsing and validation.
// Broker-wide defaults (server.properties' log.* names) are mapped onto these by the broker.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "base/status.h"
#include "format/layout.h"

namespace silt::storage {

struct LogConfig {
  int64_t segment_bytes = format::kDefaultSegmentBytes;            // segment.bytes
  int64_t segment_ms = 7LL * 24 * 3600 * 1000;                     // segment.ms
  int32_t segment_index_bytes = format::kDefaultSegmentIndexBytes;  // segment.index.bytes
  int32_t index_interval_bytes = format::kDefaultIndexIntervalBytes;  // index.interval.bytes
  int64_t retention_ms = 7LL * 24 * 3600 * 1000;                   // retention.ms, -1 = forever
  int64_t retention_bytes = -1;                                    // retention.bytes, -1 = no limit
  int64_t flush_messages = INT64_MAX;                              // flush.messages
  int64_t flush_ms = INT64_MAX;                                    // flush.ms
  int32_t max_message_bytes = format::kDefaultMaxMessageBytes;     // max.message.bytes
  std::string cleanup_policy = "delete";                           // cleanup.policy
  std::string message_timestamp_type = "CreateTime";               // message.timestamp.type
  int32_t min_insync_replicas = 1;                                 // min.insync.replicas
  int64_t delete_retention_ms = 24LL * 3600 * 1000;                // delete.retention.ms
  std::string compression_type = "producer";                       // compression.type
  double min_cleanable_dirty_ratio = 0.5;                          // min.cleanable.dirty.ratio
  int64_t min_compaction_lag_ms = 0;                               // min.compaction.lag.ms
  // Other Kafka topic configs (segment.jitter.ms, preallocate, ...): validated and reported,
  // not acted upon.
  std::map<std::string, std::string> other;

  // silt.mirror=true: a mirror topic, copied into by `silt replicate` with its own offsets
  // (SiltAppendBatches) and refused to ordinary producers until promoted (the key deleted or
  // set to false). Kept in `other`, like Kafka's pass-through keys.
  static constexpr const char* kMirrorKey = "silt.mirror";
  bool mirror() const {
    auto it = other.find(kMirrorKey);
    return it != other.end() && it->second == "true";
  }

  bool log_append_time() const { return message_timestamp_type == "LogAppendTime"; }
  // cleanup.policy includes compact (the log cleaner keeps the latest record of each key).
  bool compact() const { return cleanup_policy.find("compact") != std::string::npos; }
  // cleanup.policy includes delete (retention.ms / retention.bytes remove old segments).
  bool deletes() const { return cleanup_policy.find("delete") != std::string::npos; }

  // Applies `key=value` (a Kafka topic config name); InvalidArgument naming the key and the
  // accepted range for unknown keys or bad values.
  Status Set(const std::string& key, const std::string& value);
  // Applies each entry of `overrides` in turn; stops at the first error.
  Status Apply(const std::map<std::string, std::string>& overrides);
  // Every known key with its current value, as strings (for describe output).
  std::map<std::string, std::string> ToMap() const;
  // True if `key` is a topic config this build understands.
  static bool IsKnownKey(const std::string& key);
  // True if `key` takes a comma-separated list (Kafka's type LIST): cleanup.policy.
  static bool IsListKey(const std::string& key);
};

}  // namespace silt::storage
