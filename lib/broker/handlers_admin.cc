// CreateTopics, DeleteTopics, CreatePartitions, DeleteRecords, DescribeConfigs.
#include <set>

#include "base/topic_name.h"
#include "broker/dynamic_config.h"
#include "broker/handlers.h"
#include "broker/logging.h"
#include "protocol/messages.h"

namespace silt::broker {

using protocol::ErrorCode;

namespace {

// Checks topic config overrides without applying them. On failure *why names the key.
bool ValidConfigs(const std::map<std::string, std::string>& configs, std::string* why) {
  storage::LogConfig probe;
  for (const auto& [k, v] : configs) {
    if (!storage::LogConfig::IsKnownKey(k)) {
      *why = "unknown topic config '" + k + "'";
      return false;
    }
    Status s = probe.Set(k, v);
    if (!s.ok()) {
      *why = s.message();
      return false;
    }
  }
  return true;
}

// Kafka's checks of a manual replica assignment (one partition's replicas): not empty, the
// same count as the first partition's (`*factor`, set by the first call), no broker twice,
// every broker registered (Brokers(); on a single node, this node alone). "" when it is good.
std::string CheckAssignment(const std::vector<int32_t>& brokers, const std::set<int32_t>& known,
                            int32_t* factor) {
  if (brokers.empty()) return "a partition must have at least one replica";
  if (*factor < 0) *factor = static_cast<int32_t>(brokers.size());
  if (static_cast<int32_t>(brokers.size()) != *factor) {
    return std::to_string(brokers.size()) + " replicas, where every partition has " +
           std::to_string(*factor);
  }
  std::set<int32_t> seen;
  for (int32_t b : brokers) {
    if (!seen.insert(b).second) return "broker " + std::to_string(b) + " appears twice";
    if (known.count(b) == 0) {
      return "the assignment includes broker " + std::to_string(b) +
             ", but no such broker is registered";
    }
  }
  return "";
}

std::set<int32_t> KnownBrokers(BrokerContext& ctx) {
  std::set<int32_t> known;
  for (const auto& b : ctx.metadata.Brokers()) known.insert(b.id.value());
  if (known.empty()) known.insert(ctx.node.node_id.value());
  return known;
}

// DescribeConfigs ConfigSource values.
constexpr int8_t kSourceDynamicTopic = 1;
constexpr int8_t kSourceDynamicBroker = 2;
constexpr int8_t kSourceDynamicDefaultBroker = 3;
constexpr int8_t kSourceStaticBroker = 4;
constexpr int8_t kSourceDefault = 5;

// CreateTopics v5+ (KIP-525): what a created (or validated) topic ended up with: its partition
// count, replication factor and every topic config with its source; v7+ its id.
void DescribeCreated(BrokerContext& ctx, const std::string& name, int32_t partitions,
                     int32_t factor, const std::map<std::string, std::string>& given,
                     bool validate_only, protocol::CreateTopicsResponse::Topic* tr) {
  tr->num_partitions = partitions;
  tr->replication_factor = static_cast<int16_t>(factor);
  std::map<std::string, std::string> values;
  if (validate_only) {
    storage::LogConfig c =
        ctx.dynamic_config ? ctx.dynamic_config->Effective().log_defaults : ctx.config.log_defaults;
    if (c.Apply(given).ok()) values = c.ToMap();
  } else {
    if (auto cfg = ctx.metadata.TopicConfig(name); cfg.ok()) values = cfg->ToMap();
    if (auto t = ctx.metadata.GetTopic(name); t.ok()) {
      if (auto id = Uuid::Parse(t->topic_id); id.ok()) tr->topic_id = *id;
    }
  }
  tr->configs.emplace();
  for (const auto& [k, v] : values) {
    protocol::CreateTopicsResponse::TopicConfig c;
    c.name = k;
    c.value = v;
    c.config_source = given.count(k) ? kSourceDynamicTopic : kSourceDefault;
    tr->configs->push_back(std::move(c));
  }
}

// max.partitions.per.request: the partitions one request may ask for over all its topics,
// checked before any placement or allocation, the same on one node and in a cluster. Past it
// the whole request is refused with POLICY_VIOLATION, as Kafka's KRaft controller refuses a
// request of over 10,000 partitions.
std::string OverPartitionCap(int64_t total, int32_t cap) {
  return "Excessively large number of partitions per request: " + std::to_string(total) +
         " asked, max.partitions.per.request is " + std::to_string(cap);
}

}  // namespace

// ---- CreateTopics -----------------------------------------------------------------------

Status HandleCreateTopics(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond) {
  protocol::CreateTopicsRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  protocol::CreateTopicsResponse resp;
  const int32_t cap = ctx.config.max_partitions_per_request;
  int64_t total = 0;
  for (const auto& t : request.topics) {
    if (!t.assignments.empty()) {
      total += static_cast<int64_t>(t.assignments.size());
    } else if (t.num_partitions == -1) {
      total += ctx.config.num_partitions;
    } else if (t.num_partitions > 0) {
      total += t.num_partitions;
    }
  }
  if (total > cap) {
    for (const auto& t : request.topics) {
      protocol::CreateTopicsResponse::Topic tr;
      tr.name = t.name;
      tr.error_code = Wire(ErrorCode::POLICY_VIOLATION);
      tr.error_message = OverPartitionCap(total, cap);
      resp.topics.push_back(std::move(tr));
    }
    respond(EncodeBody(resp, req->api_version));
    return Status::OK();
  }
  std::map<std::string, int> seen;
  for (const auto& t : request.topics) ++seen[t.name];
  for (const auto& t : request.topics) {
    protocol::CreateTopicsResponse::Topic tr;
    tr.name = t.name;
    auto fail = [&tr](ErrorCode c, std::string m) {
      tr.error_code = Wire(c);
      tr.error_message = std::move(m);
    };
    std::string why;
    int32_t partitions = t.num_partitions == -1 ? ctx.config.num_partitions : t.num_partitions;
    std::vector<std::vector<NodeId>> assignment;  // the replicas asked for, when given
    int32_t assigned_factor = -1;
    // -1: the broker's default.replication.factor, as in Kafka.
    const int32_t factor =
        t.replication_factor == -1 ? ctx.config.default_replication_factor : t.replication_factor;
    std::map<std::string, std::string> configs;
    for (const auto& c : t.configs) {
      if (c.value) configs[c.name] = *c.value;  // null: the default
    }
    if (seen[t.name] > 1) {
      fail(ErrorCode::INVALID_REQUEST, "topic " + t.name + " appears more than once");
    } else if (Status name_ok = ValidateTopicName(t.name); !name_ok.ok()) {
      fail(ErrorCode::INVALID_TOPIC_EXCEPTION, name_ok.message());
    } else if (!t.assignments.empty() &&
               (t.num_partitions != -1 || t.replication_factor != -1)) {
      fail(ErrorCode::INVALID_REQUEST,
           "give either assignments or num_partitions/replication_factor, not both");
    } else if (!t.assignments.empty()) {
      partitions = static_cast<int32_t>(t.assignments.size());
      const std::set<int32_t> known = KnownBrokers(ctx);
      assignment.assign(static_cast<size_t>(partitions), {});
      assigned_factor = -1;
      for (const auto& a : t.assignments) {
        if (a.partition_index < 0 || a.partition_index >= partitions ||
            !assignment[a.partition_index].empty()) {
          fail(ErrorCode::INVALID_REPLICA_ASSIGNMENT, "partition indexes must be 0..N-1");
          break;
        }
        if (std::string bad = CheckAssignment(a.broker_ids, known, &assigned_factor);
            !bad.empty()) {
          fail(ErrorCode::INVALID_REPLICA_ASSIGNMENT,
               "partition " + std::to_string(a.partition_index) + ": " + bad);
          break;
        }
        for (int32_t b : a.broker_ids) assignment[a.partition_index].push_back(NodeId(b));
      }
    } else if (partitions <= 0) {
      fail(ErrorCode::INVALID_PARTITIONS, "number of partitions must be at least 1");
    } else if (t.replication_factor == 0 || t.replication_factor < -1) {
      fail(ErrorCode::INVALID_REPLICATION_FACTOR, "replication factor must be at least 1");
    } else if (size_t brokers = std::max<size_t>(1, ctx.metadata.Brokers().size());
               factor > static_cast<int32_t>(brokers)) {
      fail(ErrorCode::INVALID_REPLICATION_FACTOR,
           "replication factor " + std::to_string(factor) +
               (t.replication_factor == -1 ? " (default.replication.factor)" : "") +
               " is larger than the number of brokers (" + std::to_string(brokers) + ")");
    }
    if (tr.error_code == 0 && !ValidConfigs(configs, &why)) {
      fail(ErrorCode::INVALID_CONFIG, why);
    }

    if (tr.error_code == 0) {
      auto existing = ctx.metadata.GetTopic(t.name);
      if (existing.ok()) {
        fail(ErrorCode::TOPIC_ALREADY_EXISTS, "topic '" + t.name + "' already exists");
      } else if (request.validate_only) {
        DescribeCreated(ctx, t.name, partitions,
                        assignment.empty() ? std::max<int32_t>(1, factor) : assigned_factor,
                        configs, true, &tr);
      } else {
        auto created = assignment.empty()
                           ? ctx.metadata.CreateTopicWithReplicas(
                                 t.name, partitions, std::max<int32_t>(1, factor), configs)
                           : ctx.metadata.CreateTopicWithAssignment(t.name, assignment, configs);
        if (created.ok()) {
          LogInfo("created topic " + t.name + " with " + std::to_string(created->partition_count) +
                  " partition(s)");
          DescribeCreated(ctx, t.name, created->partition_count,
                          assignment.empty() ? std::max<int32_t>(1, factor) : assigned_factor,
                          configs, false, &tr);
        } else {
          const Status& s = created.status();
          ErrorCode c = s.code() == Status::Code::kAlreadyExists ? ErrorCode::TOPIC_ALREADY_EXISTS
                        : s.code() == Status::Code::kInvalidArgument ? ErrorCode::INVALID_CONFIG
                                                                      : protocol::ErrorCodeFromStatus(s);
          fail(c, s.message());
        }
      }
    }
    resp.topics.push_back(std::move(tr));
  }
  respond(EncodeBody(resp, req->api_version));
  return Status::OK();
}

// ---- DeleteTopics -----------------------------------------------------------------------

Status HandleDeleteTopics(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond) {
  protocol::DeleteTopicsRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  protocol::DeleteTopicsResponse resp;
  // v6+ name each topic by name or by id (KIP-516); earlier versions by name.
  std::vector<protocol::DeleteTopicsRequest::TopicState> wanted = request.topics;
  if (req->api_version < 6) {
    for (const std::string& name : request.topic_names) wanted.push_back({name, Uuid{}});
  }
  for (const auto& w : wanted) {
    decltype(resp.responses)::value_type r;
    std::string name = w.name.value_or("");
    if (!w.topic_id.is_zero()) {
      r.topic_id = w.topic_id;
      std::optional<std::string> found;
      const std::string id = w.topic_id.ToString();
      for (const TopicMetadata& t : ctx.metadata.ListTopics()) {
        if (t.topic_id == id) found = t.name;
      }
      if (w.name || !found) {
        // Both a name and an id, or an id no topic has: Kafka's answers.
        r.error_code = Wire(w.name ? ErrorCode::INVALID_REQUEST : ErrorCode::UNKNOWN_TOPIC_ID);
        r.error_message = w.name ? "give a topic's name or its id, not both"
                                 : "no topic has id " + id;
        resp.responses.push_back(std::move(r));
        continue;
      }
      name = *found;
    }
    r.name = name;
    if (req->api_version >= 6 && r.topic_id.is_zero()) {
      if (auto t = ctx.metadata.GetTopic(name); t.ok()) {
        if (auto id = Uuid::Parse(t->topic_id); id.ok()) r.topic_id = *id;
      }
    }
    Status s = ctx.metadata.DeleteTopic(name);
    if (s.IsNotFound()) {
      r.error_code = Wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
      r.error_message = "topic '" + name + "' does not exist";
    } else if (!s.ok()) {
      LogError("deleting topic " + name + ": " + s.ToString());
      r.error_code = Wire(protocol::ErrorCodeFromStatus(s));
      r.error_message = s.message();
    }
    resp.responses.push_back(std::move(r));
  }
  respond(EncodeBody(resp, req->api_version));
  return Status::OK();
}

// ---- CreatePartitions -------------------------------------------------------------------

Status HandleCreatePartitions(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond) {
  protocol::CreatePartitionsRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  protocol::CreatePartitionsResponse resp;
  const int32_t cap = ctx.config.max_partitions_per_request;
  int64_t total = 0;
  for (const auto& t : request.topics) {
    if (auto info = ctx.metadata.GetTopic(t.name); info.ok() && t.count > info->partition_count) {
      total += int64_t{t.count} - info->partition_count;
    }
  }
  for (const auto& t : request.topics) {
    decltype(resp.results)::value_type r;
    r.name = t.name;
    auto fail = [&r](ErrorCode c, std::string m) {
      r.error_code = Wire(c);
      r.error_message = std::move(m);
    };
    auto info = ctx.metadata.GetTopic(t.name);
    if (!info.ok()) {
      fail(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, "topic '" + t.name + "' does not exist");
    } else if (t.count <= info->partition_count) {
      fail(ErrorCode::INVALID_PARTITIONS,
           "topic has " + std::to_string(info->partition_count) + " partitions; the new count " +
               std::to_string(t.count) + " must be larger");
    } else if (total > cap) {
      fail(ErrorCode::POLICY_VIOLATION, OverPartitionCap(total, cap));
    } else if (t.assignments &&
               static_cast<int32_t>(t.assignments->size()) != t.count - info->partition_count) {
      fail(ErrorCode::INVALID_REPLICA_ASSIGNMENT, "one assignment per new partition is needed");
    } else {
      // Given replicas are checked as Kafka checks them, with the topic's replica count as
      // the one every new partition must have, and placed as given.
      std::vector<std::vector<NodeId>> assignment;
      if (t.assignments) {
        const std::set<int32_t> known = KnownBrokers(ctx);
        int32_t f = info->partitions.empty()
                        ? -1
                        : static_cast<int32_t>(info->partitions.front().replicas.size());
        for (const auto& a : *t.assignments) {
          if (std::string bad = CheckAssignment(a.broker_ids, known, &f); !bad.empty()) {
            fail(ErrorCode::INVALID_REPLICA_ASSIGNMENT, bad);
            break;
          }
          std::vector<NodeId> replicas;
          for (int32_t b : a.broker_ids) replicas.push_back(NodeId(b));
          assignment.push_back(std::move(replicas));
        }
      }
      if (r.error_code == 0 && !request.validate_only) {
        Status s = assignment.empty()
                       ? ctx.metadata.AddPartitions(t.name, t.count)
                       : ctx.metadata.AddPartitionsWithAssignment(t.name, t.count, assignment);
        if (!s.ok()) fail(protocol::ErrorCodeFromStatus(s), s.message());
      }
    }
    resp.results.push_back(std::move(r));
  }
  respond(EncodeBody(resp, req->api_version));
  return Status::OK();
}

// ---- DeleteRecords ----------------------------------------------------------------------

Status HandleDeleteRecords(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond) {
  protocol::DeleteRecordsRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  protocol::DeleteRecordsResponse resp;
  for (const auto& t : request.topics) {
    protocol::DeleteRecordsResponse::Topic tr;
    tr.name = t.name;
    for (const auto& p : t.partitions) {
      protocol::DeleteRecordsResponse::Partition pr;
      pr.partition_index = p.partition_index;
      pr.low_watermark = -1;
      auto part = ctx.partitions.Get(t.name, PartitionId(p.partition_index));
      if (!part.ok()) {
        pr.error_code = Wire(part.status().IsNotFound() ? ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
                                                        : protocol::ErrorCodeFromStatus(part.status()));
      } else {
        ErrorCode error;
        auto start = (*part)->DeleteRecordsBefore(p.offset, &error);
        if (start.ok()) {
          pr.low_watermark = start->value();
        } else {
          if (error != ErrorCode::OFFSET_OUT_OF_RANGE && error != ErrorCode::UNKNOWN_TOPIC_OR_PARTITION) {
            LogError("delete-records on " + (*part)->name() + ": " + start.status().ToString());
          }
          pr.error_code = Wire(error);
        }
      }
      tr.partitions.push_back(std::move(pr));
    }
    resp.topics.push_back(std::move(tr));
  }
  respond(EncodeBody(resp, req->api_version));
  return Status::OK();
}

// ---- DescribeConfigs --------------------------------------------------------------------

namespace {

constexpr int8_t kResourceTopic = 2;
constexpr int8_t kResourceBroker = 4;
// ConfigType values (v3+).
constexpr int8_t kTypeBoolean = 1;
constexpr int8_t kTypeString = 2;
constexpr int8_t kTypeInt = 3;
constexpr int8_t kTypeLong = 5;
constexpr int8_t kTypeList = 7;

int8_t TypeOf(const std::string& key, const std::string& value) {
  if (value == "true" || value == "false") return kTypeBoolean;
  if (key == "cleanup.policy" || key == "listeners" || key == "advertised.listeners" ||
      key == "log.dirs") {
    return kTypeList;
  }
  bool numeric = !value.empty();
  for (size_t i = 0; i < value.size(); ++i) {
    if (!(isdigit(static_cast<unsigned char>(value[i])) || (i == 0 && value[i] == '-'))) numeric = false;
  }
  if (!numeric) return kTypeString;
  bool is_long = key.find(".ms") != std::string::npos || key == "segment.bytes" ||
                 key == "retention.bytes" || key == "flush.messages" ||
                 key.find("log.") == 0;
  return is_long ? kTypeLong : kTypeInt;
}

bool Wanted(const std::optional<std::vector<std::string>>& keys, const std::string& k) {
  if (!keys) return true;
  for (const auto& x : *keys) {
    if (x == k) return true;
  }
  return false;
}

protocol::DescribeConfigsResponse::Config MakeConfig(const std::string& key,
                                                     const std::string& value, int8_t source,
                                                     bool read_only, int16_t version,
                                                     bool synonyms) {
  protocol::DescribeConfigsResponse::Config c;
  c.name = key;
  c.value = value;
  c.read_only = read_only;
  c.is_default = source == kSourceDefault;
  c.config_source = source;
  c.config_type = TypeOf(key, value);
  if (synonyms && version >= 1) c.synonyms.push_back({key, value, source});
  return c;
}

std::map<std::string, std::string> BrokerConfigs(BrokerContext& ctx, const BrokerConfig& c) {
  const storage::LogConfig& d = c.log_defaults;
  std::map<std::string, std::string> m;
  m["node.id"] = std::to_string(c.node_id);
  m["broker.id"] = std::to_string(c.node_id);
  m["listeners"] = "PLAINTEXT://" + c.listen_host + ":" + std::to_string(c.listen_port);
  m["advertised.listeners"] =
      "PLAINTEXT://" + ctx.node.advertised_host + ":" + std::to_string(ctx.node.advertised_port);
  m["log.dirs"] = c.data_dir;
  m["num.partitions"] = std::to_string(c.num_partitions);
  m["auto.create.topics.enable"] = c.auto_create_topics ? "true" : "false";
  m["message.max.bytes"] = std::to_string(c.message_max_bytes);
  m["socket.request.max.bytes"] = std::to_string(c.socket_request_max_bytes);
  m["max.connections"] = std::to_string(c.max_connections);
  m["default.replication.factor"] = std::to_string(c.default_replication_factor);
  m["offsets.topic.replication.factor"] = std::to_string(OffsetsTopicReplicationFactor(c));
  m["unclean.leader.election.enable"] = c.unclean_leader_election_enable ? "true" : "false";
  m["auto.leader.rebalance.enable"] = c.auto_leader_rebalance_enable ? "true" : "false";
  m["leader.imbalance.check.interval.seconds"] =
      std::to_string(c.leader_imbalance_check_interval_ms / 1000);
  m["leader.imbalance.per.broker.percentage"] =
      std::to_string(c.leader_imbalance_per_broker_percentage);
  m["controlled.shutdown.enable"] = c.controlled_shutdown_enable ? "true" : "false";
  m["log.segment.bytes"] = std::to_string(d.segment_bytes);
  m["log.roll.ms"] = std::to_string(d.segment_ms);
  m["log.retention.ms"] = std::to_string(d.retention_ms);
  m["log.retention.bytes"] = std::to_string(d.retention_bytes);
  m["log.flush.interval.messages"] = std::to_string(d.flush_messages);
  m["log.flush.interval.ms"] = std::to_string(d.flush_ms);
  m["log.cleanup.policy"] = d.cleanup_policy;
  m["log.message.timestamp.type"] = d.message_timestamp_type;
  m["compression.type"] = d.compression_type;
  m["min.insync.replicas"] = std::to_string(d.min_insync_replicas);
  return m;
}

// A BROKER resource's configs with the source of each value, as Kafka shows them: this node's
// id lists every config (dynamic ones at their effective value), the cluster default ("") only
// the dynamic defaults. Synonyms, when asked, list every level that sets the key, strongest
// first. A static value equal to the built-in default reads as DEFAULT_CONFIG.
void DescribeBroker(BrokerContext& ctx, const protocol::DescribeConfigsRequest::Resource& res,
                    int16_t version, bool synonyms,
                    std::vector<protocol::DescribeConfigsResponse::Config>* out) {
  DynamicBrokerConfig::Configs defaults, mine;
  BrokerConfig effective = ctx.config;
  if (ctx.dynamic_config != nullptr) {
    defaults = ctx.dynamic_config->Get(true);
    mine = ctx.dynamic_config->Get(false);
    effective = ctx.dynamic_config->Effective();
  }
  if (res.resource_name.empty()) {
    for (const auto& [k, v] : defaults) {
      if (!Wanted(res.configuration_keys, k)) continue;
      out->push_back(MakeConfig(k, v, kSourceDynamicDefaultBroker, false, version, synonyms));
    }
    return;
  }
  const BrokerConfig builtin;
  const auto stat = BrokerConfigs(ctx, ctx.config);
  const auto base = BrokerConfigs(ctx, builtin);
  auto values = BrokerConfigs(ctx, effective);
  for (const auto* scope : {&defaults, &mine}) {
    for (const auto& [k, v] : *scope) values[k] = v;  // keys the list does not show otherwise
  }
  for (const auto& [k, v] : values) {
    if (!Wanted(res.configuration_keys, k)) continue;
    auto st = stat.find(k);
    auto bi = base.find(k);
    bool is_static = st != stat.end() && (bi == base.end() || bi->second != st->second);
    int8_t source = mine.count(k)       ? kSourceDynamicBroker
                    : defaults.count(k) ? kSourceDynamicDefaultBroker
                    : is_static         ? kSourceStaticBroker
                                        : kSourceDefault;
    auto c = MakeConfig(k, v, source, !DynamicBrokerConfig::IsDynamicKey(k), version, false);
    if (synonyms && version >= 1) {
      if (mine.count(k)) c.synonyms.push_back({k, mine.at(k), kSourceDynamicBroker});
      if (defaults.count(k)) c.synonyms.push_back({k, defaults.at(k), kSourceDynamicDefaultBroker});
      if (is_static) c.synonyms.push_back({k, st->second, kSourceStaticBroker});
      if (bi != base.end()) c.synonyms.push_back({k, bi->second, kSourceDefault});
    }
    out->push_back(std::move(c));
  }
}

}  // namespace

Status HandleDescribeConfigs(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond) {
  protocol::DescribeConfigsRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  protocol::DescribeConfigsResponse resp;
  for (const auto& res : request.resources) {
    decltype(resp.results)::value_type r;
    r.resource_type = res.resource_type;
    r.resource_name = res.resource_name;
    if (res.resource_type == kResourceTopic) {
      auto cfg = ctx.metadata.TopicConfig(res.resource_name);
      auto topic = ctx.metadata.GetTopic(res.resource_name);
      if (!cfg.ok() || !topic.ok()) {
        r.error_code = Wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
        r.error_message = "topic '" + res.resource_name + "' does not exist";
      } else {
        for (const auto& [k, v] : cfg->ToMap()) {
          if (!Wanted(res.configuration_keys, k)) continue;
          int8_t source = topic->configs.count(k) ? kSourceDynamicTopic : kSourceDefault;
          r.configs.push_back(
              MakeConfig(k, v, source, false, req->api_version, request.include_synonyms));
        }
      }
    } else if (res.resource_type == kResourceBroker) {
      if (!res.resource_name.empty() && res.resource_name != std::to_string(ctx.node.node_id.value())) {
        r.error_code = Wire(ErrorCode::INVALID_REQUEST);
        r.error_message = "unknown broker '" + res.resource_name + "'";
      } else {
        DescribeBroker(ctx, res, req->api_version, request.include_synonyms, &r.configs);
      }
    } else {
      r.error_code = Wire(ErrorCode::INVALID_REQUEST);
      r.error_message = "unsupported resource type " + std::to_string(res.resource_type);
    }
    resp.results.push_back(std::move(r));
  }
  respond(EncodeBody(resp, req->api_version));
  return Status::OK();
}

}  // namespace silt::broker
