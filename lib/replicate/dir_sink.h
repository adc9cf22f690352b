// A data dir as the destination of `silt replicate`.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "replicate/endpoint.h"

namespace silt::replicate {

// Opens (creating it when missing, but never its missing parents) the data dir at `path` and
// takes its lock, as `produce -d` does: Busy naming the holder when another process writes it.
// Batches land with PartitionLog::AppendWithOffsets at their own offsets, byte for byte; Flush
// makes the segment bytes appended since the last one durable (their files fdatasynced at
// once), which is all a checkpoint needs: a crash rescans them and rebuilds the indexes. The
// checkpoint of a source is `<path>/silt-replicate/<source-id>.checkpoint` (Kafka's offset
// checkpoint format: `topic partition next-source-offset` lines), replaced atomically. Group
// offsets go to the dir's __consumer_offsets (a data dir has no live members). The directory is
// closed cleanly (every log fsynced, the clean-shutdown marker) when the sink is destroyed,
// except with FsyncMode::kNever: then nothing is fsynced, no writeback is started, and the
// directory is left as a crash would leave it, for its next open to check what was written.
// DurableEnd is where a partition was last fsynced (by Flush, or as the open found it).
Result<std::unique_ptr<Sink>> OpenDirSink(const std::string& path,
                                          FsyncMode fsync = FsyncMode::kStep);

// The checkpoint file name of `source_id` (characters outside [A-Za-z0-9._-] as %XX).
std::string CheckpointFileName(const std::string& source_id);

}  // namespace silt::replicate
