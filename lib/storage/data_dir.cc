// DataDir: the topics, partitions and configs of one directory, and its legacy group offsets
// (layout in data_dir.h).
#include "storage/data_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <cstring>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "base/properties.h"
#include "base/random.h"
#include "base/topic_name.h"
#include "format/layout.h"

namespace silt::storage {
namespace {

constexpr const char* kLockFile = ".lock";
constexpr const char* kTopicsDir = "silt-topics";
constexpr const char* kGroupsDir = "silt-groups";
constexpr const char* kCleanShutdownFile = "clean-shutdown";
constexpr const char* kRecoveryCheckpointFile = "recovery-point-offset-checkpoint";
constexpr const char* kLogStartCheckpointFile = "log-start-offset-checkpoint";
constexpr const char* kPropertiesSuffix = ".properties";
constexpr int32_t kMaxPartitions = 1 << 20;
constexpr const char* kDeleteSuffix = "-delete";
// silt-topics/<topic>.properties renamed so while its topic is being deleted (see DeleteTopic).
constexpr const char* kDeletingSuffix = ".deleting";

using PartitionKey = std::pair<std::string, int32_t>;
using OffsetCheckpoint = std::map<PartitionKey, int64_t>;

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool ParseInt(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 19) return false;
  int64_t v = 0;
  size_t i = 0;
  bool neg = s[0] == '-';
  if (neg) i = 1;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = neg ? -v : v;
  return true;
}

// "<topic>-<partition>" as Kafka names partition directories.
bool ParsePartitionDir(const std::string& name, std::string* topic, int32_t* partition) {
  size_t dash = name.rfind('-');
  if (dash == std::string::npos || dash == 0 || dash + 1 == name.size()) return false;
  int64_t p;
  std::string_view digits = std::string_view(name).substr(dash + 1);
  if (digits[0] == '-' || !ParseInt(digits, &p) || p > INT32_MAX) return false;
  std::string t = name.substr(0, dash);
  if (!ValidateTopicName(t).ok()) return false;
  *topic = t;
  *partition = static_cast<int32_t>(p);
  return true;
}

std::string PartitionDirName(const std::string& topic, int32_t p) {
  return topic + "-" + std::to_string(p);
}

// Kafka's offset checkpoint files: "0\n<count>\n" then "<topic> <partition> <offset>" lines.
// A malformed file yields an empty map: recovery then checks everything, which is safe.
OffsetCheckpoint ReadCheckpoint(const std::string& path) {
  OffsetCheckpoint out;
  auto text = ReadFile(path);
  if (!text.ok()) return out;
  std::istringstream in(text.value());
  int version;
  int64_t count;
  if (!(in >> version >> count) || version != 0 || count < 0) return out;
  for (int64_t i = 0; i < count; ++i) {
    std::string topic;
    int64_t p, off;
    if (!(in >> topic >> p >> off) || p < 0 || p > INT32_MAX) return {};
    out[{topic, static_cast<int32_t>(p)}] = off;
  }
  return out;
}

Status WriteCheckpoint(const std::string& path, const OffsetCheckpoint& cp) {
  std::string text = "0\n" + std::to_string(cp.size()) + "\n";
  for (const auto& [k, v] : cp)
    text += k.first + " " + std::to_string(k.second) + " " + std::to_string(v) + "\n";
  return WriteFileAtomic(path, text);
}

std::string EncodeGroupName(const std::string& g) {
  std::string out;
  for (unsigned char c : g) {
    if (std::isalnum(c) || c == '_' || c == '-' || (c == '.' && !out.empty())) {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

bool DecodeGroupName(const std::string& s, std::string* out) {
  out->clear();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out->push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size()) return false;
    unsigned v;
    if (std::sscanf(s.c_str() + i + 1, "%2X", &v) != 1) return false;
    out->push_back(static_cast<char>(v));
    i += 2;
  }
  return true;
}

}  // namespace

struct DataDir::Impl {
  std::string path;
  Options options;
  int lock_fd = -1;
  bool clean_at_open = false;
  bool closed = false;
  // Guards recovery_points, log_starts and topics_snapshot, and the checkpoint files; taken
  // after mu, and from partition logs' checkpoint hooks (which hold no data dir lock).
  std::mutex checkpoint_mu;
  OffsetCheckpoint recovery_points;
  OffsetCheckpoint log_starts;
  std::set<std::string> topics_snapshot;  // topics whose entries the files keep

  mutable std::mutex mu;
  std::map<std::string, TopicInfo> topics;
  std::map<PartitionKey, std::shared_ptr<PartitionLog>> logs;

  // Directories renamed "...-delete" wait here for a background thread to remove them (as
  // Kafka removes its ".deleted" directories); what is left at Close() waits for the next open.
  std::mutex reap_mu;
  std::condition_variable reap_cv;
  std::deque<std::string> reap_queue;  // guarded by reap_mu
  size_t reaping = 0;                  // directories being removed now; guarded by reap_mu
  bool reap_stop = false;              // guarded by reap_mu
  std::thread reaper;

