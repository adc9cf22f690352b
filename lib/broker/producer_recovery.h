// Rebuilding a partition's idempotent-producer table (broker/producer_state.h) at open or after
// a truncation: from the latest good producer-state snapshot at or below the log end, then the
// batch headers from that snapshot's offset to the log end; with no usable snapshot, every
// batch header from the log start.
//
// Reads only the log (and the snapshot files in its directory): it takes no broker lock, runs
// concurrently with appends (it stops at the log end it saw when it started) and is meant to
// run off the broker's main lock. The caller owns `table` and must not use it meanwhile.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/ids.h"
#include "base/status.h"
#include "broker/producer_state.h"
#include "storage/partition_log.h"

namespace silt::broker {

struct ProducerRecoveryReport {
  std::optional<Offset> snapshot;    // the snapshot loaded, if any
  std::vector<Status> ignored;       // damaged snapshots skipped (left in place), newest first
  Offset replayed_from;              // where the header replay started
  Offset replayed_to;                // the log end it stopped at
  int64_t batches_replayed = 0;      // batch headers read from the log
};

// Replaces *table with the state of `log` up to its log end. Snapshots above the log end are
// never used (storage deletes them; see PartitionLog::TruncateTo). An error reading the log
// is returned with *table unspecified.
Status RebuildProducerState(const storage::PartitionLog& log, ProducerStateTable* table,
                            ProducerRecoveryReport* report = nullptr);

// The offsets of the snapshot files in `dir`, ascending.
Result<std::vector<Offset>> ListProducerSnapshots(const std::string& dir);

}  // namespace silt::broker
