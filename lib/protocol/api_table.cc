// The supported-API table. See api_table.h.
#include "protocol/api_table.h"

#include <array>

namespace silt::protocol {

namespace {

// Version ranges: every version up to Kafka 3.9's maximum for each API (design.md's protocol
// scope). First flexible versions: the "flexibleVersions"
// of Kafka's message schemas (clients/src/main/resources/common/message/*Request.json).
constexpr std::array kApis = {
    //      key                         name                   min max flex
    ApiInfo{ApiKey::kProduce,           "Produce",             0, 11,  9},
    ApiInfo{ApiKey::kFetch,             "Fetch",               0, 17, 12},
    ApiInfo{ApiKey::kListOffsets,       "ListOffsets",         0,  9,  6},
    ApiInfo{ApiKey::kMetadata,          "Metadata",            0, 12,  9},
    ApiInfo{ApiKey::kOffsetCommit,      "OffsetCommit",        0,  9,  8},
    ApiInfo{ApiKey::kOffsetFetch,       "OffsetFetch",         0,  9,  6},
    ApiInfo{ApiKey::kFindCoordinator,   "FindCoordinator",     0,  6,  3},
    ApiInfo{ApiKey::kJoinGroup,         "JoinGroup",           0,  9,  6},
    ApiInfo{ApiKey::kHeartbeat,         "Heartbeat",           0,  4,  4},
    ApiInfo{ApiKey::kLeaveGroup,        "LeaveGroup",          0,  5,  4},
    ApiInfo{ApiKey::kSyncGroup,         "SyncGroup",           0,  5,  4},
    ApiInfo{ApiKey::kDescribeGroups,    "DescribeGroups",      0,  5,  5},
    ApiInfo{ApiKey::kListGroups,        "ListGroups",          0,  5,  3},
    ApiInfo{ApiKey::kApiVersions,       "ApiVersions",         0,  4,  3},
    ApiInfo{ApiKey::kCreateTopics,      "CreateTopics",        0,  7,  5},
    ApiInfo{ApiKey::kDeleteTopics,      "DeleteTopics",        0,  6,  4},
    ApiInfo{ApiKey::kDeleteRecords,     "DeleteRecords",       0,  2,  2},
    ApiInfo{ApiKey::kInitProducerId,    "InitProducerId",      0,  5,  2},
    // v4 only adds the flexible encoding.
    ApiInfo{ApiKey::kOffsetForLeaderEpoch, "OffsetForLeaderEpoch", 0,  4,  4},
    ApiInfo{ApiKey::kDescribeConfigs,   "DescribeConfigs",     0,  4,  4},
    ApiInfo{ApiKey::kAlterConfigs,      "AlterConfigs",        0,  2,  2},
    // v4 adds the volume's total and usable bytes.
    ApiInfo{ApiKey::kDescribeLogDirs,   "DescribeLogDirs",     0,  4,  2},
    ApiInfo{ApiKey::kCreatePartitions,  "CreatePartitions",    0,  3,  2},
    ApiInfo{ApiKey::kDeleteGroups,      "DeleteGroups",        0,  2,  2},
    // KIP-460: preferred (0) and unclean (1) elections, decided by the controller.
    ApiInfo{ApiKey::kElectLeaders,      "ElectLeaders",        0,  2,  2},
    // v1 only adds the flexible encoding, which the codec's field walk handles.
    ApiInfo{ApiKey::kIncrementalAlterConfigs, "IncrementalAlterConfigs", 0,  1,  1},
    // KIP-455: partition reassignment through the controller (lib/cluster/reassignment.h).
    ApiInfo{ApiKey::kAlterPartitionReassignments, "AlterPartitionReassignments", 0,  0,  0},
    ApiInfo{ApiKey::kListPartitionReassignments, "ListPartitionReassignments", 0,  0,  0},
    // KIP-496; never flexible (Kafka's first flexible version would be past its last).
    ApiInfo{ApiKey::kOffsetDelete,      "OffsetDelete",        0,  0, 32767},
    // KIP-595: the metadata quorum's state, answered by the controller. Flexible from v0; v2
    // adds directory ids and the controllers' listeners (KIP-853).
    ApiInfo{ApiKey::kDescribeQuorum,    "DescribeQuorum",      0,  2,  0},
    // KIP-700 and KIP-664, flexible from v0.
    ApiInfo{ApiKey::kDescribeCluster,   "DescribeCluster",     0,  1,  0},
    ApiInfo{ApiKey::kDescribeProducers, "DescribeProducers",   0,  0,  0},
    // silt's own (messages.h): `silt replicate`'s append at an expected offset. Not flexible.
    ApiInfo{ApiKey::kSiltAppendBatches, "SiltAppendBatches",   0,  0, 32767},
};

}  // namespace

std::span<const ApiInfo> SupportedApis() { return kApis; }

const ApiInfo* FindApi(int16_t api_key) {
  for (const ApiInfo& a : kApis) {
    if (static_cast<int16_t>(a.key) == api_key) return &a;
  }
  return nullptr;
}

const char* ApiName(int16_t api_key) {
  const ApiInfo* a = FindApi(api_key);
  return a ? a->name : "Unknown";
}

bool IsVersionSupported(int16_t api_key, int16_t version) {
  const ApiInfo* a = FindApi(api_key);
  return a != nullptr && version >= a->min_version && version <= a->max_version;
}

bool IsFlexibleVersion(int16_t api_key, int16_t version) {
  const ApiInfo* a = FindApi(api_key);
  return a != nullptr && version >= a->first_flexible_version;
}

int16_t RequestHeaderVersion(int16_t api_key, int16_t version) {
  return IsFlexibleVersion(api_key, version) ? 2 : 1;
}

int16_t ResponseHeaderVersion(int16_t api_key, int16_t version) {
  if (api_key == static_cast<int16_t>(ApiKey::kApiVersions)) return 0;
  return IsFlexibleVersion(api_key, version) ? 1 : 0;
}

}  // namespace silt::protocol
