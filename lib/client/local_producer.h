// Producing records straight into a local data directory (no broker): records are grouped into
// RecordBatch v2 batches per partition, each batch appended to its partition log in one call.
//
// Batches close when they reach `batch_bytes` (uncompressed), when adding the next record would
// push them past the topic's max.message.bytes, when SendPending() is called (linger expiry), or
// when the buffered total passes `max_buffered_bytes` (then the largest batch goes first), so
// memory stays bounded whatever the input size. Flush() appends what is pending and fsyncs: when
// it returns OK every record sent so far is durable.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "client/partitioner.h"
#include "client/producer.h"
#include "format/layout.h"

namespace silt::format {
class RecordBatchBuilder;
}
namespace silt::storage {
class DataDir;
class PartitionLog;
}  // namespace silt::storage

namespace silt::client {

struct ProducerOptions {
  format::Compression compression = format::Compression::kNone;
  size_t batch_bytes = 1 << 20;
  size_t max_buffered_bytes = 32 << 20;
  Partitioner::Kind partitioner = Partitioner::Kind::kDefault;
  int32_t partition = -1;           // >= 0: every record goes there
  bool create_topic = true;         // create a missing topic...
  int32_t default_partitions = -1;  // ...with this many partitions (-1: the data dir's default)
  uint64_t seed = 0;                // for the sticky/random partitioners; 0: from the clock
  // Close batches (compressing them) and append them on two background threads, while the
  // caller goes on adding records: a pipeline that keeps every core busy. An append that fails there
  // is returned by the next Send, SendPending or Flush, and nothing after it is appended.
  bool background = false;
};

class LocalProducer final : public Producer {
 public:
  // Opens (or creates) `topic` in `dir`, which must be writable and outlive the producer.
  // NotFound if the topic is missing and create_topic is off; InvalidArgument for a partition
  // outside the topic.
  static Result<std::unique_ptr<LocalProducer>> Open(storage::DataDir* dir, const std::string& topic,
                                                     const ProducerOptions& options);
  ~LocalProducer();

  // Queues one record (timestamp -1: now), appending a batch when one fills up. TooLarge when
  // the record alone cannot fit in a batch of max.message.bytes; nothing is queued then.
  Status Send(std::optional<std::string_view> key, std::optional<std::string_view> value,
              const HeaderViews& headers, int64_t timestamp = -1) override;
  // Appends every partly filled batch now.
  Status SendPending() override;
  // SendPending(), then fsync of every partition written to.
  Status Flush() override;

  // Size in bytes one record takes in a batch of its own (what max.message.bytes limits).
  static size_t SingleRecordBatchSize(std::optional<std::string_view> key,
                                      std::optional<std::string_view> value,
                                      const HeaderViews& headers);

  int32_t partitions() const { return static_cast<int32_t>(slots_.size()); }
  int64_t max_message_bytes() const override { return max_message_bytes_; }
  int64_t records_appended() const { return records_appended_.load(); }
  int64_t records_delivered() const override { return records_appended(); }
  int64_t batches_appended() const { return batches_appended_.load(); }
  int64_t bytes_appended() const { return bytes_appended_.load(); }

 private:
  struct Slot {
    storage::PartitionLog* log = nullptr;
    std::unique_ptr<format::RecordBatchBuilder> builder;
    size_t bytes = 0;  // upper bound of the builder's encoded size
    bool written = false;
    std::string batch;  // the last batch written in the foreground: its buffer is reused
  };
  LocalProducer(storage::DataDir* dir, std::string topic, const ProducerOptions& options,
                int32_t partitions, int64_t max_message_bytes);
  Status SendBatch(int32_t partition);
  // Finishes and appends one batch (on the caller's thread or the background one).
  Status AppendBatch(int32_t partition, storage::PartitionLog* log,
                     format::RecordBatchBuilder* builder, std::string* batch);
  Status AppendFinished(int32_t partition, storage::PartitionLog* log, std::string* batch,
                        int count);
  // Background mode: a worker's loop, and waiting until everything queued is appended.
  void Work();
  Status Drain();

  storage::DataDir* dir_;
  std::string topic_;
  ProducerOptions options_;
  Partitioner partitioner_;
  std::vector<Slot> slots_;
  int64_t max_message_bytes_;
  size_t buffered_ = 0;
  std::atomic<int64_t> records_appended_{0};
  std::atomic<int64_t> batches_appended_{0};
  std::atomic<int64_t> bytes_appended_{0};

  // Background mode.
  struct Job {
    int32_t partition;
    storage::PartitionLog* log;
    std::unique_ptr<format::RecordBatchBuilder> builder;
    uint64_t seq;  // queue order, which is append order
  };
  static constexpr size_t kMaxQueued = 2;  // batches waiting: bounds memory
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;  // under mu_
  std::vector<std::unique_ptr<format::RecordBatchBuilder>> spare_;  // under mu_: for reuse
  std::vector<std::string> spare_batches_;  // under mu_: written batches, kept for their buffers
  int working_ = 0;        // under mu_: jobs taken by workers and not yet done
  uint64_t next_seq_ = 0;  // under mu_
  uint64_t turn_ = 0;      // under mu_: the seq whose append is next
  bool quit_ = false;     // under mu_
  Status failed_;         // under mu_: the first background failure
  std::thread workers_[2];
};

}  // namespace silt::client
