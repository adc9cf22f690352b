// OffsetStore: groups in __consumer_offsets over an OffsetsPartitions (see store.h).
#include "offsets/store.h"

#include "base/coding.h"
#include "format/layout.h"

namespace silt::offsets {

Status OffsetStore::Prepare() {
  SILT_ASSIGN_OR_RETURN(int32_t n, partitions_->PartitionCount());
  if (n > 0) return Status::OK();
  return partitions_->CreateTopic(default_partitions_).status();
}

Result<int32_t> OffsetStore::PartitionOf(const std::string& group, bool create) {
  SILT_ASSIGN_OR_RETURN(int32_t n, partitions_->PartitionCount());
  if (n == 0) {
    if (!create) return -1;
    SILT_ASSIGN_OR_RETURN(n, partitions_->CreateTopic(default_partitions_));
    if (n <= 0) return Status::Corruption("__consumer_offsets has no partitions");
  }
  return protocol::OffsetsPartitionFor(group, n);
}

Status OffsetStore::Append(const std::string& group, const std::vector<Record>& records,
                           int64_t timestamp_ms, Appended* where) {
  if (records.empty()) return Status::OK();
  SILT_ASSIGN_OR_RETURN(int32_t p, PartitionOf(group, /*create=*/true));
  SILT_ASSIGN_OR_RETURN(std::string batch, EncodeBatch(records, timestamp_ms));
  Status s = partitions_->Append(p, &batch);
  if (!s.ok()) return s.WithContext("writing __consumer_offsets-" + std::to_string(p));
  if (where != nullptr) {
    // The log patched the base offset in place; the last offset is base + lastOffsetDelta.
    const char* b = batch.data();
    int64_t base = static_cast<int64_t>(DecodeBE64(b + format::kBaseOffsetOffset));
    int32_t delta = static_cast<int32_t>(DecodeBE32(b + format::kLastOffsetDeltaOffset));
    where->partition = p;
    where->last_offset = base + delta;
  }
  return Status::OK();
}

Status OffsetStore::ReplayPartition(int32_t partition, const RecordFn& fn) {
  SILT_ASSIGN_OR_RETURN(int32_t n, partitions_->PartitionCount());
  if (partition < 0 || partition >= n) return Status::OK();
  Status s = partitions_->Read(partition, [&fn](std::string_view batches) {
    return ForEachStoredRecord(batches, fn);
  });
  if (!s.ok()) return s.WithContext("reading __consumer_offsets-" + std::to_string(partition));
  return Status::OK();
}

Status OffsetStore::Replay(const RecordFn& fn) {
  SILT_ASSIGN_OR_RETURN(int32_t n, partitions_->PartitionCount());
  for (int32_t p = 0; p < n; ++p) {
    Status s = partitions_->Read(p, [&fn](std::string_view batches) {
      return ForEachStoredRecord(batches, fn);
    });
    if (!s.ok()) return s.WithContext("reading __consumer_offsets-" + std::to_string(p));
  }
  return Status::OK();
}

Result<GroupsView> OffsetStore::Load() {
  Replayer r;
  SILT_TRY(Replay([&r](std::string_view k, std::optional<std::string_view> v) { r.Apply(k, v); }));
  return r.groups();
}

Result<std::optional<GroupState>> OffsetStore::Group(const std::string& group) {
  SILT_ASSIGN_OR_RETURN(int32_t p, PartitionOf(group, /*create=*/false));
  if (p < 0) return std::optional<GroupState>();
  Replayer r;
  Status s = partitions_->Read(p, [&r](std::string_view batches) {
    return r.ApplyBatches(batches);
  });
  if (!s.ok()) return s.WithContext("reading __consumer_offsets-" + std::to_string(p));
  GroupsView all = r.groups();
  auto it = all.find(group);
  if (it == all.end()) return std::optional<GroupState>();
  return std::optional<GroupState>(std::move(it->second));
}

Status OffsetStore::Commit(const std::string& group, GroupOffsets offsets, int64_t now_ms) {
  if (group.empty()) return Status::InvalidArgument("group name is empty");
  for (auto& [topic, parts] : offsets) {
    if (topic.empty()) return Status::InvalidArgument("topic name is empty");
    for (auto& [p, c] : parts) {
      if (p < 0) return Status::InvalidArgument("partition " + std::to_string(p) + " of " + topic);
      if (c.commit_timestamp < 0) c.commit_timestamp = now_ms;
    }
  }
  return Append(group, CommitRecords(group, offsets), now_ms);
}

Status OffsetStore::DeleteGroup(const std::string& group, int64_t now_ms) {
  SILT_ASSIGN_OR_RETURN(std::optional<GroupState> g, Group(group));
  if (!g) return Status::NotFound("consumer group '" + group + "' does not exist");
  return Append(group, DeleteGroupRecords(group, *g), now_ms);
}

}  // namespace silt::offsets
