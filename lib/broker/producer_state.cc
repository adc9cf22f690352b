// Idempotent-producer sequence checks, and the table's snapshot files.
#include "broker/producer_state.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <vector>

#include "base/file.h"
#include "format/layout.h"
#include "format/producer_snapshot.h"

namespace silt::broker {
namespace {
bool InSequence(int32_t last_seq, int32_t first_seq) {
  return first_seq == (last_seq == std::numeric_limits<int32_t>::max() ? 0 : last_seq + 1);
}
}  // namespace

const ProducerEntry* ProducerStateTable::Find(ProducerId pid) const {
  auto it = producers_.find(pid);
  return it == producers_.end() ? nullptr : &it->second;
}

SequenceCheck ProducerStateTable::Check(ProducerId pid, int16_t epoch, int32_t first_seq,
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

void ProducerStateTable::Record(ProducerId pid, int16_t epoch, const ProducerBatch& batch) {
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
  ProducerEntry& e = producers_[ProducerId(h.producer_id)];
  if (h.producer_epoch < e.epoch) return;
  ProducerBatch b;
  b.first_seq = h.base_sequence;
  b.last_seq = h.last_sequence();
  b.base_offset = h.base_offset;
  b.last_offset = h.base_offset + h.last_offset_delta;
  b.append_time = h.log_append_time() ? h.max_timestamp : -1;
  b.max_timestamp = h.max_timestamp;
  Record(ProducerId(h.producer_id), h.producer_epoch, b);
}

std::string ProducerSnapshotFileName(Offset offset) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%0*lld", format::kSegmentNameDigits,
                static_cast<long long>(offset.value()));
  return std::string(buf) + format::kSnapshotSuffix;
}

Status ProducerStateTable::WriteSnapshot(const std::string& dir, Offset snapshot_offset) const {
  if (snapshot_offset.value() < 0)
    return Status::InvalidArgument("snapshot offset " + std::to_string(snapshot_offset.value()));
  // Producers in id order, so that equal tables give equal files.
  std::vector<ProducerId> pids;
  pids.reserve(producers_.size());
  for (const auto& [pid, e] : producers_) pids.push_back(pid);
  std::sort(pids.begin(), pids.end());
  std::vector<format::ProducerSnapshotEntry> entries;
  for (ProducerId pid : pids) {
    const ProducerEntry& e = producers_.at(pid);
    format::ProducerSnapshotEntry out;
    out.producer_id = pid.value();
    out.epoch = e.epoch;
    if (e.batches.empty()) entries.push_back(out);  // an epoch without a batch yet
    for (const ProducerBatch& b : e.batches) {
      out.last_sequence = b.last_seq;
      out.last_offset = b.last_offset;
      out.offset_delta = static_cast<int32_t>(b.last_offset - b.base_offset);
      out.timestamp = b.max_timestamp;
      entries.push_back(out);
    }
  }
  return WriteFileAtomic(JoinPath(dir, ProducerSnapshotFileName(snapshot_offset)),
                         format::EncodeProducerSnapshot(entries));
}

Result<ProducerStateTable> ProducerStateTable::LoadSnapshot(const std::string& path,
                                                            bool log_append_time) {
  SILT_ASSIGN_OR_RETURN(std::string data, ReadFile(path));
  std::vector<format::ProducerSnapshotEntry> entries;
  if (Status s = format::DecodeProducerSnapshot(data, &entries); !s.ok())
    return s.WithContext(path);
  ProducerStateTable t;
  for (size_t i = 0; i < entries.size(); ++i) {
    const format::ProducerSnapshotEntry& in = entries[i];
    const bool has_batch = in.last_offset >= 0;
    if (in.producer_id < 0 || in.epoch < 0 ||
        (has_batch && (in.last_sequence < 0 || in.offset_delta < 0 ||
                       in.offset_delta > in.last_offset)))
      return Status::Corruption(path + ": producer snapshot entry " + std::to_string(i) +
                                " holds impossible values");
    ProducerEntry& e = t.producers_[ProducerId(in.producer_id)];
    if (in.epoch != e.epoch) {
      e.epoch = in.epoch;
      e.batches.clear();
    }
    if (!has_batch) continue;
    ProducerBatch b;
    b.last_seq = in.last_sequence;
    // Sequences wrap at INT32_MAX (see BatchHeader::last_sequence).
    int64_t first = static_cast<int64_t>(in.last_sequence) - in.offset_delta;
    if (first < 0) first += static_cast<int64_t>(std::numeric_limits<int32_t>::max()) + 1;
    b.first_seq = static_cast<int32_t>(first);
    b.last_offset = in.last_offset;
    b.base_offset = in.last_offset - in.offset_delta;
    b.max_timestamp = in.timestamp;
    b.append_time = log_append_time ? in.timestamp : -1;
    e.batches.push_back(b);
    while (e.batches.size() > static_cast<size_t>(kProducerBatchesKept)) e.batches.pop_front();
  }
  return t;
}

}  // namespace silt::broker
