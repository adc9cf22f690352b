// The committed-offset store of a data directory, for the `silt` commands that run without a
// broker, and the writer locks that keep them and a broker from writing the same log.
//
// Rules (also in README.md and storage/data_dir.h):
//   - Local readers (`consume -g`, `group list|describe`) open the data dir read-only: no
//     .lock, so they run while `silt produce` holds the directory.
//   - Whoever appends to __consumer_offsets-N holds silt-locks/__consumer_offsets-N.lock
//     (flock), with "<pid> <role>" in it; whoever creates the topic holds
//     silt-locks/__consumer_offsets.lock. A local committer takes a partition's lock for one
//     commit (waiting up to lock_wait_ms for another local committer); a broker takes the
//     topic lock and every partition lock at start-up and keeps them (LockOffsetsForBroker),
//     so a local commit while it runs fails with Busy: "a broker is running on it (pid N);
//     use -b HOST:PORT".
//   - Nobody opens a __consumer_offsets partition writable without its lock.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "offsets/store.h"
#include "storage/data_dir.h"

namespace silt::offsets {

enum class LockRole { kLocal, kBroker };

// An flock(2) held on a file; released when destroyed. Movable, not copyable.
class WriterLock {
 public:
  WriterLock() = default;
  explicit WriterLock(int fd) : fd_(fd) {}
  WriterLock(WriterLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  WriterLock& operator=(WriterLock&& o) noexcept;
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;
  ~WriterLock();
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// The lock of partition `partition` of __consumer_offsets in `data_dir`, waiting up to
// `wait_ms` for a local holder (never for a broker). Busy names the holder.
Result<WriterLock> LockOffsetsPartition(const std::string& data_dir, int32_t partition,
                                        LockRole role, int64_t wait_ms);
// The lock that serialises creating the topic (and migrating silt-groups/ into it).
Result<WriterLock> LockOffsetsTopic(const std::string& data_dir, LockRole role, int64_t wait_ms);
// What a broker takes at start-up and holds while it runs: the topic lock and the lock of each
// of the topic's `partitions` partitions (0 when the topic does not exist yet; the broker then
// takes the partitions' locks after creating it, with LockOffsetsPartition). Busy (naming the
// holder) if a local command holds one and does not let go within `wait_ms`.
Result<std::vector<WriterLock>> LockOffsetsForBroker(const std::string& data_dir,
                                                     int32_t partitions, int64_t wait_ms = 5000);

// The pid of a `silt serve` holding data_dir's .lock now, if one does (from /proc/locks and
// the holder's command line); nullopt otherwise or when that cannot be told.
std::optional<int64_t> RunningBrokerPid(const std::string& data_dir);
// The Busy error a local command gives when a broker runs on `data_dir`.
Status BrokerRunningError(const std::string& data_dir, int64_t pid);

// __consumer_offsets in a data directory. Writable DataDir: its own partition logs. Read-only
// DataDir: appends open the partition's log writable just for the append (under its lock) and
// fsync it; reads open it read-only, so appends by other processes are seen.
class DataDirPartitions : public OffsetsPartitions {
 public:
  DataDirPartitions(storage::DataDir* dir, int64_t lock_wait_ms = 5000)
      : dir_(dir), lock_wait_ms_(lock_wait_ms) {}
  Result<int32_t> PartitionCount() override;
  Result<int32_t> CreateTopic(int32_t partitions) override;
  Status Append(int32_t partition, std::string* batch) override;
  Status Read(int32_t partition,
              const std::function<Status(std::string_view batches)>& fn) override;

 private:
  storage::DataDir* dir_;
  int64_t lock_wait_ms_;
};

// Writes silt-groups/ (the layout before __consumer_offsets) into `store` over `dir`, then
// renames it silt-groups.migrated/. A legacy offset is written only where the store has none
// for that group, topic and partition (one batch per group, all or nothing), so a run cut
// short at any point is finished by the next one and never writes over a newer commit. Holds
// the topic lock while it runs. OK (and nothing done) when there is no silt-groups/.
Status MigrateLegacyGroups(storage::DataDir* dir, OffsetStore* store, int64_t lock_wait_ms = 5000);

// The store a local command uses: DataDirPartitions + OffsetStore + migration.
class LocalOffsets {
 public:
  struct Options {
    int64_t lock_wait_ms = 5000;
    int32_t default_partitions = kDefaultOffsetsPartitions;
  };
  // `dir` must outlive the result. A writable dir is migrated now; a read-only one on the
  // first Commit or DeleteGroup (until then reads merge in silt-groups/ where the store has
  // nothing, so an unmigrated directory reads the same).
  static Result<std::unique_ptr<LocalOffsets>> Open(storage::DataDir* dir, const Options& o);
  static Result<std::unique_ptr<LocalOffsets>> Open(storage::DataDir* dir) {
    return Open(dir, Options{});
  }

  Result<GroupsView> Load();
  Result<std::optional<GroupState>> Group(const std::string& group);
  // Commits `offsets` (other partitions keep theirs), stamped now unless they carry a time.
  Status Commit(const std::string& group, const GroupOffsets& offsets);
  // NotFound when the group does not exist.
  Status DeleteGroup(const std::string& group);

  OffsetStore* store() { return &store_; }

 private:
  LocalOffsets(storage::DataDir* dir, const Options& o)
      : dir_(dir), options_(o), partitions_(dir, o.lock_wait_ms),
        store_(&partitions_, o.default_partitions) {}
  Status MigrateIfNeeded();
  void MergeLegacy(const std::string& group, GroupState* state) const;

  storage::DataDir* dir_;
  Options options_;
  DataDirPartitions partitions_;
  OffsetStore store_;
};

}  // namespace silt::offsets
