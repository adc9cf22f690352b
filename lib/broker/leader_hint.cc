// KIP-951 leader hints for Produce and Fetch answers.
#include "broker/leader_hint.h"

#include "broker/partition.h"
#include "protocol/errors.h"

namespace silt::broker {

bool WantsLeaderHint(int16_t error_code) {
  return error_code == protocol::ToWire(protocol::ErrorCode::NOT_LEADER_OR_FOLLOWER) ||
         error_code == protocol::ToWire(protocol::ErrorCode::FENCED_LEADER_EPOCH);
}

LeaderHint CurrentLeader(BrokerContext& ctx, const std::string& topic, int32_t partition,
                         const Partition* part) {
  LeaderHint h;
  if (part != nullptr) {
    h.leader_epoch = part->leader_epoch().value();
    h.leader_id = part->leader().value();
    if (part->is_leader() && !part->serves_as_leader()) h.leader_id = -1;
    return h;
  }
  auto t = ctx.metadata.GetTopic(topic);
  if (!t.ok() || partition < 0 || static_cast<size_t>(partition) >= t->partitions.size()) return h;
  const PartitionAssignment& a = t->partitions[static_cast<size_t>(partition)];
  h.leader_id = a.leader.value();
  h.leader_epoch = a.leader_epoch.value();
  return h;
}

std::optional<BrokerEndpoint> FindEndpoint(BrokerContext& ctx, int32_t id) {
  std::vector<BrokerEndpoint> brokers = ctx.metadata.Brokers();
  // No list: this node alone, as Metadata answers on a single node.
  if (brokers.empty() && id == ctx.node.node_id.value()) {
    return BrokerEndpoint{ctx.node.node_id, ctx.node.advertised_host, ctx.node.advertised_port};
  }
  for (BrokerEndpoint& b : brokers) {
    if (b.id.value() == id) return std::move(b);
  }
  return std::nullopt;
}

}  // namespace silt::broker
