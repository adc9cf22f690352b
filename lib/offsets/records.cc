// Commit and delete changes as __consumer_offsets records, and their replay (see records.h).
#include "offsets/records.h"

#include "format/record_batch.h"

namespace silt::offsets {

std::vector<Record> CommitRecords(const std::string& group, const GroupOffsets& offsets) {
  std::vector<Record> out;
  for (const auto& [topic, parts] : offsets) {
    for (const auto& [p, c] : parts) {
      protocol::OffsetCommitValue v;
      v.version = 3;
      v.offset = c.offset;
      v.leader_epoch = c.leader_epoch;
      v.metadata = c.metadata;
      v.commit_timestamp = c.commit_timestamp;
      out.push_back({protocol::EncodeOffsetCommitKey({group, topic, p}),
                     protocol::EncodeOffsetCommitValue(v)});
    }
  }
  return out;
}

std::vector<Record> DeleteGroupRecords(const std::string& group, const GroupState& state) {
  std::vector<Record> out;
  for (const auto& [topic, parts] : state.offsets)
    for (const auto& [p, c] : parts)
      out.push_back({protocol::EncodeOffsetCommitKey({group, topic, p}), std::nullopt});
  if (state.metadata) out.push_back({protocol::EncodeGroupMetadataKey({group}), std::nullopt});
  return out;
}

Result<std::string> EncodeBatch(const std::vector<Record>& records, int64_t timestamp_ms) {
  if (records.empty()) return Status::InvalidArgument("a __consumer_offsets batch needs records");
  format::RecordBatchBuilder builder(format::RecordBatchBuilder::Options{});
  for (const Record& r : records) {
    builder.Add(std::string_view(r.key),
                r.value ? std::optional<std::string_view>(*r.value) : std::nullopt, timestamp_ms);
  }
  return builder.Finish();
}

Status ForEachStoredRecord(std::string_view bytes, const RecordFn& fn) {
  while (!bytes.empty()) {
    SILT_ASSIGN_OR_RETURN(format::RecordBatchView batch, format::RecordBatchView::Parse(bytes));
    bytes.remove_prefix(batch.bytes().size());
    if (batch.header().control()) continue;
    SILT_TRY(batch.ForEachRecord([&](const format::RecordView& rec) {
      if (rec.key_null) return true;
      fn(rec.key, rec.value_null ? std::nullopt : std::optional<std::string_view>(rec.value));
      return true;
    }));
  }
  return Status::OK();
}

void Replayer::Apply(std::string_view key, std::optional<std::string_view> value) {
  auto k = protocol::DecodeConsumerOffsetsKey(key);
  if (!k.ok()) {
    ++skipped_;
    return;
  }
  using Kind = protocol::ConsumerOffsetsKey::Kind;
  if (k->kind == Kind::kOffsetCommit) {
    const protocol::OffsetCommitKey& ok = k->offset;
    if (!value) {
      auto g = groups_.find(ok.group);
      if (g == groups_.end()) return;
      auto t = g->second.offsets.find(ok.topic);
      if (t == g->second.offsets.end()) return;
      t->second.erase(ok.partition);
      if (t->second.empty()) g->second.offsets.erase(t);
      return;
    }
    auto v = protocol::DecodeOffsetCommitValue(*value);
    if (!v.ok()) {
      ++skipped_;
      return;
    }
    groups_[ok.group].offsets[ok.topic][ok.partition] =
        Committed{v->offset, v->leader_epoch, v->metadata, v->commit_timestamp,
                  v->expire_timestamp};
  } else if (k->kind == Kind::kGroupMetadata) {
    if (!value) {
      auto g = groups_.find(k->metadata.group);
      if (g != groups_.end()) g->second.metadata.reset();
      return;
    }
    auto v = protocol::DecodeGroupMetadataValue(*value);
    if (!v.ok()) {
      ++skipped_;
      return;
    }
    groups_[k->metadata.group].metadata = std::move(v).value();
  }
  // Kind::kOther: records of the newer group protocol, which silt does not keep.
}

Status Replayer::ApplyBatches(std::string_view bytes) {
  return ForEachStoredRecord(bytes, [this](std::string_view k, std::optional<std::string_view> v) {
    Apply(k, v);
  });
}

GroupsView Replayer::groups() const {
  GroupsView out;
  for (const auto& [name, g] : groups_)
    if (!g.empty()) out.emplace(name, g);
  return out;
}

}  // namespace silt::offsets
