// server.properties parsing.
#include "broker/config.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "base/file.h"

namespace silt::broker {
namespace {

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) --e;
  return std::string(s.substr(b, e - b));
}

template <typename T>
Status ParseInt(const std::string& key, const std::string& value, T min, T max, T* out) {
  T v{};
  auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || p != value.data() + value.size() || v < min || v > max) {
    return Status::InvalidArgument(key + ": expected an integer in [" + std::to_string(min) +
                                   ", " + std::to_string(max) + "], got '" + value + "'");
  }
  *out = v;
  return Status::OK();
}

Status ParseBool(const std::string& key, const std::string& value, bool* out) {
  if (value == "true") *out = true;
  else if (value == "false") *out = false;
  else return Status::InvalidArgument(key + ": expected true or false, got '" + value + "'");
  return Status::OK();
}

// log.* keys that map directly onto a topic config (Kafka's "synonyms").
struct Synonym {
  const char* broker_key;
  const char* topic_key;
  int64_t multiplier;  // applied to integer values (minutes/hours to ms)
};
const Synonym kSynonyms[] = {
    {"log.segment.bytes", "segment.bytes", 1},
    {"log.roll.ms", "segment.ms", 1},
    {"log.roll.hours", "segment.ms", 3600LL * 1000},
    {"log.retention.ms", "retention.ms", 1},
    {"log.retention.minutes", "retention.ms", 60LL * 1000},
    {"log.retention.hours", "retention.ms", 3600LL * 1000},
    {"log.retention.bytes", "retention.bytes", 1},
    {"log.flush.interval.messages", "flush.messages", 1},
    {"log.flush.interval.ms", "flush.ms", 1},
    {"log.index.interval.bytes", "index.interval.bytes", 1},
    {"log.index.size.max.bytes", "segment.index.bytes", 1},
    {"log.message.timestamp.type", "message.timestamp.type", 0},
    {"log.cleanup.policy", "cleanup.policy", 0},
    {"log.cleaner.delete.retention.ms", "delete.retention.ms", 1},
    {"compression.type", "compression.type", 0},
    {"min.insync.replicas", "min.insync.replicas", 0},
};

// Keys of a stock Kafka server.properties that have no meaning for a single silt node.
const char* kIgnored[] = {
    "num.recovery.threads.per.data.dir", "socket.send.buffer.bytes",
    "socket.receive.buffer.bytes",
    "transaction.state.log.replication.factor", "transaction.state.log.min.isr",
    "zookeeper.connect", "zookeeper.connection.timeout.ms",
    "process.roles", "controller.quorum.voters",
    "controller.listener.names", "inter.broker.listener.name", "listener.security.protocol.map",
    "num.replica.fetchers",
    "controller.quorum.bootstrap.servers",
};

}  // namespace

Status ParseHostPort(const std::string& text, std::string* host, int* port) {
  std::string t = Trim(text);
  size_t comma = t.find(',');
  if (comma != std::string::npos) t = Trim(t.substr(0, comma));
  size_t scheme = t.find("://");
  if (scheme != std::string::npos) {
    std::string proto = t.substr(0, scheme);
    if (proto != "PLAINTEXT") {
      return Status::InvalidArgument("listener '" + t + "': only PLAINTEXT listeners are supported");
    }
    t = t.substr(scheme + 3);
  }
  std::string h;
  std::string p;
  if (!t.empty() && t[0] == '[') {
    size_t close = t.find(']');
    if (close == std::string::npos || close + 1 >= t.size() || t[close + 1] != ':') {
      return Status::InvalidArgument("'" + text + "': expected [ADDRESS]:PORT");
    }
    h = t.substr(1, close - 1);
    p = t.substr(close + 2);
  } else {
    size_t colon = t.rfind(':');
    if (colon == std::string::npos) {
      return Status::InvalidArgument("'" + text + "': expected HOST:PORT");
    }
    h = t.substr(0, colon);
    p = t.substr(colon + 1);
  }
  int v = 0;
  SILT_TRY(ParseInt<int>("port of '" + text + "'", p, 0, 65535, &v));
  *host = h.empty() ? "0.0.0.0" : h;
  *port = v;
  return Status::OK();
}

