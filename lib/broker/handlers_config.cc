// AlterConfigs (the legacy full replace) and IncrementalAlterConfigs (SET, DELETE, APPEND,
// SUBTRACT) for topics, and for BROKER resources the dynamic keys of dynamic_config.h (others
// are refused as Kafka refuses its read-only keys).
//
// Checks follow Kafka's broker (ConfigAdminManager, ControllerConfigurationValidator), resource
// by resource, one resource's error never affecting another's:
//   INVALID_REQUEST  a resource named twice, a config key named twice, a null value (other than
//                    for DELETE), an unknown operation, an empty topic name, a resource type
//                    other than TOPIC (2) and BROKER (4), another broker's id, and a BROKER
//                    key that is not dynamic ("Cannot update these configs dynamically")
//   INVALID_CONFIG   an unknown topic config, APPEND/SUBTRACT on a key that is not a list, a
//                    value the topic or broker config rules refuse (the message names the key)
//   UNKNOWN_TOPIC_OR_PARTITION  no such topic
#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <utility>

#include "broker/dynamic_config.h"
#include "broker/handlers.h"
#include "broker/logging.h"
#include "protocol/messages.h"

namespace silt::broker {

using protocol::ErrorCode;

namespace {

using IncrementalOp = protocol::IncrementalAlterConfigsRequest;

// A resource's answer: error code and message (nullopt when it succeeded).
struct Outcome {
  int16_t error_code = 0;
  std::optional<std::string> error_message;
};

Outcome Fail(ErrorCode c, std::string message) { return Outcome{Wire(c), std::move(message)}; }

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// (type, name) of the resources that appear more than once in a request.
template <class Resource>
std::set<std::pair<int8_t, std::string>> RepeatedResources(const std::vector<Resource>& rs) {
  std::set<std::pair<int8_t, std::string>> seen, repeated;
  for (const Resource& r : rs) {
    if (!seen.insert({r.resource_type, r.resource_name}).second) {
      repeated.insert({r.resource_type, r.resource_name});
    }
  }
  return repeated;
}

template <class Config>
bool RepeatedKeys(const std::vector<Config>& configs) {
  std::set<std::string> seen;
  for (const Config& c : configs) {
    if (!seen.insert(c.name).second) return true;
  }
  return false;
}

// A BROKER resource: the name is empty (cluster-wide default) or this node's id. The keys
// DynamicBrokerConfig takes are changed (the whole scope's set through `edit`); any other key
// is refused the way Kafka refuses its read-only ones. In cluster mode the change goes to the
// controller through the metadata log (dynamic_config.h), so the cluster default reaches every
// node; a change of one node's configs is sent to that node, as Kafka's clients do.
Outcome AlterBroker(BrokerContext& ctx, const std::string& name,
                    const std::vector<std::string>& keys, bool validate_only,
                    const std::function<Status(DynamicBrokerConfig::Configs*)>& edit) {
  std::string self = std::to_string(ctx.node.node_id.value());
  if (!name.empty() && name != self) {
    return Fail(ErrorCode::INVALID_REQUEST,
                "Unexpected broker id, expected " + self + ", but received " + name);
  }
  std::vector<std::string> fixed;
  for (const std::string& k : keys) {
    if (!DynamicBrokerConfig::IsDynamicKey(k)) fixed.push_back(k);
  }
  if (!fixed.empty()) {
    return Fail(ErrorCode::INVALID_REQUEST,
                "Cannot update these configs dynamically: " + JoinNames(fixed) +
                    " (change server.properties or --set and restart)");
  }
  if (ctx.dynamic_config == nullptr) {
    // A broker set up without a place to keep them (tests' bare cluster modes).
    if (keys.empty()) return {};
    return Fail(ErrorCode::INVALID_REQUEST,
                "Cannot update these configs dynamically: " + JoinNames(keys));
  }
  const bool cluster_default = name.empty();
  Status s = ctx.dynamic_config->Edit(cluster_default, edit, validate_only, &ctx.metadata);
  if (s.ok()) return {};
  if (s.code() == Status::Code::kInvalidArgument) return Fail(ErrorCode::INVALID_CONFIG, s.message());
  LogError("altering the dynamic broker configs: " + s.ToString());
  return Fail(protocol::ErrorCodeFromStatus(s), s.message());
}

// Checks on a TOPIC resource that need no topic state; nullopt when it may go on.
std::optional<Outcome> CheckTopicKeys(const std::string& name,
                                      const std::vector<std::string>& keys) {
  if (name.empty()) {
    return Fail(ErrorCode::INVALID_REQUEST, "Default topic resources are not allowed.");
  }
  for (const std::string& k : keys) {
    if (!storage::LogConfig::IsKnownKey(k)) {
      return Fail(ErrorCode::INVALID_CONFIG, "Unknown topic config name: " + k);
    }
  }
  return std::nullopt;
}

// Runs `edit` on the topic's overrides through the broker and maps the result.
Outcome AlterTopic(BrokerContext& ctx, const std::string& name, bool validate_only,
                   const MetadataStore::ConfigEdit& edit) {
  Status s = ctx.metadata.AlterTopicConfig(name, edit, validate_only);
  if (s.ok()) return {};
  if (s.IsNotFound()) {
    return Fail(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, "topic '" + name + "' does not exist");
  }
  if (s.code() == Status::Code::kInvalidArgument) return Fail(ErrorCode::INVALID_CONFIG, s.message());
  LogError("altering the configs of topic " + name + ": " + s.ToString());
  return Fail(protocol::ErrorCodeFromStatus(s), s.message());
}

// The items of a list value, without blanks.
std::vector<std::string> ListItems(const std::string& value) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    if (comma == std::string::npos) comma = value.size();
    std::string item = value.substr(start, comma - start);
    while (!item.empty() && item.front() == ' ') item.erase(0, 1);
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (!item.empty()) items.push_back(std::move(item));
    start = comma + 1;
  }
  return items;
}

