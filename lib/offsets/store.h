// The committed-offset store: consumer groups' offsets and metadata kept in Kafka's internal
// topic `__consumer_offsets`, over any place that can hold that topic's partitions.
//
// A group lives in partition protocol::OffsetsPartitionFor(group, n) of the n the topic has
// (Kafka's choice, so a data directory moves between silt and Kafka). Each change is one batch
// (records.h) appended to that partition; reading a group replays its partition from the start.
// The store keeps no cache: whoever needs one (the broker's group coordinator) replays once and
// applies its own changes as it writes them.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "offsets/records.h"

namespace silt::offsets {

// Kafka's offsets.topic.num.partitions default.
inline constexpr int32_t kDefaultOffsetsPartitions = 50;

// Where the partitions of `__consumer_offsets` live. The local implementation is a data
// directory (local.h); the broker provides one over its own partition objects.
class OffsetsPartitions {
 public:
  virtual ~OffsetsPartitions() = default;
  // The topic's partition count; 0 when it does not exist.
  virtual Result<int32_t> PartitionCount() = 0;
  // Creates the topic with `partitions` partitions and cleanup.policy=compact unless it
  // exists, and returns the count it has: racing creators all get the same answer.
  virtual Result<int32_t> CreateTopic(int32_t partitions) = 0;
  // Appends `batch` (one RecordBatch v2; its base offset is patched in place) to partition
  // `partition`, all or nothing. OK means the batch is in the log; how durable is the
  // implementation's to say.
  virtual Status Append(int32_t partition, std::string* batch) = 0;
  // Calls fn with the stored batches of `partition`, from its log start to its end at the
  // time of the call, in offset order: whole batches, one or more per call. fn's error stops
  // the read and is returned.
  virtual Status Read(int32_t partition,
                      const std::function<Status(std::string_view batches)>& fn) = 0;
};

class OffsetStore {
 public:
  // `partitions` must outlive the store. A missing topic is created on the first write with
  // `default_partitions`; an existing topic keeps its own count.
  explicit OffsetStore(OffsetsPartitions* partitions,
                       int32_t default_partitions = kDefaultOffsetsPartitions)
      : partitions_(partitions), default_partitions_(default_partitions) {}

  // Creates the topic now if it is missing (ahead of the first write, which may then be fast).
  Status Prepare();
  // The partition that holds `group`, creating the topic when `create`; -1 when the topic does
  // not exist and is not created.
  Result<int32_t> PartitionOf(const std::string& group, bool create);

  // Where a batch went: its partition and the offset of its last record.
  struct Appended {
    int32_t partition = -1;
    int64_t last_offset = -1;
  };
  // Appends `records` for `group` as one batch, stamped `timestamp_ms`, to the group's
  // partition, and says where in `*where` when given. No records: nothing is written (and
  // `*where` is left alone).
  Status Append(const std::string& group, const std::vector<Record>& records,
                int64_t timestamp_ms, Appended* where = nullptr);

  // Calls fn for every record stored, partition by partition, each in offset order.
  Status Replay(const RecordFn& fn);
  // Calls fn for every record stored in partition `partition`, in offset order. A partition
  // the topic does not have (or no topic) replays nothing.
  Status ReplayPartition(int32_t partition, const RecordFn& fn);

  // Every group, replayed.
  Result<GroupsView> Load();
  // One group, replaying only its partition; nullopt when it does not exist.
  Result<std::optional<GroupState>> Group(const std::string& group);

  // Commits `offsets` for `group` (positions of the partitions named; others are kept). Each
  // Committed's commit_timestamp, when -1, becomes `now_ms`.
  Status Commit(const std::string& group, GroupOffsets offsets, int64_t now_ms);
  // Deletes `group` (tombstones for its metadata and offsets). NotFound when it does not exist.
  Status DeleteGroup(const std::string& group, int64_t now_ms);

 private:
  OffsetsPartitions* partitions_;
  int32_t default_partitions_;
};

}  // namespace silt::offsets
