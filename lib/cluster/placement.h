// Replica placement for new partitions: leaders spread evenly over the unfenced brokers.
#pragma once

#include <vector>

#include "base/ids.h"
#include "base/status.h"
#include "cluster/metadata_image.h"

namespace silt::cluster {

// The replicas of `count` new partitions, leader first. Each leader is the unfenced broker that
// is the preferred leader (first replica) of the fewest partitions of the image so far
// (counting the ones placed by this call), ties to the lowest id; its followers are the next unfenced brokers in id order, wrapping, so that
// each partition has `replication_factor` distinct replicas. Busy when no broker is unfenced,
// InvalidArgument when `replication_factor` exceeds the unfenced brokers or is below 1.
Result<std::vector<std::vector<NodeId>>> PlaceReplicas(const MetadataImage& image, int32_t count,
                                                       int32_t replication_factor);

}  // namespace silt::cluster
