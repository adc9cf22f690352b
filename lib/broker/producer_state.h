// Idempotent-producer bookkeeping for one partition: for each producer id, its epoch and the
// sequence ranges of its last five appended batches (Kafka keeps five because a producer has at
// most five requests in flight per partition).
//
// Rules (Kafka's):
//   - a batch whose (first seq, last seq) matches one of the last five is a retried duplicate:
//     it is not appended and is answered with no error and the ORIGINAL base offset;
//   - otherwise its first sequence must follow the last one (with wrap-around at INT32_MAX);
//     a gap or a step back is OUT_OF_ORDER_SEQUENCE_NUMBER;
//   - a newer epoch must start at sequence 0; an older epoch is fenced (INVALID_PRODUCER_EPOCH);
//   - a producer the partition has no state for (new, or expired by retention) may start at any
//     sequence;
//   - a rejected batch never changes the state.
//
// The table survives restarts in Kafka's producer-state snapshot files, `<20-digit
// offset>.snapshot` in the partition directory (layout in format/producer_snapshot.h): the
// state after every batch below that offset. broker/producer_recovery.h rebuilds a table from
// the latest good snapshot plus the batches after it.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/ids.h"
#include "base/status.h"
#include "format/batch_header.h"

namespace silt::broker {

inline constexpr int kProducerBatchesKept = 5;

struct ProducerBatch {
  int32_t first_seq = 0;
  int32_t last_seq = 0;
  int64_t base_offset = 0;
  int64_t last_offset = 0;
  int64_t append_time = -1;  // log append time answered to a duplicate (-1: CreateTime)
  int64_t max_timestamp = -1;  // the batch's max timestamp (the snapshot's `timestamp`)
  bool operator==(const ProducerBatch&) const = default;
};

struct ProducerEntry {
  int16_t epoch = -1;
  std::deque<ProducerBatch> batches;  // oldest first, at most kProducerBatchesKept
  bool operator==(const ProducerEntry&) const = default;
};

// "00000000000000000042.snapshot" for 42.
std::string ProducerSnapshotFileName(Offset offset);

enum class SequenceCheck { kAppend, kDuplicate, kOutOfOrder, kFenced };

class ProducerStateTable {
 public:
  // Decides what to do with a batch from producer `pid`. On kDuplicate, *original is the batch
  // it duplicates.
  SequenceCheck Check(ProducerId pid, int16_t epoch, int32_t first_seq, int32_t last_seq,
                      ProducerBatch* original) const;
  // Records a batch that was appended (after Check said kAppend).
  void Record(ProducerId pid, int16_t epoch, const ProducerBatch& batch);
  // Replays a batch found in the log at start-up (no checks; a newer epoch resets the entry).
  void Replay(const format::BatchHeader& h);
  size_t size() const { return producers_.size(); }
  const ProducerEntry* Find(ProducerId pid) const;
  // Calls fn(pid, entry) for every producer, in no particular order.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (const auto& [pid, e] : producers_) fn(pid, e);
  }
  bool operator==(const ProducerStateTable&) const = default;

  // Writes the table as the snapshot `<dir>/ProducerSnapshotFileName(snapshot_offset)`, where
  // `dir` is the partition directory and the table holds exactly the state after every batch
  // below `snapshot_offset`. Atomic (temp file, fsync, rename, directory fsync): a crash
  // leaves the old file or the new one, never a part.
  Status WriteSnapshot(const std::string& dir, Offset snapshot_offset) const;
  // Reads a snapshot file. Corruption when it is damaged in any way (version, CRC, length, or
  // values no writer produces): such a file must not be trusted. With `log_append_time` (the
  // topic's message.timestamp.type), duplicates of the loaded batches are answered with their
  // timestamp as log append time, as they were before the restart.
  static Result<ProducerStateTable> LoadSnapshot(const std::string& path,
                                                 bool log_append_time = false);

 private:
  std::unordered_map<ProducerId, ProducerEntry> producers_;
};

}  // namespace silt::broker
