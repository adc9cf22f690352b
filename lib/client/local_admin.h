// The Admin interface (admin.h) on a data directory: topics through storage::DataDir, consumer
// groups through the data dir's __consumer_offsets (offsets::LocalOffsets).
#pragma once

#include <memory>

#include "client/admin.h"

namespace silt::storage {
class DataDir;
}

namespace silt::client {

// Takes ownership of `dir`. A read-only dir answers the queries; changes then fail with
// InvalidArgument ("open read-only"), except CommitOffsets, which needs no directory lock.
// Close() closes the dir (for a writable one: the clean-shutdown marker and its lock).
Result<std::unique_ptr<Admin>> NewLocalAdmin(std::unique_ptr<storage::DataDir> dir);

}  // namespace silt::client
