// Parsing and validation of topic configs, with Kafka's names, types and ranges
// (LogConfig / TopicConfig in Kafka's sources are the reference for the limits).
#include "storage/log_config.h"

#include <charconv>
#include <climits>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string_view>

namespace silt::storage {
namespace {

Status Bad(const std::string& key, const std::string& value, std::string_view expected) {
  return Status::InvalidArgument("invalid value '" + value + "' for config " + key +
                                 ": expected " + std::string(expected));
}

bool ParseInt64(const std::string& s, int64_t* out) {
  std::string_view v = s;
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  if (v.empty()) return false;
  if (v.front() == '+') v.remove_prefix(1);
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), *out);
  return ec == std::errc() && p == v.data() + v.size();
}

// An integer of `key` in [lo, hi].
Status ParseRange(const std::string& key, const std::string& value, int64_t lo, int64_t hi,
                  int64_t* out) {
  int64_t v;
  if (!ParseInt64(value, &v) || v < lo || v > hi) {
    std::string range = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    return Bad(key, value, range);
  }
  *out = v;
  return Status::OK();
}

bool ParseBool(const std::string& v) { return v == "true" || v == "false"; }

// Keys Kafka defines that silt accepts and reports but does not act upon, with a check of
// the value's type and range.
Status CheckPassThrough(const std::string& key, const std::string& value, bool* known) {
  *known = true;
  int64_t n;
  if (key == "segment.jitter.ms" || key == "file.delete.delay.ms" ||
      key == "message.timestamp.difference.max.ms" ||
      key == "message.timestamp.before.max.ms" || key == "message.timestamp.after.max.ms" ||
      key == "local.retention.ms" || key == "local.retention.bytes") {
    int64_t lo = key.rfind("local.", 0) == 0 ? -2 : 0;
    return ParseRange(key, value, lo, INT64_MAX, &n);
  }
  if (key == "max.compaction.lag.ms") return ParseRange(key, value, 1, INT64_MAX, &n);
  // silt's own: the cluster's reassignment throttle (lib/cluster/reassignment.h).
  if (key == "replica.reassignment.throttle.bytes") {
    return ParseRange(key, value, 1, INT64_MAX, &n);
  }
  if (key == "preallocate" || key == "unclean.leader.election.enable" ||
      key == "message.downconversion.enable" || key == "remote.storage.enable") {
    if (!ParseBool(value)) return Bad(key, value, "true or false");
    return Status::OK();
  }
  if (key == "message.format.version") return Status::OK();
  // silt's own: the topic is a mirror written only by `silt replicate` (LogConfig::mirror()).
  if (key == LogConfig::kMirrorKey) {
    if (!ParseBool(value)) return Bad(key, value, "true or false");
    return Status::OK();
  }
  *known = false;
  return Status::OK();
}

const std::set<std::string>& PassThroughKeys() {
  static const std::set<std::string> keys = {
      "segment.jitter.ms", "file.delete.delay.ms", "message.timestamp.difference.max.ms", "message.timestamp.before.max.ms",
      "message.timestamp.after.max.ms", "local.retention.ms", "local.retention.bytes",
      "max.compaction.lag.ms", "preallocate",
      "unclean.leader.election.enable", "message.downconversion.enable", "remote.storage.enable",
      "message.format.version", LogConfig::kMirrorKey, "replica.reassignment.throttle.bytes"};
  return keys;
}

const std::set<std::string>& CoreKeys() {
  static const std::set<std::string> keys = {
      "segment.bytes", "segment.ms", "segment.index.bytes", "index.interval.bytes",
      "retention.ms", "retention.bytes", "flush.messages", "flush.ms", "max.message.bytes",
      "cleanup.policy", "message.timestamp.type", "min.insync.replicas", "delete.retention.ms",
      "compression.type", "min.cleanable.dirty.ratio", "min.compaction.lag.ms"};
  return keys;
}

}  // namespace

