// What a request handler is given: the broker's parts, each behind its own interface, instead
// of the whole broker. In a cluster the same handlers get the cluster's implementations.
#pragma once

#include <atomic>

#include "broker/config.h"
#include "broker/metadata_store.h"
#include "broker/node.h"
#include "broker/partition_manager.h"
#include "broker/producer_ids.h"

namespace silt::broker {

class DynamicBrokerConfig;
class FetchSessionCache;
class GroupCoordinator;

struct BrokerContext {
  const BrokerConfig& config;
  const NodeIdentity& node;
  MetadataStore& metadata;
  PartitionManager& partitions;
  ProducerIdAllocator& producer_ids;
  GroupCoordinator& groups;
  // Set when shutting down: delayed operations answer at once.
  const std::atomic<bool>& stopping;
  // Single node: the broker configs AlterConfigs may change (nullptr in cluster mode).
  DynamicBrokerConfig* dynamic_config = nullptr;
  // Incremental fetch sessions (nullptr: none are made).
  FetchSessionCache* fetch_sessions = nullptr;
};

}  // namespace silt::broker
