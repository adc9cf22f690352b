#include "storage/log_config.h"

#include <doctest/doctest.h>

using namespace silt;
using namespace silt::storage;

TEST_CASE("log config accepts Kafka's names within their ranges") {
  LogConfig c;
  CHECK(c.Set("segment.bytes", "1048576").ok());
  CHECK(c.segment_bytes == 1048576);
  CHECK(c.Set("segment.ms", "3600000").ok());
  CHECK(c.Set("segment.index.bytes", "4096").ok());
  CHECK(c.Set("index.interval.bytes", "0").ok());
  CHECK(c.Set("retention.ms", "-1").ok());
  CHECK(c.retention_ms == -1);
  CHECK(c.Set("retention.bytes", "1073741824").ok());
  CHECK(c.Set("flush.messages", "1").ok());
  CHECK(c.Set("flush.ms", "0").ok());
  CHECK(c.Set("max.message.bytes", "2000000").ok());
  CHECK(c.Set("min.insync.replicas", "2").ok());
  CHECK(c.Set("delete.retention.ms", "0").ok());
  CHECK(c.Set("compression.type", "zstd").ok());
  CHECK(c.Set("message.timestamp.type", "LogAppendTime").ok());
  CHECK(c.log_append_time());
  CHECK(c.Set("segment.jitter.ms", "5").ok());
  CHECK(c.Set("preallocate", "true").ok());
  CHECK(c.ToMap().at("segment.bytes") == "1048576");
  CHECK(c.ToMap().at("preallocate") == "true");
  CHECK(c.ToMap().at("retention.ms") == "-1");
}

TEST_CASE("log config rejects bad values naming the key and the accepted range") {
  LogConfig c;
  Status s = c.Set("segment.bytes", "13");
  CHECK(s.code() == Status::Code::kInvalidArgument);
  CHECK(s.message().find("segment.bytes") != std::string::npos);
  CHECK(s.message().find("[14, 2147483647]") != std::string::npos);
  CHECK(!c.Set("segment.bytes", "2147483648").ok());
  CHECK(!c.Set("segment.bytes", "12abc").ok());
  CHECK(!c.Set("segment.bytes", "").ok());
  CHECK(!c.Set("segment.ms", "0").ok());
  CHECK(!c.Set("retention.ms", "-2").ok());
  CHECK(!c.Set("flush.messages", "0").ok());
  CHECK(!c.Set("min.insync.replicas", "0").ok());
  CHECK(!c.Set("message.timestamp.type", "createtime").ok());
  CHECK(!c.Set("compression.type", "brotli").ok());
  CHECK(!c.Set("preallocate", "yes").ok());
  CHECK(!c.Set("min.cleanable.dirty.ratio", "1.5").ok());
  Status unknown = c.Set("segment.byte", "100");
  CHECK(unknown.code() == Status::Code::kInvalidArgument);
  CHECK(unknown.message().find("unknown") != std::string::npos);
  // Nothing changed on failure.
  CHECK(c.segment_bytes == LogConfig{}.segment_bytes);
  CHECK(!LogConfig::IsKnownKey("segment.byte"));
  CHECK(LogConfig::IsKnownKey("cleanup.policy"));
}

TEST_CASE("cleanup.policy is delete, compact, or both in either order") {
  LogConfig c;
  CHECK(c.Set("cleanup.policy", "compact").ok());
  CHECK(c.cleanup_policy == "compact");
  CHECK(c.Set("cleanup.policy", "delete,compact").ok());
  CHECK(c.cleanup_policy == "compact,delete");
  CHECK(c.Set("cleanup.policy", "compact, delete").ok());
  CHECK(c.Set("cleanup.policy", "delete").ok());
  CHECK(c.cleanup_policy == "delete");
  CHECK(!c.Set("cleanup.policy", "").ok());
  CHECK(!c.Set("cleanup.policy", "delete,delete").ok());
  CHECK(!c.Set("cleanup.policy", "compact,,delete").ok());
  CHECK(!c.Set("cleanup.policy", "remove").ok());
}

TEST_CASE("applying overrides stops at the first bad one") {
  LogConfig c;
  Status s = c.Apply({{"retention.ms", "5"}, {"segment.bytes", "x"}});
  CHECK(!s.ok());
  CHECK(c.Apply({{"retention.ms", "5"}, {"segment.bytes", "100"}}).ok());
  CHECK(c.retention_ms == 5);
  CHECK(c.segment_bytes == 100);
}