  void Reap(std::vector<std::string> dirs) {
    if (dirs.empty()) return;
    std::lock_guard l(reap_mu);
    if (reap_stop) return;
    for (std::string& d : dirs) reap_queue.push_back(std::move(d));
    if (!reaper.joinable()) reaper = std::thread([this] { ReapLoop(); });
    reap_cv.notify_all();
  }
  void ReapLoop() {
    std::unique_lock l(reap_mu);
    for (;;) {
      reap_cv.wait(l, [this] { return reap_stop || !reap_queue.empty(); });
      if (reap_stop) return;
      std::string d = std::move(reap_queue.front());
      reap_queue.pop_front();
      ++reaping;
      l.unlock();
      (void)RemoveAll(d);  // what fails stays for the next open to remove
      l.lock();
      --reaping;
      reap_cv.notify_all();
    }
  }
  void WaitReaped(const std::function<void(size_t left)>& progress) {
    std::unique_lock l(reap_mu);
    auto done = [this] { return reap_stop || (reap_queue.empty() && reaping == 0); };
    // Told at once (how much there is to do), then every quarter second.
    while (!done()) {
      if (progress) {
        const size_t left = reap_queue.size() + reaping;
        l.unlock();
        progress(left);
        l.lock();
      }
      reap_cv.wait_for(l, std::chrono::milliseconds(250), done);
    }
  }
  // Before the lock is released: nobody else may remove what another writer could own then.
  void StopReaper() {
    {
      std::lock_guard l(reap_mu);
      reap_stop = true;
      reap_cv.notify_all();
    }
    if (reaper.joinable()) reaper.join();
  }

  // Topics created with TopicSync::kBackground wait here for a thread that makes them durable.
  struct TopicSyncJob {
    std::vector<std::string> files;  // the partition.metadata files and the topic file's temp
    std::vector<std::string> dirs;   // the partition directories
    std::string tmp;                 // the topic file under its temporary name...
    std::string file;                // ...and its own
  };
  std::mutex sync_mu;
  std::condition_variable sync_cv;
  std::deque<TopicSyncJob> sync_queue;  // guarded by sync_mu
  bool syncing = false;                 // a batch is being synced; guarded by sync_mu
  bool sync_stop = false;               // guarded by sync_mu
  Status sync_error;                    // the first failure, kept; guarded by sync_mu
  std::thread syncer;

  void QueueTopicSync(TopicSyncJob job) {
    std::lock_guard l(sync_mu);
    sync_queue.push_back(std::move(job));
    if (!syncer.joinable()) syncer = std::thread([this] { SyncLoop(); });
    sync_cv.notify_all();
  }
  // Takes whatever is queued as one batch (the creations of a burst share their directory
  // fsyncs); asked to stop, finishes the queue first.
  void SyncLoop() {
    std::unique_lock l(sync_mu);
    for (;;) {
      sync_cv.wait(l, [this] { return sync_stop || !sync_queue.empty(); });
      if (sync_queue.empty()) return;
      std::vector<TopicSyncJob> batch(std::make_move_iterator(sync_queue.begin()),
                                      std::make_move_iterator(sync_queue.end()));
      sync_queue.clear();
      if (!sync_error.ok()) continue;  // nothing more is put in place after a failure
      syncing = true;
      l.unlock();
      Status s = SyncBatch(batch);
      l.lock();
      syncing = false;
      if (!s.ok()) sync_error = s.WithContext("making new topics durable");
      sync_cv.notify_all();
    }
  }
  // Every file's bytes, then the partition directories and the data directory (their
  // entries), then each topic file renamed into place and the topics directory synced.
  Status SyncBatch(const std::vector<TopicSyncJob>& batch) {
    std::vector<std::string> files, dirs;
    for (const TopicSyncJob& j : batch) {
      files.insert(files.end(), j.files.begin(), j.files.end());
      dirs.insert(dirs.end(), j.dirs.begin(), j.dirs.end());
    }
    SILT_TRY(SyncWritten(files, dirs));
    for (const TopicSyncJob& j : batch) SILT_TRY(RenameFile(j.tmp, j.file));
    return SyncDir(JoinPath(path, kTopicsDir));
  }
  Status WaitTopicSyncs() {
    std::unique_lock l(sync_mu);
    sync_cv.wait(l, [this] { return sync_queue.empty() && !syncing; });
    return sync_error;
  }
  Status TopicSyncError() {
    std::lock_guard l(sync_mu);
    return sync_error;
  }
  void StopSyncer() {
    {
      std::lock_guard l(sync_mu);
      sync_stop = true;
      sync_cv.notify_all();
    }
    if (syncer.joinable()) syncer.join();
  }
  // A random "<dir>.<hex>-delete" name for a partition directory being deleted.
  std::string DoomedName(const std::string& topic, int32_t p) const {
    std::string base = PartitionDirName(topic, p).substr(0, 200);
    uint32_t r;
    RandomBytes(&r, sizeof r);
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, ".%08x%s", static_cast<unsigned>(r), kDeleteSuffix);
    return JoinPath(path, base + suffix);
  }

  // silt-topics/<topic>.properties; a name too long for that (with room for the temp file's
  // suffix under NAME_MAX) is cut and given a hash, and the file's name= line is authoritative.
  std::string TopicFile(const std::string& t) const {
    std::string base = t;
    if (t.size() > 200) {
      uint64_t h = 14695981039346656037ull;  // FNV-1a: stable across builds
      for (unsigned char c : t) h = (h ^ c) * 1099511628211ull;
      char hash[24];
      std::snprintf(hash, sizeof hash, "~%016llx", static_cast<unsigned long long>(h));
      base = t.substr(0, 200) + hash;
    }
    return JoinPath(JoinPath(path, kTopicsDir), base + kPropertiesSuffix);
  }
  std::string PartitionPath(const std::string& t, int32_t p) const {
    return JoinPath(path, PartitionDirName(t, p));
  }

