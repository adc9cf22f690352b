#include <doctest/doctest.h>

#include <cstdlib>

#include "base/file.h"

using namespace silt;

namespace {
std::string TempDir() {
  char tmpl[] = "/tmp/silt-test-XXXXXX";
  const char* d = mkdtemp(tmpl);
  REQUIRE(d != nullptr);
  return d;
}
}  // namespace

TEST_CASE("WriteFileAtomic replaces the contents and leaves no temp file") {
  std::string dir = TempDir();
  std::string p = JoinPath(dir, "cfg");
  REQUIRE(WriteFileAtomic(p, "one").ok());
  REQUIRE(WriteFileAtomic(p, "two").ok());
  CHECK(ReadFile(p).value() == "two");
  CHECK(ListDir(dir).value() == std::vector<std::string>{"cfg"});
  CHECK(RemoveAll(dir).ok());
}

TEST_CASE("a write past the simulated disk's capacity fails with NoSpace after a partial write") {
  std::string dir = TempDir();
  auto f = File::Open(JoinPath(dir, "f"), File::kCreate);
  REQUIRE(f.ok());
  SetWriteBudgetForTesting(3);
  Status s = f->PWrite(0, "hello");
  SetWriteBudgetForTesting(-1);
  CHECK(s.IsNoSpace());
  CHECK(f->Size().value() == 3);
  CHECK(RemoveAll(dir).ok());
}

TEST_CASE("path helpers split like dirname and basename") {
  CHECK(BaseName("/a/b/c.log") == "c.log");
  CHECK(DirName("/a/b/c.log") == "/a/b");
  CHECK(DirName("c.log") == ".");
  CHECK(JoinPath("a/", "b") == "a/b");
  CHECK(ReadFile("/nonexistent/silt").status().IsNotFound());
}

TEST_CASE("the fault hook fails the chosen operation on the chosen path and nothing else") {
  std::string dir = TempDir();
  std::string p = JoinPath(dir, "f");
  auto f = File::Open(p, File::kCreate);
  REQUIRE(f.ok());
  REQUIRE(f->PWrite(0, "hello").ok());
  std::vector<FileOp> seen;
  SetFileFaultHookForTesting([&](FileOp op, const std::string& path) {
    seen.push_back(op);
    if (op == FileOp::kSync && path == p) return InjectedFault(EIO, "fsync", path);
    return Status::OK();
  });
  Status sync = f->Sync();
  Status write = f->PWrite(5, "!");
  Status other = WriteFileAtomic(JoinPath(dir, "g"), "x");
  SetFileFaultHookForTesting(nullptr);
  CHECK(sync.code() == Status::Code::kIOError);
  CHECK(sync.ToString().find("fsync") != std::string::npos);
  CHECK(write.ok());
  CHECK(other.ok());
  CHECK(seen.front() == FileOp::kSync);
  CHECK(f->Sync().ok());
  CHECK(ReadFile(p).value() == "hello!");
  CHECK(RemoveAll(dir).ok());
}

TEST_CASE("a failed rename in WriteFileAtomic keeps the old contents and leaves no temp file") {
  std::string dir = TempDir();
  std::string p = JoinPath(dir, "cfg");
  REQUIRE(WriteFileAtomic(p, "old").ok());
  SetFileFaultHookForTesting([](FileOp op, const std::string& path) {
    return op == FileOp::kRename ? InjectedFault(EXDEV, "rename", path) : Status::OK();
  });
  Status s = WriteFileAtomic(p, "new");
  SetFileFaultHookForTesting(nullptr);
  CHECK(!s.ok());
  CHECK(ReadFile(p).value() == "old");
  CHECK(ListDir(dir).value() == std::vector<std::string>{"cfg"});
  CHECK(RemoveAll(dir).ok());
}
