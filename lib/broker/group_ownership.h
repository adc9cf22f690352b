// GroupOwnership: in a cluster, keeps the group coordinator's groups in line with the leaders of
// `__consumer_offsets` in the metadata store. When this node becomes the leader of a partition
// (or leads it at a new leader epoch) the coordinator loads that partition's groups; when it
// stops leading it, the coordinator unloads them (GroupCoordinator::LoadPartition and
// UnloadPartition).
//
// It runs one thread that looks at the metadata when told it changed (Poke, which the cluster's
// metadata store calls through MetadataStore::SetChangeListener) and at least every
// `recheck_ms`, and loads partitions one after another (a load replays the partition's log).
// A load that fails is tried again at the next look.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>

#include "base/ids.h"

namespace silt::broker {

class GroupCoordinator;
class MetadataStore;

class GroupOwnership {
 public:
  // `metadata` and `groups` must outlive this object; `local` is this node.
  GroupOwnership(MetadataStore* metadata, GroupCoordinator* groups, NodeId local,
                 int64_t recheck_ms = 1000);
  ~GroupOwnership();  // Stop()

  void Start();
  // Asks for a look at the metadata now. Never blocks for long; any thread.
  void Poke();
  // Stops and joins the thread (a load in progress finishes first). Idempotent.
  void Stop();

  // Looks at the metadata once and loads or unloads what changed (the thread's work; tests).
  void Reconcile();

 private:
  void Loop();

  MetadataStore* metadata_;
  GroupCoordinator* groups_;
  const NodeId local_;
  const int64_t recheck_ms_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool poked_ = false;
  bool stopping_ = false;
  std::thread thread_;
  // Only the thread's (or Reconcile's caller's): the topic's partition count the coordinator
  // was told, and the partitions loaded with the leader epoch they were loaded at.
  int32_t count_ = 0;
  std::map<int32_t, LeaderEpoch> loaded_;
};

}  // namespace silt::broker
