// Durable storage for the group coordinator: the __consumer_offsets topic and a memory stand-in.
#include "broker/offset_store.h"

#include "base/clock.h"
#include "broker/metadata_store.h"
#include "broker/partition_manager.h"
#include "format/record_batch.h"
#include "protocol/consumer_offsets.h"

namespace silt::broker {

// ---- MemoryOffsetLog --------------------------------------------------------------------

Status MemoryOffsetLog::Append(const std::string& group, const std::vector<StoredRecord>& records) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fail_next_) {
    Status s = *fail_next_;
    fail_next_.reset();
    return s;
  }
  records_.insert(records_.end(), records.begin(), records.end());
  return Status::OK();
}

Status MemoryOffsetLog::Replay(const ReplayFn& fn) {
  std::vector<StoredRecord> copy = records();
  for (const StoredRecord& r : copy) {
    fn(r.key, r.value ? std::optional<std::string_view>(*r.value) : std::nullopt);
  }
  return Status::OK();
}

std::vector<StoredRecord> MemoryOffsetLog::records() const {
  std::lock_guard<std::mutex> lock(mu_);
  return records_;
}

void MemoryOffsetLog::FailNextAppend(Status s) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_next_ = std::move(s);
}

// ---- ConsumerOffsetsTopic ---------------------------------------------------------------

Result<int32_t> ConsumerOffsetsTopic::PartitionCount(bool create) {
  auto t = metadata_->GetTopic(protocol::kConsumerOffsetsTopic);
  if (t.ok()) return t->partition_count;
  if (!t.status().IsNotFound()) return t.status();
  if (!create) return 0;
  auto created = metadata_->CreateTopic(protocol::kConsumerOffsetsTopic, count_,
                                        {{"cleanup.policy", "compact"}});
  if (created.ok()) return created->partition_count;
  if (created.status().code() != Status::Code::kAlreadyExists) return created.status();
  // Created meanwhile by another thread.
  SILT_ASSIGN_OR_RETURN(TopicMetadata t2, metadata_->GetTopic(protocol::kConsumerOffsetsTopic));
  return t2.partition_count;
}

Status ConsumerOffsetsTopic::Append(const std::string& group,
                                    const std::vector<StoredRecord>& records) {
  if (records.empty()) return Status::OK();
  SILT_ASSIGN_OR_RETURN(int32_t n, PartitionCount(/*create=*/true));
  PartitionId partition(protocol::OffsetsPartitionFor(group, n));
  format::RecordBatchBuilder builder(format::RecordBatchBuilder::Options{});
  int64_t now = NowMs().value();
  for (const StoredRecord& r : records) {
    builder.Add(std::string_view(r.key),
                r.value ? std::optional<std::string_view>(*r.value) : std::nullopt, now);
  }
  SILT_ASSIGN_OR_RETURN(std::string batch, builder.Finish());
  SILT_ASSIGN_OR_RETURN(std::shared_ptr<Partition> p,
                        partitions_->Get(protocol::kConsumerOffsetsTopic, partition));
  auto appended = p->AppendInternal(&batch);
  if (!appended.ok()) return appended.status().WithContext("writing __consumer_offsets");
  return Status::OK();
}

Status ConsumerOffsetsTopic::Replay(const ReplayFn& fn) {
  SILT_ASSIGN_OR_RETURN(int32_t n, PartitionCount(/*create=*/false));
  for (int32_t i = 0; i < n; ++i) {
    SILT_ASSIGN_OR_RETURN(std::shared_ptr<Partition> p,
                          partitions_->Get(protocol::kConsumerOffsetsTopic, PartitionId(i)));
    // Everything in the log: the coordinator wrote it (and on one node it is committed).
    SILT_TRY(p->ForEachBatch(p->log_end_offset(), [&](std::string_view bytes) -> Status {
      SILT_ASSIGN_OR_RETURN(format::RecordBatchView batch, format::RecordBatchView::Parse(bytes));
      if (batch.header().control()) return Status::OK();
      return batch.ForEachRecord([&](const format::RecordView& rec) {
        if (rec.key_null) return true;
        fn(rec.key, rec.value_null ? std::nullopt : std::optional<std::string_view>(rec.value));
        return true;
      });
    }));
  }
  return Status::OK();
}

}  // namespace silt::broker
