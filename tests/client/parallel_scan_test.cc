// ParallelScan over hand-made segment files, and LocalConsumer's bulk output through it.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "base/file.h"
#include "client/local_consumer.h"
#include "client/local_producer.h"
#include "client/parallel_scan.h"
#include "format/layout.h"
#include "format/record_batch.h"
#include "storage/data_dir.h"

using namespace silt;
using namespace silt::client;

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/silt-scan-test.XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { (void)RemoveAll(path); }
};

std::string Batch(int64_t base, int records, size_t value_size) {
  format::RecordBatchBuilder::Options o;
  o.base_offset = base;
  format::RecordBatchBuilder b(o);
  for (int i = 0; i < records; ++i)
    b.Add(std::nullopt, std::to_string(base + i) + std::string(value_size, 'v'), 1000 + i, {});
  auto bytes = b.Finish();
  REQUIRE(bytes.ok());
  return *bytes;
}

struct SegFile {
  std::string bytes;
  std::vector<size_t> starts;  // batch positions
  std::vector<int64_t> bases;  // their base offsets
  int64_t next = 0;
  void Add(int records, size_t value_size) {
    starts.push_back(bytes.size());
    bases.push_back(next);
    bytes += Batch(next, records, value_size);
    next += records;
  }
};

int WriteFile(const std::string& dir, const std::string& bytes) {
  std::string path = dir + "/seg.log";
  int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_RDWR, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  return fd;
}

const ScanFormatFn kFormat = [](int32_t partition, const format::RecordView& r, std::string* out) {
  *out += std::to_string(partition) + "/" + std::to_string(r.offset) + "=" + std::string(r.value) + "\n";
};

// What a single thread would print for offsets [from, to).
std::string Expected(const SegFile& f, int64_t from, int64_t to) {
  std::string out;
  for (size_t i = 0; i < f.starts.size(); ++i) {
    auto v = format::RecordBatchView::Parse(std::string_view(f.bytes).substr(f.starts[i]));
    REQUIRE(v.ok());
    REQUIRE(v->ForEachRecord([&](const format::RecordView& r) {
                if (r.offset >= from && r.offset < to) kFormat(3, r, &out);
                return true;
              }).ok());
  }
  return out;
}

SegFile MixedFile() {
  SegFile f;
  const int counts[] = {3, 20, 1, 7, 60, 2, 9, 1, 15, 4, 33, 8, 1, 1, 12};
  for (int n : counts) f.Add(n, 37);
  return f;
}

}  // namespace

TEST_CASE("a parallel scan emits exactly what one thread would, in order, whatever the chunk size") {
  TempDir tmp;
  SegFile f = MixedFile();
  int fd = WriteFile(tmp.path, f.bytes);
  for (size_t chunk : {size_t{1}, size_t{300}, size_t{2000}, size_t{1} << 20}) {
    CAPTURE(chunk);
    ScanRange r;
    r.fd = fd;
    r.partition = 3;
    r.start = 0;
    r.limit = static_cast<int64_t>(f.bytes.size());
    r.min_offset = 0;
    r.stop_offset = INT64_MAX;
    r.chunk_bytes = chunk;
    std::string out;
    int emits = 0;
    ScanResult res = ParallelScan(r, kFormat, [&](std::string_view s) { return out.append(s), ++emits, true; },
                                  nullptr);
    CHECK(out == Expected(f, 0, f.next));
    CHECK(res.position == static_cast<int64_t>(f.bytes.size()));
    CHECK(res.next_offset == f.next);
    CHECK(res.records == f.next);
    CHECK_FALSE(res.stopped);
    if (chunk == 1) CHECK(emits == static_cast<int>(f.starts.size()));  // a batch per chunk
  }
  ::close(fd);
}

