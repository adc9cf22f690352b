// storage_bench: the partition log against the disk it sits on.
//
//   append  --bytes of 100-byte records in 16 KiB batches through PartitionLog::Append, against
//           write(2) of the same bytes to one file, in the same run, in the same directory;
//   read    the log back by offset (Read + pread of the returned slices, as a fetch would
//           sendfile them; and Read + ReadAll, a copy) against read(2) of the raw file, both
//           from the page cache and, after fdatasync + POSIX_FADV_DONTNEED, from the disk;
//   crc     silt::crc32c::Value over a large buffer.
//
// Usage: storage_bench [--bytes N[k|m|g]] [--dir DIR] [--rounds R]
// DIR defaults to $TMPDIR/silt-storage-bench, else ./storage-bench-data (under the build tree
// when run from it). Each measurement is the best of R rounds (default 2).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/coding.h"
#include "base/crc32c.h"
#include "base/file.h"
#include "format/batch_header.h"
#include "format/layout.h"
#include "storage/partition_log.h"

using namespace silt;

namespace {

constexpr size_t kBatchBytes = 16 * 1024;
constexpr size_t kRecordBytes = 100;
constexpr int64_t kReadChunk = 1 << 20;  // bytes asked per Read, like a fetch.max.bytes

double Now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

int64_t ParseSize(const char* s) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  switch (end && *end ? (*end | 0x20) : 0) {
    case 'k': v *= 1024; break;
    case 'm': v *= 1024 * 1024; break;
    case 'g': v *= 1024.0 * 1024 * 1024; break;
    default: break;
  }
  return static_cast<int64_t>(v);
}

// One uncompressed v2 batch of about kBatchBytes holding records of about kRecordBytes.
std::string MakeBatch(int seed) {
  std::string records;
  ByteWriter w(&records);
  int n = 0;
  // Each record: length varint (1) + attributes (1) + timestampDelta (1-2) + offsetDelta (1-2)
  // + keyLength (1) + valueLength (1-2) + value + headersCount (1): value 91 makes ~100 bytes.
  const std::string value_fill(91, static_cast<char>('a' + seed % 26));
  while (format::kBatchHeaderSize + records.size() + kRecordBytes + 4 <= kBatchBytes) {
    std::string rec;
    ByteWriter r(&rec);
    r.I8(0);
    r.Varlong(n);
    r.Varint(n);
    r.Varint(-1);
    r.Varint(static_cast<int32_t>(value_fill.size()));
    r.Raw(value_fill);
    r.Varint(0);
    w.Varint(static_cast<int32_t>(rec.size()));
    w.Raw(rec);
    ++n;
  }
  std::string batch(format::kBatchHeaderSize, '\0');
  batch += records;
  format::BatchHeader h;
  h.batch_length = static_cast<int32_t>(batch.size() - format::kLogOverhead);
  h.last_offset_delta = n - 1;
  h.base_timestamp = 1'700'000'000'000;
  h.max_timestamp = h.base_timestamp + n - 1;
  h.records_count = n;
  format::EncodeBatchHeader(h, batch.data());
  h.crc = format::ComputeBatchCrc(batch);
  format::EncodeBatchHeader(h, batch.data());
  return batch;
}

void Die(const std::string& what) {
  std::fprintf(stderr, "storage_bench: %s\n", what.c_str());
  std::exit(2);
}

void DropCache(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

struct Run {
  double seconds = 0;
  double sync_seconds = 0;  // a final fdatasync, on top
};

Run RawWrite(const std::string& path, const std::vector<std::string>& pool, int64_t batches) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) Die("open " + path + ": " + std::strerror(errno));
  Run r;
  double t0 = Now();
  for (int64_t i = 0; i < batches; ++i) {
    const std::string& b = pool[static_cast<size_t>(i) % pool.size()];
    if (::write(fd, b.data(), b.size()) != static_cast<ssize_t>(b.size()))
      Die("write: " + std::string(std::strerror(errno)));
  }
  double t1 = Now();
  ::fdatasync(fd);
  r.seconds = t1 - t0;
  r.sync_seconds = Now() - t1;
  ::close(fd);
  return r;
}

