// Thin, error-checked wrappers over POSIX files, and the few file-system operations the storage
// layer needs. Every failure is a Status that names the path and the errno text; ENOSPC becomes
// Status::NoSpace so callers can tell a full disk from other I/O errors.
//
// Two process-wide fault hooks let tests make the file system fail without mounting anything:
// a write budget (writes fail as on a full disk: part of the bytes written, then ENOSPC), and a
// per-operation hook that can fail any write, fsync, truncate, rename, unlink or directory fsync.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace silt {

class File {
 public:
  File() = default;
  ~File();
  File(File&& o) noexcept : fd_(o.fd_), path_(std::move(o.path_)) { o.fd_ = -1; }
  File& operator=(File&& o) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  enum Mode { kReadOnly, kReadWrite, kCreate /* read-write, created if missing */ };
  static Result<File> Open(const std::string& path, Mode mode);

  bool is_open() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

  // Writes all of `data` at `offset`. On failure some prefix may have been written.
  Status PWrite(int64_t offset, std::string_view data);
  // Reads up to n bytes at offset into *out (resized to what was read; short only at EOF).
  Status PRead(int64_t offset, size_t n, std::string* out) const;
  Result<int64_t> Size() const;
  Status Truncate(int64_t size);
  // fdatasync(2): the data and what is needed to read it back are durable.
  Status Sync();
  Status Close();

 private:
  int fd_ = -1;
  std::string path_;
};

// Reads a whole file.
Result<std::string> ReadFile(const std::string& path);
// Writes `data` to `path` so that a crash leaves either the old or the new contents: a temp file
// beside it, fsync, rename over, fsync of the directory.
Status WriteFileAtomic(const std::string& path, std::string_view data);
// WriteFileAtomic without the fsync of the directory: the new contents are durable once the
// caller fsyncs it (so that several files, or a file and other changes in the directory, share
// one directory fsync).
Status ReplaceFile(const std::string& path, std::string_view data);
// fsync(2) of a directory, so that creations, renames and deletions in it are durable.
Status SyncDir(const std::string& dir);
bool PathExists(const std::string& path);
bool IsDirectory(const std::string& path);
// mkdir -p.
Status CreateDirs(const std::string& path);
// Names (not paths) of the entries of `dir`, sorted, without "." and "..".
Result<std::vector<std::string>> ListDir(const std::string& dir);
Status RemoveFile(const std::string& path);
// rm -r.
Status RemoveAll(const std::string& path);
Status RenameFile(const std::string& from, const std::string& to);
std::string JoinPath(std::string_view a, std::string_view b);
std::string BaseName(std::string_view path);
std::string DirName(std::string_view path);

// Test hook: after `budget` more bytes have been written by File::PWrite in this process, writes
// behave as on a full disk: the bytes that fit are written and the call fails with ENOSPC.
// A negative budget disables the fault.
void SetWriteBudgetForTesting(int64_t budget);

// The operations the fault hook below can fail.
enum class FileOp {
  kWrite,     // File::PWrite (path of the file)
  kSync,      // File::Sync
  kTruncate,  // File::Truncate
  kRename,    // RenameFile (path = the source), and the rename inside WriteFileAtomic
  kRemove,    // RemoveFile (unlink)
  kSyncDir,   // SyncDir (path = the directory)
};
// Test hook: when set, called before each operation above with its kind and path; a non-OK
// result makes the operation fail with that Status without doing anything. The hook may be
// called from any thread, concurrently. Pass nullptr to remove it.
using FileFaultHook = std::function<Status(FileOp op, const std::string& path)>;
void SetFileFaultHookForTesting(FileFaultHook hook);
// An errno-style Status for a fault hook to return, e.g. InjectedFault(EIO, "fsync", path).
Status InjectedFault(int err, const std::string& what, const std::string& path);

// Test hooks for simulated power cuts (leveldb's FaultInjectionTestEnv is the model). From
// StartPowerCutTracking on, for files under `root`, records what has been made durable: a
// file's bytes by its fsync (File::Sync), a creation, rename or removal by an fsync of its
// directory (SyncDir). After `die_after_ops` more tracked operations (writes, truncations,
// fsyncs, creations, renames, removals; -1: never) every later one fails with EIO, as if the
// machine had stopped; PowerCutOps says how many ran. SimulatePowerCut then undoes what was
// not durable, newest first: directory changes not followed by a directory fsync (a created
// file vanishes, a rename or removal is undone) and, in each file, what was written since its
// last fsync (dropped, zeroed or garbled), and stops tracking. Files that existed before
// tracking started count as durable as they were; directories themselves (mkdir, a
// directory's rename, rm -r) are not tracked. One tracking at a time, for the whole process.
enum class PowerCutMode { kDrop, kZero, kGarble };
void StartPowerCutTrackingForTesting(const std::string& root, int64_t die_after_ops = -1);
int64_t PowerCutOpsForTesting();
Status SimulatePowerCutForTesting(PowerCutMode mode, uint64_t seed = 1);

}  // namespace silt