TEST_CASE("a parallel scan starts mid-batch at min_offset and stops at stop_offset's batch") {
  TempDir tmp;
  SegFile f = MixedFile();
  int fd = WriteFile(tmp.path, f.bytes);
  ScanRange r;
  r.fd = fd;
  r.partition = 3;
  r.start = static_cast<int64_t>(f.starts[4]);  // the batch of offsets 31..90
  r.limit = static_cast<int64_t>(f.bytes.size());
  r.min_offset = 50;
  r.stop_offset = f.bases[10];  // batches from here on are not read
  r.chunk_bytes = 500;
  std::string out;
  ScanResult res = ParallelScan(r, kFormat, [&](std::string_view s) { return out.append(s), true; }, nullptr);
  CHECK(out == Expected(f, 50, f.bases[10]));
  CHECK(res.position == static_cast<int64_t>(f.starts[10]));
  CHECK(res.next_offset == f.bases[10]);
  ::close(fd);
}

TEST_CASE("a parallel scan stops before damage, torn tails and its limit, having emitted all before") {
  TempDir tmp;
  SegFile f = MixedFile();
  const size_t victim = 9;
  ScanRange r;
  r.partition = 3;
  r.start = 0;
  r.min_offset = 0;
  r.stop_offset = INT64_MAX;
  r.chunk_bytes = 200;

  auto check_stops_at = [&](const std::string& bytes, size_t bad_pos, int64_t bad_base) {
    int fd = WriteFile(tmp.path, bytes);
    r.fd = fd;
    r.limit = static_cast<int64_t>(bytes.size());
    std::string out;
    ScanResult res = ParallelScan(r, kFormat, [&](std::string_view s) { return out.append(s), true; }, nullptr);
    // Everything emitted is whole and right; the scan ends at a batch boundary at or before the
    // bad batch, and every record before that boundary was emitted.
    CHECK(res.position <= static_cast<int64_t>(bad_pos));
    CHECK_FALSE(res.stopped);
    CHECK(out == Expected(f, 0, res.next_offset));
    CHECK(res.next_offset <= bad_base);
    ::close(fd);
  };

  SUBCASE("a flipped bit in the records of a batch (CRC)") {
    std::string bad = f.bytes;
    bad[f.starts[victim] + format::kBatchHeaderSize + 5] ^= 0x10;
    check_stops_at(bad, f.starts[victim], f.bases[victim]);
  }
  SUBCASE("a bad magic byte") {
    std::string bad = f.bytes;
    bad[f.starts[victim] + format::kMagicOffset] = 9;
    check_stops_at(bad, f.starts[victim], f.bases[victim]);
  }
  SUBCASE("a batch length of zero") {
    std::string bad = f.bytes;
    std::memset(&bad[f.starts[victim] + format::kBatchLengthOffset], 0, 4);
    check_stops_at(bad, f.starts[victim], f.bases[victim]);
  }
  SUBCASE("a torn last batch") {
    const size_t last = f.starts.size() - 1;
    check_stops_at(f.bytes.substr(0, f.bytes.size() - 5), f.starts[last], f.bases[last]);
  }
}

TEST_CASE("a parallel scan stops when emit says so or when asked to, and reports it") {
  TempDir tmp;
  SegFile f = MixedFile();
  int fd = WriteFile(tmp.path, f.bytes);
  ScanRange r;
  r.fd = fd;
  r.partition = 3;
  r.limit = static_cast<int64_t>(f.bytes.size());
  r.stop_offset = INT64_MAX;
  r.chunk_bytes = 100;
  std::string out;
  int emits = 0;
  ScanResult res = ParallelScan(r, kFormat, [&](std::string_view s) { return out.append(s), ++emits < 3; }, nullptr);
  CHECK(res.stopped);
  CHECK(emits == 3);
  CHECK(out == Expected(f, 0, res.next_offset));
  CHECK(res.position < static_cast<int64_t>(f.bytes.size()));

  std::atomic<bool> stop{true};
  out.clear();
  res = ParallelScan(r, kFormat, [&](std::string_view s) { return out.append(s), true; }, &stop);
  CHECK(res.stopped);
  CHECK(out.empty());
  CHECK(res.position == 0);
  ::close(fd);
}

