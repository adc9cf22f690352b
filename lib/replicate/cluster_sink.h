// The Sink of `silt replicate` into a cluster (`kafka://HOST:PORT[,...]` as DEST).
//
// Into a silt cluster (one that advertises SiltAppendBatches, protocol/messages.h) batches
// land at their own offsets, byte for byte: topics are created as mirror topics
// (silt.mirror=true: read-only for ordinary producers until Promote) with the source's
// partition count, and every Append is SiltAppendBatches at the partition leader, answered
// once the destination's high watermark passes it (acks=all), so Flush has nothing left to do.
// The checkpoint of each source is one record in the compacted topic `__silt_replicate`
// (key: the source id; value: the text layout below), written with acks=all.
//
// Into any other broker (Apache Kafka), or with OpenOptions::force_reproduce, the reproducing
// sink (reproducing_sink.h) is used instead.
//
// Checkpoint record value (UTF-8 text, one line per partition after the first):
//   silt-replicate-checkpoint 1\n
//   <topic> <partition> <source_next>\n ...
#pragma once

#include <memory>

#include "base/status.h"
#include "protocol/consumer_offsets.h"
#include "replicate/endpoint.h"

namespace silt::replicate {

// The topic holding the checkpoints of every source replicated into a cluster.
inline constexpr const char* kCheckpointTopic = protocol::kReplicateCheckpointTopic;

// Connects to the cluster `spec` names (kCluster). A broker serving SiltAppendBatches gets the
// offset-preserving sink; otherwise, or with `options.force_reproduce`, the reproducing one.
// IOError when no bootstrap broker answers.
Result<std::unique_ptr<Sink>> MakeClusterSink(const EndpointSpec& spec, const OpenOptions& options);

}  // namespace silt::replicate
