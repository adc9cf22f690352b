// Batching producer over a local data directory (see local_producer.h).
#include "client/local_producer.h"

#include <algorithm>

#include "base/clock.h"
#include "base/coding.h"
#include "base/random.h"
#include "format/record_batch.h"
#include "storage/data_dir.h"
#include "storage/partition_log.h"

namespace silt::client {
namespace {

size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}
size_t ZigZagSize(int64_t v) {
  return VarintSize((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
}
size_t BytesFieldSize(const std::optional<std::string_view>& s) {
  return s ? ZigZagSize(static_cast<int64_t>(s->size())) + s->size() : ZigZagSize(-1);
}

// Encoded size of a record's body (after its length varint) with the given deltas.
size_t RecordBodySize(const std::optional<std::string_view>& key,
                      const std::optional<std::string_view>& value, const HeaderViews& headers,
                      int64_t timestamp_delta, int32_t offset_delta) {
  size_t n = 1 /* attributes */ + ZigZagSize(timestamp_delta) + ZigZagSize(offset_delta) +
             BytesFieldSize(key) + BytesFieldSize(value) +
             ZigZagSize(static_cast<int64_t>(headers.size()));
  for (const auto& [k, v] : headers) n += BytesFieldSize(k) + BytesFieldSize(v);
  return n;
}

}  // namespace

size_t LocalProducer::SingleRecordBatchSize(std::optional<std::string_view> key,
                                            std::optional<std::string_view> value,
                                            const HeaderViews& headers) {
  size_t body = RecordBodySize(key, value, headers, 0, 0);
  return format::kBatchHeaderSize + ZigZagSize(static_cast<int64_t>(body)) + body;
}

Result<std::unique_ptr<LocalProducer>> LocalProducer::Open(storage::DataDir* dir,
                                                           const std::string& topic,
                                                           const ProducerOptions& options) {
  auto info = dir->GetTopic(topic);
  if (!info.ok()) {
    if (!info.status().IsNotFound() || !options.create_topic) return info.status();
    info = dir->CreateTopic(topic, NewTopicId(), options.default_partitions, {});
    if (!info.ok()) return info.status();
  }
  if (options.partition >= info->partitions)
    return Status::InvalidArgument("topic '" + topic + "' has " +
                                   std::to_string(info->partitions) + " partition(s); there is no partition " +
                                   std::to_string(options.partition));
  SILT_ASSIGN_OR_RETURN(storage::LogConfig config, dir->TopicConfig(topic));
  std::unique_ptr<LocalProducer> p(
      new LocalProducer(dir, topic, options, info->partitions, config.max_message_bytes));
  return p;
}

LocalProducer::LocalProducer(storage::DataDir* dir, std::string topic,
                             const ProducerOptions& options, int32_t partitions,
                             int64_t max_message_bytes)
    : dir_(dir),
      topic_(std::move(topic)),
      options_(options),
      partitioner_(options.partitioner, partitions,
                   options.seed ? options.seed : static_cast<uint64_t>(MonotonicMs()) * 2654435761u),
      slots_(static_cast<size_t>(partitions)),
      max_message_bytes_(max_message_bytes) {
  if (options_.background)
    for (auto& w : workers_) w = std::thread([this] { Work(); });
}

LocalProducer::~LocalProducer() {
  if (!options_.background) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  for (auto& w : workers_) w.join();
}

Status LocalProducer::Send(std::optional<std::string_view> key,
                           std::optional<std::string_view> value, const HeaderViews& headers,
                           int64_t timestamp) {
  size_t alone = SingleRecordBatchSize(key, value, headers);
  if (static_cast<int64_t>(alone) > max_message_bytes_)
    return Status::TooLarge("record of " + std::to_string(alone) +
                            " bytes (as a batch of one) is over the topic's max.message.bytes (" +
                            std::to_string(max_message_bytes_) + ")");
  int32_t p = options_.partition >= 0 ? options_.partition : partitioner_.Choose(key);
  Slot& s = slots_[static_cast<size_t>(p)];
  // Upper bound of the record's encoded size in a shared batch: deltas at their widest.
  size_t bound = alone - format::kBatchHeaderSize + 2 * kMaxVarint64Bytes;
  if (s.builder && !s.builder->empty() &&
      static_cast<int64_t>(format::kBatchHeaderSize + s.bytes + bound) > max_message_bytes_) {
    SILT_TRY(SendBatch(p));
    // The sticky partitioner may have moved on; unkeyed records follow it.
    if (options_.partition < 0 && !key) return Send(key, value, headers, timestamp);
  }
  if (!s.builder) {
    format::RecordBatchBuilder::Options bo;
    bo.compression = options_.compression;
    s.builder = std::make_unique<format::RecordBatchBuilder>(bo);
  }
  if (timestamp < 0) timestamp = NowMs().value();
  s.builder->Add(key, value, timestamp, headers);
  s.bytes += bound;
  buffered_ += bound;
  if (s.bytes >= options_.batch_bytes) return SendBatch(p);
  if (buffered_ > options_.max_buffered_bytes) {
    auto largest = std::max_element(slots_.begin(), slots_.end(),
                                    [](const Slot& a, const Slot& b) { return a.bytes < b.bytes; });
    return SendBatch(static_cast<int32_t>(largest - slots_.begin()));
  }
  return Status::OK();
}

Status LocalProducer::SendBatch(int32_t partition) {
  Slot& s = slots_[static_cast<size_t>(partition)];
  if (!s.builder || s.builder->empty()) return Status::OK();
  if (!s.log) {
    auto log = dir_->Partition(topic_, partition);
    if (!log.ok()) return log.status().WithContext(topic_ + "-" + std::to_string(partition));
    s.log = *log;
  }
  buffered_ -= s.bytes;
  s.bytes = 0;
  s.written = true;
  partitioner_.OnBatchSent(partition);
  // The builder is reset by Finish and reused, keeping its buffer: a fresh one per batch
  // would grow (and fault in) that buffer all over again.
  if (!options_.background) return AppendBatch(partition, s.log, s.builder.get(), &s.batch);
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return jobs_.size() < kMaxQueued || !failed_.ok(); });
  if (!failed_.ok()) return failed_;
  jobs_.push_back(Job{partition, s.log, std::move(s.builder), next_seq_++});
  if (!spare_.empty()) {
    s.builder = std::move(spare_.back());
    spare_.pop_back();
  }
  cv_.notify_all();
  return Status::OK();
}

