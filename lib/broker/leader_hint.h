// KIP-951: what a Produce (v10+) or Fetch (v12+) answer that turns a client away tells it of
// the partition's leader, so that it can go there without a Metadata round trip. Kafka fills
// the partition's tagged CurrentLeader (leader id and epoch) for NOT_LEADER_OR_FOLLOWER and
// FENCED_LEADER_EPOCH, and lists each leader so named in the response's tagged NodeEndpoints
// (Produce v10+, Fetch v16+).
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "broker/context.h"
#include "broker/metadata_store.h"

namespace silt::broker {

class Partition;

struct LeaderHint {
  int32_t leader_id = -1;     // -1: unknown
  int32_t leader_epoch = -1;  // -1: unknown
};

// True for the error codes whose answers carry a LeaderHint.
bool WantsLeaderHint(int16_t error_code);

// The leader of `topic`-`partition` as this node knows it: the replica's own view when `part`
// is a replica here (no leader while it leads with an expired lease: naming itself would send
// the client straight back), else the metadata store's placement.
LeaderHint CurrentLeader(BrokerContext& ctx, const std::string& topic, int32_t partition,
                         const Partition* part);

// The advertised endpoint of node `id` (Metadata's broker entry); nullopt when unknown.
std::optional<BrokerEndpoint> FindEndpoint(BrokerContext& ctx, int32_t id);

// Adds node `id`'s endpoint to `out` (a response's NodeEndpoints) unless it is there already
// or unknown. `Endpoint` is a generated NodeEndpoint {node_id, host, port, rack}.
template <typename Endpoint>
void AddNodeEndpoint(BrokerContext& ctx, int32_t id, std::vector<Endpoint>* out) {
  if (id < 0) return;
  if (std::any_of(out->begin(), out->end(), [id](const Endpoint& e) { return e.node_id == id; }))
    return;
  std::optional<BrokerEndpoint> b = FindEndpoint(ctx, id);
  if (!b) return;
  Endpoint e;
  e.node_id = id;
  e.host = b->host;
  e.port = b->port;
  out->push_back(std::move(e));  // rack: null (silt has no broker.rack)
}

}  // namespace silt::broker