  Result<std::string> TopicFileText(const TopicInfo& t) const {
    Properties props = t.configs;
    props["name"] = t.name;
    props["partitions"] = std::to_string(t.partitions);
    props["topic_id"] = t.topic_id;
    return FormatProperties(props, "topic " + t.name);
  }

  // silt-topics/, durable, made before any partition directory of a topic with a file: a data
  // directory that has partition directories and no silt-topics/ opens as a copy of Kafka's.
  Status EnsureTopicsDir() {
    std::string tdir = JoinPath(path, kTopicsDir);
    if (IsDirectory(tdir)) return Status::OK();
    SILT_TRY(CreateDirs(tdir));
    return SyncDir(path);
  }

  Status WriteTopicFile(const TopicInfo& t) {
    SILT_ASSIGN_OR_RETURN(std::string text, TopicFileText(t));
    SILT_TRY(EnsureTopicsDir());
    return WriteFileAtomic(TopicFile(t.name), text);
  }

  std::string MetadataText(const TopicInfo& t) const {
    return "version: 0\ntopic_id: " + t.topic_id;
  }

  // One partition directory with its partition.metadata, durable. Kafka's
  // leader-epoch-checkpoint is not written: an absent one means no epochs (to silt and to
  // Kafka, which creates it empty), and the log writes it once it has epochs.
  Status CreatePartitionDir(const TopicInfo& t, int32_t p) {
    std::string dir = PartitionPath(t.name, p);
    SILT_TRY(CreateDirs(dir));
    std::string meta = JoinPath(dir, format::kPartitionMetadataFile);
    if (!PathExists(meta)) SILT_TRY(WriteFileAtomic(meta, MetadataText(t)));
    return SyncDir(path);
  }

  // The directories of new partitions `ps` of `t`, each with its partition.metadata (written
  // afresh: a directory left by a creation cut short may hold another id), made durable
  // together: every file written first, then each fsynced, then each directory, then the data
  // directory once. Far fewer waits for the disk than a WriteFileAtomic per file, and as safe:
  // the caller writes the topic file, which makes the partitions exist, only after this.
  Status CreatePartitionDirs(const TopicInfo& t, const std::vector<int32_t>& ps) {
    std::vector<std::string> dirs, files;
    SILT_TRY(WritePartitionDirs(t, ps, &dirs, &files));
    return SyncWritten(files, dirs);
  }

  // Makes durable what was written without a sync: each file's bytes, then each directory's
  // entries, then the data directory's.
  Status SyncWritten(const std::vector<std::string>& files, const std::vector<std::string>& dirs) {
    for (const std::string& file : files) {
      SILT_ASSIGN_OR_RETURN(File f, File::Open(file, File::kReadWrite));
      SILT_TRY(f.Sync());
    }
    for (const std::string& dir : dirs) SILT_TRY(SyncDir(dir));
    return SyncDir(path);
  }

  // The directories of partitions `ps` of `t` and their partition.metadata files, written,
  // not synced; appends their paths to `dirs` and `files`.
  Status WritePartitionDirs(const TopicInfo& t, const std::vector<int32_t>& ps,
                            std::vector<std::string>* dirs, std::vector<std::string>* files) {
    const std::string text = MetadataText(t);
    for (int32_t p : ps) {
      std::string dir = PartitionPath(t.name, p);
      SILT_TRY(CreateDirs(dir));
      std::string meta = JoinPath(dir, format::kPartitionMetadataFile);
      SILT_TRY(WriteWhole(meta, text));
      dirs->push_back(std::move(dir));
      files->push_back(std::move(meta));
    }
    return Status::OK();
  }

  static Status WriteWhole(const std::string& file, std::string_view text) {
    SILT_ASSIGN_OR_RETURN(File f, File::Open(file, File::kCreate));
    SILT_TRY(f.Truncate(0));
    SILT_TRY(f.PWrite(0, text));
    return f.Close();
  }

  // CreateTopic with TopicSync::kBackground: every file of `t` written and nothing synced
  // (but silt-topics/ when this makes it); what the background thread has to do.
  Result<TopicSyncJob> StageTopic(const TopicInfo& t) {
    SILT_ASSIGN_OR_RETURN(std::string text, TopicFileText(t));
    SILT_TRY(EnsureTopicsDir());
    TopicSyncJob job;
    SILT_TRY(WritePartitionDirs(t, t.partition_ids, &job.dirs, &job.files));
    job.file = TopicFile(t.name);
    job.tmp = job.file + ".tmp";
    SILT_TRY(WriteWhole(job.tmp, text));
    job.files.push_back(job.tmp);
    return job;
  }

  // Renames the directories of `t`'s partitions to "-delete" names and fsyncs the data
  // directory; returns the new names.
  Result<std::vector<std::string>> RenameAway(const TopicInfo& t) {
    std::vector<std::string> doomed;
    for (int32_t p : t.partition_ids) {
      std::string from = PartitionPath(t.name, p);
      if (!IsDirectory(from)) continue;
      std::string to = DoomedName(t.name, p);
      SILT_TRY(RenameFile(from, to));
      doomed.push_back(std::move(to));
    }
    SILT_TRY(SyncDir(path));
    return doomed;
  }

