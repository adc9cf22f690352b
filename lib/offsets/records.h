// Changes to the committed-offset store as `__consumer_offsets` records, and the view that
// replaying those records yields. The record layouts are Kafka's (protocol/consumer_offsets.h);
// this file decides which records a change is made of and how a sequence of them is read back.
//
//   commit      one OffsetCommit key/value (value version 3) per partition that moves
//   delete      a tombstone (null value) for every offset the group has and, when the group
//               has stored metadata, for its GroupMetadata key
//
// Every change is written as one RecordBatch v2, uncompressed, so that it is applied all or
// nothing. Replay applies records in offset order: a later record for a key replaces an
// earlier one, a tombstone removes it, and a group left with neither metadata nor offsets does
// not exist.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "protocol/consumer_offsets.h"

namespace silt::offsets {

// A key and its value, as stored; no value is a tombstone.
struct Record {
  std::string key;
  std::optional<std::string> value;
};

// One committed position (OffsetCommitValue without its version).
struct Committed {
  int64_t offset = -1;
  int32_t leader_epoch = -1;
  std::string metadata;
  int64_t commit_timestamp = -1;
  int64_t expire_timestamp = -1;  // only in value version 1
  bool operator==(const Committed&) const = default;
};

// topic -> partition -> committed position.
using GroupOffsets = std::map<std::string, std::map<int32_t, Committed>>;

struct GroupState {
  std::optional<protocol::GroupMetadataValue> metadata;  // absent: no (or deleted) metadata
  GroupOffsets offsets;
  bool empty() const { return !metadata && offsets.empty(); }
};

// group -> state; only groups that exist (metadata or at least one offset).
using GroupsView = std::map<std::string, GroupState>;

// The records of a commit: one per partition in `offsets`, value version 3. The caller fills
// commit_timestamp (the broker's clock, or the local committer's).
std::vector<Record> CommitRecords(const std::string& group, const GroupOffsets& offsets);

// The records that delete `group` as it stands in `state`: tombstones for each offset and,
// when state has metadata, for the metadata. Empty when the state is empty.
std::vector<Record> DeleteGroupRecords(const std::string& group, const GroupState& state);

// One uncompressed RecordBatch v2 holding `records` in order, each stamped `timestamp_ms`,
// base offset 0 (the log assigns the real one). `records` must not be empty.
Result<std::string> EncodeBatch(const std::vector<Record>& records, int64_t timestamp_ms);

// Builds a GroupsView from records applied in log order.
class Replayer {
 public:
  // Applies one record. A key or value that does not decode is counted in skipped() and
  // otherwise ignored (as the broker's coordinator does), so one bad record cannot hide the
  // rest of a partition.
  void Apply(std::string_view key, std::optional<std::string_view> value);
  // Applies every record of the whole batches in `bytes`; control batches and records without
  // a key are skipped. Fails (Corruption) only when the batches themselves are damaged.
  Status ApplyBatches(std::string_view bytes);

  // Groups as replayed so far, without the empty ones.
  GroupsView groups() const;
  int64_t skipped() const { return skipped_; }

 private:
  GroupsView groups_;
  int64_t skipped_ = 0;
};

// Calls fn(key, value) for each keyed record of the non-control batches in `bytes` (whole
// batches), in order; value nullopt is a tombstone. Corruption when a batch is damaged.
using RecordFn = std::function<void(std::string_view key, std::optional<std::string_view> value)>;
Status ForEachStoredRecord(std::string_view bytes, const RecordFn& fn);

}  // namespace silt::offsets
