// Shared helpers of the local-data-dir subcommands (see cli_util.h).
#include "cmd/cli_util.h"

#include <CLI/CLI.hpp>

#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include "base/file.h"
#include "offsets/local.h"
#include "storage/data_dir.h"

namespace silt::cmd {

void AddDataDirOption(CLI::App* app, GlobalOptions* g) {
  app->add_option("-d,--data-dir", g->data_dir,
                  "data directory (default: $SILT_DATA_DIR, else ./silt-data)")
      ->type_name("DIR");
}

Status CheckCanCreateDataDir(const std::string& dir) {
  if (IsDirectory(dir)) return Status::OK();
  if (PathExists(dir))
    return Status::InvalidArgument("data directory '" + dir + "' exists and is not a directory");
  std::string parent = DirName(dir);
  if (!IsDirectory(parent))
    return Status::NotFound("cannot create data directory '" + dir + "': '" + parent +
                            "' does not exist (create it first, or give another -d DIR)");
  return Status::OK();
}

Result<std::unique_ptr<storage::DataDir>> OpenDataDir(const GlobalOptions& g, bool writable) {
  if (writable) SILT_TRY(CheckCanCreateDataDir(g.data_dir));
  if (!writable && !IsDirectory(g.data_dir))
    return Status::NotFound("data directory '" + g.data_dir +
                            "' does not exist (use -d DIR or set SILT_DATA_DIR)");
  storage::DataDir::Options o;
  o.read_only = !writable;
  o.create = writable;
  auto dir = storage::DataDir::Open(g.data_dir, o);
  if (!dir.ok()) {
    if (dir.status().IsBusy()) {
      if (auto pid = offsets::RunningBrokerPid(g.data_dir))
        return offsets::BrokerRunningError(g.data_dir, *pid);
    }
    if (dir.status().message().find(g.data_dir) != std::string::npos) return dir.status();
    return dir.status().WithContext("data directory '" + g.data_dir + "'");
  }
  // The first writable open moves silt-groups/ (the layout before __consumer_offsets) over.
  if (writable && (*dir)->HasLegacyGroups()) SILT_TRY(offsets::LocalOffsets::Open(dir->get()).status());
  return dir;
}

Output::Output(size_t flush_at) : flush_at_(flush_at) {
  // A closed pipe must turn into EPIPE here, not kill the process mid-write.
  ::signal(SIGPIPE, SIG_IGN);
  buf_.reserve(flush_at + (flush_at >> 2));
}

Output::~Output() { Flush(); }

bool Output::Flush() {
  bool ok = WriteAll(buf_.data(), buf_.size());
  buf_.clear();
  return ok;
}

bool Output::Write(std::string_view s) {
  return Flush() && WriteAll(s.data(), s.size());
}

bool Output::WriteAll(const char* p, size_t n) {
  if (broken_) return false;
  while (n > 0) {
    ssize_t w = ::write(STDOUT_FILENO, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      broken_ = true;  // EPIPE (reader gone) or a dead terminal: stop writing
      error_ = errno;
      break;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return !broken_;
}

std::string Num(int64_t v) { return std::to_string(v); }

}  // namespace silt::cmd
