// The table of Kafka APIs silt speaks: one row per API key with the version range served and
// Kafka's first flexible version. Data only: the broker attaches a handler to each row by api
// key, and the ApiVersions answer is built from the same rows, so what is advertised and what
// is dispatched cannot drift apart.
#pragma once

#include <cstdint>
#include <span>

namespace silt::protocol {

// Kafka's api keys (ApiKeys.java / the "apiKey" of each message schema).
enum class ApiKey : int16_t {
  kProduce = 0,
  kFetch = 1,
  kListOffsets = 2,
  kMetadata = 3,
  kOffsetCommit = 8,
  kOffsetFetch = 9,
  kFindCoordinator = 10,
  kJoinGroup = 11,
  kHeartbeat = 12,
  kLeaveGroup = 13,
  kSyncGroup = 14,
  kDescribeGroups = 15,
  kListGroups = 16,
  kApiVersions = 18,
  kCreateTopics = 19,
  kDeleteTopics = 20,
  kDeleteRecords = 21,
  kInitProducerId = 22,
  kOffsetForLeaderEpoch = 23,
  kDescribeConfigs = 32,
  kAlterConfigs = 33,
  kDescribeLogDirs = 35,
  kCreatePartitions = 37,
  kDeleteGroups = 42,
  kElectLeaders = 43,
  kIncrementalAlterConfigs = 44,
  kAlterPartitionReassignments = 45,
  kListPartitionReassignments = 46,
  kOffsetDelete = 47,
  kDescribeQuorum = 55,
  kDescribeCluster = 60,
  kDescribeProducers = 61,
  // silt's own, far from Kafka's keys (see messages.h): the offset-preserving append.
  kSiltAppendBatches = 10000,
};

struct ApiInfo {
  ApiKey key;
  const char* name;                // Kafka's name, e.g. "Metadata"
  int16_t min_version;             // lowest version silt serves
  int16_t max_version;             // highest version silt serves
  int16_t first_flexible_version;  // Kafka's "flexibleVersions" start, even if > max_version
};

// Every supported API, ordered by api key.
std::span<const ApiInfo> SupportedApis();

// The row for `api_key`, or nullptr for an API silt does not serve.
const ApiInfo* FindApi(int16_t api_key);
inline const ApiInfo* FindApi(ApiKey key) { return FindApi(static_cast<int16_t>(key)); }

// Kafka's name for an api key ("Fetch"), or "Unknown" when not in the table.
const char* ApiName(int16_t api_key);

// True when `api_key` is in the table and min_version <= version <= max_version.
bool IsVersionSupported(int16_t api_key, int16_t version);

// True when `version` of `api_key` uses the flexible encoding (compact types, tagged fields).
// Answers for versions above max_version too, from Kafka's first flexible version, so a header
// of an unsupported newer version can still be parsed. Unknown api keys are not flexible.
bool IsFlexibleVersion(int16_t api_key, int16_t version);

// Request header version for a request: 2 for flexible versions, else 1.
// (Header v0 is only used by ControlledShutdown v0, which silt does not serve.)
int16_t RequestHeaderVersion(int16_t api_key, int16_t version);

// Response header version: 1 for flexible versions, else 0 — except ApiVersions, whose response
// always uses header v0 so a client can read it before knowing what the broker supports.
int16_t ResponseHeaderVersion(int16_t api_key, int16_t version);

}  // namespace silt::protocol
