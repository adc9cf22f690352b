// meta.properties checks for a cluster node.
#include "cluster/node_directory.h"

#include "base/file.h"
#include "base/properties.h"

namespace silt::cluster {
namespace {

constexpr const char* kMetaFile = "meta.properties";
constexpr const char* kVoterKey = "silt.quorum.voter";

}  // namespace

std::string RaftDirectory(const std::string& data_dir) {
  return JoinPath(data_dir, "silt-metadata-raft");
}

Result<std::string> CheckNodeDirectory(const std::string& data_dir, NodeId node_id,
                                       const std::string& cluster_id) {
  const std::string path = JoinPath(data_dir, kMetaFile);
  if (!PathExists(path)) {
    if (cluster_id.empty()) {
      return Status::InvalidArgument(
          "a new cluster node needs a cluster id (--cluster-id or "
          "cluster.id), the same on every node");
    }
    if (IsDirectory(RaftDirectory(data_dir))) {
      return Status::InvalidArgument(RaftDirectory(data_dir) + " exists but " + path +
                                     " does not: this is not a data dir silt made for a node");
    }
    return cluster_id;
  }
  SILT_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  auto meta = ParseProperties(text);
  const std::string stored_node = meta.count("node.id") ? meta["node.id"] : "";
  if (stored_node != std::to_string(node_id.value())) {
    return Status::InvalidArgument(path + " belongs to node " +
                                   (stored_node.empty() ? "(none)" : stored_node) + ", not node " +
                                   std::to_string(node_id.value()));
  }
  const std::string stored = meta.count("cluster.id") ? meta["cluster.id"] : "";
  if (!cluster_id.empty() && !stored.empty() && stored != cluster_id) {
    return Status::InvalidArgument("cluster id " + cluster_id + " does not match " + stored +
                                   " recorded in " + path);
  }
  std::string effective = stored.empty() ? cluster_id : stored;
  if (effective.empty()) {
    return Status::InvalidArgument(path + " records no cluster.id: give --cluster-id");
  }
  if (meta.count(kVoterKey) && meta[kVoterKey] == "true" && !IsDirectory(RaftDirectory(data_dir))) {
    return Status::InvalidArgument(
        "node " + std::to_string(node_id.value()) + " was a voter but its Raft directory " +
        RaftDirectory(data_dir) +
        " is missing: a voter that lost its votes must not vote again under the same id (to "
        "replace the node, start it on an empty data dir; see silt-serve(1))");
  }
  return effective;
}

Status MarkVoter(const std::string& data_dir, NodeId node_id, const std::string& cluster_id) {
  const std::string path = JoinPath(data_dir, kMetaFile);
  Properties meta;
  if (PathExists(path)) {
    SILT_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
    meta = ParseProperties(text);
    if (meta.count(kVoterKey) && meta[kVoterKey] == "true") return Status::OK();
  }
  meta["version"] = "1";
  meta["cluster.id"] = cluster_id;
  meta["node.id"] = std::to_string(node_id.value());
  meta[kVoterKey] = "true";
  SILT_ASSIGN_OR_RETURN(std::string text, FormatProperties(meta, "silt broker identity"));
  return WriteFileAtomic(path, text);
}

}  // namespace silt::cluster
