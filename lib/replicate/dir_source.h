// A data dir as the source of `silt replicate`.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "replicate/endpoint.h"

namespace silt::replicate {

// Opens the data dir at `path` read-only (no lock: it may belong to a running broker or
// `produce`). A partition's end is its log end, or, where the dir holds a replica's
// `replication-offset-checkpoint`, the high watermark checkpointed there (records past it may
// never have been committed), as `consume -d` reads it. A partition that has grown since it
// was opened (another process appending) is reopened when a read reaches its known end, so
// `--follow` sees new records; new topics and partitions are seen by the next ListTopics.
// NotFound when `path` is not a directory.
Result<std::unique_ptr<Source>> OpenDirSource(const std::string& path);

}  // namespace silt::replicate
