// The data directory's committed-offset store and its writer locks (see local.h).
#include "offsets/local.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/random.h"
#include "base/clock.h"
#include "base/file.h"
#include "protocol/consumer_offsets.h"
#include "storage/partition_log.h"

namespace silt::offsets {
namespace {

constexpr const char* kLocksDir = "silt-locks";
constexpr const char* kRoleBroker = "broker";
constexpr const char* kRoleLocal = "local";

std::string TopicName() { return protocol::kConsumerOffsetsTopic; }

std::string PartitionDir(const std::string& data_dir, int32_t p) {
  return JoinPath(data_dir, TopicName() + "-" + std::to_string(p));
}

// A /proc file's whole text (their size is 0 to stat, so ReadFile does not do).
std::optional<std::string> ReadProcFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool ProcessAlive(int64_t pid) {
  return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
}

// Takes an exclusive flock on `path`, retrying until `wait_ms` passes while the holder is a
// local command; a broker holder fails at once. `what` names the lock in errors.
Result<WriterLock> TakeLock(const std::string& data_dir, const std::string& path,
                            const std::string& what, LockRole role, int64_t wait_ms) {
  SILT_TRY(CreateDirs(DirName(path)));
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno("open " + path, errno);
  WriterLock lock(fd);  // closes fd on every return below that does not hand it over
  const int64_t deadline = MonotonicMs() + wait_ms;
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    if (err == EINTR) continue;
    if (err != EWOULDBLOCK) return Status::FromErrno("lock " + path, err);
    char buf[64] = {0};
    ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    int64_t pid = 0;
    char who[16] = {0};
    bool parsed = n > 0 && std::sscanf(buf, "%lld %15s", reinterpret_cast<long long*>(&pid), who) == 2;
    // The contents are the last holder's until the new one rewrites them: trust "broker"
    // only while that process lives.
    if (parsed && std::string(who) == kRoleBroker && ProcessAlive(pid))
      return BrokerRunningError(data_dir, pid);
    if (MonotonicMs() >= deadline) {
      std::string holder = parsed ? "process " + std::to_string(pid) : "another process";
      return Status::Busy(what + " is being written by " + holder + "; try again");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::string text = std::to_string(::getpid()) + " " +
                     (role == LockRole::kBroker ? kRoleBroker : kRoleLocal) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, text.data(), text.size(), 0) < 0)
    return Status::FromErrno("write " + path, errno);
  return lock;
}

// A broker running on the directory today may predate these locks: refuse to write beside it.
Status CheckNoBroker(storage::DataDir* dir) {
  if (!dir->read_only()) return Status::OK();  // we hold .lock: no broker can
  if (auto pid = RunningBrokerPid(dir->path())) return BrokerRunningError(dir->path(), *pid);
  return Status::OK();
}

// Opens partition p's log for this process: the data dir's own when writable, else a fresh
// one (writable only under the partition's lock, which the caller holds).
Result<std::unique_ptr<storage::PartitionLog>> OpenOwnLog(storage::DataDir* dir, int32_t p,
                                                          bool writable) {
  SILT_ASSIGN_OR_RETURN(storage::LogConfig cfg, dir->TopicConfig(TopicName()));
  storage::PartitionLog::OpenOptions o;
  o.read_only = !writable;
  o.create = false;
  std::string path = PartitionDir(dir->path(), p);
  if (!IsDirectory(path)) return Status::NotFound("partition directory " + path + " is missing");
  return storage::PartitionLog::Open(path, cfg, o);
}

Status ReadLog(const storage::PartitionLog& log,
               const std::function<Status(std::string_view)>& fn) {
  Offset next = log.log_start_offset();
  const Offset end = log.log_end_offset();
  while (next < end) {
    SILT_ASSIGN_OR_RETURN(storage::ReadResult r, log.Read(next, 4 << 20, end, true));
    if (r.slices.empty() || r.next_offset <= next) break;
    SILT_ASSIGN_OR_RETURN(std::string bytes, r.ReadAll());
    SILT_TRY(fn(bytes));
    next = r.next_offset;
  }
  return Status::OK();
}

}  // namespace

// ---- locks ----------------------------------------------------------------------------------

