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
#include <memory>
#include <mutex>

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

Status Fault(FileOp op, const std::string& path) {
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
  int fd;
  do {
    fd = ::open(path.c_str(), flags, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return Status::FromErrno("open " + path, errno);
  File f;
  f.fd_ = fd;
  f.path_ = path;
  return f;
}

Status File::PWrite(int64_t offset, std::string_view data) {
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
  if (::unlink(path.c_str()) != 0) return Status::FromErrno("unlink " + path, errno);
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
  if (::rename(from.c_str(), to.c_str()) != 0)
    return Status::FromErrno("rename " + from + " to " + to, errno);
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
