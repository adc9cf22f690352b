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
#pragma once

#include <cstdint>
#include <deque>
#include <string_view>
#include <unordered_map>

#include "format/batch_header.h"

namespace silt::broker {

inline constexpr int kProducerBatchesKept = 5;

struct ProducerBatch {
  int32_t first_seq = 0;
  int32_t last_seq = 0;
  int64_t base_offset = 0;
  int64_t last_offset = 0;
  int64_t append_time = -1;  // log append time answered to a duplicate (-1: CreateTime)
};

struct ProducerEntry {
  int16_t epoch = -1;
  std::deque<ProducerBatch> batches;  // oldest first, at most kProducerBatchesKept
};

enum class SequenceCheck { kAppend, kDuplicate, kOutOfOrder, kFenced };

class ProducerStateTable {
 public:
  // Decides what to do with a batch from producer `pid`. On kDuplicate, *original is the batch
  // it duplicates.
  SequenceCheck Check(int64_t pid, int16_t epoch, int32_t first_seq, int32_t last_seq,
                      ProducerBatch* original) const;
  // Records a batch that was appended (after Check said kAppend).
  void Record(int64_t pid, int16_t epoch, const ProducerBatch& batch);
  // Replays a batch found in the log at start-up (no checks; a newer epoch resets the entry).
  void Replay(const format::BatchHeader& h);
  size_t size() const { return producers_.size(); }
  const ProducerEntry* Find(int64_t pid) const;

 private:
  std::unordered_map<int64_t, ProducerEntry> producers_;
};

}  // namespace silt::broker
