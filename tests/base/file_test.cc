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