Run LogAppend(const std::string& dir, std::vector<std::string>* pool, int64_t batches) {
  (void)RemoveAll(dir);
  storage::LogConfig cfg;
  auto log = storage::PartitionLog::Open(dir, cfg, {});
  if (!log.ok()) Die(log.status().ToString());
  Run r;
  double t0 = Now();
  for (int64_t i = 0; i < batches; ++i) {
    std::string* b = &(*pool)[static_cast<size_t>(i) % pool->size()];
    auto a = (*log)->Append(b);
    if (!a.ok()) Die(a.status().ToString());
  }
  double t1 = Now();
  Status s = (*log)->Flush();
  if (!s.ok()) Die(s.ToString());
  r.seconds = t1 - t0;
  r.sync_seconds = Now() - t1;
  s = (*log)->Close();
  if (!s.ok()) Die(s.ToString());
  return r;
}

double RawRead(const std::string& path, int64_t expect) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) Die("open " + path);
  std::string buf(static_cast<size_t>(kReadChunk), '\0');
  int64_t total = 0;
  uint64_t sink = 0;
  double t0 = Now();
  while (true) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) Die("read");
    if (n == 0) break;
    total += n;
    sink += static_cast<unsigned char>(buf[0]);
  }
  double t = Now() - t0;
  ::close(fd);
  if (total != expect) Die("raw read " + std::to_string(total) + " bytes");
  if (sink == 1) std::printf(" ");
  return t;
}

