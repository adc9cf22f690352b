// libFuzzer target: segment recovery. The input is written as the only .log file of a partition
// directory (no indexes, no checkpoints: an unclean shutdown), the partition is opened writable
// (recovery validates every batch, truncates a torn tail, rebuilds the indexes), and whatever
// it kept is read back from log start to log end, then once more after a reopen. Opening may
// fail with a Status; nothing may crash, and reads must make progress.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "base/file.h"
#include "base/ids.h"
#include "storage/log_config.h"
#include "storage/partition_log.h"
#include "storage/segment.h"

using namespace silt;
using namespace silt::storage;

namespace {

// The scratch directory, removed at exit. Never destroyed, so the exit handler can use it.
const std::string& Root() {
  static const std::string* root = [] {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(access("/dev/shm", W_OK) == 0 ? "/dev/shm"
                                   : base != nullptr             ? base
                                                                 : "/tmp") +
                       "/silt-segment-fuzz-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) std::abort();
    auto* dir = new std::string(tmpl);
    std::atexit([] { (void)RemoveAll(Root()); });
    return dir;
  }();
  return *root;
}

void WriteRaw(const std::string& path, std::string_view bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) std::abort();
  std::fclose(f);
}

// Reads every batch from log start to log end; traps when a read does not move forward.
void ReadAll(const PartitionLog& log) {
  Offset pos = log.log_start_offset();
  const Offset end = log.log_end_offset();
  while (pos < end) {
    auto r = log.Read(pos, 1 << 20, end);
    if (!r.ok()) return;
    auto bytes = r->ReadAll();
    if (!bytes.ok()) return;
    if (r->slices.empty()) return;
    if (r->next_offset <= pos) __builtin_trap();
    pos = r->next_offset;
  }
}

void OpenAndRead(const std::string& dir) {
  LogConfig config;
  PartitionLog::OpenOptions options;
  auto log = PartitionLog::Open(dir, config, options);
  if (!log.ok()) return;
  ReadAll(**log);
  (void)(*log)->Close();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string dir = JoinPath(Root(), "fuzz-0");
  (void)RemoveAll(dir);
  if (!CreateDirs(dir).ok()) std::abort();
  WriteRaw(JoinPath(dir, SegmentFileName(Offset(0), ".log")),
           std::string_view(reinterpret_cast<const char*>(data), size));
  OpenAndRead(dir);  // recovery
  OpenAndRead(dir);  // what recovery left must open again
  return 0;
}