WriterLock& WriterLock::operator=(WriterLock&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

WriterLock::~WriterLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

Result<WriterLock> LockOffsetsPartition(const std::string& data_dir, int32_t partition,
                                        LockRole role, int64_t wait_ms) {
  std::string name = TopicName() + "-" + std::to_string(partition);
  return TakeLock(data_dir, JoinPath(JoinPath(data_dir, kLocksDir), name + ".lock"), name, role,
                  wait_ms);
}

Result<WriterLock> LockOffsetsTopic(const std::string& data_dir, LockRole role, int64_t wait_ms) {
  return TakeLock(data_dir, JoinPath(JoinPath(data_dir, kLocksDir), TopicName() + ".lock"),
                  TopicName(), role, wait_ms);
}

Result<std::vector<WriterLock>> LockOffsetsForBroker(const std::string& data_dir,
                                                     int32_t partitions, int64_t wait_ms) {
  std::vector<WriterLock> out;
  SILT_ASSIGN_OR_RETURN(WriterLock topic, LockOffsetsTopic(data_dir, LockRole::kBroker, wait_ms));
  out.push_back(std::move(topic));
  for (int32_t p = 0; p < partitions; ++p) {
    SILT_ASSIGN_OR_RETURN(WriterLock l,
                          LockOffsetsPartition(data_dir, p, LockRole::kBroker, wait_ms));
    out.push_back(std::move(l));
  }
  return out;
}

std::optional<int64_t> RunningBrokerPid(const std::string& data_dir) {
  struct stat st;
  if (::stat(JoinPath(data_dir, ".lock").c_str(), &st) != 0) return std::nullopt;
  auto locks = ReadProcFile("/proc/locks");
  if (!locks) return std::nullopt;
  char want[64];
  std::snprintf(want, sizeof want, "%02x:%02x:%llu", major(st.st_dev), minor(st.st_dev),
                static_cast<unsigned long long>(st.st_ino));
  std::istringstream in(*locks);
  std::string line;
  while (std::getline(in, line)) {
    // "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF"; waiters have "->" after the id.
    std::istringstream f(line);
    std::string id, type, mode, rw, pid, file;
    if (!(f >> id >> type) || type != "FLOCK") continue;
    if (!(f >> mode >> rw >> pid >> file) || file != want) continue;
    auto cmdline = ReadProcFile("/proc/" + pid + "/cmdline");
    if (!cmdline) return std::nullopt;
    std::string args = *cmdline;
    size_t first = args.find('\0');  // skip argv[0]
    for (size_t i = first; i != std::string::npos && i + 1 < args.size();) {
      size_t j = args.find('\0', i + 1);
      if (args.compare(i + 1, (j == std::string::npos ? args.size() : j) - i - 1, "serve") == 0)
        return std::stoll(pid);
      i = j;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

Status BrokerRunningError(const std::string& data_dir, int64_t pid) {
  return Status::Busy("data directory " + data_dir + ": a broker is running on it (pid " +
                      std::to_string(pid) + "); use -b HOST:PORT");
}

// ---- DataDirPartitions ------------------------------------------------------------------

Result<int32_t> DataDirPartitions::PartitionCount() {
  auto t = dir_->RefreshTopic(TopicName());
  if (t.ok()) return t->partitions;
  if (t.status().IsNotFound()) return 0;
  return t.status();
}

Result<int32_t> DataDirPartitions::CreateTopic(int32_t partitions) {
  SILT_TRY(CheckNoBroker(dir_));
  SILT_ASSIGN_OR_RETURN(WriterLock lock,
                        LockOffsetsTopic(dir_->path(), LockRole::kLocal, lock_wait_ms_));
  SILT_ASSIGN_OR_RETURN(storage::TopicInfo t,
                        dir_->CreateSharedTopic(TopicName(), NewTopicId(), partitions,
                                                {{"cleanup.policy", "compact"}}));
  return t.partitions;
}

Status DataDirPartitions::Append(int32_t partition, std::string* batch) {
  SILT_TRY(CheckNoBroker(dir_));
  SILT_ASSIGN_OR_RETURN(WriterLock lock, LockOffsetsPartition(dir_->path(), partition,
                                                              LockRole::kLocal, lock_wait_ms_));
  if (!dir_->read_only()) {
    SILT_ASSIGN_OR_RETURN(storage::PartitionLog * log, dir_->Partition(TopicName(), partition));
    SILT_TRY(log->Append(batch).status());
    return log->Flush();
  }
  SILT_ASSIGN_OR_RETURN(std::unique_ptr<storage::PartitionLog> log,
                        OpenOwnLog(dir_, partition, /*writable=*/true));
  Status s = log->Append(batch).status();
  if (s.ok()) s = log->Flush();
  Status closed = log->Close();
  return s.ok() ? closed : s;
}

Status DataDirPartitions::Read(int32_t partition,
                               const std::function<Status(std::string_view batches)>& fn) {
  if (!dir_->read_only()) {
    SILT_ASSIGN_OR_RETURN(storage::PartitionLog * log, dir_->Partition(TopicName(), partition));
    return ReadLog(*log, fn);
  }
  auto log = OpenOwnLog(dir_, partition, /*writable=*/false);
  if (!log.ok()) {
    // A partition directory a creation has not made yet holds nothing.
    if (log.status().IsNotFound()) return Status::OK();
    return log.status();
  }
  return ReadLog(**log, fn);
}

// ---- migration ------------------------------------------------------------------------------

Status MigrateLegacyGroups(storage::DataDir* dir, OffsetStore* store, int64_t lock_wait_ms) {
  if (!dir->HasLegacyGroups()) return Status::OK();
  SILT_TRY(CheckNoBroker(dir));
  SILT_TRY(store->Prepare());
  SILT_ASSIGN_OR_RETURN(WriterLock lock,
                        LockOffsetsTopic(dir->path(), LockRole::kLocal, lock_wait_ms));
  if (!dir->HasLegacyGroups()) return Status::OK();  // a racing migrator finished it
  const int64_t now = NowMs().value();
  for (const std::string& group : dir->ListLegacyGroups()) {
    SILT_ASSIGN_OR_RETURN(storage::DataDir::LegacyGroupOffsets legacy,
                          dir->LegacyGroupCommitted(group));
    SILT_ASSIGN_OR_RETURN(std::optional<GroupState> have, store->Group(group));
    GroupOffsets missing;
    for (const auto& [topic, parts] : legacy) {
      for (const auto& [p, off] : parts) {
        if (have) {
          auto t = have->offsets.find(topic);
          if (t != have->offsets.end() && t->second.count(p)) continue;
        }
        Committed c;
        c.offset = off;
        missing[topic][p] = c;
      }
    }
    if (missing.empty()) continue;
    Status s = store->Commit(group, std::move(missing), now);
    if (!s.ok()) return s.WithContext("migrating group '" + group + "' from silt-groups/");
  }
  // Every group is in the store (and fsynced): the old directory can go aside.
  return dir->RetireLegacyGroups();
}

// ---- LocalOffsets ---------------------------------------------------------------------------

Result<std::unique_ptr<LocalOffsets>> LocalOffsets::Open(storage::DataDir* dir,
                                                         const Options& o) {
  std::unique_ptr<LocalOffsets> out(new LocalOffsets(dir, o));
  if (!dir->read_only()) SILT_TRY(out->MigrateIfNeeded());
  return out;
}

Status LocalOffsets::MigrateIfNeeded() {
  return MigrateLegacyGroups(dir_, &store_, options_.lock_wait_ms);
}

void LocalOffsets::MergeLegacy(const std::string& group, GroupState* state) const {
  auto legacy = dir_->LegacyGroupCommitted(group);
  if (!legacy.ok()) return;
  for (const auto& [topic, parts] : *legacy)
    for (const auto& [p, off] : parts) {
      auto& slot = state->offsets[topic];
      if (!slot.count(p)) slot[p].offset = off;
    }
}

Result<GroupsView> LocalOffsets::Load() {
  SILT_ASSIGN_OR_RETURN(GroupsView view, store_.Load());
  if (dir_->HasLegacyGroups())
    for (const std::string& g : dir_->ListLegacyGroups()) MergeLegacy(g, &view[g]);
  for (auto it = view.begin(); it != view.end();) it = it->second.empty() ? view.erase(it) : ++it;
  return view;
}

Result<std::optional<GroupState>> LocalOffsets::Group(const std::string& group) {
  SILT_ASSIGN_OR_RETURN(std::optional<GroupState> g, store_.Group(group));
  if (dir_->HasLegacyGroups()) {
    GroupState merged = g ? std::move(*g) : GroupState{};
    MergeLegacy(group, &merged);
    if (merged.empty()) return std::optional<GroupState>();
    return std::optional<GroupState>(std::move(merged));
  }
  return g;
}

Status LocalOffsets::Commit(const std::string& group, const GroupOffsets& offsets) {
  SILT_TRY(MigrateIfNeeded());
  return store_.Commit(group, offsets, NowMs().value());
}

Status LocalOffsets::DeleteGroup(const std::string& group) {
  SILT_TRY(MigrateIfNeeded());
  return store_.DeleteGroup(group, NowMs().value());
}

}  // namespace silt::offsets
