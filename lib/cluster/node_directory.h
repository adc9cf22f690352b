// A cluster node's data directory: what it records of the node (meta.properties) and the checks
// made before the node may start on it.
//
// meta.properties (Kafka's file) holds version=1, cluster.id and node.id; once the node's Raft
// directory exists, also silt.quorum.voter=true. From then on the Raft directory is the node's
// memory of its votes: a voter whose Raft directory is gone while meta.properties says it voted
// must not start under the same id (it could vote twice in one term).
#pragma once

#include <string>

#include "base/ids.h"
#include "base/status.h"

namespace silt::cluster {

// The Raft directory inside a data dir: `<data_dir>/silt-metadata-raft`. (Not Kafka's
// `__cluster_metadata-0`: a directory named like a partition would be taken for a topic copied
// from Kafka by the data dir.)
std::string RaftDirectory(const std::string& data_dir);

// Checks `data_dir` before a cluster node starts on it and returns the cluster id to use.
// InvalidArgument (naming the file and both values) when meta.properties records another node id
// or another cluster id than `cluster_id`, when neither it nor `cluster_id` gives a cluster id,
// or when it records a voter whose Raft directory is missing. A missing meta.properties is a new
// node: `cluster_id` is required.
Result<std::string> CheckNodeDirectory(const std::string& data_dir, NodeId node_id,
                                       const std::string& cluster_id);

// Records in meta.properties that this node is a voter with a Raft directory (after the
// directory was created). Keeps the file's other keys.
Status MarkVoter(const std::string& data_dir, NodeId node_id, const std::string& cluster_id);

}  // namespace silt::cluster