Status LocalProducer::AppendBatch(int32_t partition, storage::PartitionLog* log,
                                  format::RecordBatchBuilder* builder, std::string* batch) {
  int count = builder->record_count();
  SILT_TRY(builder->FinishInto(batch));
  return AppendFinished(partition, log, batch, count);
}

Status LocalProducer::AppendFinished(int32_t partition, storage::PartitionLog* log,
                                     std::string* batch, int count) {
  size_t size = batch->size();
  auto appended = log->Append(batch);
  if (!appended.ok())
    return appended.status().WithContext(topic_ + "-" + std::to_string(partition));
  records_appended_ += count;
  batches_appended_ += 1;
  bytes_appended_ += static_cast<int64_t>(size);
  return Status::OK();
}

// Each worker finishes (compresses) the batch it took while the other may be finishing the
// next one; appends then happen strictly in the order the batches were queued.
void LocalProducer::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return !jobs_.empty() || quit_; });
    if (jobs_.empty()) return;  // quit_, with nothing left to do
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    ++working_;
    std::string batch;
    if (!spare_batches_.empty()) {
      batch = std::move(spare_batches_.back());
      spare_batches_.pop_back();
    }
    cv_.notify_all();  // room in the queue
    lock.unlock();
    const int count = job.builder->record_count();
    Status st = job.builder->FinishInto(&batch);
    lock.lock();
    cv_.wait(lock, [&] { return turn_ == job.seq; });
    if (st.ok() && failed_.ok()) {  // after a failure nothing more is appended
      lock.unlock();
      st = AppendFinished(job.partition, job.log, &batch, count);
      lock.lock();
    }
    if (!st.ok() && failed_.ok()) failed_ = st;
    if (job.builder->empty()) spare_.push_back(std::move(job.builder));  // Finish reset it
    if (spare_batches_.size() < 4) spare_batches_.push_back(std::move(batch));
    ++turn_;
    --working_;
    cv_.notify_all();
  }
}

Status LocalProducer::Drain() {
  if (!options_.background) return Status::OK();
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return jobs_.empty() && working_ == 0; });
  return failed_;
}

Status LocalProducer::SendPending() {
  for (size_t p = 0; p < slots_.size(); ++p) SILT_TRY(SendBatch(static_cast<int32_t>(p)));
  return Status::OK();
}

Status LocalProducer::Flush() {
  SILT_TRY(SendPending());
  SILT_TRY(Drain());
  for (size_t p = 0; p < slots_.size(); ++p) {
    Slot& s = slots_[p];
    if (s.written) {
      Status st = s.log->Flush();
      if (!st.ok()) return st.WithContext(topic_ + "-" + std::to_string(p));
    }
  }
  return Status::OK();
}

}  // namespace silt::client