Status ApplyServerProperty(BrokerConfig* c, const std::string& key, const std::string& value) {
  if (key == "listeners") return ParseHostPort(value, &c->listen_host, &c->listen_port);
  if (key == "advertised.listeners") {
    return ParseHostPort(value, &c->advertised_host, &c->advertised_port);
  }
  if (key == "log.dirs" || key == "log.dir") {
    if (value.find(',') != std::string::npos)
      return Status::InvalidArgument(key + "=" + value + ": silt keeps one data directory per "
                                     "broker; give one directory, not a list");
    if (Trim(value).empty()) return Status::InvalidArgument(key + ": empty");
    c->data_dir = Trim(value);
    return Status::OK();
  }
  if (key == "node.id" || key == "broker.id") {
    return ParseInt<int32_t>(key, value, 0, INT32_MAX, &c->node_id);
  }
  if (key == "metrics.listener") {
    if (value.empty()) {
      c->metrics_host.clear();
      c->metrics_port = -1;
      return Status::OK();
    }
    return ParseHostPort(value, &c->metrics_host, &c->metrics_port);
  }
  if (key == "controller.quorum.voters") {
    c->quorum_voters = value;
    return Status::OK();
  }
  if (key == "broker.heartbeat.interval.ms") {
    return ParseInt<int32_t>(key, value, 10, INT32_MAX, &c->broker_heartbeat_interval_ms);
  }
  if (key == "broker.session.timeout.ms") {
    return ParseInt<int32_t>(key, value, 100, INT32_MAX, &c->broker_session_timeout_ms);
  }
  if (key == "max.incremental.fetch.session.cache.slots") {
    return ParseInt<int32_t>(key, value, 0, 1000000, &c->max_incremental_fetch_session_cache_slots);
  }
  if (key == "replica.lag.time.max.ms") {
    return ParseInt<int32_t>(key, value, 100, INT32_MAX, &c->replica_lag_time_max_ms);
  }
  if (key == "replica.fetch.max.bytes") {
    return ParseInt<int32_t>(key, value, 1, INT32_MAX, &c->replica_fetch_max_bytes);
  }
  if (key == "replica.fetch.wait.max.ms") {
    return ParseInt<int32_t>(key, value, 0, INT32_MAX, &c->replica_fetch_wait_max_ms);
  }
  if (key == "replica.fetch.backoff.ms") {
    return ParseInt<int32_t>(key, value, 0, INT32_MAX, &c->replica_fetch_backoff_ms);
  }
  if (key == "default.replication.factor") {
    return ParseInt<int32_t>(key, value, 1, 32767, &c->default_replication_factor);
  }
  if (key == "offsets.topic.replication.factor") {
    return ParseInt<int32_t>(key, value, -1, 32767, &c->offsets_topic_replication_factor);
  }
  if (key == "unclean.leader.election.enable") {
    return ParseBool(key, value, &c->unclean_leader_election_enable);
  }
  if (key == "auto.leader.rebalance.enable") {
    return ParseBool(key, value, &c->auto_leader_rebalance_enable);
  }
  if (key == "leader.imbalance.check.interval.seconds") {
    int64_t seconds = 0;
    SILT_TRY(ParseInt<int64_t>(key, value, 1, INT64_MAX / 1000, &seconds));
    c->leader_imbalance_check_interval_ms = seconds * 1000;
    return Status::OK();
  }
  if (key == "leader.imbalance.per.broker.percentage") {
    return ParseInt<int32_t>(key, value, 0, 100, &c->leader_imbalance_per_broker_percentage);
  }
  if (key == "controlled.shutdown.enable") {
    return ParseBool(key, value, &c->controlled_shutdown_enable);
  }
  if (key == "controlled.shutdown.timeout.ms") {
    return ParseInt<int32_t>(key, value, 0, INT32_MAX, &c->controlled_shutdown_timeout_ms);
  }
  if (key == "cluster.id") {
    c->cluster_id = value;
    return Status::OK();
  }
  if (key == "num.partitions") return ParseInt<int32_t>(key, value, 1, 1000000, &c->num_partitions);
  if (key == "auto.create.topics.enable") return ParseBool(key, value, &c->auto_create_topics);
  if (key == "message.max.bytes") {
    SILT_TRY(ParseInt<int32_t>(key, value, 0, INT32_MAX, &c->message_max_bytes));
    return c->log_defaults.Set("max.message.bytes", value);
  }
  if (key == "socket.request.max.bytes") {
    return ParseInt<int64_t>(key, value, 1, INT32_MAX, &c->socket_request_max_bytes);
  }
  if (key == "max.connections") return ParseInt<int32_t>(key, value, 1, INT32_MAX, &c->max_connections);
  if (key == "log.retention.check.interval.ms") {
    return ParseInt<int64_t>(key, value, 1, INT64_MAX, &c->retention_check_interval_ms);
  }
  if (key == "num.network.threads") return ParseInt<int>(key, value, 1, 64, &c->io_threads);
  if (key == "num.io.threads") return ParseInt<int>(key, value, 1, 256, &c->handler_threads);
  if (key == "max.partitions.per.request") {
    return ParseInt<int32_t>(key, value, 1, 1 << 20, &c->max_partitions_per_request);
  }
  if (key == "queued.max.requests") {
    return ParseInt<int>(key, value, 1, 1000000, &c->queued_max_requests);
  }
  if (key == "offsets.topic.num.partitions") {
    return ParseInt<int32_t>(key, value, 1, 100000, &c->offsets_topic_num_partitions);
  }
  if (key == "offsets.retention.minutes") {
    int64_t minutes = 0;
    SILT_TRY(ParseInt<int64_t>(key, value, 1, INT64_MAX / 60000, &minutes));
    c->offsets_retention_ms = minutes * 60000;
    return Status::OK();
  }
  if (key == "offsets.retention.check.interval.ms") {
    return ParseInt<int64_t>(key, value, 1, INT64_MAX, &c->offsets_retention_check_interval_ms);
  }
  if (key == "offset.metadata.max.bytes") {
    return ParseInt<int32_t>(key, value, 0, INT32_MAX, &c->offset_metadata_max_bytes);
  }
  if (key == "group.min.session.timeout.ms") {
    return ParseInt<int32_t>(key, value, 0, INT32_MAX, &c->group_min_session_timeout_ms);
  }
  if (key == "group.max.session.timeout.ms") {
    return ParseInt<int32_t>(key, value, 0, INT32_MAX, &c->group_max_session_timeout_ms);
  }
  if (key == "log.cleaner.enable") {
    if (value != "true" && value != "false")
      return Status::InvalidArgument("log.cleaner.enable must be true or false, not '" + value + "'");
    c->log_cleaner_enable = value == "true";
    return Status::OK();
  }
  if (key == "log.cleaner.backoff.ms") {
    return ParseInt<int64_t>(key, value, 1, INT64_MAX, &c->log_cleaner_backoff_ms);
  }
  if (key == "group.initial.rebalance.delay.ms") {
    return ParseInt<int32_t>(key, value, 0, INT32_MAX, &c->group_initial_rebalance_delay_ms);
  }
  for (const Synonym& s : kSynonyms) {
    if (key != s.broker_key) continue;
    if (s.multiplier <= 1) return c->log_defaults.Set(s.topic_key, value);
    int64_t v = 0;
    SILT_TRY(ParseInt<int64_t>(key, value, -1, INT64_MAX / s.multiplier, &v));
    return c->log_defaults.Set(s.topic_key, std::to_string(v < 0 ? v : v * s.multiplier));
  }
  for (const char* k : kIgnored) {
    if (key == k) {
      c->ignored_keys.push_back(key);
      return Status::OK();
    }
  }
  return Status::NotFound("unknown broker config '" + key + "'");
}

