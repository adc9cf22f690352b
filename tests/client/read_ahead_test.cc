// ReadAhead on its own over a hand-made segment file, and LocalConsumer reading through it.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "base/file.h"
#include "client/local_consumer.h"
#include "client/local_producer.h"
#include "client/read_ahead.h"
#include "format/layout.h"
#include "format/record_batch.h"
#include "storage/data_dir.h"

using namespace silt;
using namespace silt::client;

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/silt-readahead-test.XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { (void)RemoveAll(path); }
};

std::string Batch(int64_t base, int records, size_t value_size) {
  format::RecordBatchBuilder::Options o;
  o.base_offset = base;
  format::RecordBatchBuilder b(o);
  for (int i = 0; i < records; ++i)
    b.Add(std::nullopt, std::string(value_size, static_cast<char>('a' + i % 26)), 1000 + i, {});
  auto bytes = b.Finish();
  REQUIRE(bytes.ok());
  return *bytes;
}

// Writes `bytes` to dir/name and returns an fd open for reading.
int WriteFile(const std::string& dir, const std::string& bytes) {
  std::string path = dir + "/seg.log";
  int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_RDWR, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  return fd;
}

}  // namespace

TEST_CASE("read-ahead hands over every batch in order, whole, whatever the chunk size") {
  TempDir tmp;
  // Small batches, batches that straddle chunk boundaries, and one larger than a chunk.
  std::string file;
  std::vector<size_t> starts;
  int64_t offset = 0;
  const int counts[] = {3, 20, 1, 7, 60, 2, 9, 1, 15};
  for (int n : counts) {
    starts.push_back(file.size());
    file += Batch(offset, n, 37);
    offset += n;
  }
  int fd = WriteFile(tmp.path, file);
  for (size_t chunk : {size_t{256}, size_t{1000}, size_t{4096}, size_t{1} << 20}) {
    CAPTURE(chunk);
    ReadAhead ra(fd, 0, chunk, 2);
    std::string seen;

    for (;;) {
      ReadAhead::Chunk c = ra.Next();
      if (c.data.empty()) {
        CHECK(c.position == static_cast<int64_t>(file.size()));
        break;
      }

      REQUIRE(c.position == static_cast<int64_t>(seen.size()));
      // Every chunk is whole batches starting at a batch boundary.
      CHECK(std::find(starts.begin(), starts.end(), static_cast<size_t>(c.position)) != starts.end());
      size_t used = 0;
      while (used < c.data.size()) {
        auto v = format::RecordBatchView::Parse(c.data.substr(used));
        REQUIRE_MESSAGE(v.ok(), v.status().ToString());
        used += static_cast<size_t>(v->header().size());
      }
      CHECK(used == c.data.size());
      seen.append(c.data);
    }
    CHECK(seen == file);
  }
  ::close(fd);
}

TEST_CASE("read-ahead stops before a damaged or unfinished batch and says where") {
  TempDir tmp;
  std::string file = Batch(0, 5, 50) + Batch(5, 5, 50);
  const size_t second = file.size();
  file += Batch(10, 5, 50);
  const size_t third = file.size();
  file += Batch(15, 5, 50);

  SUBCASE("a bad magic byte") {
    std::string bad = file;
    bad[third + format::kMagicOffset] = 7;
    int fd = WriteFile(tmp.path, bad);
    ReadAhead ra(fd, 0, 64, 2);
    int64_t end = 0;
    for (ReadAhead::Chunk c = ra.Next(); !c.data.empty(); c = ra.Next()) end = c.position + c.data.size();
    CHECK(end == static_cast<int64_t>(third));
    CHECK(ra.Next().position == static_cast<int64_t>(third));
    ::close(fd);
  }
  SUBCASE("a torn last batch") {
    int fd = WriteFile(tmp.path, file.substr(0, file.size() - 9));
    ReadAhead ra(fd, second, 64, 2);
    ReadAhead::Chunk c = ra.Next();
    CHECK(c.position == static_cast<int64_t>(second));
    CHECK(c.data.size() == third - second);
    c = ra.Next();
    CHECK(c.data.empty());
    CHECK(c.position == static_cast<int64_t>(third));
    ::close(fd);
  }
  SUBCASE("a bad CRC is either caught here or left to the caller, never passed as checked") {
    for (size_t victim : {size_t{0}, second, third}) {
      std::string bad = file;
      bad[victim + format::kBatchHeaderSize + 3] ^= 0x40;  // inside the records
      int fd = WriteFile(tmp.path, bad);
      ReadAhead ra(fd, 0, 64, 2);
      bool victim_seen = false;
      for (ReadAhead::Chunk c = ra.Next(); !c.data.empty(); c = ra.Next()) {
        if (c.position <= static_cast<int64_t>(victim) &&
            static_cast<size_t>(c.position) + c.data.size() > victim) {
          victim_seen = true;
          CHECK_FALSE(c.crc_checked);
        }
      }
      (void)victim_seen;
      ::close(fd);
    }
  }
}

