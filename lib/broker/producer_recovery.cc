// Rebuilding producer state from a snapshot and the log's tail (see producer_recovery.h).
#include "broker/producer_recovery.h"

#include <algorithm>

#include "base/file.h"
#include "format/batch_header.h"
#include "format/layout.h"
#include "storage/segment.h"

namespace silt::broker {

Result<std::vector<Offset>> ListProducerSnapshots(const std::string& dir) {
  SILT_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(dir));
  std::vector<Offset> out;
  for (const std::string& n : names) {
    int64_t o;
    if (storage::ParseSegmentFileName(n, format::kSnapshotSuffix, &o)) out.push_back(Offset(o));
  }
  std::sort(out.begin(), out.end());
  return out;
}

Status RebuildProducerState(const storage::PartitionLog& log, ProducerStateTable* table,
                            ProducerRecoveryReport* report) {
  ProducerRecoveryReport local;
  ProducerRecoveryReport& r = report ? *report : local;
  r = ProducerRecoveryReport{};
  const Offset end = log.log_end_offset();
  const bool log_append_time = log.config().log_append_time();
  *table = ProducerStateTable();

  // The newest snapshot that loads, at or below the log end.
  Offset from(0);
  SILT_ASSIGN_OR_RETURN(std::vector<Offset> snapshots, ListProducerSnapshots(log.dir()));
  for (auto it = snapshots.rbegin(); it != snapshots.rend(); ++it) {
    if (*it > end) continue;
    auto loaded = ProducerStateTable::LoadSnapshot(
        JoinPath(log.dir(), ProducerSnapshotFileName(*it)), log_append_time);
    if (!loaded.ok()) {
      r.ignored.push_back(loaded.status());
      continue;
    }
    *table = std::move(loaded).value();
    r.snapshot = *it;
    from = *it;
    break;
  }

  // Then the batch headers from there (or from the log start) to the log end.
  const Offset skip_below = from;  // batches already in the snapshot
  Offset next = std::max(from, log.log_start_offset());
  r.replayed_from = next;
  r.replayed_to = end;
  std::string hdr;
  while (next < end) {
    SILT_ASSIGN_OR_RETURN(storage::ReadResult read, log.Read(next, 16 << 20, end, true));
    if (read.slices.empty() || read.next_offset <= next) break;
    for (const storage::FileSlice& s : read.slices) {
      int64_t pos = s.position;
      const int64_t limit = s.position + s.length;
      while (pos + format::kBatchHeaderSize <= limit) {
        SILT_TRY(s.file->PRead(pos, format::kBatchHeaderSize, &hdr));
        if (hdr.size() < static_cast<size_t>(format::kBatchHeaderSize)) break;
        format::BatchHeader h = format::DecodeBatchHeader(hdr);
        if (h.size() < format::kBatchHeaderSize) break;
        ++r.batches_replayed;
        // The read starts at the batch holding `next`, which may begin below the snapshot.
        if (h.base() >= skip_below) table->Replay(h);
        pos += h.size();
      }
    }
    next = read.next_offset;
  }
  return Status::OK();
}

}  // namespace silt::broker
