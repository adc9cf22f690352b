// Dynamic broker configs: see dynamic_config.h.
#include "broker/dynamic_config.h"

#include <set>
#include <vector>

#include "base/file.h"
#include "broker/logging.h"
#include "broker/metadata_store.h"

namespace silt::broker {

namespace {

constexpr const char* kDir = "silt-broker-configs";

const std::set<std::string>& DynamicKeys() {
  static const std::set<std::string> keys = {
      "log.segment.bytes",        "log.roll.ms",
      "log.roll.hours",           "log.retention.ms",
      "log.retention.minutes",    "log.retention.hours",
      "log.retention.bytes",      "log.flush.interval.messages",
      "log.flush.interval.ms",    "log.index.interval.bytes",
      "log.index.size.max.bytes", "log.message.timestamp.type",
      "log.cleanup.policy",       "log.cleaner.delete.retention.ms",
      "compression.type",         "min.insync.replicas",
  };
  return keys;
}

std::string Serialize(const DynamicBrokerConfig::Configs& c) {
  std::string out = "# Dynamic broker configs (AlterConfigs on a BROKER resource); written by silt.\n";
  for (const auto& [k, v] : c) out += k + "=" + v + "\n";
  return out;
}

Result<DynamicBrokerConfig::Configs> Parse(const std::string& path, const std::string& text) {
  DynamicBrokerConfig::Configs out;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(start, nl - start);
    start = nl + 1;
    if (line.empty() || line[0] == '#') continue;
    size_t eq = line.find('=');
    if (eq == std::string::npos) return Status::Corruption(path + ": bad line '" + line + "'");
    out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

// "default.properties" or "<node id>.properties": a scope's file under kDir.
std::string ScopeFileName(bool cluster_default, int32_t node_id) {
  return cluster_default ? std::string("default.properties")
                         : std::to_string(node_id) + ".properties";
}

// The single node's store: one properties file per scope under the data dir.
class FileBrokerConfigStore final : public BrokerConfigStore {
 public:
  explicit FileBrokerConfigStore(const BrokerConfig& c) : data_dir_(c.data_dir), node_id_(c.node_id) {}

  Result<Configs> Load(bool cluster_default) override {
    std::string path = PathFor(cluster_default);
    auto text = ReadFile(path);
    if (!text.ok()) {
      if (text.status().IsNotFound()) return Configs{};
      return text.status();
    }
    return Parse(path, *text);
  }

  Status Store(bool cluster_default, const Configs&, const Configs& next) override {
    SILT_TRY(CreateDirs(JoinPath(data_dir_, kDir)));
    return WriteFileAtomic(PathFor(cluster_default), Serialize(next));
  }

 private:
  std::string PathFor(bool cluster_default) const {
    return JoinPath(JoinPath(data_dir_, kDir), ScopeFileName(cluster_default, node_id_));
  }

  const std::string data_dir_;
  const int32_t node_id_;
};

std::string Describe(const DynamicBrokerConfig::Configs& c) {
  std::string text;
  for (const auto& [k, v] : c) text += (text.empty() ? "" : ", ") + k + "=" + v;
  return "{" + text + "}";
}

}  // namespace

bool DynamicBrokerConfig::IsDynamicKey(const std::string& key) {
  return DynamicKeys().count(key) > 0;
}

BrokerConfig DynamicBrokerConfig::Compose(const Configs& defaults, const Configs& mine) const {
  BrokerConfig c = static_;
  // Checked before they were taken; a failure here leaves the value as it was.
  for (const Configs* scope : {&defaults, &mine}) {
    for (const auto& [k, v] : *scope) (void)ApplyServerProperty(&c, k, v);
  }
  return c;
}

Result<std::unique_ptr<DynamicBrokerConfig>> DynamicBrokerConfig::Open(
    const BrokerConfig& static_config) {
  auto files = std::make_unique<FileBrokerConfigStore>(static_config);
  BrokerConfigStore* store = files.get();
  std::unique_ptr<DynamicBrokerConfig> d(
      new DynamicBrokerConfig(static_config, std::move(files), store));
  for (bool cluster_default : {true, false}) {
    SILT_ASSIGN_OR_RETURN(Configs c, store->Load(cluster_default));
    const std::string where =
        std::string(kDir) + "/" + ScopeFileName(cluster_default, static_config.node_id);
    BrokerConfig probe = static_config;
    for (const auto& [k, v] : c) {
      if (!IsDynamicKey(k)) return Status::Corruption(where + ": '" + k + "' is not dynamic");
      Status s = ApplyServerProperty(&probe, k, v);
      if (!s.ok()) return Status::Corruption(where + ": " + s.ToString());
    }
    (cluster_default ? d->loaded_defaults_ : d->loaded_mine_) = c;
    (cluster_default ? d->defaults_ : d->mine_) = std::move(c);
  }
  return d;
}

std::unique_ptr<DynamicBrokerConfig> DynamicBrokerConfig::OpenWith(
    const BrokerConfig& static_config, BrokerConfigStore* store) {
  return std::unique_ptr<DynamicBrokerConfig>(
      new DynamicBrokerConfig(static_config, nullptr, store));
}

DynamicBrokerConfig::Configs DynamicBrokerConfig::Accepted(const Configs& c,
                                                           bool cluster_default) const {
  Configs out;
  std::vector<std::string> dropped;
  BrokerConfig probe = static_;
  for (const auto& [k, v] : c) {
    if (IsDynamicKey(k) && ApplyServerProperty(&probe, k, v).ok()) {
      out[k] = v;
    } else {
      dropped.push_back(k + "=" + v);
    }
  }
  for (const std::string& d : dropped) {
    LogWarn(std::string("ignoring the stored ") +
            (cluster_default ? "cluster-default" : "broker") + " dynamic config " + d +
            " (not a dynamic config, or a value this node does not accept)");
  }
  return out;
}

Status DynamicBrokerConfig::Reload(MetadataStore* metadata) {
  // Loaded under mu_, so that of two reloads the later one reads the later state.
  std::lock_guard<std::mutex> lock(mu_);
  SILT_ASSIGN_OR_RETURN(Configs d, store_->Load(true));
  SILT_ASSIGN_OR_RETURN(Configs m, store_->Load(false));
  // Unchanged since the last look: nothing to take, and nothing to warn about again.
  if (d == loaded_defaults_ && m == loaded_mine_) return Status::OK();
  loaded_defaults_ = d;
  loaded_mine_ = m;
  d = Accepted(d, true);
  m = Accepted(m, false);
  if (d == defaults_ && m == mine_) return Status::OK();
  if (d != defaults_) LogInfo("cluster-default dynamic configs now " + Describe(d));
  if (m != mine_) LogInfo("broker dynamic configs now " + Describe(m));
  defaults_ = std::move(d);
  mine_ = std::move(m);
  return metadata->SetLogDefaults(Compose(defaults_, mine_).log_defaults);
}

DynamicBrokerConfig::Configs DynamicBrokerConfig::Get(bool cluster_default) const {
  std::lock_guard<std::mutex> lock(mu_);
  return cluster_default ? defaults_ : mine_;
}

BrokerConfig DynamicBrokerConfig::Effective() const {
  std::lock_guard<std::mutex> lock(mu_);
  return Compose(defaults_, mine_);
}

Status DynamicBrokerConfig::Replace(bool cluster_default, const Configs& next, bool validate_only,
                                    MetadataStore* metadata) {
  return Edit(
      cluster_default,
      [&next](Configs* c) {
        *c = next;
        return Status::OK();
      },
      validate_only, metadata);
}

Status DynamicBrokerConfig::Check(const Configs& next) const {
  BrokerConfig probe = static_;
  for (const auto& [k, v] : next) {
    if (!IsDynamicKey(k)) return Status::InvalidArgument("'" + k + "' is not a dynamic config");
    if (v.find('\n') != std::string::npos) {
      return Status::InvalidArgument("Invalid value for configuration " + k);
    }
    Status s = ApplyServerProperty(&probe, k, v);
    if (!s.ok()) {
      return Status::InvalidArgument("Invalid value " + v + " for configuration " + k + ": " +
                                     std::string(s.message()));
    }
  }
  return Status::OK();
}

Status DynamicBrokerConfig::Edit(bool cluster_default,
                                 const std::function<Status(Configs*)>& edit, bool validate_only,
                                 MetadataStore* metadata) {
  std::lock_guard<std::mutex> editing(edit_mu_);
  return EditLocked(cluster_default, edit, validate_only, metadata);
}

Status DynamicBrokerConfig::EditLocked(bool cluster_default,
                                       const std::function<Status(Configs*)>& edit,
                                       bool validate_only, MetadataStore* metadata) {
  // The stored set, not this object's copy: in cluster mode the image may be ahead of it.
  SILT_ASSIGN_OR_RETURN(const Configs current, store_->Load(cluster_default));
  Configs next = current;
  SILT_TRY(edit(&next));
  SILT_TRY(Check(next));
  if (validate_only) return Status::OK();
  if (next != current) SILT_TRY(store_->Store(cluster_default, current, next));
  return Reload(metadata);
}

}  // namespace silt::broker
