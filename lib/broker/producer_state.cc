// Idempotent-producer sequence checks.
#include "broker/producer_state.h"

#include <limits>

namespace silt::broker {
namespace {
bool InSequence(int32_t last_seq, int32_t first_seq) {
  return first_seq == (last_seq == std::numeric_limits<int32_t>::max() ? 0 : last_seq + 1);
}
}  // namespace

const ProducerEntry* ProducerStateTable::Find(int64_t pid) const {
  auto it = producers_.find(pid);
  return it == producers_.end() ? nullptr : &it->second;
}

SequenceCheck ProducerStateTable::Check(int64_t pid, int16_t epoch, int32_t first_seq,
                                        int32_t last_seq, ProducerBatch* original) const {
  const ProducerEntry* e = Find(pid);
  if (e == nullptr || e->epoch < 0) return SequenceCheck::kAppend;
  if (epoch < e->epoch) return SequenceCheck::kFenced;
  if (epoch > e->epoch) return first_seq == 0 ? SequenceCheck::kAppend : SequenceCheck::kOutOfOrder;
  for (const ProducerBatch& b : e->batches) {
    if (b.first_seq == first_seq && b.last_seq == last_seq) {
      if (original) *original = b;
      return SequenceCheck::kDuplicate;
    }
  }
  if (e->batches.empty()) return SequenceCheck::kAppend;
  return InSequence(e->batches.back().last_seq, first_seq) ? SequenceCheck::kAppend
                                                           : SequenceCheck::kOutOfOrder;
}

void ProducerStateTable::Record(int64_t pid, int16_t epoch, const ProducerBatch& batch) {
  ProducerEntry& e = producers_[pid];
  if (epoch != e.epoch) {
    e.epoch = epoch;
    e.batches.clear();
  }
  e.batches.push_back(batch);
  while (e.batches.size() > static_cast<size_t>(kProducerBatchesKept)) e.batches.pop_front();
}

void ProducerStateTable::Replay(const format::BatchHeader& h) {
  if (h.producer_id < 0 || h.base_sequence < 0 || h.control()) return;
  ProducerEntry& e = producers_[h.producer_id];
  if (h.producer_epoch < e.epoch) return;
  ProducerBatch b;
  b.first_seq = h.base_sequence;
  b.last_seq = h.last_sequence();
  b.base_offset = h.base_offset;
  b.last_offset = h.base_offset + h.last_offset_delta;
  b.append_time = h.log_append_time() ? h.max_timestamp : -1;
  Record(h.producer_id, h.producer_epoch, b);
}

}  // namespace silt::broker