int32_t OffsetsTopicReplicationFactor(const BrokerConfig& c) {
  if (c.offsets_topic_replication_factor > 0) return c.offsets_topic_replication_factor;
  int32_t voters = 0;
  if (!Trim(c.quorum_voters).empty()) {
    voters = 1;
    for (char ch : c.quorum_voters) voters += ch == ',' ? 1 : 0;
  }
  return std::min<int32_t>(3, std::max<int32_t>(1, voters));
}

std::vector<std::string> KnownServerProperties() {
  // The keys ApplyServerProperty handles itself, in its order; then the synonyms and the
  // ignored keys of stock Kafka files.
  std::vector<std::string> keys = {
      "listeners", "advertised.listeners", "log.dirs", "log.dir", "node.id", "broker.id",
      "cluster.id", "num.partitions", "auto.create.topics.enable", "message.max.bytes",
      "socket.request.max.bytes", "max.connections", "log.retention.check.interval.ms",
      "num.network.threads", "num.io.threads", "queued.max.requests", "max.partitions.per.request",
      "offsets.topic.num.partitions", "offsets.retention.minutes",
      "offsets.retention.check.interval.ms", "offset.metadata.max.bytes",
      "group.min.session.timeout.ms", "group.max.session.timeout.ms", "log.cleaner.enable",
      "log.cleaner.backoff.ms", "group.initial.rebalance.delay.ms", "metrics.listener",
      "broker.heartbeat.interval.ms", "broker.session.timeout.ms",
      "max.incremental.fetch.session.cache.slots",
      "replica.lag.time.max.ms", "replica.fetch.max.bytes", "replica.fetch.wait.max.ms",
      "replica.fetch.backoff.ms",
      "default.replication.factor", "offsets.topic.replication.factor",
      "unclean.leader.election.enable", "auto.leader.rebalance.enable",
      "leader.imbalance.check.interval.seconds", "leader.imbalance.per.broker.percentage",
      "controlled.shutdown.enable", "controlled.shutdown.timeout.ms"};
  for (const Synonym& s : kSynonyms) keys.push_back(s.broker_key);
  for (const char* k : kIgnored) keys.push_back(k);
  return keys;
}

Status LoadServerProperties(const std::string& path, BrokerConfig* config) {
  SILT_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  size_t pos = 0;
  int line_no = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string line = Trim(std::string_view(text).substr(pos, nl - pos));
    pos = nl + 1;
    ++line_no;
    if (line.empty() || line[0] == '#' || line[0] == '!') continue;
    size_t sep = line.find_first_of("=:");
    if (sep == std::string::npos) {
      return Status::InvalidArgument(path + ":" + std::to_string(line_no) +
                                     ": expected key=value");
    }
    std::string key = Trim(line.substr(0, sep));
    Status s = ApplyServerProperty(config, key, Trim(line.substr(sep + 1)));
    if (s.IsNotFound()) {
      // A stock Kafka file carries many keys that mean nothing here: note them, go on.
      config->ignored_keys.push_back(key);
      continue;
    }
    if (!s.ok()) return s.WithContext(path + ":" + std::to_string(line_no));
  }
  return Status::OK();
}

}  // namespace silt::broker