  // Open(): finishes the deletions a crash interrupted (a topic file renamed ".deleting"
  // remains): their partition directories are renamed away, then the marker goes.
  Status FinishDeletions() {
    std::string tdir = JoinPath(path, kTopicsDir);
    if (!IsDirectory(tdir)) return Status::OK();
    SILT_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(tdir));
    for (const std::string& n : names) {
      if (!EndsWith(n, std::string(kPropertiesSuffix) + kDeletingSuffix)) continue;
      std::string file = JoinPath(tdir, n);
      SILT_ASSIGN_OR_RETURN(std::string text, ReadFile(file));
      auto props = ParseProperties(text);
      int64_t parts = 0;
      TopicInfo t;
      t.name = props["name"];
      if (ValidateTopicName(t.name).ok() && ParseInt(props["partitions"], &parts) && parts > 0 &&
          parts <= kMaxPartitions) {
        for (int32_t p = 0; p < parts; ++p) t.partition_ids.push_back(p);
        SILT_TRY(RenameAway(t).status());
      }
      SILT_TRY(RemoveFile(file));
    }
    return Status::OK();
  }

  Status LoadTopics() {
    std::string tdir = JoinPath(path, kTopicsDir);
    std::set<std::string> deleting;  // topics whose deletion a crash interrupted
    if (IsDirectory(tdir)) {
      SILT_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(tdir));
      for (const std::string& n : names) {
        if (EndsWith(n, std::string(kPropertiesSuffix) + kDeletingSuffix)) {
          auto text = ReadFile(JoinPath(tdir, n));
          if (text.ok()) deleting.insert(ParseProperties(*text)["name"]);
          continue;
        }
        if (!EndsWith(n, kPropertiesSuffix)) continue;
        std::string name = n.substr(0, n.size() - std::strlen(kPropertiesSuffix));
        SILT_ASSIGN_OR_RETURN(std::string text, ReadFile(JoinPath(tdir, n)));
        auto props = ParseProperties(text);
        if (props.count("name")) name = props["name"];
        props.erase("name");
        if (!ValidateTopicName(name).ok()) continue;
        TopicInfo t;
        t.name = name;
        int64_t parts = 0;
        if (!ParseInt(props["partitions"], &parts) || parts < 1 || parts > kMaxPartitions)
          return Status::Corruption(JoinPath(tdir, n) + ": bad or missing partitions=");
        t.partitions = static_cast<int32_t>(parts);
        t.topic_id = props["topic_id"];
        props.erase("partitions");
        props.erase("topic_id");
        t.configs = std::move(props);
        for (int32_t p = 0; p < t.partitions; ++p) t.partition_ids.push_back(p);
        topics[name] = std::move(t);
      }
    }
    // Partition directories of topics silt has no file for (a directory copied from Kafka).
    SILT_ASSIGN_OR_RETURN(std::vector<std::string> entries, ListDir(path));
    std::map<std::string, TopicInfo> found;
    for (const std::string& e : entries) {
      std::string topic;
      int32_t p;
      if (!ParsePartitionDir(e, &topic, &p) || !IsDirectory(JoinPath(path, e))) continue;
      if (topics.count(topic) || deleting.count(topic)) continue;
      TopicInfo& t = found[topic];
      t.name = topic;
      t.partition_ids.push_back(p);
      t.partitions = std::max(t.partitions, p + 1);
      if (t.topic_id.empty()) {
        auto meta = ReadFile(JoinPath(JoinPath(path, e), format::kPartitionMetadataFile));
        if (meta.ok()) {
          std::istringstream in(meta.value());
          std::string line;
          while (std::getline(in, line))
            // (a file cut short by a crash holds no whole 22-character id: none is taken from it)
            if (line.rfind("topic_id: ", 0) == 0 && line.size() == 10 + 22)
              t.topic_id = line.substr(10);
        }
      }
    }
    for (auto& [name, t] : found) {
      std::sort(t.partition_ids.begin(), t.partition_ids.end());
      topics[name] = std::move(t);
    }
    return Status::OK();
  }

  // Writes both checkpoint files from recovery_points and log_starts. checkpoint_mu held.
  Status WriteCheckpointFiles() {
    for (auto* cp : {&recovery_points, &log_starts})
      for (auto it = cp->begin(); it != cp->end();)
        it = topics_snapshot.count(it->first.first) ? std::next(it) : cp->erase(it);
    SILT_TRY(WriteCheckpoint(JoinPath(path, kRecoveryCheckpointFile), recovery_points));
    return WriteCheckpoint(JoinPath(path, kLogStartCheckpointFile), log_starts);
  }

  // Checkpoints the open logs' current offsets. mu held.
  Status WriteCheckpointsLocked() {
    // Ask the logs first: their hooks take checkpoint_mu while holding their own locks.
    std::vector<std::tuple<PartitionKey, int64_t, int64_t>> now;
    for (const auto& [k, log] : logs)
      now.emplace_back(k, log->recovery_point().value(), log->log_start_offset().value());
    std::lock_guard c(checkpoint_mu);
    topics_snapshot.clear();
    for (const auto& [n, t] : topics) topics_snapshot.insert(n);
    for (const auto& [k, rp, ls] : now) {
      recovery_points[k] = rp;
      log_starts[k] = ls;
    }
    return WriteCheckpointFiles();
  }

  // The hook a partition log calls when its checkpointed offsets must change now.
  std::function<Status(int64_t, int64_t)> HookFor(const PartitionKey& key) {
    return [this, key](int64_t rp, int64_t log_start) {
      std::lock_guard c(checkpoint_mu);
      recovery_points[key] = rp;
      log_starts[key] = log_start;
      return WriteCheckpointFiles();
    };
  }

  Status CheckWritable() const {
    if (options.read_only) return Status::InvalidArgument(path + " is open read-only");
    if (closed) return Status::InvalidArgument(path + " is closed");
    return Status::OK();
  }

  // The checks every new topic passes: its name, its partition count and its configs.
  Status CheckNewTopic(const std::string& name, int32_t partitions,
                       const std::map<std::string, std::string>& configs) const {
    SILT_TRY(ValidateTopicName(name));
    if (partitions < 1 || partitions > kMaxPartitions)
      return Status::InvalidArgument("partitions must be in [1, " +
                                     std::to_string(kMaxPartitions) + "], got " +
                                     std::to_string(partitions));
    LogConfig check = options.defaults;
    return check.Apply(configs);
  }

  void ReleaseLock() {
    if (lock_fd >= 0) {
      ::close(lock_fd);  // releases the flock
      lock_fd = -1;
    }
  }
};

