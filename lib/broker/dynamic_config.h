// Broker configs changed at run time: AlterConfigs and IncrementalAlterConfigs on BROKER
// resources, for this node (its id) or for every broker (the cluster default, an empty name).
//
// Which keys: those of Kafka's dynamically updatable broker configs that silt acts on at once,
// the log.* defaults of topic configs (Kafka's DynamicLogConfig: log.segment.bytes,
// log.roll.ms|hours, log.retention.ms|minutes|hours|bytes, log.flush.interval.messages|ms,
// log.index.interval.bytes, log.index.size.max.bytes, log.message.timestamp.type,
// log.cleanup.policy, log.cleaner.delete.retention.ms, compression.type, min.insync.replicas).
// Every other key is refused as Kafka refuses its read-only ones.
//
// Precedence, as Kafka's: this node's dynamic value, then the cluster default's, then the
// static config (server.properties, --set), then the built-in default. A change is applied to
// every topic without its own override at once (live partitions included).
//
// Where they are kept is a BrokerConfigStore. A single node keeps them in
// <data dir>/silt-broker-configs/{default,<node id>}.properties (written atomically), read
// again at start-up. In cluster mode they are ConfigRecords of resource type BROKER in the
// metadata log (name "" for the default, the node id for one node; Kafka KRaft's way): a
// change is proposed to the controller, and every node takes the default and its own entries
// from its image whenever it reconciles one (Reload), so after a restart too, from the
// replayed log or snapshot. Every node then shows the same cluster default.
//
// Thread-safe.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "base/status.h"
#include "broker/config.h"

namespace silt::broker {

class MetadataStore;

// Where the dynamic configs of this node are kept: files in the data dir (a single node) or the
// cluster's metadata log (ClusterMode::broker_configs()). Thread-safe.
class BrokerConfigStore {
 public:
  using Configs = std::map<std::string, std::string>;
  virtual ~BrokerConfigStore() = default;
  // The stored set of the cluster default (`cluster_default`) or of this node; empty when none.
  virtual Result<Configs> Load(bool cluster_default) = 0;
  // Stores `next` as the scope's whole set, where `current` is what Load gave (so only the keys
  // that differ need writing). Once it returns OK, Load gives `next` or a later change.
  virtual Status Store(bool cluster_default, const Configs& current, const Configs& next) = 0;
};

class DynamicBrokerConfig {
 public:
  using Configs = BrokerConfigStore::Configs;

  // True for a key this class accepts.
  static bool IsDynamicKey(const std::string& key);

  // Reads the stored configs of `static_config.data_dir` (none when the files are missing).
  // Corruption when a stored file cannot be parsed or holds a value no longer accepted.
  static Result<std::unique_ptr<DynamicBrokerConfig>> Open(const BrokerConfig& static_config);
  // Cluster mode: the configs are kept in `store` (which outlives the result). Nothing is read
  // yet (the metadata log may still be replaying): Reload() takes them once it is.
  static std::unique_ptr<DynamicBrokerConfig> OpenWith(const BrokerConfig& static_config,
                                                       BrokerConfigStore* store);

  // Takes the stored sets again (cluster mode: after each new metadata image) and, when they
  // changed, hands the new topic defaults to `metadata`. A stored key that is not dynamic, or a
  // value no longer accepted, is left out with a warning. Never blocks on a change in flight.
  Status Reload(MetadataStore* metadata);

  // The dynamic configs of the cluster default (`cluster_default`) or of this node.
  Configs Get(bool cluster_default) const;
  // The static config with every dynamic value applied in precedence order.
  BrokerConfig Effective() const;

  // Replaces the whole set of one scope with `next` (every key must be dynamic): checks the
  // values (InvalidArgument naming the key), then, unless `validate_only`, stores them and
  // hands the new topic defaults to `metadata`. In cluster mode it returns once this node's
  // image holds the change (the other nodes apply it when they see it).
  Status Replace(bool cluster_default, const Configs& next, bool validate_only,
                 MetadataStore* metadata);
  // Replace() of the set `edit` makes of the scope's current (stored) one, as one step:
  // concurrent edits through this object do not lose each other's keys, nor, in cluster mode,
  // edits of other keys through other nodes (only the keys that change are written). An error
  // from `edit` is returned as it is.
  Status Edit(bool cluster_default, const std::function<Status(Configs*)>& edit,
              bool validate_only, MetadataStore* metadata);

 private:
  DynamicBrokerConfig(BrokerConfig static_config, std::unique_ptr<BrokerConfigStore> owned,
                      BrokerConfigStore* store)
      : static_(std::move(static_config)), owned_(std::move(owned)), store_(store) {}
  BrokerConfig Compose(const Configs& defaults, const Configs& mine) const;
  // Checks `next` as Replace() does.
  Status Check(const Configs& next) const;
  // `c` without the entries the stored set may not hold (logged); requires mu_.
  Configs Accepted(const Configs& c, bool cluster_default) const;
  Status EditLocked(bool cluster_default, const std::function<Status(Configs*)>& edit,
                    bool validate_only, MetadataStore* metadata);

  const BrokerConfig static_;
  const std::unique_ptr<BrokerConfigStore> owned_;  // the data dir's files, or null
  BrokerConfigStore* const store_;
  std::mutex edit_mu_;  // one change at a time (held while it is stored; before mu_)
  mutable std::mutex mu_;  // the sets below (never held while storing)
  Configs defaults_;  // the cluster default's (resource name "")
  Configs mine_;      // this node's
  Configs loaded_defaults_, loaded_mine_;  // the sets as last loaded, before Accepted()
};

}  // namespace silt::broker