namespace {

std::unique_ptr<storage::DataDir> OpenDir(const std::string& path, bool read_only) {
  storage::DataDir::Options o;
  o.read_only = read_only;
  auto d = storage::DataDir::Open(path, o);
  REQUIRE_MESSAGE(d.ok(), d.status().ToString());
  return std::move(d).value();
}

// A topic of 3000 records in ~150 small batches.
void Produce(const std::string& path) {
  auto dir = OpenDir(path, false);
  ProducerOptions po;
  po.batch_bytes = 500;
  auto p = LocalProducer::Open(dir.get(), "t", po);
  REQUIRE(p.ok());
  for (int i = 0; i < 3000; ++i)
    REQUIRE((*p)->Send(std::nullopt, "value-" + std::to_string(i), {}).ok());
  REQUIRE((*p)->Flush().ok());
  REQUIRE(dir->Close().ok());
}

// Runs a consumer with bulk output always on; returns the output and the run's status.
Status ConsumeBulk(const std::string& path, std::string* out, ConsumerOptions o = {}) {
  o.parallel_min_bytes = 1;
  o.parallel_chunk_bytes = 700;
  auto dir = OpenDir(path, true);
  auto c = LocalConsumer::Open(dir.get(), "t", o);
  REQUIRE(c.ok());
  (*c)->SetBulkOutput(kFormat, [&](std::string_view s) { return out->append(s), true; });
  return (*c)->Run(
      [&](int32_t partition, const format::RecordView& r) {
        kFormat(partition, r, out);
        return true;
      },
      nullptr, nullptr);
}

}  // namespace

TEST_CASE("the local consumer's bulk output equals its record-by-record output") {
  TempDir tmp;
  Produce(tmp.path);
  std::string bulk;
  REQUIRE(ConsumeBulk(tmp.path, &bulk).ok());
  std::string single;
  {
    auto dir = OpenDir(tmp.path, true);
    auto c = LocalConsumer::Open(dir.get(), "t", {});
    REQUIRE(c.ok());
    REQUIRE((*c)->Run(
                    [&](int32_t partition, const format::RecordView& r) {
                      kFormat(partition, r, &single);
                      return true;
                    },
                    nullptr, nullptr)
                .ok());
  }
  CHECK(bulk.size() > 30000);
  CHECK(bulk == single);

  // From an offset in the middle of a batch.
  ConsumerOptions from;
  from.start = OffsetSpec{OffsetSpec::Kind::kAbsolute, 1234};
  std::string tail;
  REQUIRE(ConsumeBulk(tmp.path, &tail, from).ok());
  CHECK(tail == single.substr(single.find("0/1234=")));
}

TEST_CASE("a corrupt batch met by the bulk output is reported at its byte position") {
  TempDir tmp;
  Produce(tmp.path);
  std::string seg = tmp.path + "/t-0/00000000000000000000.log";
  auto bytes = ReadFile(seg);
  REQUIRE(bytes.ok());
  std::vector<size_t> starts;
  for (size_t at = 0; at < bytes->size();) {
    starts.push_back(at);
    auto v = format::RecordBatchView::Parse(std::string_view(*bytes).substr(at));
    REQUIRE(v.ok());
    at += static_cast<size_t>(v->header().size());
  }
  REQUIRE(starts.size() > 60);
  std::string bad = *bytes;
  bad[starts[57] + format::kBatchHeaderSize + 2] ^= 0x01;
  REQUIRE(WriteFileAtomic(seg, bad).ok());
  std::string out;
  Status st = ConsumeBulk(tmp.path, &out);
  REQUIRE_FALSE(st.ok());
  CHECK(st.message().find("at byte " + std::to_string(starts[57])) != std::string::npos);
  auto v = format::RecordBatchView::Parse(std::string_view(*bytes).substr(starts[57]));
  // Every record before the damaged batch was written, in order, and none after.
  CHECK(out.find("0/" + std::to_string(v->header().base_offset - 1) + "=") != std::string::npos);
  CHECK(out.find("0/" + std::to_string(v->header().base_offset) + "=") == std::string::npos);
}