DataDir::DataDir(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

DataDir::~DataDir() {
  if (impl_) {
    impl_->StopSyncer();  // after what is queued is durable
    impl_->StopReaper();
    std::lock_guard l(impl_->mu);
    impl_->logs.clear();
    impl_->ReleaseLock();
  }
}

Result<std::unique_ptr<DataDir>> DataDir::Open(const std::string& path, const Options& options) {
  if (!IsDirectory(path)) {
    if (options.read_only || !options.create)
      return Status::NotFound("data directory " + path + " does not exist");
    SILT_TRY(CreateDirs(path));
  }
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->options = options;
  if (!options.read_only) {
    std::string lock_path = JoinPath(path, kLockFile);
    int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return Status::FromErrno("open " + lock_path, errno);
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int err = errno;
      char buf[32] = {0};
      ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
      ::close(fd);
      if (err == EWOULDBLOCK) {
        std::string pid = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "unknown";
        while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
        return Status::Busy("data directory " + path + " is in use by process " + pid);
      }
      return Status::FromErrno("lock " + lock_path, err);
    }
    std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
      int err = errno;
      ::close(fd);
      return Status::FromErrno("write " + lock_path, err);
    }
    impl->lock_fd = fd;
  }
  std::string marker = JoinPath(path, kCleanShutdownFile);
  // Kafka's own marker counts too, for a directory taken over from a broker.
  std::string kafka_marker = JoinPath(path, ".kafka_cleanshutdown");
  impl->clean_at_open = PathExists(marker) || PathExists(kafka_marker);
  impl->recovery_points = ReadCheckpoint(JoinPath(path, kRecoveryCheckpointFile));
  impl->log_starts = ReadCheckpoint(JoinPath(path, kLogStartCheckpointFile));
  if (!options.read_only && impl->clean_at_open) {
    // From here on a crash must lead to recovery.
    if (PathExists(marker)) SILT_TRY(RemoveFile(marker));
    if (PathExists(kafka_marker)) SILT_TRY(RemoveFile(kafka_marker));
    SILT_TRY(SyncDir(path));
  }
  std::vector<std::string> doomed;
  if (!options.read_only) {
    // Deletions that a crash interrupted: finished, and their directories removed in the
    // background (a read-only open ignores them: "-delete" names no partition).
    SILT_TRY(impl->FinishDeletions());
    SILT_ASSIGN_OR_RETURN(std::vector<std::string> entries, ListDir(path));
    for (const std::string& e : entries)
      if (EndsWith(e, kDeleteSuffix) && IsDirectory(JoinPath(path, e)))
        doomed.push_back(JoinPath(path, e));
  }
  SILT_TRY(impl->LoadTopics());
  for (const auto& [n, t] : impl->topics) impl->topics_snapshot.insert(n);
  impl->Reap(std::move(doomed));
  return std::unique_ptr<DataDir>(new DataDir(std::move(impl)));
}

const std::string& DataDir::path() const { return impl_->path; }
bool DataDir::read_only() const { return impl_->options.read_only; }
bool DataDir::opened_after_clean_shutdown() const { return impl_->clean_at_open; }

std::vector<TopicInfo> DataDir::ListTopics() const {
  std::lock_guard l(impl_->mu);
  std::vector<TopicInfo> out;
  for (const auto& [n, t] : impl_->topics) out.push_back(t);
  return out;
}

Result<TopicInfo> DataDir::GetTopic(const std::string& name) const {
  std::lock_guard l(impl_->mu);
  auto it = impl_->topics.find(name);
  if (it == impl_->topics.end()) return Status::NotFound("topic '" + name + "' does not exist");
  return it->second;
}

