// Segment recovery on inputs found by tests/fuzz/segment_fuzz.cc: each case is a log file that
// once crashed recovery or tripped a sanitizer, kept here so `make asan` checks it every run.
#include <doctest/doctest.h>

#include <string>

#include "base/coding.h"
#include "base/file.h"
#include "storage/partition_log.h"
#include "storage/test_util.h"

using namespace silt;
using namespace silt::storage;
using namespace silt::storage::testing;

TEST_CASE("a torn tail whose batchLength is INT32_MAX is cut without overflowing the length") {
  TempDir dir;
  std::string batch = MakeBatch(2);
  // After one whole batch, 12 bytes of a next one: baseOffset, then batchLength = INT32_MAX.
  std::string tail(12, '\0');
  EncodeBE64(tail.data(), 2);
  EncodeBE32(tail.data() + 8, 0x7fffffff);
  const std::string path = dir / SegName(0, ".log");
  WriteBytes(path, batch + tail);
  {
    auto log = PartitionLog::Open(dir.path(), LogConfig{}, {});
    REQUIRE_MESSAGE(log.ok(), log.status().ToString());
    CHECK((*log)->log_end_offset() == Offset(2));
  }
  CHECK(Slurp(path).size() == batch.size());
}
