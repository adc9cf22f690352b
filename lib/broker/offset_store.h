// Where the group coordinator keeps committed offsets and group metadata durably: Kafka's
// internal topic `__consumer_offsets` (record layouts in protocol/consumer_offsets.h), or an
// in-memory list for tests.
//
// The coordinator writes each change as one batch to the partition that owns the group
// (protocol::OffsetsPartitionFor) and replays everything stored when the broker starts.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "offsets/store.h"

namespace silt::broker {

class MetadataStore;
class PartitionManager;

// A key and its value; no value is a tombstone.
using StoredRecord = offsets::Record;

// Where an append went: the __consumer_offsets partition and the batch's last offset (-1 for
// a log that has no offsets, such as the memory one).
using AppendedAt = offsets::OffsetStore::Appended;

class OffsetLog {
 public:
  virtual ~OffsetLog() = default;
  // Appends `records` for `group` as one batch (all or nothing) to the group's partition, and
  // says where in `*at` when given.
  virtual Status Append(const std::string& group, const std::vector<StoredRecord>& records,
                        AppendedAt* at = nullptr) = 0;
  // Calls fn for every record stored, each partition in offset order. A value of nullopt is a
  // tombstone. Control batches are skipped.
  using ReplayFn = std::function<void(std::string_view key, std::optional<std::string_view> value)>;
  virtual Status Replay(const ReplayFn& fn) = 0;
  // Calls fn for every record stored in one partition of the topic, in offset order (what a
  // coordinator that just became the partition's leader loads). Nothing for a partition the
  // topic does not have.
  virtual Status ReplayPartition(int32_t partition, const ReplayFn& fn) = 0;
  // Makes the storage ready for writes ahead of the first one (may take a while: creating
  // the topic). Optional; Append does it too when needed.
  virtual Status Prepare() { return Status::OK(); }
};

// Records kept in memory, in append order (tests). Partition p of `partitions` holds the
// groups protocol::OffsetsPartitionFor puts there.
class MemoryOffsetLog : public OffsetLog {
 public:
  explicit MemoryOffsetLog(int32_t partitions = 1) : partitions_(partitions) {}
  Status Append(const std::string& group, const std::vector<StoredRecord>& records,
                AppendedAt* at = nullptr) override;
  Status Replay(const ReplayFn& fn) override;
  Status ReplayPartition(int32_t partition, const ReplayFn& fn) override;
  std::vector<StoredRecord> records() const;
  // Makes the next Append fail with `s` (once).
  void FailNextAppend(Status s);

 private:
  const int32_t partitions_;
  mutable std::mutex mu_;
  std::vector<std::pair<int32_t, StoredRecord>> records_;  // (partition, record)
  std::optional<Status> fail_next_;
};

// The `__consumer_offsets` topic of a broker's data dir, kept by offsets::OffsetStore (the same
// store local commands use) over the broker's partitions: created on the first write with
// `count` partitions (offsets.topic.num.partitions) and cleanup.policy=compact. An existing
// topic keeps its own partition count, which then decides where groups live.
class ConsumerOffsetsTopic : public OffsetLog {
 public:
  ConsumerOffsetsTopic(MetadataStore* metadata, PartitionManager* partitions,
                       std::string data_dir, int32_t count);
  ~ConsumerOffsetsTopic() override;
  // Takes the writer locks of the topic and its partitions for the broker's lifetime, so that
  // no local command writes them meanwhile. Busy (naming the holder) when one does now.
  Status Lock();
  Status Append(const std::string& group, const std::vector<StoredRecord>& records,
                AppendedAt* at = nullptr) override;
  Status Replay(const ReplayFn& fn) override;
  Status ReplayPartition(int32_t partition, const ReplayFn& fn) override;
  Status Prepare() override { return store_.Prepare(); }

 private:
  class Partitions;
  std::unique_ptr<Partitions> parts_;
  offsets::OffsetStore store_;
};

}  // namespace silt::broker