Result<TopicInfo> DataDir::CreateTopic(const std::string& name, const Uuid& topic_id,
                                       int32_t partitions,
                                       const std::map<std::string, std::string>& configs,
                                       TopicSync sync) {
  Impl& im = *impl_;
  SILT_TRY(im.CheckWritable());
  SILT_TRY(sync == TopicSync::kNow ? im.WaitTopicSyncs() : im.TopicSyncError());
  if (topic_id.is_reserved())
    return Status::InvalidArgument("topic id " + topic_id.ToString() +
                                   " is reserved and cannot name a topic");
  if (partitions == -1) partitions = im.options.default_partitions;
  SILT_TRY(im.CheckNewTopic(name, partitions, configs));
  std::lock_guard l(im.mu);
  if (im.topics.count(name)) return Status::AlreadyExists("topic '" + name + "' already exists");
  // Kafka refuses names that differ only in '.' versus '_' (they collide in metric names).
  const std::string id = topic_id.ToString();
  for (const auto& [other, t] : im.topics) {
    if (TopicCollisionKey(other) == TopicCollisionKey(name))
      return Status::InvalidArgument("topic '" + name + "' collides with existing topic '" +
                                     other + "' ('.' and '_' are treated alike)");
    if (t.topic_id == id)
      return Status::AlreadyExists("topic id " + id + " already names topic '" + other + "'");
  }
  TopicInfo t;
  t.name = name;
  t.partitions = partitions;
  t.topic_id = id;
  t.configs = configs;
  for (int32_t p = 0; p < partitions; ++p) t.partition_ids.push_back(p);
  if (sync == TopicSync::kNow) {
    SILT_TRY(im.EnsureTopicsDir());
    SILT_TRY(im.CreatePartitionDirs(t, t.partition_ids));
    // The topic file is written last: it is what makes the topic exist.
    SILT_TRY(im.WriteTopicFile(t));
  } else {
    SILT_ASSIGN_OR_RETURN(Impl::TopicSyncJob job, im.StageTopic(t));
    im.QueueTopicSync(std::move(job));
  }
  im.topics[name] = t;
  {
    std::lock_guard c(im.checkpoint_mu);
    im.topics_snapshot.insert(name);
  }
  return t;
}

Status DataDir::SyncTopics() { return impl_->WaitTopicSyncs(); }

Status DataDir::DeleteTopic(const std::string& name) {
  Impl& im = *impl_;
  SILT_TRY(im.CheckWritable());
  SILT_TRY(im.WaitTopicSyncs());
  std::lock_guard l(im.mu);
  auto it = im.topics.find(name);
  if (it == im.topics.end()) return Status::NotFound("topic '" + name + "' does not exist");
  for (auto lit = im.logs.begin(); lit != im.logs.end();) {
    if (lit->first.first == name) {
      lit->second->CloseWithoutFlush();  // its files are about to go
      lit = im.logs.erase(lit);
    } else {
      ++lit;
    }
  }
  // 1. The topic file is renamed ".deleting" (durably): from here on the topic is gone, and
  //    an open after a crash finishes the deletion (FinishDeletions).
  // 2. The partition directories are renamed to "-delete" names (Kafka's suffix), durably, so
  //    that nothing can bring a half-deleted topic back.
  // 3. The marker goes; the directories are removed in the background, the call returns.
  const std::string file = im.TopicFile(name);
  const std::string marker = file + kDeletingSuffix;
  if (PathExists(file)) {
    SILT_TRY(RenameFile(file, marker));
    SILT_TRY(SyncDir(JoinPath(im.path, kTopicsDir)));
  }
  SILT_ASSIGN_OR_RETURN(std::vector<std::string> doomed, im.RenameAway(it->second));
  if (PathExists(marker)) SILT_TRY(RemoveFile(marker));
  im.topics.erase(it);
  {
    std::lock_guard c(im.checkpoint_mu);
    im.topics_snapshot.erase(name);
    for (auto* cp : {&im.recovery_points, &im.log_starts})
      for (auto e = cp->begin(); e != cp->end();)
        e = e->first.first == name ? cp->erase(e) : std::next(e);
  }
  im.Reap(std::move(doomed));
  return Status::OK();
}

void DataDir::WaitForDeletions(const std::function<void(size_t left)>& progress) {
  impl_->WaitReaped(progress);
}

Status DataDir::AlterTopicConfig(const std::string& name,
                                 const std::map<std::string, std::string>& set,
                                 const std::vector<std::string>& remove) {
  Impl& im = *impl_;
  SILT_TRY(im.CheckWritable());
  SILT_TRY(im.WaitTopicSyncs());
  std::lock_guard l(im.mu);
  auto it = im.topics.find(name);
  if (it == im.topics.end()) return Status::NotFound("topic '" + name + "' does not exist");
  TopicInfo t = it->second;
  for (const std::string& k : remove) {
    if (!LogConfig::IsKnownKey(k))
      return Status::InvalidArgument("unknown topic config '" + k + "'");
    t.configs.erase(k);
  }
  for (const auto& [k, v] : set) t.configs[k] = v;
  LogConfig cfg = im.options.defaults;
  SILT_TRY(cfg.Apply(t.configs));
  SILT_TRY(im.WriteTopicFile(t));
  it->second = t;
  for (auto& [k, log] : im.logs)
    if (k.first == name) log->UpdateConfig(cfg);
  return Status::OK();
}

