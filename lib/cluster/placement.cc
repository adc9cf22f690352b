// Preferred leaders by least load, followers by id order.
#include "cluster/placement.h"

#include <map>

namespace silt::cluster {

Result<std::vector<std::vector<NodeId>>> PlaceReplicas(const MetadataImage& image, int32_t count,
                                                       int32_t replication_factor) {
  std::vector<NodeId> live;
  for (const auto& [id, b] : image.brokers()) {
    if (!b.fenced) live.push_back(b.id);
  }
  if (live.empty()) return Status::Busy("no broker has registered with the controller yet");
  if (replication_factor < 1) {
    return Status::InvalidArgument("replication factor must be at least 1");
  }
  if (static_cast<size_t>(replication_factor) > live.size()) {
    return Status::InvalidArgument("replication factor " + std::to_string(replication_factor) +
                                   " is larger than the number of available brokers (" +
                                   std::to_string(live.size()) + ")");
  }
  std::map<int32_t, int64_t> led;
  for (NodeId b : live) led[b.value()] = 0;
  // Preferred leaders (first replicas) are counted, not the leaders of the moment: a failover
  // must not steer new partitions away from a broker that gets its leaderships back.
  for (const auto& [tid, t] : image.topics()) {
    for (const auto& [p, part] : t.partitions) {
      if (part.replicas.empty()) continue;
      auto it = led.find(part.replicas[0].value());
      if (it != led.end()) ++it->second;
    }
  }
  std::vector<std::vector<NodeId>> out;
  for (int32_t i = 0; i < count; ++i) {
    size_t best = 0;
    for (size_t k = 1; k < live.size(); ++k) {
      if (led[live[k].value()] < led[live[best].value()]) best = k;
    }
    ++led[live[best].value()];
    std::vector<NodeId> replicas;
    for (int32_t r = 0; r < replication_factor; ++r)
      replicas.push_back(live[(best + r) % live.size()]);
    out.push_back(std::move(replicas));
  }
  return out;
}

}  // namespace silt::cluster
