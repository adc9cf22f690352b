// Helpers the local-data-dir subcommands share: the -d flag, opening the data dir with
// errors a user can act on, and writing to stdout in large, SIGPIPE-safe chunks.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "cmd/command.h"

namespace silt::storage {
class DataDir;
}

namespace silt::cmd {

// Adds -d/--data-dir to `app`, bound to g->data_dir.
void AddDataDirOption(CLI::App* app, GlobalOptions* g);

// OK when `dir` exists or can be created as one new directory: its parent must exist, so a
// mistyped path never creates a tree of directories. NotFound naming the missing parent.
Status CheckCanCreateDataDir(const std::string& dir);

// Opens the data dir. Read-only opens take no lock and require the directory to exist; writable
// opens create it (never its missing parents: see CheckCanCreateDataDir) and take its lock
// (Busy, naming the holder, if another process has it; when
// that is a broker, the error says so and points to -b), and move legacy silt-groups/ offsets
// into __consumer_offsets (offsets::MigrateLegacyGroups).
// `stop_at_damage` (read-only): damaged files end a partition's readable log rather than
// failing its open (storage::DataDir::Options).
Result<std::unique_ptr<storage::DataDir>> OpenDataDir(const GlobalOptions& g, bool writable,
                                                      bool stop_at_damage = false);

// Buffered stdout. Write() returns false once the reader has gone away (EPIPE): the caller
// should stop quietly and exit 0, as `cat | head` does.
class Output {
 public:
  explicit Output(size_t flush_at = 1 << 20);
  ~Output();
  std::string* buffer() { return &buf_; }
  // Writes the buffer out if it holds at least flush_at bytes.
  bool MaybeFlush() { return buf_.size() < flush_at_ || Flush(); }
  bool Flush();
  // Writes the buffer, then `s` straight from where it lies. False once the output is broken.
  bool Write(std::string_view s);
  bool broken() const { return broken_; }
  // errno of the failed write (EPIPE when the reader went away), 0 if none failed.
  int error() const { return error_; }

 private:
  bool WriteAll(const char* p, size_t n);
  std::string buf_;
  size_t flush_at_;
  bool broken_ = false;
  int error_ = 0;
};

// "1 234 567"-free plain decimal, for table cells.
std::string Num(int64_t v);

}  // namespace silt::cmd
