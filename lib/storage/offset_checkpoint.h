// Kafka's offset checkpoint files, one per data dir: a text file of
//
//   0                       version
//   <count>                 number of lines that follow
//   <topic> <partition> <offset>
//
// The data dir keeps its recovery points and log starts in this format (data_dir.h); the broker
// keeps each replica's high watermark in `replication-offset-checkpoint`, as Kafka does: a
// restart hint for the high watermark of a replica (which learns the real one from its leader),
// and the bound of what `silt consume -d` reads from a replica's data dir.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "base/status.h"

namespace silt::storage {

inline constexpr const char* kReplicationCheckpointFile = "replication-offset-checkpoint";

// (topic, partition) -> offset.
using OffsetCheckpointMap = std::map<std::pair<std::string, int32_t>, int64_t>;

// Reads a checkpoint file. NotFound when it does not exist; Corruption (naming the file) when it
// is not a version-0 checkpoint with exactly <count> well-formed lines (partition >= 0,
// offset >= 0).
Result<OffsetCheckpointMap> ReadOffsetCheckpoint(const std::string& path);
// Writes `entries` as a checkpoint file, atomically (temp file, fsync, rename, directory
// fsync): a crash leaves the old file or the new one.
Status WriteOffsetCheckpoint(const std::string& path, const OffsetCheckpointMap& entries);

}  // namespace silt::storage