Status DataDir::AddPartitions(const std::string& name, int32_t new_total) {
  Impl& im = *impl_;
  SILT_TRY(im.CheckWritable());
  SILT_TRY(im.WaitTopicSyncs());
  std::lock_guard l(im.mu);
  auto it = im.topics.find(name);
  if (it == im.topics.end()) return Status::NotFound("topic '" + name + "' does not exist");
  TopicInfo t = it->second;
  if (new_total <= t.partitions || new_total > kMaxPartitions)
    return Status::InvalidArgument("topic '" + name + "' has " + std::to_string(t.partitions) +
                                   " partitions; the new count must be larger (and at most " +
                                   std::to_string(kMaxPartitions) + ")");
  if (t.topic_id.empty()) t.topic_id = NewTopicId().ToString();
  std::vector<int32_t> added;
  for (int32_t p = t.partitions; p < new_total; ++p) added.push_back(p);
  SILT_TRY(im.CreatePartitionDirs(t, added));
  t.partition_ids.insert(t.partition_ids.end(), added.begin(), added.end());
  t.partitions = new_total;
  SILT_TRY(im.WriteTopicFile(t));
  it->second = t;
  return Status::OK();
}

void DataDir::SetDefaults(const LogConfig& defaults) {
  Impl& im = *impl_;
  std::lock_guard l(im.mu);
  im.options.defaults = defaults;
  for (auto& [k, log] : im.logs) {
    auto t = im.topics.find(k.first);
    if (t == im.topics.end()) continue;
    LogConfig cfg = defaults;
    // Overrides were checked when stored; one that no longer applies keeps the default.
    if (cfg.Apply(t->second.configs).ok()) log->UpdateConfig(cfg);
  }
}

LogConfig DataDir::defaults() const {
  std::lock_guard l(impl_->mu);
  return impl_->options.defaults;
}

Result<LogConfig> DataDir::TopicConfig(const std::string& name) const {
  std::lock_guard l(impl_->mu);
  auto it = impl_->topics.find(name);
  if (it == impl_->topics.end()) return Status::NotFound("topic '" + name + "' does not exist");
  LogConfig cfg = impl_->options.defaults;
  SILT_TRY(cfg.Apply(it->second.configs));
  return cfg;
}

Result<PartitionLog*> DataDir::Partition(const std::string& topic, int32_t partition) {
  SILT_ASSIGN_OR_RETURN(std::shared_ptr<PartitionLog> log, SharedPartition(topic, partition));
  return log.get();
}

Result<std::shared_ptr<PartitionLog>> DataDir::SharedPartition(const std::string& topic,
                                                               int32_t partition) {
  Impl& im = *impl_;
  std::lock_guard l(im.mu);
  if (im.closed) return Status::InvalidArgument(im.path + " is closed");
  PartitionKey key{topic, partition};
  auto lit = im.logs.find(key);
  if (lit != im.logs.end()) return lit->second;
  auto it = im.topics.find(topic);
  if (it == im.topics.end()) return Status::NotFound("topic '" + topic + "' does not exist");
  const TopicInfo& t = it->second;
  if (!std::binary_search(t.partition_ids.begin(), t.partition_ids.end(), partition))
    return Status::NotFound("topic '" + topic + "' has no partition " +
                            std::to_string(partition) + " here");
  LogConfig cfg = im.options.defaults;
  SILT_TRY(cfg.Apply(t.configs));
  std::string dir = im.PartitionPath(topic, partition);
  if (!im.options.read_only && !IsDirectory(dir)) SILT_TRY(im.CreatePartitionDir(t, partition));
  PartitionLog::OpenOptions o;
  o.read_only = im.options.read_only;
  o.create = !im.options.read_only;
  o.clean_shutdown = im.clean_at_open;
  o.stop_at_damage = im.options.stop_at_damage;
  {
    std::lock_guard c(im.checkpoint_mu);
    auto rp = im.recovery_points.find(key);
    o.recovery_point = rp == im.recovery_points.end() ? 0 : rp->second;
    auto ls = im.log_starts.find(key);
    o.log_start_offset = ls == im.log_starts.end() ? -1 : ls->second;
  }
  if (!im.options.read_only) o.checkpoint_hook = im.HookFor(key);
  if (im.options.read_only && !IsDirectory(dir))
    return Status::NotFound("partition directory " + dir + " does not exist");
  auto log = PartitionLog::Open(dir, cfg, o);
  if (!log.ok()) return log.status();
  std::shared_ptr<PartitionLog> shared = std::move(log).value();
  im.logs[key] = shared;
  return shared;
}

// ---- the shared topic (__consumer_offsets) --------------------------------------------------

Result<TopicInfo> DataDir::RefreshTopic(const std::string& name) {
  Impl& im = *impl_;
  SILT_TRY(im.WaitTopicSyncs());
  Impl fresh;
  fresh.path = im.path;
  SILT_TRY(fresh.LoadTopics());
  std::lock_guard l(im.mu);
  auto it = fresh.topics.find(name);
  if (it == fresh.topics.end()) {
    // Only a read-only view can be behind the disk; a writer's own map is the truth.
    if (im.options.read_only) im.topics.erase(name);
    auto mine = im.topics.find(name);
    if (mine != im.topics.end()) return mine->second;
    return Status::NotFound("topic '" + name + "' does not exist");
  }
  if (im.options.read_only || !im.topics.count(name)) im.topics[name] = it->second;
  return im.topics[name];
}

