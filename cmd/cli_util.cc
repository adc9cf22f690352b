// Shared helpers of the local-data-dir subcommands (see cli_util.h).
#include "cmd/cli_util.h"

#include <CLI/CLI.hpp>

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <iterator>

#include "base/file.h"
#include "offsets/local.h"
#include "storage/data_dir.h"

namespace silt::cmd {

void AddDataDirOption(CLI::App* app, GlobalOptions* g) {
  app->add_option("-d,--data-dir", g->data_dir,
                  "data directory (default: $SILT_DATA_DIR, else ./silt-data)")
      ->type_name("DIR");
}

namespace {

// " (silt produce -t logs)": the command line of the process a lock message ("... in use by
// process 1234") names, or "" when it cannot be read.
std::string HolderCommand(const std::string& message) {
  size_t end = message.size();
  size_t start = end;
  while (start > 0 && message[start - 1] >= '0' && message[start - 1] <= '9') --start;
  if (start == end) return "";
  // /proc files report a size of 0, so read them as a stream.
  std::ifstream in("/proc/" + message.substr(start) + "/cmdline", std::ios::binary);
  std::string args((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (args.empty()) return "";
  while (!args.empty() && args.back() == '\0') args.pop_back();
  for (char& c : args)
    if (c == '\0') c = ' ';
  // argv[0] as its base name: "silt produce ...", not the build path.
  size_t space = args.find(' ');
  std::string argv0 = args.substr(0, space);
  std::string rest = space == std::string::npos ? "" : args.substr(space);
  return " (" + BaseName(argv0) + rest + ")";
}

}  // namespace

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

Result<std::unique_ptr<storage::DataDir>> OpenDataDir(const GlobalOptions& g, bool writable,
                                                      bool stop_at_damage) {
  if (writable) SILT_TRY(CheckCanCreateDataDir(g.data_dir));
  if (!writable && !IsDirectory(g.data_dir))
    return Status::NotFound("data directory '" + g.data_dir +
                            "' does not exist (use -d DIR or set SILT_DATA_DIR)");
  storage::DataDir::Options o;
  o.read_only = !writable;
  o.create = writable;
  o.stop_at_damage = !writable && stop_at_damage;
  auto dir = storage::DataDir::Open(g.data_dir, o);
  if (!dir.ok()) {
    if (dir.status().IsBusy()) {
      if (auto pid = offsets::RunningBrokerPid(g.data_dir))
        return offsets::BrokerRunningError(g.data_dir, *pid);
      return Status::Busy(dir.status().message() + HolderCommand(dir.status().message()) +
                          "; wait for it to finish, or stop it");
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
