// A cluster (any Kafka-protocol brokers) as the source of `silt replicate`.
#pragma once

#include <memory>

#include "base/status.h"
#include "replicate/endpoint.h"

namespace silt::replicate {

// Connects to the first reachable broker of spec.bootstrap. Batches are fetched raw (Fetch,
// read_uncommitted) from each partition's leader and never past its high watermark, so only
// committed records are copied; bounds and times come from ListOffsets, groups from ListGroups
// and OffsetFetch, topic configs from DescribeConfigs (overrides only). Batches older than
// RecordBatch v2 are refused (Unsupported): they cannot be copied byte for byte.
Result<std::unique_ptr<Source>> OpenClusterSource(const EndpointSpec& spec,
                                                  const OpenOptions& options);

}  // namespace silt::replicate