namespace {

std::unique_ptr<storage::DataDir> OpenDir(const std::string& path, bool read_only) {
  storage::DataDir::Options o;
  o.read_only = read_only;
  auto d = storage::DataDir::Open(path, o);
  REQUIRE_MESSAGE(d.ok(), d.status().ToString());
  return std::move(d).value();
}

// A topic of 2000 records in ~100 small batches.
void Produce(const std::string& path) {
  auto dir = OpenDir(path, false);
  ProducerOptions po;
  po.batch_bytes = 500;
  auto p = LocalProducer::Open(dir.get(), "t", po);
  REQUIRE(p.ok());
  for (int i = 0; i < 2000; ++i) REQUIRE((*p)->Send(std::nullopt, "value-" + std::to_string(i), {}).ok());
  REQUIRE((*p)->Flush().ok());
  REQUIRE(dir->Close().ok());
}

ConsumerOptions ReadAheadAlways() {
  ConsumerOptions o;
  o.read_ahead_min_bytes = 1;
  o.read_ahead_chunk_bytes = 700;
  return o;
}

}  // namespace

TEST_CASE("the local consumer reads through read-ahead, stops mid-chunk and resumes exactly") {
  TempDir tmp;
  Produce(tmp.path);
  auto dir = OpenDir(tmp.path, true);
  auto c = LocalConsumer::Open(dir.get(), "t", ReadAheadAlways());
  REQUIRE(c.ok());
  std::vector<std::string> got;
  int64_t expect = 0;
  // Stop after every 333 records, then carry on: nothing lost, nothing repeated.
  for (int round = 0; round < 10 && got.size() < 2000; ++round) {
    int n = 0;
    Status st = (*c)->Run(
        [&](int32_t, const format::RecordView& r) {
          CHECK(r.offset == expect);
          ++expect;
          got.emplace_back(r.value);
          return ++n < 333;
        },
        nullptr, nullptr);
    REQUIRE_MESSAGE(st.ok(), st.ToString());
  }
  REQUIRE(got.size() == 2000);
  for (int i = 0; i < 2000; ++i) CHECK(got[i] == "value-" + std::to_string(i));
}

TEST_CASE("a corrupt batch met through read-ahead is reported at its byte position") {
  TempDir tmp;
  Produce(tmp.path);
  std::string seg = tmp.path + "/t-0/00000000000000000000.log";
  std::string bytes;
  {
    auto r = ReadFile(seg);
    REQUIRE(r.ok());
    bytes = *r;
  }
  // The positions of the batches; damage the 40th and then the 41st (the read-ahead checks
  // CRCs of every other chunk, so both kinds of chunk are covered).
  std::vector<size_t> starts;
  for (size_t at = 0; at < bytes.size();) {
    starts.push_back(at);
    auto v = format::RecordBatchView::Parse(std::string_view(bytes).substr(at));
    REQUIRE(v.ok());
    at += static_cast<size_t>(v->header().size());
  }
  REQUIRE(starts.size() > 50);
  for (size_t k : {size_t{40}, size_t{41}}) {
    CAPTURE(k);
    std::string bad = bytes;
    bad[starts[k] + format::kBatchHeaderSize + 2] ^= 0x01;
    REQUIRE(WriteFileAtomic(seg, bad).ok());
    auto dir = OpenDir(tmp.path, true);
    auto c = LocalConsumer::Open(dir.get(), "t", ReadAheadAlways());
    REQUIRE(c.ok());
    int64_t delivered = 0;
    Status st = (*c)->Run([&](int32_t, const format::RecordView&) { return ++delivered, true; },
                          nullptr, nullptr);
    REQUIRE_FALSE(st.ok());
    CHECK(st.message().find("at byte " + std::to_string(starts[k])) != std::string::npos);
    auto first = format::RecordBatchView::Parse(std::string_view(bytes).substr(starts[k]));
    CHECK(delivered == first->header().base_offset);
  }
}
