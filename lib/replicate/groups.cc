#include "replicate/groups.h"

#include "client/admin.h"

namespace silt::replicate {

Result<bool> GroupHasMembers(client::Cluster* cluster, const std::string& group) {
  SILT_ASSIGN_OR_RETURN(client::GroupDescription d, client::DescribeGroup(cluster, group));
  return !d.members.empty();
}

Status CommitTranslatedOffsets(client::Cluster* cluster, const GroupOffsets& offsets,
                               const TranslateFn& translate) {
  client::CommittedOffsets commit;
  for (const GroupOffsets::Entry& e : offsets.offsets) {
    Offset o = e.offset;
    if (translate) {
      Result<Offset> t = translate(e.topic, e.partition, e.offset);
      if (!t.ok()) {
        if (t.status().code() == Status::Code::kNotFound) continue;
        return t.status().WithContext("group '" + offsets.group + "'");
      }
      o = *t;
    }
    commit[e.topic][e.partition] = o.value();
  }
  if (commit.empty()) return Status::OK();
  return client::CommitOffsetsStandalone(cluster, offsets.group, commit);
}

bool IsClusterSpecificConfig(const std::string& name) {
  static const char* const kNames[] = {
      "min.insync.replicas",
      "unclean.leader.election.enable",
      "leader.replication.throttled.replicas",
      "follower.replication.throttled.replicas",
      "message.downconversion.enable",
      "preallocate",
  };
  for (const char* n : kNames) {
    if (name == n) return true;
  }
  return name.rfind("confluent.", 0) == 0;
}

}  // namespace silt::replicate
