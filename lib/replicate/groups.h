// Group offsets and topic configs at a cluster destination, shared by the sinks that write to a
// cluster (reproducing_sink.h into Apache Kafka, cluster_sink.h into silt): standard Kafka
// requests only (DescribeGroups, OffsetCommit), so both kinds of broker accept them.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "base/ids.h"
#include "base/status.h"
#include "client/cluster.h"
#include "replicate/endpoint.h"

namespace silt::replicate {

// True when `group` has members at the cluster (DescribeGroups); a group the cluster does not
// know has none.
Result<bool> GroupHasMembers(client::Cluster* cluster, const std::string& group);

// The destination offset for a source offset of a partition; NotFound when it has not been
// copied yet (the entry is then left out of the commit).
using TranslateFn = std::function<Result<Offset>(const std::string& topic, int32_t partition,
                                                 Offset source)>;

// Commits `offsets` outside any generation (OffsetCommit with generation -1 and member ""),
// which a broker accepts only while the group has no members (Busy otherwise). Each offset goes
// through `translate` first (a null function: identity, for offset-preserving destinations);
// entries it answers NotFound for are left out, any other error stops the commit. Commits
// nothing (OK) when no entry is left. Metadata strings are not carried (Kafka's standalone
// commit of `group reset-offsets` has none either).
Status CommitTranslatedOffsets(client::Cluster* cluster, const GroupOffsets& offsets,
                               const TranslateFn& translate);

// True for a topic config that describes the destination cluster rather than the data
// (min.insync.replicas, unclean.leader.election.enable, replication throttles, ...): copying
// topic configs leaves these out, as MirrorMaker does.
bool IsClusterSpecificConfig(const std::string& name);

}  // namespace silt::replicate
