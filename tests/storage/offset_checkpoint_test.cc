// Kafka's offset checkpoint files (replication-offset-checkpoint).
#include <doctest/doctest.h>

#include <stdlib.h>

#include "base/file.h"
#include "storage/offset_checkpoint.h"

using namespace silt;
using namespace silt::storage;

namespace {

struct TempPath {
  std::string dir;
  TempPath() {
    char tmpl[] = "/tmp/silt-checkpoint-test.XXXXXX";
    dir = ::mkdtemp(tmpl);
  }
  ~TempPath() { (void)RemoveAll(dir); }
  std::string file() const { return dir + "/" + kReplicationCheckpointFile; }
};

}  // namespace

TEST_CASE("an offset checkpoint is written in Kafka's text format and read back") {
  TempPath t;
  OffsetCheckpointMap m{{{"orders", 0}, 42}, {{"orders", 3}, 7}, {{"__consumer_offsets", 12}, 0}};
  REQUIRE(WriteOffsetCheckpoint(t.file(), m).ok());
  auto text = ReadFile(t.file());
  REQUIRE(text.ok());
  CHECK(*text == "0\n3\n__consumer_offsets 12 0\norders 0 42\norders 3 7\n");
  auto back = ReadOffsetCheckpoint(t.file());
  REQUIRE(back.ok());
  CHECK(*back == m);
  REQUIRE(WriteOffsetCheckpoint(t.file(), {}).ok());
  CHECK(ReadOffsetCheckpoint(t.file())->empty());
}

TEST_CASE("a missing offset checkpoint is NotFound and a malformed one Corruption") {
  TempPath t;
  CHECK(ReadOffsetCheckpoint(t.file()).status().IsNotFound());
  for (const char* bad : {"", "1\n0\n", "0\n2\nt 0 1\n", "0\n1\nt x 1\n", "0\n1\nt 0 -4\n",
                          "0\n1\nt -1 4\n", "0\n1\nt 0 1\nu 0 2\n"}) {
    CAPTURE(bad);
    REQUIRE(WriteFileAtomic(t.file(), bad).ok());
    CHECK(ReadOffsetCheckpoint(t.file()).status().IsCorruption());
  }
}