// APPEND adds the items not there yet, SUBTRACT removes those given; the starting point is
// the topic's override, or the broker default when there is none (what DescribeConfigs shows).
std::string ApplyListOp(int8_t op, const std::string& current, const std::string& operand) {
  std::vector<std::string> items = ListItems(current);
  for (const std::string& x : ListItems(operand)) {
    auto it = std::find(items.begin(), items.end(), x);
    if (op == IncrementalOp::kAppend && it == items.end()) items.push_back(x);
    if (op == IncrementalOp::kSubtract && it != items.end()) items.erase(it);
  }
  std::string out;
  for (const std::string& x : items) out += (out.empty() ? "" : ",") + x;
  return out;
}

}  // namespace

// ---- AlterConfigs -----------------------------------------------------------------------

Status HandleAlterConfigs(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond) {
  protocol::AlterConfigsRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  protocol::AlterConfigsResponse resp;
  const auto repeated = RepeatedResources(request.resources);
  for (const auto& res : request.resources) {
    std::vector<std::string> keys, nulls;
    for (const auto& c : res.configs) {
      keys.push_back(c.name);
      if (!c.value) nulls.push_back(c.name);
    }
    Outcome out;
    if (repeated.count({res.resource_type, res.resource_name})) {
      out = Fail(ErrorCode::INVALID_REQUEST, "Each resource must appear at most once.");
    } else if (RepeatedKeys(res.configs)) {
      out = Fail(ErrorCode::INVALID_REQUEST, "Error due to duplicate config keys");
    } else if (!nulls.empty()) {
      out = Fail(ErrorCode::INVALID_REQUEST, "Null value not supported for : " + JoinNames(nulls));
    } else if (res.resource_type == protocol::kConfigResourceTopic) {
      if (auto bad = CheckTopicKeys(res.resource_name, keys)) {
        out = *bad;
      } else {
        // The legacy API replaces the whole set: keys left out go back to their defaults.
        out = AlterTopic(ctx, res.resource_name, request.validate_only,
                         [&res](std::map<std::string, std::string>* overrides) {
                           overrides->clear();
                           for (const auto& c : res.configs) (*overrides)[c.name] = *c.value;
                           return Status::OK();
                         });
      }
    } else if (res.resource_type == protocol::kConfigResourceBroker) {
      // The legacy API replaces the scope's whole set, as for topics.
      out = AlterBroker(ctx, res.resource_name, keys, request.validate_only,
                        [&res](DynamicBrokerConfig::Configs* configs) {
                          configs->clear();
                          for (const auto& c : res.configs) (*configs)[c.name] = *c.value;
                          return Status::OK();
                        });
    } else {
      out = Fail(ErrorCode::INVALID_REQUEST,
                 "Unknown resource type " + std::to_string(res.resource_type));
    }
    resp.responses.push_back(
        {out.error_code, std::move(out.error_message), res.resource_type, res.resource_name});
  }
  respond(EncodeBody(resp, req->api_version));
  return Status::OK();
}

// ---- IncrementalAlterConfigs ------------------------------------------------------------

