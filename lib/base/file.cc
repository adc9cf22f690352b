#include "base/file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <vector>

namespace silt {
namespace {

std::atomic<int64_t> g_write_budget{-1};

// Returns how many of `want` bytes may be written before the simulated disk is full.
size_t TakeBudget(size_t want) {
  int64_t b = g_write_budget.load(std::memory_order_relaxed);
  if (b < 0) return want;
  size_t allowed = std::min<size_t>(want, static_cast<size_t>(b));
  g_write_budget.fetch_sub(static_cast<int64_t>(allowed));
  return allowed;
}

// The fault hook: a flag read on every operation, so that production pays one relaxed load.
std::atomic<bool> g_fault_set{false};
std::mutex g_fault_mu;
std::shared_ptr<FileFaultHook> g_fault_hook;

// ---- simulated power cuts ----------------------------------------------------------------

// Raw helpers that bypass every hook.
std::optional<std::string> RawRead(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

void RawWrite(const std::string& path, std::string_view data) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  size_t at = 0;
  while (at < data.size()) {
    ssize_t n = ::write(fd, data.data() + at, data.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    at += static_cast<size_t>(n);
  }
  ::close(fd);
}

struct PowerCut {
  std::mutex mu;
  std::string root;
  int64_t ops = 0;
  int64_t die_after = -1;
  int backups = 0;
  // Per file: its durable contents, taken when it is first changed after its last fsync
  // (absent: nothing changed since, or never touched).
  std::map<std::string, std::string> durable;
  struct DirOp {
    enum Kind { kCreate, kRename, kRemove } kind;
    std::string dir;  // whose fsync makes it durable
    std::string a, b;  // the path (create, remove), or from and to (rename)
    std::string backup;  // a hard link to what was removed or renamed over ("": none)
    std::optional<std::string> backup_durable;  // the durable bytes of that file, if kept
  };
  std::vector<DirOp> pending;  // oldest first

  bool Tracks(const std::string& path) const {
    if (root.empty() || path.compare(0, root.size(), root) != 0) return false;
    return path.size() == root.size() || path[root.size()] == '/';
  }
  std::string Backup(const std::string& path) {
    std::string b = root + "/.powercut-" + std::to_string(++backups);
    return ::link(path.c_str(), b.c_str()) == 0 ? b : "";
  }
};

std::atomic<bool> g_powercut_set{false};
PowerCut g_powercut;

// Counts a tracked operation; false once the simulated machine has stopped.
bool PowerCutStep(const std::string& path) {
  PowerCut& pc = g_powercut;
  if (!pc.Tracks(path)) return true;
  if (pc.die_after >= 0 && pc.ops >= pc.die_after) return false;
  ++pc.ops;
  return true;
}

// Before a write or truncation of `path`: keeps its durable contents if not kept yet.
Status PowerCutBeforeChange(const std::string& path) {
  if (!g_powercut_set.load(std::memory_order_relaxed)) return Status::OK();
  PowerCut& pc = g_powercut;
  std::lock_guard l(pc.mu);
  if (!PowerCutStep(path)) return InjectedFault(EIO, "powered off:", path);
  if (pc.Tracks(path) && !pc.durable.count(path)) pc.durable[path] = RawRead(path).value_or("");
  return Status::OK();
}

Status Fault(FileOp op, const std::string& path) {
  if (g_powercut_set.load(std::memory_order_relaxed) && op != FileOp::kWrite &&
      op != FileOp::kTruncate) {
    // (Writes and truncations count in PowerCutBeforeChange, which also keeps the old bytes.)
    PowerCut& pc = g_powercut;
    std::lock_guard l(pc.mu);
    if (!PowerCutStep(path)) return InjectedFault(EIO, "powered off:", path);
  }
  if (!g_fault_set.load(std::memory_order_relaxed)) return Status::OK();
  std::shared_ptr<FileFaultHook> hook;
  {
    std::lock_guard l(g_fault_mu);
    hook = g_fault_hook;
  }
  return hook && *hook ? (*hook)(op, path) : Status::OK();
}

}  // namespace

void SetWriteBudgetForTesting(int64_t budget) { g_write_budget.store(budget); }

void SetFileFaultHookForTesting(FileFaultHook hook) {
  std::lock_guard l(g_fault_mu);
  g_fault_hook = hook ? std::make_shared<FileFaultHook>(std::move(hook)) : nullptr;
  g_fault_set.store(g_fault_hook != nullptr);
}

Status InjectedFault(int err, const std::string& what, const std::string& path) {
  return Status::FromErrno(what + " " + path, err);
}

void StartPowerCutTrackingForTesting(const std::string& root, int64_t die_after_ops) {
  PowerCut& pc = g_powercut;
  std::lock_guard l(pc.mu);
  pc.root = root;
  while (pc.root.size() > 1 && pc.root.back() == '/') pc.root.pop_back();
  pc.ops = 0;
  pc.die_after = die_after_ops;
  pc.durable.clear();
  pc.pending.clear();
  g_powercut_set.store(true);
}

int64_t PowerCutOpsForTesting() {
  std::lock_guard l(g_powercut.mu);
  return g_powercut.ops;
}

Status SimulatePowerCutForTesting(PowerCutMode mode, uint64_t seed) {
  PowerCut& pc = g_powercut;
  std::lock_guard l(pc.mu);
  g_powercut_set.store(false);
  // Directory changes first, newest first; a file's contents follow its path back.
  for (auto it = pc.pending.rbegin(); it != pc.pending.rend(); ++it) {
    switch (it->kind) {
      case PowerCut::DirOp::kCreate:
        ::unlink(it->a.c_str());
        pc.durable.erase(it->a);
        break;
      case PowerCut::DirOp::kRename: {
        ::rename(it->b.c_str(), it->a.c_str());
        if (auto d = pc.durable.find(it->b); d != pc.durable.end()) {
          pc.durable[it->a] = std::move(d->second);
          pc.durable.erase(d);
        }
        if (!it->backup.empty()) {
          ::rename(it->backup.c_str(), it->b.c_str());
          if (it->backup_durable) pc.durable[it->b] = *it->backup_durable;
        }
        break;
      }
      case PowerCut::DirOp::kRemove:
        if (!it->backup.empty()) ::rename(it->backup.c_str(), it->a.c_str());
        break;
    }
  }
  std::mt19937_64 rng(seed);
  for (const auto& [path, kept] : pc.durable) {
    std::optional<std::string> now = RawRead(path);
    if (!now) continue;  // gone for good (removed, and the removal was durable)
    std::string out = kept;
    if (mode != PowerCutMode::kDrop && now->size() > kept.size()) {
      // The file grew but its new pages never made it: zeros (a grown inode whose data blocks
      // were not written) or garbage.
      for (size_t i = kept.size(); i < now->size(); ++i)
        out.push_back(mode == PowerCutMode::kZero ? '\0' : static_cast<char>(rng()));
    }
    RawWrite(path, out);
  }
  // Backups of durable removals and renames over a file.
  if (auto names = ListDir(pc.root); names.ok())
    for (const std::string& n : *names)
      if (n.rfind(".powercut-", 0) == 0) ::unlink(JoinPath(pc.root, n).c_str());
  pc.durable.clear();
  pc.pending.clear();
  pc.root.clear();
  return Status::OK();
}

File::~File() {
  if (fd_ >= 0) ::close(fd_);
}

File& File::operator=(File&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    path_ = std::move(o.path_);
    o.fd_ = -1;
  }
  return *this;
}

Result<File> File::Open(const std::string& path, Mode mode) {
  int flags = O_CLOEXEC;
  switch (mode) {
    case kReadOnly: flags |= O_RDONLY; break;
    case kReadWrite: flags |= O_RDWR; break;
    case kCreate: flags |= O_RDWR | O_CREAT; break;
  }
  bool created = false;
  if (mode == kCreate && g_powercut_set.load(std::memory_order_relaxed) && !PathExists(path)) {
    PowerCut& pc = g_powercut;
    std::lock_guard l(pc.mu);
    if (pc.Tracks(path)) {
      if (!PowerCutStep(path)) return InjectedFault(EIO, "powered off:", path);
      created = true;
    }
  }
  int fd;
  do {
    fd = ::open(path.c_str(), flags, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return Status::FromErrno("open " + path, errno);
  if (created) {
    PowerCut& pc = g_powercut;
    std::lock_guard l(pc.mu);
    pc.pending.push_back({PowerCut::DirOp::kCreate, DirName(path), path, "", "", std::nullopt});
    pc.durable[path] = "";
  }
  File f;
  f.fd_ = fd;
  f.path_ = path;
  return f;
}

Status File::PWrite(int64_t offset, std::string_view data) {
  SILT_TRY(PowerCutBeforeChange(path_));
  SILT_TRY(Fault(FileOp::kWrite, path_));
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    size_t allowed = TakeBudget(left);
    if (allowed == 0) return Status::FromErrno("write " + path_, ENOSPC);
    ssize_t n = ::pwrite(fd_, p, allowed, offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno("write " + path_, errno);
    }
    p += n;
    offset += n;
    left -= static_cast<size_t>(n);
  }
  return Status::OK();
}

Status File::PRead(int64_t offset, size_t n, std::string* out) const {
  out->resize(n);
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::pread(fd_, out->data() + got, n - got, offset + static_cast<int64_t>(got));
    if (r < 0) {
      if (errno == EINTR) continue;
      out->clear();
      return Status::FromErrno("read " + path_, errno);
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  out->resize(got);
  return Status::OK();
}

Result<int64_t> File::Size() const {
  struct stat st;
  if (::fstat(fd_, &st) != 0) return Status::FromErrno("stat " + path_, errno);
  return static_cast<int64_t>(st.st_size);
}

Status File::Truncate(int64_t size) {
  SILT_TRY(PowerCutBeforeChange(path_));
  SILT_TRY(Fault(FileOp::kTruncate, path_));
  if (::ftruncate(fd_, size) != 0) return Status::FromErrno("truncate " + path_, errno);
  return Status::OK();
}

Status File::Sync() {
  SILT_TRY(Fault(FileOp::kSync, path_));
  // Even ENOSPC is an I/O error here, never NoSpace: a failed fsync means written pages may be
  // lost, not that a write can be retried once space is back.
  if (::fdatasync(fd_) != 0)
    return Status::IOError("fsync " + path_ + ": " + std::strerror(errno));
  if (g_powercut_set.load(std::memory_order_relaxed)) {
    std::lock_guard l(g_powercut.mu);
    g_powercut.durable.erase(path_);  // what it holds now is what a power cut leaves
  }
  return Status::OK();
}

Status File::Close() {
  if (fd_ < 0) return Status::OK();
  int r = ::close(fd_);
  fd_ = -1;
  if (r != 0) return Status::FromErrno("close " + path_, errno);
  return Status::OK();
}

Result<std::string> ReadFile(const std::string& path) {
  SILT_ASSIGN_OR_RETURN(File f, File::Open(path, File::kReadOnly));
  SILT_ASSIGN_OR_RETURN(int64_t size, f.Size());
  std::string data;
  SILT_TRY(f.PRead(0, static_cast<size_t>(size), &data));
  return data;
}

Status SyncDir(const std::string& dir) {
  SILT_TRY(Fault(FileOp::kSyncDir, dir));
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno("open " + dir, errno);
  int r = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (r != 0) return Status::IOError("fsync " + dir + ": " + std::strerror(err));
  if (g_powercut_set.load(std::memory_order_relaxed)) {
    PowerCut& pc = g_powercut;
    std::lock_guard l(pc.mu);
    std::string d = dir;
    while (d.size() > 1 && d.back() == '/') d.pop_back();
    std::erase_if(pc.pending, [&](const PowerCut::DirOp& op) {
      if (op.dir != d) return false;
      if (!op.backup.empty()) ::unlink(op.backup.c_str());
      return true;
    });
  }
  return Status::OK();
}

Status WriteFileAtomic(const std::string& path, std::string_view data) {
  SILT_TRY(ReplaceFile(path, data));
  std::string dir = DirName(path);
  return SyncDir(dir.empty() ? "." : dir);
}

Status ReplaceFile(const std::string& path, std::string_view data) {
  std::string tmp = path + ".tmp";
  {
    SILT_ASSIGN_OR_RETURN(File f, File::Open(tmp, File::kCreate));
    SILT_TRY(f.Truncate(0));
    Status s = f.PWrite(0, data);
    if (s.ok()) s = f.Sync();
    if (!s.ok()) {
      ::unlink(tmp.c_str());
      return s;
    }
    SILT_TRY(f.Close());
  }
  if (Status s = RenameFile(tmp, path); !s.ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  return Status::OK();
}

bool PathExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Status CreateDirs(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return Status::FromErrno("mkdir " + path, ec.value());
  return Status::OK();
}

Result<std::vector<std::string>> ListDir(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return Status::FromErrno("opendir " + dir, errno);
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) {
    std::string_view n = e->d_name;
    if (n == "." || n == "..") continue;
    names.emplace_back(n);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

Status RemoveFile(const std::string& path) {
  SILT_TRY(Fault(FileOp::kRemove, path));
  std::string backup;
  bool tracked = false;
  if (g_powercut_set.load(std::memory_order_relaxed)) {
    std::lock_guard l(g_powercut.mu);
    tracked = g_powercut.Tracks(path);
    if (tracked) backup = g_powercut.Backup(path);
  }
  if (::unlink(path.c_str()) != 0) {
    int err = errno;
    if (!backup.empty()) ::unlink(backup.c_str());
    return Status::FromErrno("unlink " + path, err);
  }
  if (tracked) {
    std::lock_guard l(g_powercut.mu);
    g_powercut.pending.push_back(
        {PowerCut::DirOp::kRemove, DirName(path), path, "", backup, std::nullopt});
  }
  return Status::OK();
}

Status RemoveAll(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) return Status::FromErrno("remove " + path, ec.value());
  return Status::OK();
}

Status RenameFile(const std::string& from, const std::string& to) {
  SILT_TRY(Fault(FileOp::kRename, from));
  std::string backup;
  bool tracked = false;
  if (g_powercut_set.load(std::memory_order_relaxed) && !IsDirectory(from)) {
    std::lock_guard l(g_powercut.mu);
    tracked = g_powercut.Tracks(to);
    if (tracked && PathExists(to)) backup = g_powercut.Backup(to);
  }
  if (::rename(from.c_str(), to.c_str()) != 0) {
    int err = errno;
    if (!backup.empty()) ::unlink(backup.c_str());
    return Status::FromErrno("rename " + from + " to " + to, err);
  }
  if (tracked) {
    PowerCut& pc = g_powercut;
    std::lock_guard l(pc.mu);
    std::optional<std::string> backup_durable;
    if (auto d = pc.durable.find(to); d != pc.durable.end()) {
      backup_durable = std::move(d->second);
      pc.durable.erase(d);  // `to` is now `from`'s inode
    }
    if (auto d = pc.durable.find(from); d != pc.durable.end()) {
      pc.durable[to] = std::move(d->second);
      pc.durable.erase(d);
    }
    pc.pending.push_back(
        {PowerCut::DirOp::kRename, DirName(to), from, to, backup, std::move(backup_durable)});
  }
  return Status::OK();
}

std::string JoinPath(std::string_view a, std::string_view b) {
  if (a.empty()) return std::string(b);
  std::string r(a);
  if (r.back() != '/') r.push_back('/');
  r.append(b);
  return r;
}

std::string BaseName(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  size_t p = path.rfind('/');
  return std::string(p == std::string_view::npos ? path : path.substr(p + 1));
}

std::string DirName(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  size_t p = path.rfind('/');
  if (p == std::string_view::npos) return ".";
  if (p == 0) return "/";
  return std::string(path.substr(0, p));
}

}  // namespace silt