// Reads the whole log by offset. copy=false: pread of each slice into one reused buffer
// (standing in for sendfile); copy=true: ReadAll(), a fresh buffer each time.
double LogRead(const storage::PartitionLog& log, int64_t expect, bool copy) {
  std::string buf(static_cast<size_t>(kReadChunk) + 64 * 1024, '\0');
  int64_t total = 0;
  Offset next = log.log_start_offset();
  Offset end = log.log_end_offset();
  double t0 = Now();
  while (next < end) {
    auto r = log.Read(next, kReadChunk, Offset(INT64_MAX));
    if (!r.ok()) Die(r.status().ToString());
    if (copy) {
      auto bytes = r->ReadAll();
      if (!bytes.ok()) Die(bytes.status().ToString());
      total += static_cast<int64_t>(bytes->size());
    } else {
      for (const storage::FileSlice& s : r->slices) {
        if (static_cast<size_t>(s.length) > buf.size()) buf.resize(static_cast<size_t>(s.length));
        ssize_t n = ::pread(s.file->fd(), buf.data(), static_cast<size_t>(s.length), s.position);
        if (n != s.length) Die("short pread");
        total += n;
      }
    }
    next = r->next_offset;
  }
  double t = Now() - t0;
  if (total != expect) Die("log read " + std::to_string(total) + " bytes");
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t bytes = 1LL << 30;
  int rounds = 2;
  std::string dir;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--bytes" && i + 1 < argc) {
      bytes = ParseSize(argv[++i]);
    } else if (a == "--dir" && i + 1 < argc) {
      dir = argv[++i];
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: storage_bench [--bytes N[k|m|g]] [--dir DIR] [--rounds R]\n");
      return 2;
    }
  }
  if (dir.empty()) {
    const char* t = std::getenv("TMPDIR");
    dir = t && *t ? JoinPath(t, "silt-storage-bench") : "storage-bench-data";
  }
  if (!CreateDirs(dir).ok()) Die("cannot create " + dir);
  const std::string raw_path = JoinPath(dir, "raw.bin");
  const std::string log_dir = JoinPath(dir, "log");

  std::vector<std::string> pool;
  for (int i = 0; i < 64; ++i) pool.push_back(MakeBatch(i));
  const int64_t batch_size = static_cast<int64_t>(pool[0].size());
  const int64_t batches = std::max<int64_t>(1, bytes / batch_size);
  const int64_t total = batches * batch_size;
  const double mb = static_cast<double>(total) / 1e6;
  std::printf("storage_bench: %lld batches of %lld bytes (%.1f MB), records of ~%zu bytes, in %s\n",
              static_cast<long long>(batches), static_cast<long long>(batch_size), mb,
              kRecordBytes, dir.c_str());

  // ---- append ----
  Run raw_best{1e30, 0}, log_best{1e30, 0};
  for (int r = 0; r < rounds; ++r) {
    // Alternate who goes first, so that neither always runs behind the other's writeback.
    (void)RemoveFile(raw_path);
    Run raw, lg;
    if (r % 2 == 0) {
      raw = RawWrite(raw_path, pool, batches);
      lg = LogAppend(log_dir, &pool, batches);
    } else {
      lg = LogAppend(log_dir, &pool, batches);
      raw = RawWrite(raw_path, pool, batches);
    }
    if (raw.seconds < raw_best.seconds) raw_best = raw;
    if (lg.seconds < log_best.seconds) log_best = lg;
  }
  std::printf("\nappend (page cache; best of %d)\n", rounds);
  std::printf("  raw write(2)          %8.0f MB/s   (+ fdatasync: %8.0f MB/s)\n",
              mb / raw_best.seconds, mb / (raw_best.seconds + raw_best.sync_seconds));
  std::printf("  PartitionLog::Append  %8.0f MB/s   (+ Flush:     %8.0f MB/s)\n",
              mb / log_best.seconds, mb / (log_best.seconds + log_best.sync_seconds));
  std::printf("  ratio                 %8.2fx        (with sync:   %8.2fx)\n",
              raw_best.seconds / log_best.seconds,
              (raw_best.seconds + raw_best.sync_seconds) /
                  (log_best.seconds + log_best.sync_seconds));
  std::printf("  appends/s             %8.0f        records/s: %.0f\n",
              static_cast<double>(batches) / log_best.seconds,
              static_cast<double>(batches) * ((kBatchBytes - 61) / kRecordBytes) /
                  log_best.seconds);

  // ---- read ----
  storage::PartitionLog::OpenOptions ro;
  ro.read_only = true;
  ro.clean_shutdown = true;
  auto log = storage::PartitionLog::Open(log_dir, storage::LogConfig{}, ro);
  if (!log.ok()) Die(log.status().ToString());
  if ((*log)->size_bytes() != total) Die("log holds " + std::to_string((*log)->size_bytes()));
  std::vector<std::string> log_files;
  for (const auto& s : (*log)->Segments()) log_files.push_back(s.log_path);

  double raw_hot = 1e30, log_hot = 1e30, copy_hot = 1e30, raw_cold = 1e30, log_cold = 1e30;
  for (int r = 0; r < rounds; ++r) {
    raw_hot = std::min(raw_hot, RawRead(raw_path, total));
    log_hot = std::min(log_hot, LogRead(**log, total, false));
    copy_hot = std::min(copy_hot, LogRead(**log, total, true));
  }
  for (int r = 0; r < rounds; ++r) {
    DropCache(raw_path);
    for (const auto& f : log_files) DropCache(f);
    if (r % 2 == 0) {
      raw_cold = std::min(raw_cold, RawRead(raw_path, total));
      log_cold = std::min(log_cold, LogRead(**log, total, false));
    } else {
      log_cold = std::min(log_cold, LogRead(**log, total, false));
      raw_cold = std::min(raw_cold, RawRead(raw_path, total));
    }
  }
  std::printf("\nread by offset, %lld-byte requests (best of %d)\n",
              static_cast<long long>(kReadChunk), rounds);
  std::printf("  page cache: raw read(2)            %8.0f MB/s\n", mb / raw_hot);
  std::printf("  page cache: Read + pread slices    %8.0f MB/s   ratio %.2fx\n", mb / log_hot,
              raw_hot / log_hot);
  std::printf("  page cache: Read + ReadAll (copy)  %8.0f MB/s   ratio %.2fx\n", mb / copy_hot,
              raw_hot / copy_hot);
  std::printf("  after FADV_DONTNEED: raw read(2)   %8.0f MB/s\n", mb / raw_cold);
  std::printf("  after FADV_DONTNEED: Read + pread  %8.0f MB/s   ratio %.2fx\n", mb / log_cold,
              raw_cold / log_cold);
  std::printf("  (FADV_DONTNEED evicts clean pages of these files only; a hypervisor cache below\n"
              "   the VM may still serve them)\n");

  // ---- crc ----
  std::string big(64 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 131 + (i >> 9));
  uint32_t crc = 0;
  double best = 1e30;
  for (int r = 0; r < 3; ++r) {
    double t0 = Now();
    for (int k = 0; k < 8; ++k) crc = crc32c::Value(big.data(), big.size());
    best = std::min(best, Now() - t0);
  }
  std::printf("\ncrc32c (%s): %.2f GB/s over %zu MiB x 8 (crc %08x)\n",
              crc32c::ImplementationName(), 8.0 * static_cast<double>(big.size()) / 1e9 / best,
              big.size() >> 20, crc);

  (void)RemoveAll(dir);
  return 0;
}