Status HandleIncrementalAlterConfigs(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond) {
  protocol::IncrementalAlterConfigsRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  protocol::IncrementalAlterConfigsResponse resp;
  const auto repeated = RepeatedResources(request.resources);
  const std::map<std::string, std::string> defaults = ctx.config.log_defaults.ToMap();
  for (const auto& res : request.resources) {
    std::vector<std::string> keys, nulls, unknown_ops, not_lists;
    for (const auto& c : res.configs) {
      keys.push_back(c.name);
      int8_t op = c.config_operation;
      if (op < IncrementalOp::kSet || op > IncrementalOp::kSubtract) {
        unknown_ops.push_back(c.name + " (" + std::to_string(op) + ")");
      } else if (op != IncrementalOp::kDelete && !c.value) {
        nulls.push_back(c.name);
      }
      if ((op == IncrementalOp::kAppend || op == IncrementalOp::kSubtract) &&
          storage::LogConfig::IsKnownKey(c.name) && !storage::LogConfig::IsListKey(c.name)) {
        not_lists.push_back(std::string(op == IncrementalOp::kAppend ? "append" : "subtract") +
                            " is not allowed for config key: " + c.name);
      }
    }
    Outcome out;
    if (repeated.count({res.resource_type, res.resource_name})) {
      out = Fail(ErrorCode::INVALID_REQUEST, "Each resource must appear at most once.");
    } else if (RepeatedKeys(res.configs)) {
      out = Fail(ErrorCode::INVALID_REQUEST, "Error due to duplicate config keys");
    } else if (!unknown_ops.empty()) {
      out = Fail(ErrorCode::INVALID_REQUEST, "Unknown operation type for " + JoinNames(unknown_ops));
    } else if (!nulls.empty()) {
      out = Fail(ErrorCode::INVALID_REQUEST, "Null value not supported for : " + JoinNames(nulls));
    } else if (res.resource_type == protocol::kConfigResourceTopic) {
      if (auto bad = CheckTopicKeys(res.resource_name, keys)) {
        out = *bad;
      } else if (!not_lists.empty()) {
        out = Fail(ErrorCode::INVALID_CONFIG, "Config value " + not_lists.front());
      } else {
        out = AlterTopic(ctx, res.resource_name, request.validate_only,
                         [&res, &defaults](std::map<std::string, std::string>* overrides) {
                           for (const auto& c : res.configs) {
                             switch (c.config_operation) {
                               case IncrementalOp::kSet:
                                 (*overrides)[c.name] = *c.value;
                                 break;
                               case IncrementalOp::kDelete:
                                 overrides->erase(c.name);
                                 break;
                               default: {
                                 auto it = overrides->find(c.name);
                                 auto d = defaults.find(c.name);
                                 std::string current = it != overrides->end() ? it->second
                                                       : d != defaults.end()  ? d->second
                                                                              : std::string();
                                 (*overrides)[c.name] =
                                     ApplyListOp(c.config_operation, current, *c.value);
                               }
                             }
                           }
                           return Status::OK();
                         });
      }
    } else if (res.resource_type == protocol::kConfigResourceBroker) {
      const BrokerConfig effective =
          ctx.dynamic_config ? ctx.dynamic_config->Effective() : ctx.config;
      out = AlterBroker(
          ctx, res.resource_name, keys, request.validate_only,
          [&res, &effective](DynamicBrokerConfig::Configs* configs) {
            for (const auto& c : res.configs) {
              switch (c.config_operation) {
                case IncrementalOp::kSet:
                  (*configs)[c.name] = *c.value;
                  break;
                case IncrementalOp::kDelete:
                  configs->erase(c.name);
                  break;
                default: {
                  if (c.name != "log.cleanup.policy") {
                    return Status::InvalidArgument(
                        std::string(c.config_operation == IncrementalOp::kAppend ? "append"
                                                                                 : "subtract") +
                        " is not allowed for config key: " + c.name);
                  }
                  auto it = configs->find(c.name);
                  std::string current = it != configs->end()
                                            ? it->second
                                            : effective.log_defaults.cleanup_policy;
                  (*configs)[c.name] = ApplyListOp(c.config_operation, current, *c.value);
                }
              }
            }
            return Status::OK();
          });
    } else {
      out = Fail(ErrorCode::INVALID_REQUEST,
                 "Unknown resource type " + std::to_string(res.resource_type));
    }
    resp.responses.push_back(
        {out.error_code, std::move(out.error_message), res.resource_type, res.resource_name});
  }
  respond(EncodeBody(resp, req->api_version));
  return Status::OK();
}

}  // namespace silt::broker
