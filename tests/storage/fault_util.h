// Fault injection for the storage tests: fail one kind of file operation on the paths that end
// with a given suffix, for the lifetime of the object (see SetFileFaultHookForTesting).
#pragma once

#include <atomic>
#include <cerrno>
#include <string>

#include "base/file.h"

namespace silt::storage::testing {

class FailOp {
 public:
  // Fails `op` on paths ending in `suffix` ("" for every path): after letting the first `skip`
  // such operations through, every time (or only `times` times).
  FailOp(FileOp op, std::string suffix, int err = EIO, int skip = 0, int times = -1)
      : op_(op), suffix_(std::move(suffix)), err_(err), skip_(skip), left_(times) {
    SetFileFaultHookForTesting([this](FileOp op, const std::string& path) {
      if (op != op_ || path.size() < suffix_.size() ||
          path.compare(path.size() - suffix_.size(), suffix_.size(), suffix_) != 0)
        return Status::OK();
      if (skip_.load() > 0 && skip_.fetch_sub(1) > 0) return Status::OK();
      if (left_.load() == 0) return Status::OK();
      if (left_.load() > 0) left_.fetch_sub(1);
      hits_.fetch_add(1);
      return InjectedFault(err_, "injected fault on", path);
    });
  }
  ~FailOp() { SetFileFaultHookForTesting(nullptr); }
  FailOp(const FailOp&) = delete;
  FailOp& operator=(const FailOp&) = delete;
  // How many operations were failed so far.
  int hits() const { return hits_.load(); }

 private:
  FileOp op_;
  std::string suffix_;
  int err_;
  std::atomic<int> skip_;
  std::atomic<int> left_;
  std::atomic<int> hits_{0};
};

}  // namespace silt::storage::testing