Status LogConfig::Set(const std::string& key, const std::string& value) {
  int64_t n = 0;
  if (key == "segment.bytes") {
    // Kafka: at least one legacy record's overhead (14 bytes), at most Int.MaxValue.
    SILT_TRY(ParseRange(key, value, 14, INT32_MAX, &n));
    segment_bytes = n;
  } else if (key == "segment.ms") {
    SILT_TRY(ParseRange(key, value, 1, INT64_MAX, &n));
    segment_ms = n;
  } else if (key == "segment.index.bytes") {
    SILT_TRY(ParseRange(key, value, 4, INT32_MAX, &n));
    segment_index_bytes = static_cast<int32_t>(n);
  } else if (key == "index.interval.bytes") {
    SILT_TRY(ParseRange(key, value, 0, INT32_MAX, &n));
    index_interval_bytes = static_cast<int32_t>(n);
  } else if (key == "retention.ms") {
    SILT_TRY(ParseRange(key, value, -1, INT64_MAX, &n));
    retention_ms = n;
  } else if (key == "retention.bytes") {
    SILT_TRY(ParseRange(key, value, -1, INT64_MAX, &n));
    retention_bytes = n;
  } else if (key == "flush.messages") {
    SILT_TRY(ParseRange(key, value, 1, INT64_MAX, &n));
    flush_messages = n;
  } else if (key == "flush.ms") {
    SILT_TRY(ParseRange(key, value, 0, INT64_MAX, &n));
    flush_ms = n;
  } else if (key == "max.message.bytes") {
    SILT_TRY(ParseRange(key, value, 0, INT32_MAX, &n));
    max_message_bytes = static_cast<int32_t>(n);
  } else if (key == "cleanup.policy") {
    // A comma-separated list of delete and compact, in any order, without repeats.
    std::set<std::string> seen;
    size_t start = 0;
    while (true) {
      size_t comma = value.find(',', start);
      std::string item = value.substr(start, comma == std::string::npos ? std::string::npos
                                                                        : comma - start);
      while (!item.empty() && item.front() == ' ') item.erase(0, 1);
      while (!item.empty() && item.back() == ' ') item.pop_back();
      if ((item != "delete" && item != "compact") || !seen.insert(item).second)
        return Bad(key, value, "delete, compact or \"compact,delete\"");
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    cleanup_policy = seen.size() == 2 ? "compact,delete" : *seen.begin();
  } else if (key == "message.timestamp.type") {
    if (value != "CreateTime" && value != "LogAppendTime")
      return Bad(key, value, "CreateTime or LogAppendTime");
    message_timestamp_type = value;
  } else if (key == "min.insync.replicas") {
    SILT_TRY(ParseRange(key, value, 1, INT32_MAX, &n));
    min_insync_replicas = static_cast<int32_t>(n);
  } else if (key == "delete.retention.ms") {
    SILT_TRY(ParseRange(key, value, 0, INT64_MAX, &n));
    delete_retention_ms = n;
  } else if (key == "compression.type") {
    if (value != "uncompressed" && value != "zstd" && value != "lz4" && value != "snappy" &&
        value != "gzip" && value != "producer")
      return Bad(key, value, "one of uncompressed, zstd, lz4, snappy, gzip, producer");
    compression_type = value;
  } else if (key == "min.cleanable.dirty.ratio") {
    char* end = nullptr;
    double d = std::strtod(value.c_str(), &end);
    if (value.empty() || end != value.c_str() + value.size() || !(d >= 0.0 && d <= 1.0))
      return Bad(key, value, "a number in [0, 1]");
    min_cleanable_dirty_ratio = d;
  } else if (key == "min.compaction.lag.ms") {
    SILT_TRY(ParseRange(key, value, 0, INT64_MAX, &n));
    min_compaction_lag_ms = n;
  } else {
    bool known = false;
    SILT_TRY(CheckPassThrough(key, value, &known));
    if (!known) return Status::InvalidArgument("unknown topic config '" + key + "'");
    other[key] = value;
  }
  return Status::OK();
}

Status LogConfig::Apply(const std::map<std::string, std::string>& overrides) {
  for (const auto& [k, v] : overrides) SILT_TRY(Set(k, v));
  return Status::OK();
}

std::map<std::string, std::string> LogConfig::ToMap() const {
  std::map<std::string, std::string> m = other;
  m["segment.bytes"] = std::to_string(segment_bytes);
  m["segment.ms"] = std::to_string(segment_ms);
  m["segment.index.bytes"] = std::to_string(segment_index_bytes);
  m["index.interval.bytes"] = std::to_string(index_interval_bytes);
  m["retention.ms"] = std::to_string(retention_ms);
  m["retention.bytes"] = std::to_string(retention_bytes);
  m["flush.messages"] = std::to_string(flush_messages);
  m["flush.ms"] = std::to_string(flush_ms);
  m["max.message.bytes"] = std::to_string(max_message_bytes);
  m["cleanup.policy"] = cleanup_policy;
  m["message.timestamp.type"] = message_timestamp_type;
  m["min.insync.replicas"] = std::to_string(min_insync_replicas);
  m["delete.retention.ms"] = std::to_string(delete_retention_ms);
  m["compression.type"] = compression_type;
  {
    std::ostringstream ratio;
    ratio << min_cleanable_dirty_ratio;
    m["min.cleanable.dirty.ratio"] = ratio.str();
  }
  m["min.compaction.lag.ms"] = std::to_string(min_compaction_lag_ms);
  return m;
}

bool LogConfig::IsKnownKey(const std::string& key) {
  return CoreKeys().count(key) != 0 || PassThroughKeys().count(key) != 0;
}

bool LogConfig::IsListKey(const std::string& key) { return key == "cleanup.policy"; }

}  // namespace silt::storage
