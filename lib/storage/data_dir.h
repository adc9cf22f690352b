// A data directory: topics, their partitions and configs, and local consumer-group positions.
//
// Layout (Kafka's partition directories at the top, silt's own metadata beside them):
//   <dir>/<topic>-<partition>/...           see format/layout.h
//   <dir>/.lock                             flock(2)-held by the writer; holds its pid
//   <dir>/silt-topics/<topic>.properties    partitions=N, topic_id=…, and config overrides
//   <dir>/silt-groups/<group>.properties    committed offsets of local consumers, one
//                                           "<topic>/<partition>=<offset>" per line; the file
//                                           name is the group with bytes outside
//                                           [A-Za-z0-9._-] written as %XX
//   <dir>/clean-shutdown                    present after a clean close
//   <dir>/recovery-point-offset-checkpoint  Kafka's format: version, count, "topic p offset"
//   <dir>/log-start-offset-checkpoint       the same format, for delete-records
// Every metadata file is written atomically (temp file, fsync, rename).
//
// A directory copied from a Kafka broker (no silt-topics/) opens read-only: its topics are the
// partition directories found.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/topic_name.h"
#include "base/uuid.h"
#include "storage/log_config.h"
#include "storage/partition_log.h"

namespace silt::storage {

struct TopicInfo {
  std::string name;
  int32_t partitions = 0;
  std::string topic_id;                        // base64 UUID, as in partition.metadata
  std::map<std::string, std::string> configs;  // overrides only
  // Partitions that have a directory here, ascending. For topics created by silt this is
  // 0..partitions-1; a directory copied from a broker may hold only some (partitions is then
  // the highest present + 1).
  std::vector<int32_t> partition_ids;
};

// Kafka's topic-name rules: 1..249 characters of [a-zA-Z0-9._-], not "." or ".." (kept here
// for the storage layer's callers; the rule lives in base/topic_name.h).
using silt::ValidateTopicName;

class DataDir {
 public:
  struct Options {
    bool read_only = false;  // no lock taken, nothing written (but see group_commits)
    // With read_only: CommitGroup still writes. Each group's file is replaced atomically and the
    // writer holding the lock never touches it, so a reader (`silt consume -g`) can record its
    // position while a producer holds the directory.
    bool group_commits = false;
    bool create = true;      // create the directory if missing
    LogConfig defaults;      // configs for topics that do not override them
    int32_t default_partitions = 1;
  };

  // Opens the directory; unless read-only, takes the lock. A second writer gets Busy with a
  // message naming the holder's pid.
  static Result<std::unique_ptr<DataDir>> Open(const std::string& path, const Options& options);
  ~DataDir();

  const std::string& path() const;
  bool read_only() const;

  std::vector<TopicInfo> ListTopics() const;
  Result<TopicInfo> GetTopic(const std::string& name) const;
  // Creates a topic whose id its caller chose (a controller mints ids; one node uses
  // NewTopicId() from base/random.h). Validates the name (Kafka's rules: [a-zA-Z0-9._-],
  // 1..249, not "." or "..", no '.'/'_' collision with another topic), the id (InvalidArgument
  // when reserved: zero or 1; AlreadyExists when another topic has it) and the configs.
  // partitions = -1 means Options::default_partitions (as CreateTopics' numPartitions -1).
  Result<TopicInfo> CreateTopic(const std::string& name, const Uuid& topic_id, int32_t partitions,
                                const std::map<std::string, std::string>& configs);
  Status DeleteTopic(const std::string& name);
  Status AlterTopicConfig(const std::string& name, const std::map<std::string, std::string>& set,
                          const std::vector<std::string>& remove = {});
  Status AddPartitions(const std::string& name, int32_t new_total);
  // The effective config of a topic: defaults with its overrides applied.
  Result<LogConfig> TopicConfig(const std::string& name) const;

  // The open log of one partition (opened on first use, kept open until Close()).
  Result<PartitionLog*> Partition(const std::string& topic, int32_t partition);
  // As Partition(), sharing ownership: for background work (the log cleaner) that must not see
  // the object freed under it by DeleteTopic() or Close(). Such a log is closed by them and
  // then refuses writes.
  Result<std::shared_ptr<PartitionLog>> SharedPartition(const std::string& topic,
                                                        int32_t partition);

  // Local consumer groups (used by `silt consume -g` and `silt group` without a broker).
  std::vector<std::string> ListGroups() const;
  // topic -> partition -> next offset to consume.
  using GroupOffsets = std::map<std::string, std::map<int32_t, int64_t>>;
  Result<GroupOffsets> GroupCommitted(const std::string& group) const;
  Status CommitGroup(const std::string& group, const GroupOffsets& offsets);
  Status DeleteGroup(const std::string& group);

  // Writes recovery-point-offset-checkpoint and log-start-offset-checkpoint for the open logs
  // (without flushing them); for a periodic timer. No-op when read-only.
  Status Checkpoint();

  // True when the previous writer closed the directory cleanly (marker present at open).
  bool opened_after_clean_shutdown() const;

  // Flushes every open log, writes the recovery checkpoint and the clean-shutdown marker, and
  // releases the lock. Destroying a DataDir without Close() releases the lock but leaves no
  // marker, so the next open recovers as after a crash.
  Status Close();

 private:
  struct Impl;
  explicit DataDir(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace silt::storage
