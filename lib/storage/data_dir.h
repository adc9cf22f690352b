// A data directory: topics, their partitions and configs, and the rules for the one topic that
// lock-free local writers share (__consumer_offsets).
//
// Layout (Kafka's partition directories at the top, silt's own metadata beside them):
//   <dir>/<topic>-<partition>/...           see format/layout.h
//   <dir>/.lock                             flock(2)-held by the writer; holds its pid
//   <dir>/silt-topics/<topic>.properties    partitions=N, topic_id=…, and config overrides
//                                           (….properties.deleting while it is deleted)
//   <dir>/<topic>-<partition>.<hex>-delete/ a deleted partition, until removed in the background
//   <dir>/__consumer_offsets-<n>/           committed offsets and group metadata, in Kafka's
//                                           internal topic (offsets/README.md): the one store
//                                           of the broker and of local `consume -g`/`group`
//   <dir>/silt-locks/__consumer_offsets.lock       flock'ed by whoever creates that topic
//   <dir>/silt-locks/__consumer_offsets-<n>.lock   flock'ed by whoever appends to partition n
//                                           (the broker holds both kinds for its lifetime);
//                                           each holds "<pid> <role>" (offsets/local.h)
//   <dir>/silt-groups/<group>.properties    the layout before __consumer_offsets: committed
//                                           offsets, one "<topic>/<partition>=<offset>" per
//                                           line, the file name the group with bytes outside
//                                           [A-Za-z0-9._-] as %XX. Read only to migrate it,
//                                           then renamed silt-groups.migrated/ (kept)
//   <dir>/clean-shutdown                    present after a clean close
//   <dir>/recovery-point-offset-checkpoint  Kafka's format: version, count, "topic p offset"
//   <dir>/log-start-offset-checkpoint       the same format, for delete-records
// Every metadata file is written atomically (temp file, fsync, rename).
//
// Writers: the process holding .lock writes everything except __consumer_offsets, whose
// partitions any process may append to while it holds that partition's lock in silt-locks/
// (so `silt consume -g` can record its position while `silt produce` holds the directory);
// nobody opens such a partition writable without its lock.
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
    bool read_only = false;  // no lock taken, nothing written (but see CreateSharedTopic)
    bool create = true;      // create the directory if missing
    bool stop_at_damage = false;  // read-only: see PartitionLog::OpenOptions
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
  //
  // With TopicSync::kNow the topic is durable when this returns. With kBackground it exists
  // here at once (its partition directories and partition.metadata files written, its topic
  // file written under a temporary name) and a background thread makes it durable: the
  // partition files and directories first, then the topic file, renamed into place only once
  // its bytes are on disk. A caller that creates several topics and then copies into them
  // (replicate into a data directory) so does not wait for the disk at each. Until SyncTopics()
  // returns OK a crash of the machine may lose the topic but never leaves it half-made: the
  // next open finds either its whole topic file or only partition directories, which it adopts
  // as a topic without a file (as those of a directory copied from Kafka). Every other call
  // that changes topics, Checkpoint(), Close() and the destructor wait for these syncs first.
  enum class TopicSync { kNow, kBackground };
  Result<TopicInfo> CreateTopic(const std::string& name, const Uuid& topic_id, int32_t partitions,
                                const std::map<std::string, std::string>& configs,
                                TopicSync sync = TopicSync::kNow);
  // Waits until every topic created with TopicSync::kBackground is durable. An error met there
  // is returned by this and by every later call that changes topics (the topic stays known to
  // this DataDir, without its topic file on disk).
  Status SyncTopics();
  // Deletes a topic: durably gone when this returns (its topic file and partition
  // directories renamed away, two directory fsyncs), its files removed by a background thread
  // afterwards (or, after a crash or Close(), by the next writable open). Its open logs are
  // closed without a flush.
  Status DeleteTopic(const std::string& name);
  // Blocks until the background removals of deleted topics' files are done (or stopped by
  // Close()). With `progress`, calls it at once and then about every 250 ms with the number of
  // directories still to remove, while any are left.
  void WaitForDeletions(const std::function<void(size_t left)>& progress = nullptr);
  Status AlterTopicConfig(const std::string& name, const std::map<std::string, std::string>& set,
                          const std::vector<std::string>& remove = {});
  Status AddPartitions(const std::string& name, int32_t new_total);
  // The effective config of a topic: defaults with its overrides applied.
  Result<LogConfig> TopicConfig(const std::string& name) const;
  // Replaces the configs of topics that do not override them (a broker's dynamic log.* keys)
  // and hands every open log its new effective config. Not stored: the caller keeps them.
  void SetDefaults(const LogConfig& defaults);
  LogConfig defaults() const;

  // The open log of one partition (opened on first use, kept open until Close()).
  Result<PartitionLog*> Partition(const std::string& topic, int32_t partition);
  // As Partition(), sharing ownership: for background work (the log cleaner) that must not see
  // the object freed under it by DeleteTopic() or Close(). Such a log is closed by them and
  // then refuses writes.
  Result<std::shared_ptr<PartitionLog>> SharedPartition(const std::string& topic,
                                                        int32_t partition);

  // ---- the topic that lock-free writers share (__consumer_offsets; see offsets/local.h) ----

  // `name` as it is on disk now (a read-only DataDir opened earlier may not know it yet), also
  // updating this DataDir's view of it. NotFound when it does not exist.
  Result<TopicInfo> RefreshTopic(const std::string& name);
  // Creates `name` with `partitions` partitions and `configs` unless it exists on disk, also in
  // a read-only DataDir; returns the topic as it now is. The caller holds the lock that
  // serialises creators (offsets::LockOffsetsTopic), so racing creators agree: the first one's
  // topic file wins. Partition directories are made from the last down to 0, so a creation cut
  // short always leaves the last one and the count inferred from them is right; a later
  // creation keeps their topic id.
  // `topic_id` is used only when this call creates the topic.
  Result<TopicInfo> CreateSharedTopic(const std::string& name, const Uuid& topic_id,
                                      int32_t partitions,
                                      const std::map<std::string, std::string>& configs);

  // ---- silt-groups/, the local group offsets before __consumer_offsets (read to migrate) ----

  // Groups with a file in silt-groups/, sorted; empty when the directory is gone.
  std::vector<std::string> ListLegacyGroups() const;
  // topic -> partition -> next offset to consume.
  using LegacyGroupOffsets = std::map<std::string, std::map<int32_t, int64_t>>;
  // A group's offsets from silt-groups/; NotFound when it has no file.
  Result<LegacyGroupOffsets> LegacyGroupCommitted(const std::string& group) const;
  // True while silt-groups/ exists.
  bool HasLegacyGroups() const;
  // Renames silt-groups/ to silt-groups.migrated/ (.migrated.1, .2... when taken) and syncs the
  // directory; also allowed read-only (the caller holds offsets::LockOffsetsTopic). OK when
  // there is nothing to rename.
  Status RetireLegacyGroups();

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
