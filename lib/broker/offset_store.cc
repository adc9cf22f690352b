// Durable storage for the group coordinator: the __consumer_offsets topic and a memory stand-in.
#include "broker/offset_store.h"

#include "base/clock.h"
#include "broker/logging.h"
#include "broker/metadata_store.h"
#include "broker/partition.h"
#include "broker/partition_manager.h"
#include "offsets/local.h"
#include "protocol/consumer_offsets.h"

namespace silt::broker {

// ---- MemoryOffsetLog --------------------------------------------------------------------

Status MemoryOffsetLog::Append(const std::string& group, const std::vector<StoredRecord>& records,
                               AppendedAt* at) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fail_next_) {
    Status s = *fail_next_;
    fail_next_.reset();
    return s;
  }
  int32_t p = protocol::OffsetsPartitionFor(group, partitions_);
  for (const StoredRecord& r : records) records_.push_back({p, r});
  if (at != nullptr && !records.empty()) {
    at->partition = p;
    at->last_offset = -1;
  }
  return Status::OK();
}

Status MemoryOffsetLog::Replay(const ReplayFn& fn) {
  std::vector<StoredRecord> copy = records();
  for (const StoredRecord& r : copy) {
    fn(r.key, r.value ? std::optional<std::string_view>(*r.value) : std::nullopt);
  }
  return Status::OK();
}

Status MemoryOffsetLog::ReplayPartition(int32_t partition, const ReplayFn& fn) {
  std::vector<std::pair<int32_t, StoredRecord>> copy;
  {
    std::lock_guard<std::mutex> lock(mu_);
    copy = records_;
  }
  for (const auto& [p, r] : copy) {
    if (p != partition) continue;
    fn(r.key, r.value ? std::optional<std::string_view>(*r.value) : std::nullopt);
  }
  return Status::OK();
}

std::vector<StoredRecord> MemoryOffsetLog::records() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<StoredRecord> out;
  for (const auto& [p, r] : records_) out.push_back(r);
  return out;
}

void MemoryOffsetLog::FailNextAppend(Status s) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_next_ = std::move(s);
}

// ---- ConsumerOffsetsTopic ---------------------------------------------------------------

// __consumer_offsets through the broker's own partitions, with the writer locks held.
class ConsumerOffsetsTopic::Partitions : public offsets::OffsetsPartitions {
 public:
  Partitions(MetadataStore* metadata, PartitionManager* partitions, std::string data_dir)
      : metadata_(metadata), partitions_(partitions), data_dir_(std::move(data_dir)) {}

  Status Lock() {
    SILT_ASSIGN_OR_RETURN(int32_t n, PartitionCount());
    std::lock_guard<std::mutex> lock(mu_);
    SILT_ASSIGN_OR_RETURN(locks_, offsets::LockOffsetsForBroker(data_dir_, n));
    locked_partitions_ = n;
    return Status::OK();
  }

  Result<int32_t> PartitionCount() override {
    auto t = metadata_->GetTopic(protocol::kConsumerOffsetsTopic);
    if (t.ok()) return t->partition_count;
    if (t.status().IsNotFound()) return 0;
    return t.status();
  }

  Result<int32_t> CreateTopic(int32_t count) override {
    auto created = metadata_->CreateTopic(protocol::kConsumerOffsetsTopic, count,
                                          {{"cleanup.policy", "compact"}});
    int32_t n;
    if (created.ok()) {
      n = created->partition_count;
      LogInfo("created topic " + std::string(protocol::kConsumerOffsetsTopic) + " with " +
              std::to_string(n) + " partition(s)");
    } else if (created.status().code() == Status::Code::kAlreadyExists) {
      // Created meanwhile by another thread.
      SILT_ASSIGN_OR_RETURN(n, PartitionCount());
    } else {
      return created.status();
    }
    // The new partitions' locks, held from now on like the others'.
    SILT_TRY(LockUpTo(n));
    return n;
  }

  Status Append(int32_t partition, std::string* batch) override {
    // In a cluster the topic may have been made elsewhere (by the controller): its partitions'
    // locks are taken on the first write here.
    SILT_TRY(LockUpTo(partition + 1));
    SILT_ASSIGN_OR_RETURN(std::shared_ptr<Partition> p,
                          partitions_->Get(protocol::kConsumerOffsetsTopic, PartitionId(partition)));
    auto appended = p->AppendInternal(batch);
    if (!appended.ok()) return appended.status().WithContext("writing __consumer_offsets");
    return Status::OK();
  }

  // Takes the locks of partitions below n not held yet.
  Status LockUpTo(int32_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    for (; locked_partitions_ < n; ++locked_partitions_) {
      SILT_ASSIGN_OR_RETURN(offsets::WriterLock l,
                            offsets::LockOffsetsPartition(data_dir_, locked_partitions_,
                                                          offsets::LockRole::kBroker, 0));
      locks_.push_back(std::move(l));
    }
    return Status::OK();
  }

  Status Read(int32_t partition,
              const std::function<Status(std::string_view batches)>& fn) override {
    SILT_ASSIGN_OR_RETURN(std::shared_ptr<Partition> p,
                          partitions_->Get(protocol::kConsumerOffsetsTopic, PartitionId(partition)));
    // Everything in the log: the coordinator wrote it (and on one node it is committed).
    return p->ForEachBatch(p->log_end_offset(), fn);
  }

 private:
  MetadataStore* metadata_;
  PartitionManager* partitions_;
  const std::string data_dir_;
  std::mutex mu_;  // guards the locks
  std::vector<offsets::WriterLock> locks_;
  int32_t locked_partitions_ = 0;  // partitions 0..n-1 are locked
};

ConsumerOffsetsTopic::ConsumerOffsetsTopic(MetadataStore* metadata, PartitionManager* partitions,
                                           std::string data_dir, int32_t count)
    : parts_(std::make_unique<Partitions>(metadata, partitions, std::move(data_dir))),
      store_(parts_.get(), count) {}

ConsumerOffsetsTopic::~ConsumerOffsetsTopic() = default;

Status ConsumerOffsetsTopic::Lock() { return parts_->Lock(); }

Status ConsumerOffsetsTopic::Append(const std::string& group,
                                    const std::vector<StoredRecord>& records, AppendedAt* at) {
  return store_.Append(group, records, NowMs().value(), at);
}

Status ConsumerOffsetsTopic::Replay(const ReplayFn& fn) { return store_.Replay(fn); }

Status ConsumerOffsetsTopic::ReplayPartition(int32_t partition, const ReplayFn& fn) {
  return store_.ReplayPartition(partition, fn);
}

}  // namespace silt::broker
