// Kafka's producer-state snapshot, `<20-digit offset>.snapshot` in a partition directory
// (ProducerStateManager's snapshot schema, version 1): the idempotent producers' state after
// every batch below that offset, so that recovery replays only the batches from it on.
//
// Layout, big-endian, no padding:
//
//   version: int16                       = 1
//   crc: uint32                          CRC-32C (Castagnoli) of every byte after this field
//   producer_entries: int32 count, then count entries of 46 bytes:
//     producer_id: int64
//     epoch: int16                       the producer's current epoch
//     last_sequence: int32               of the batch below
//     last_offset: int64                 the batch's last offset (-1: the entry has no batch)
//     offset_delta: int32                last offset - base offset (= last - first sequence)
//     timestamp: int64                   the batch's max timestamp (Kafka expires producers by it)
//     coordinator_epoch: int32           -1 (silt writes no transaction markers)
//     current_txn_first_offset: int64    -1 (no open transaction)
//
// Kafka writes one entry per producer, its last batch. silt writes one entry per batch it
// remembers (up to five per producer, oldest first), so that retries of any of them are still
// recognised after a restart; Kafka reading such a file keeps the last entry of each producer,
// which is the one it would have written itself.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace silt::format {

inline constexpr int16_t kProducerSnapshotVersion = 1;
inline constexpr int kSnapshotVersionOffset = 0;
inline constexpr int kSnapshotCrcOffset = kSnapshotVersionOffset + 2;
inline constexpr int kSnapshotEntriesOffset = kSnapshotCrcOffset + 4;  // the CRC covers from here
inline constexpr int kSnapshotEntrySize = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8;
static_assert(kSnapshotEntriesOffset == 6 && kSnapshotEntrySize == 46);

struct ProducerSnapshotEntry {
  int64_t producer_id = -1;
  int16_t epoch = -1;
  int32_t last_sequence = -1;
  int64_t last_offset = -1;
  int32_t offset_delta = 0;
  int64_t timestamp = -1;
  int32_t coordinator_epoch = -1;
  int64_t current_txn_first_offset = -1;
  bool operator==(const ProducerSnapshotEntry&) const = default;
};

// The file's bytes for `entries`, in the given order.
std::string EncodeProducerSnapshot(const std::vector<ProducerSnapshotEntry>& entries);
// Parses a whole file. Corruption (saying what is wrong) for an unknown version, a CRC that
// does not match, or a length that is not the header plus count whole entries.
Status DecodeProducerSnapshot(std::string_view data, std::vector<ProducerSnapshotEntry>* out);

}  // namespace silt::format