Result<TopicInfo> DataDir::CreateSharedTopic(const std::string& name, const Uuid& topic_id,
                                             int32_t partitions,
                                             const std::map<std::string, std::string>& configs) {
  Impl& im = *impl_;
  if (im.closed) return Status::InvalidArgument(im.path + " is closed");
  SILT_TRY(im.CheckNewTopic(name, partitions, configs));
  SILT_TRY(im.WaitTopicSyncs());
  Impl fresh;
  fresh.path = im.path;
  SILT_TRY(fresh.LoadTopics());
  TopicInfo t;
  auto found = fresh.topics.find(name);
  if (found != fresh.topics.end() && PathExists(im.TopicFile(name))) {
    t = found->second;  // another creator won
  } else {
    t.name = name;
    t.configs = configs;
    if (found != fresh.topics.end()) {
      // Directories of a creation cut short: their count and id stand.
      t.partitions = found->second.partitions;
      t.topic_id = found->second.topic_id;
    } else {
      t.partitions = partitions;
    }
    if (t.topic_id.empty()) {
      if (topic_id.is_reserved())
        return Status::InvalidArgument("topic id " + topic_id.ToString() + " is reserved");
      t.topic_id = topic_id.ToString();
    }
    for (int32_t p = t.partitions - 1; p >= 0; --p) SILT_TRY(im.CreatePartitionDir(t, p));
    SILT_TRY(SyncDir(im.path));
    t.partition_ids.clear();
    for (int32_t p = 0; p < t.partitions; ++p) t.partition_ids.push_back(p);
    // The topic file is written last: it is what makes the topic exist.
    SILT_TRY(im.WriteTopicFile(t));
  }
  std::lock_guard l(im.mu);
  im.topics[name] = t;
  if (!im.options.read_only) {
    std::lock_guard c(im.checkpoint_mu);
    im.topics_snapshot.insert(name);
  }
  return t;
}

// ---- silt-groups/, the legacy local group offsets ---------------------------------------------

std::vector<std::string> DataDir::ListLegacyGroups() const {
  std::vector<std::string> out;
  auto names = ListDir(JoinPath(impl_->path, kGroupsDir));
  if (!names.ok()) return out;
  for (const std::string& n : names.value()) {
    if (!EndsWith(n, kPropertiesSuffix)) continue;
    std::string g;
    if (DecodeGroupName(n.substr(0, n.size() - std::strlen(kPropertiesSuffix)), &g))
      out.push_back(g);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<DataDir::LegacyGroupOffsets> DataDir::LegacyGroupCommitted(const std::string& group) const {
  std::string file = JoinPath(JoinPath(impl_->path, kGroupsDir),
                              EncodeGroupName(group) + kPropertiesSuffix);
  if (!PathExists(file)) return Status::NotFound("group '" + group + "' has no offsets here");
  SILT_ASSIGN_OR_RETURN(std::string text, ReadFile(file));
  LegacyGroupOffsets out;
  for (const auto& [k, v] : ParseProperties(text)) {
    size_t slash = k.rfind('/');
    int64_t p, off;
    if (slash == std::string::npos || !ParseInt(std::string_view(k).substr(slash + 1), &p) ||
        p < 0 || p > INT32_MAX || !ParseInt(v, &off))
      return Status::Corruption(file + ": bad line '" + k + "=" + v + "'");
    out[k.substr(0, slash)][static_cast<int32_t>(p)] = off;
  }
  return out;
}

bool DataDir::HasLegacyGroups() const { return IsDirectory(JoinPath(impl_->path, kGroupsDir)); }

Status DataDir::RetireLegacyGroups() {
  Impl& im = *impl_;
  std::string from = JoinPath(im.path, kGroupsDir);
  if (!IsDirectory(from)) return Status::OK();
  std::string to = from + ".migrated";
  for (int i = 1; PathExists(to); ++i) to = from + ".migrated." + std::to_string(i);
  SILT_TRY(RenameFile(from, to));
  return SyncDir(im.path);
}

// ---- checkpoints and shutdown -----------------------------------------------------------

Status DataDir::Checkpoint() {
  Impl& im = *impl_;
  if (im.options.read_only) return Status::OK();
  SILT_TRY(im.WaitTopicSyncs());
  std::lock_guard l(im.mu);
  if (im.closed) return Status::OK();
  return im.WriteCheckpointsLocked();
}

Status DataDir::Close() {
  Impl& im = *impl_;
  std::lock_guard l(im.mu);
  if (im.closed) return Status::OK();
  im.closed = true;
  Status first = im.WaitTopicSyncs();
  for (auto& [k, log] : im.logs) {
    Status s = log->Close();
    if (!s.ok() && first.ok()) first = s.WithContext(k.first + "-" + std::to_string(k.second));
  }
  if (!im.options.read_only) {
    if (first.ok()) first = im.WriteCheckpointsLocked();
    // The marker only when everything above is durable: otherwise the next open recovers.
    if (first.ok()) first = WriteFileAtomic(JoinPath(im.path, kCleanShutdownFile), "");
  }
  im.logs.clear();
  im.StopSyncer();
  im.StopReaper();
  im.ReleaseLock();
  return first;
}

}  // namespace silt::storage
