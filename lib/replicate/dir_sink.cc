#include "replicate/dir_sink.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

#include "base/file.h"
#include "base/random.h"
#include "offsets/local.h"
#include "replicate/configs.h"
#include "storage/data_dir.h"
#include "storage/offset_checkpoint.h"

namespace silt::replicate {
namespace {

constexpr const char* kCheckpointDir = "silt-replicate";

Status SyncDir(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno("open " + path, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return Status::FromErrno("fsync " + path, err);
  return Status::OK();
}

// Starts the writeback of a partition's appends on a second thread once enough bytes wait
// (sync_file_range: the pages go to the disk, nothing waits for them and no cache flush is
// asked for), so that the disk writes them while the copy goes on; Flush() then has little
// left to wait for.
class BackgroundWriteback {
 public:
  BackgroundWriteback() : thread_([this] { Loop(); }) {}
  ~BackgroundWriteback() {
    {
      std::lock_guard<std::mutex> l(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Kick(std::string path) {
    {
      std::lock_guard<std::mutex> l(mu_);
      for (const auto& q : queue_)
        if (q == path) return;
      queue_.push_back(std::move(path));
    }
    cv_.notify_all();
  }
  // Waits until every kicked writeback has started.
  void Drain() {
    std::unique_lock<std::mutex> l(mu_);
    idle_cv_.wait(l, [&] { return queue_.empty() && !busy_; });
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      cv_.wait(l, [&] { return done_ || !queue_.empty(); });
      if (queue_.empty() && done_) return;
      std::string path = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      l.unlock();
      // Only a hint: errors show in the Flush that makes the bytes durable.
      int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd >= 0) {
        (void)::sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
        ::close(fd);
      }
      l.lock();
      busy_ = false;
      idle_cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<std::string> queue_;
  bool busy_ = false;
  bool done_ = false;
  std::thread thread_;
};

// Runs fn(item) for every item on up to kSyncThreads threads (they wait on the disk, not the
// CPU: the fsyncs of several files share the journal commits and the device's cache flushes).
// The first error is returned.
constexpr size_t kSyncThreads = 16;
template <class T, class Fn>
Status InParallel(const std::vector<T>& items, Fn fn, size_t max_threads = kSyncThreads) {
  if (items.size() <= 1) return items.empty() ? Status::OK() : fn(items[0]);
  std::vector<Status> results(items.size());
  std::atomic<size_t> next{0};
  std::vector<std::thread> threads;
  const size_t n = std::min(items.size(), max_threads);
  threads.reserve(n);
  for (size_t t = 0; t < n; ++t)
    threads.emplace_back([&] {
      for (size_t i; (i = next.fetch_add(1)) < items.size();) results[i] = fn(items[i]);
    });
  for (auto& t : threads) t.join();
  for (auto& s : results)
    if (!s.ok()) return s;
  return Status::OK();
}

Status FdatasyncPath(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno("open " + path, errno);
  int rc = ::fdatasync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return Status::FromErrno("fdatasync " + path, err);
  return Status::OK();
}

// Bytes appended to a partition after which their writeback starts in the background.
constexpr int64_t kBackgroundWritebackBytes = 2 << 20;

class DirSink final : public Sink {
 public:
  DirSink(std::string path, std::unique_ptr<storage::DataDir> dir, FsyncMode fsync)
      : path_(std::move(path)), dir_(std::move(dir)), fsync_(fsync) {}
  ~DirSink() override {
    writeback_.Drain();
    if (fsync_ == FsyncMode::kNever) {
      // No fsync, so no clean-shutdown marker: the next open rescans (and fsyncs) what was
      // written since the recovery points on disk, which this run never moved.
      return;
    }
    // Close() flushes every log in turn; the written ones are flushed here first, at once,
    // so that Close() finds little left to wait for.
    std::vector<storage::PartitionLog*> logs(written_.begin(), written_.end());
    (void)InParallel(logs, [](storage::PartitionLog* log) { return log->Flush(); });
    (void)dir_->Close();
  }

  Placement placement() const override { return Placement::kPreservesOffsets; }

  Result<std::vector<TopicDesc>> ListTopics() override {
    std::vector<TopicDesc> out;
    for (const auto& t : dir_->ListTopics()) {
      if (t.name.rfind("__", 0) == 0) continue;
      out.push_back({t.name, t.partitions, t.configs});
    }
    return out;
  }

  Status EnsureTopic(const TopicDesc& topic, bool copy_configs) override {
    std::map<std::string, std::string> configs;
    if (copy_configs) configs = ConfigsToCopy(topic.configs);
    auto have = dir_->GetTopic(topic.name);
    if (!have.ok()) {
      if (!have.status().IsNotFound()) return have.status();
      // Made durable in the background while the copy goes on; Flush and StoreCheckpoint
      // wait for it (a checkpoint never names a topic that a crash could take back).
      auto made = dir_->CreateTopic(topic.name, NewTopicId(), topic.partitions, configs,
                                    storage::DataDir::TopicSync::kBackground);
      return made.status();
    }
    if (have->partitions < topic.partitions)
      SILT_TRY(dir_->AddPartitions(topic.name, topic.partitions));
    if (copy_configs) {
      std::map<std::string, std::string> set;
      for (const auto& [k, v] : configs) {
        auto it = have->configs.find(k);
        if (it == have->configs.end() || it->second != v) set.emplace(k, v);
      }
      if (!set.empty()) SILT_TRY(dir_->AlterTopicConfig(topic.name, set));
    }
    return Status::OK();
  }

  Result<Offset> LogEnd(const std::string& topic, int32_t partition) override {
    SILT_ASSIGN_OR_RETURN(storage::PartitionLog * log, dir_->Partition(topic, partition));
    // Bytes past the recovery point (a run killed before its Flush) may be adopted by the
    // replicator as copied: the next Flush makes them durable.
    Track(log);
    if (log->recovery_point() < log->log_end_offset()) dirty_.insert(log);
    return log->log_end_offset();
  }

  Result<Offset> DurableEnd(const std::string& topic, int32_t partition) override {
    SILT_ASSIGN_OR_RETURN(storage::PartitionLog * log, dir_->Partition(topic, partition));
    Track(log);
    return synced_[log].end;
  }

  Result<Offset> LogStart(const std::string& topic, int32_t partition) override {
    SILT_ASSIGN_OR_RETURN(storage::PartitionLog * log, dir_->Partition(topic, partition));
    return log->log_start_offset();
  }

  Result<std::string> ReadBack(const std::string& topic, int32_t partition, Offset from,
                               int64_t max_bytes) override {
    SILT_ASSIGN_OR_RETURN(storage::PartitionLog * log, dir_->Partition(topic, partition));
    if (from >= log->log_end_offset()) return std::string();
    SILT_ASSIGN_OR_RETURN(auto r, log->Read(from, max_bytes, log->log_end_offset(), true));
    return r.ReadAll();
  }

  Result<AppendOutcome> Append(const std::string& topic, int32_t partition, Offset expected,
                               std::string_view batches) override {
    SILT_ASSIGN_OR_RETURN(storage::PartitionLog * log, dir_->Partition(topic, partition));
    AppendOutcome out;
    out.log_end = log->log_end_offset();
    if (expected != out.log_end) return out;
    if (batches.empty()) {
      out.appended = true;
      return out;
    }
    Track(log);
    auto r = log->AppendWithOffsets(batches);
    if (!r.ok()) return r.status().WithContext(topic + "/" + std::to_string(partition));
    Appended(log, static_cast<int64_t>(batches.size()));
    out.appended = true;
    out.log_end = log->log_end_offset();
    return out;
  }

  Result<AppendOutcome> AppendFiles(const std::string& topic, int32_t partition, Offset expected,
                                    const std::vector<FileSlice>& files, int64_t* batches,
                                    int64_t* records) override {
    SILT_ASSIGN_OR_RETURN(storage::PartitionLog * log, dir_->Partition(topic, partition));
    AppendOutcome out;
    out.log_end = log->log_end_offset();
    if (expected != out.log_end) return out;
    if (files.empty()) {
      out.appended = true;
      return out;
    }
    Track(log);
    int64_t n = 0, m = 0;
    auto r = log->AppendCopiedWithOffsets(files, &n, &m);
    if (!r.ok()) return r.status().WithContext(topic + "/" + std::to_string(partition));
    *batches += n;
    *records += m;
    int64_t bytes = 0;
    for (const auto& f : files) bytes += f.length;
    Appended(log, bytes);
    out.appended = true;
    out.log_end = log->log_end_offset();
    return out;
  }

  // The copies go on a few threads at once (each partition's log has its own lock, and the
  // kernel copies into different files in parallel): one per two cores, two to four, each with
  // the thread that checks its copy (on two cores, two copies and their checks still beat one
  // copy and its check); the bookkeeping stays on the calling thread.
  void AppendFilesEach(std::vector<FileAppend>* appends) override {
    struct Job {
      FileAppend* a;
      storage::PartitionLog* log;
    };
    std::vector<Job> jobs;
    for (FileAppend& a : *appends) {
      auto log = dir_->Partition(a.topic, a.partition);
      if (!log.ok()) {
        a.status = log.status();
        continue;
      }
      a.outcome.log_end = (*log)->log_end_offset();
      if (a.expected != a.outcome.log_end) continue;
      if (a.files.empty()) {
        a.outcome.appended = true;
        continue;
      }
      Track(*log);
      jobs.push_back({&a, *log});
    }
    // The largest first: the lanes then finish at about the same time.
    auto size_of = [](const Job& j) {
      int64_t n = 0;
      for (const auto& f : j.a->files) n += f.length;
      return n;
    };
    std::stable_sort(jobs.begin(), jobs.end(),
                     [&](const Job& x, const Job& y) { return size_of(x) > size_of(y); });
    const size_t lanes = std::clamp<size_t>(std::thread::hardware_concurrency() / 2, 2, 4);
    (void)InParallel(
        jobs,
        [](const Job& j) {
          FileAppend& a = *j.a;
          auto r = j.log->AppendCopiedWithOffsets(a.files, &a.batches, &a.records);
          if (!r.ok())
            a.status = r.status().WithContext(a.topic + "/" + std::to_string(a.partition));
          return Status::OK();
        },
        lanes);
    for (const Job& j : jobs) {
      FileAppend& a = *j.a;
      if (!a.status.ok()) continue;
      int64_t bytes = 0;
      for (const auto& f : a.files) bytes += f.length;
      Appended(j.log, bytes);
      a.outcome.appended = true;
      a.outcome.log_end = j.log->log_end_offset();
    }
  }

  // What a checkpoint needs durable is the segments' bytes (and the directory entries of new
  // segment files): the recovery points on disk (DataDir::Checkpoint) move only when the sink
  // closes, so after a crash every segment written since is rescanned and its indexes and
  // leader epochs rebuilt from it. So only the segment files written since the last Flush are
  // fdatasynced (and a partition's directory when it gained a segment), all at once, where
  // PartitionLog::Flush would fsync the log, both indexes and maybe the epoch file of each
  // partition in turn.
  Status Flush() override {
    writeback_.Drain();
    SILT_TRY(dir_->SyncTopics());
    if (dirty_.empty()) return Status::OK();
    std::vector<std::string> files;
    std::vector<std::string> dirs;
    std::vector<std::pair<storage::PartitionLog*, Synced>> next;
    for (storage::PartitionLog* log : dirty_) {
      const Synced& was = synced_[log];
      Synced now;
      now.end = log->log_end_offset();
      bool new_file = false;
      for (const auto& seg : log->Segments()) {
        now.bases.insert(seg.base_offset.value());
        if (seg.next_offset <= was.end && seg.base_offset < was.end) continue;  // unchanged
        files.push_back(seg.log_path);
        new_file |= !was.bases.count(seg.base_offset.value());
      }
      if (new_file) dirs.push_back(log->dir());
      next.emplace_back(log, std::move(now));
    }
    SILT_TRY(InParallel(files, [](const std::string& f) { return FdatasyncPath(f); }));
    SILT_TRY(InParallel(dirs, [](const std::string& d) { return SyncDir(d); }));
    for (auto& [log, sy] : next) synced_[log] = std::move(sy);
    dirty_.clear();
    unflushed_.clear();
    return Status::OK();
  }

  Status TruncateTo(const std::string& topic, int32_t partition, Offset offset) override {
    SILT_ASSIGN_OR_RETURN(storage::PartitionLog * log, dir_->Partition(topic, partition));
    // What was appended before is made durable first; after the cut every segment that holds
    // anything past the new end is synced again, its directory with it.
    SILT_TRY(Flush());
    SILT_TRY(log->TruncateTo(offset));
    synced_[log] = Synced{log->log_end_offset(), {}};
    return Status::OK();
  }

  Result<std::vector<CheckpointEntry>> LoadCheckpoint(const std::string& source_id) override {
    std::vector<CheckpointEntry> out;
    auto cp = storage::ReadOffsetCheckpoint(CheckpointPath(source_id));
    if (!cp.ok()) {
      if (cp.status().IsNotFound()) return out;
      return cp.status();
    }
    for (const auto& [tp, off] : *cp) out.push_back({tp.first, tp.second, Offset(off)});
    return out;
  }

  Status StoreCheckpoint(const std::string& source_id,
                         const std::vector<CheckpointEntry>& entries) override {
    SILT_TRY(dir_->SyncTopics());
    const std::string dir = JoinPath(path_, kCheckpointDir);
    struct stat st;
    if (::stat(dir.c_str(), &st) != 0) {
      if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
        return Status::FromErrno("mkdir " + dir, errno);
      SILT_TRY(SyncDir(path_));
    }
    storage::OffsetCheckpointMap m;
    for (const auto& e : entries) m[{e.topic, e.partition}] = e.source_next.value();
    return storage::WriteOffsetCheckpoint(CheckpointPath(source_id), m);
  }

  Result<Offset> TranslateOffset(const std::string& topic, int32_t partition,
                                 Offset source) override {
    SILT_ASSIGN_OR_RETURN(storage::PartitionLog * log, dir_->Partition(topic, partition));
    if (source > log->log_end_offset())
      return Status::NotFound(topic + "/" + std::to_string(partition) + ": offset " +
                              std::to_string(source.value()) + " is not copied yet");
    return source;
  }

  Result<bool> GroupActive(const std::string& group) override { return false; }

  Status CommitGroupOffsets(const GroupOffsets& offsets) override {
    if (!offsets_) {
      SILT_ASSIGN_OR_RETURN(offsets_, offsets::LocalOffsets::Open(dir_.get()));
    }
    offsets::GroupOffsets g;
    for (const auto& e : offsets.offsets) {
      offsets::Committed c;
      c.offset = e.offset.value();
      c.metadata = e.metadata;
      g[e.topic][e.partition] = c;
    }
    if (g.empty()) return Status::OK();
    return offsets_->Commit(offsets.group, g);
  }

  Status Promote(const std::string& topic) override { return Status::OK(); }

 private:
  // After an append of `bytes` to `log`: to be synced by the next Flush; the writeback of
  // every kBackgroundWritebackBytes of it starts at once.
  void Appended(storage::PartitionLog* log, int64_t bytes) {
    dirty_.insert(log);
    written_.insert(log);
    int64_t& pending = unflushed_[log];
    pending += bytes;
    if (pending >= kBackgroundWritebackBytes && fsync_ != FsyncMode::kNever) {
      pending = 0;
      auto segs = log->Segments();
      if (!segs.empty()) writeback_.Kick(segs.back().log_path);
    }
  }

  // The first time a log is seen: durable up to its recovery point (what the data dir's open
  // checked or trusted), its segment files known.
  void Track(storage::PartitionLog* log) {
    if (synced_.count(log)) return;
    Synced& sy = synced_[log];
    sy.end = log->recovery_point();
    for (const auto& seg : log->Segments()) sy.bases.insert(seg.base_offset.value());
  }

  std::string CheckpointPath(const std::string& source_id) const {
    return JoinPath(JoinPath(path_, kCheckpointDir), CheckpointFileName(source_id));
  }

  std::string path_;
  std::unique_ptr<storage::DataDir> dir_;
  std::unique_ptr<offsets::LocalOffsets> offsets_;
  const FsyncMode fsync_;
  std::set<storage::PartitionLog*> dirty_;
  std::set<storage::PartitionLog*> written_;  // every log appended to since the open
  std::map<storage::PartitionLog*, int64_t> unflushed_;
  // Per log written: its end and its segments' base offsets at the last Flush.
  struct Synced {
    Offset end{0};
    std::set<int64_t> bases;
  };
  std::map<storage::PartitionLog*, Synced> synced_;
  BackgroundWriteback writeback_;  // last: its thread stops before the logs go
};

}  // namespace

std::string CheckpointFileName(const std::string& source_id) {
  std::string out;
  for (unsigned char c : source_id) {
    if (std::isalnum(c) || c == '.' || c == '_' || c == '-') {
      out += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out + ".checkpoint";
}

Result<std::unique_ptr<Sink>> OpenDirSink(const std::string& path, FsyncMode fsync) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    std::string parent = path;
    while (parent.size() > 1 && parent.back() == '/') parent.pop_back();
    size_t slash = parent.rfind('/');
    parent = slash == std::string::npos ? "." : (slash == 0 ? "/" : parent.substr(0, slash));
    if (::stat(parent.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      return Status::NotFound("cannot create destination data dir '" + path + "': '" + parent +
                              "' does not exist");
  }
  storage::DataDir::Options o;
  o.read_only = false;
  o.create = true;
  auto dir = storage::DataDir::Open(path, o);
  if (!dir.ok()) return dir.status().WithContext("destination " + path);
  if ((*dir)->read_only())
    return Status::InvalidArgument("destination " + path +
                                   " opens read-only (a copy of a Kafka broker's directory?)");
  return std::unique_ptr<Sink>(new DirSink(path, std::move(dir).value(), fsync));
}

}  // namespace silt::replicate
