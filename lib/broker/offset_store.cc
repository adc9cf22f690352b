// Durable storage for the group coordinator: the __consumer_offsets topic and a memory stand-in.
#include "broker/offset_store.h"

#include "base/clock.h"
#include "broker/broker.h"
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
  auto t = broker_->GetTopic(protocol::kConsumerOffsetsTopic);
  if (t.ok()) return t->partitions;
  if (!t.status().IsNotFound()) return t.status();
  if (!create) return 0;
  auto created = broker_->CreateTopic(protocol::kConsumerOffsetsTopic, partitions_,
                                      {{"cleanup.policy", "compact"}});
  if (created.ok()) return created->partitions;
  if (created.status().code() != Status::Code::kAlreadyExists) return created.status();
  // Created meanwhile by another thread.
  SILT_ASSIGN_OR_RETURN(storage::TopicInfo t2, broker_->GetTopic(protocol::kConsumerOffsetsTopic));
  return t2.partitions;
}

Status ConsumerOffsetsTopic::Append(const std::string& group,
                                    const std::vector<StoredRecord>& records) {
  if (records.empty()) return Status::OK();
  SILT_ASSIGN_OR_RETURN(int32_t n, PartitionCount(/*create=*/true));
  int32_t partition = protocol::OffsetsPartitionFor(group, n);
  format::RecordBatchBuilder builder(format::RecordBatchBuilder::Options{});
  int64_t now = NowMs().value();
  for (const StoredRecord& r : records) {
    builder.Add(std::string_view(r.key),
                r.value ? std::optional<std::string_view>(*r.value) : std::nullopt, now);
  }
  SILT_ASSIGN_OR_RETURN(std::string batch, builder.Finish());
  SILT_ASSIGN_OR_RETURN(std::shared_ptr<PartitionState> state,
                        broker_->Partition(protocol::kConsumerOffsetsTopic, partition));
  std::lock_guard<std::mutex> lock(state->produce_mu);
  auto log = state->Log();
  if (!log) return Status::NotFound("__consumer_offsets was deleted");
  auto appended = log->Append(&batch);
  if (!appended.ok()) return appended.status().WithContext("writing __consumer_offsets");
  return Status::OK();
}

Status ConsumerOffsetsTopic::Replay(const ReplayFn& fn) {
  SILT_ASSIGN_OR_RETURN(int32_t n, PartitionCount(/*create=*/false));
  for (int32_t p = 0; p < n; ++p) {
    SILT_ASSIGN_OR_RETURN(std::shared_ptr<PartitionState> state,
                          broker_->Partition(protocol::kConsumerOffsetsTopic, p));
    auto log = state->Log();
    if (!log) continue;
    Offset next = log->log_start_offset();
    Offset end = log->log_end_offset();
    while (next < end) {
      SILT_ASSIGN_OR_RETURN(storage::ReadResult r, log->Read(next, 4 << 20, end, true));
      if (r.slices.empty() || r.next_offset <= next) break;
      SILT_ASSIGN_OR_RETURN(std::string bytes, r.ReadAll());
      std::string_view rest = bytes;
      while (!rest.empty()) {
        SILT_ASSIGN_OR_RETURN(format::RecordBatchView batch, format::RecordBatchView::Parse(rest));
        rest.remove_prefix(batch.bytes().size());
        if (batch.header().control()) continue;
        SILT_TRY(batch.ForEachRecord([&](const format::RecordView& rec) {
          if (rec.key_null) return true;
          fn(rec.key, rec.value_null ? std::nullopt : std::optional<std::string_view>(rec.value));
          return true;
        }));
      }
      next = r.next_offset;
    }
  }
  return Status::OK();
}

}  // namespace silt::broker
