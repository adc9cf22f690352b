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
#include <time.h>
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

// Raw side: one file written with write(2) and read with read(2), 1 MiB at a time.
struct RawFile {
  int fd = -1;
  std::string buf = std::string(static_cast<size_t>(kReadChunk), '\0');
  uint64_t sink = 0;

  void Write(const std::string& b) {
    if (::write(fd, b.data(), b.size()) != static_cast<ssize_t>(b.size()))
      Die("write: " + std::string(std::strerror(errno)));
  }
  // Reads `want` bytes (or to EOF); returns the bytes read.
  int64_t Read(int64_t want) {
    int64_t got = 0;
    while (got < want) {
      ssize_t n = ::read(fd, buf.data(), buf.size());
      if (n < 0) Die("read");
      if (n == 0) break;
      got += n;
      sink += static_cast<unsigned char>(buf[0]);
    }
    return got;
  }
};

// Log side: reads by offset, 1 MiB requests. copy=false preads each slice into one reused
// buffer (standing in for sendfile); copy=true uses ReadAll(), a fresh buffer each time.
struct LogReader {
  const storage::PartitionLog* log;
  bool copy;
  Offset next;
  std::string buf = std::string(static_cast<size_t>(kReadChunk) + 64 * 1024, '\0');

  int64_t Read(int64_t want) {
    int64_t got = 0;
    Offset end = log->log_end_offset();
    while (got < want && next < end) {
      auto r = log->Read(next, kReadChunk, Offset(INT64_MAX));
      if (!r.ok()) Die(r.status().ToString());
      if (copy) {
        auto bytes = r->ReadAll();
        if (!bytes.ok()) Die(bytes.status().ToString());
        got += static_cast<int64_t>(bytes->size());
      } else {
        for (const storage::FileSlice& s : r->slices) {
          if (static_cast<size_t>(s.length) > buf.size()) buf.resize(static_cast<size_t>(s.length));
          ssize_t n = ::pread(s.file->fd(), buf.data(), static_cast<size_t>(s.length), s.position);
          if (n != s.length) Die("short pread");
          got += n;
        }
      }
      next = r->next_offset;
    }
    return got;
  }
};

double ThreadCpu() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// CPU seconds (user + system) of the last Interleave, per side: unlike wall time, not skewed
// by other processes or by dirty-page throttling.
double g_cpu_a = 0, g_cpu_b = 0;

// Runs `a` and `b` over `sections` sections, alternating which goes first so that load from
// elsewhere on the machine and writeback fall on both alike; returns their total seconds.
template <typename A, typename B>
std::pair<double, double> Interleave(int64_t sections, A a, B b) {
  double ta = 0, tb = 0;
  g_cpu_a = g_cpu_b = 0;
  for (int64_t s = 0; s < sections; ++s) {
    for (int k = 0; k < 2; ++k) {
      bool run_a = (k == 0) == (s % 2 == 0);
      double t0 = Now(), c0 = ThreadCpu();
      if (run_a) a(s); else b(s);
      (run_a ? ta : tb) += Now() - t0;
      (run_a ? g_cpu_a : g_cpu_b) += ThreadCpu() - c0;
    }
  }
  return {ta, tb};
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
  constexpr int64_t kSectionBatches = 2048;  // 32 MiB
  const int64_t sections = (batches + kSectionBatches - 1) / kSectionBatches;
  double raw_w = 1e30, log_w = 1e30, raw_sync = 0, log_sync = 0, raw_cpu = 0, log_cpu = 0;
  for (int r = 0; r < rounds; ++r) {
    (void)RemoveAll(log_dir);
    RawFile raw;
    raw.fd = ::open(raw_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (raw.fd < 0) Die("open " + raw_path);
    auto log = storage::PartitionLog::Open(log_dir, storage::LogConfig{}, {});
    if (!log.ok()) Die(log.status().ToString());
    auto [tr, tl] = Interleave(
        sections,
        [&](int64_t s) {
          for (int64_t i = s * kSectionBatches; i < std::min(batches, (s + 1) * kSectionBatches); ++i)
            raw.Write(pool[static_cast<size_t>(i) % pool.size()]);
        },
        [&](int64_t s) {
          for (int64_t i = s * kSectionBatches; i < std::min(batches, (s + 1) * kSectionBatches); ++i) {
            auto a = (*log)->Append(&pool[static_cast<size_t>(i) % pool.size()]);
            if (!a.ok()) Die(a.status().ToString());
          }
        });
    const double cpu_raw = g_cpu_a, cpu_log = g_cpu_b;
    double t0 = Now();
    ::fdatasync(raw.fd);
    double t1 = Now();
    Status st = (*log)->Flush();
    if (!st.ok()) Die(st.ToString());
    double t2 = Now();
    st = (*log)->Close();
    if (!st.ok()) Die(st.ToString());
    ::close(raw.fd);
    if (tr + tl < raw_w + log_w) {
      raw_w = tr;
      log_w = tl;
      raw_sync = t1 - t0;
      log_sync = t2 - t1;
      raw_cpu = cpu_raw;
      log_cpu = cpu_log;
    }
  }
  std::printf("\nappend, interleaved in 32 MiB sections (page cache; best of %d)\n", rounds);
  std::printf("  raw write(2)          %8.0f MB/s   (+ fdatasync: %8.0f MB/s)\n", mb / raw_w,
              mb / (raw_w + raw_sync));
  std::printf("  PartitionLog::Append  %8.0f MB/s   (+ Flush:     %8.0f MB/s)\n", mb / log_w,
              mb / (log_w + log_sync));
  std::printf("  ratio                 %8.2fx        (with sync:   %8.2fx)\n", raw_w / log_w,
              (raw_w + raw_sync) / (log_w + log_sync));
  std::printf("  CPU per GB written: raw %.2f s, log %.2f s (ratio %.2fx)\n", raw_cpu * 1e3 / mb,
              log_cpu * 1e3 / mb, raw_cpu / log_cpu);
  std::printf("  appends/s             %8.0f        records/s: %.0f\n",
              static_cast<double>(batches) / log_w,
              static_cast<double>(batches) * ((kBatchBytes - 61) / kRecordBytes) / log_w);

  // ---- read ----
  storage::PartitionLog::OpenOptions ro;
  ro.read_only = true;
  ro.clean_shutdown = true;
  auto log = storage::PartitionLog::Open(log_dir, storage::LogConfig{}, ro);
  if (!log.ok()) Die(log.status().ToString());
  if ((*log)->size_bytes() != total) Die("log holds " + std::to_string((*log)->size_bytes()));
  std::vector<std::string> log_files;
  for (const auto& seg : (*log)->Segments()) log_files.push_back(seg.log_path);
  const int64_t section_bytes = kSectionBatches * batch_size;

  // One full pass of raw read vs log read, interleaved; returns {raw seconds, log seconds}.
  std::pair<double, double> t_cpu;
  auto pass = [&](bool copy, bool cold) {
    if (cold) {
      DropCache(raw_path);
      for (const auto& f : log_files) DropCache(f);
    }
    RawFile raw;
    raw.fd = ::open(raw_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (raw.fd < 0) Die("open " + raw_path);
    LogReader lr{log->get(), copy, (*log)->log_start_offset()};
    int64_t raw_got = 0, log_got = 0;
    auto t = Interleave(
        sections, [&](int64_t) { raw_got += raw.Read(section_bytes); },
        [&](int64_t) { log_got += lr.Read(section_bytes); });
    t_cpu = {g_cpu_a, g_cpu_b};
    ::close(raw.fd);
    if (raw_got != total || log_got != total)
      Die("read " + std::to_string(raw_got) + " / " + std::to_string(log_got) + " bytes");
    return t;
  };
  std::pair<double, double> best_cpu;
  auto best_of = [&](bool copy, bool cold) {
    std::pair<double, double> b{1e30, 1e30};
    for (int r = 0; r < rounds; ++r) {
      auto t = pass(copy, cold);
      if (t.first + t.second < b.first + b.second) {
        b = t;
        best_cpu = t_cpu;
      }
    }
    return b;
  };
  auto hot = best_of(false, false);
  auto hot_cpu = best_cpu;
  auto copy = best_of(true, false);
  auto copy_cpu = best_cpu;
  auto cold = best_of(false, true);
  std::printf("\nread by offset, %lld-byte requests, interleaved with raw read(2) (best of %d)\n",
              static_cast<long long>(kReadChunk), rounds);
  std::printf("  page cache: raw read(2)            %8.0f MB/s\n", mb / hot.first);
  std::printf("  page cache: Read + pread slices    %8.0f MB/s   ratio %.2fx\n", mb / hot.second,
              hot.first / hot.second);
  std::printf("    CPU per GB: raw %.2f s, log %.2f s (ratio %.2fx)\n", hot_cpu.first * 1e3 / mb,
              hot_cpu.second * 1e3 / mb, hot_cpu.first / hot_cpu.second);
  std::printf("  page cache: raw read(2)            %8.0f MB/s\n", mb / copy.first);
  std::printf("  page cache: Read + ReadAll (copy)  %8.0f MB/s   ratio %.2fx\n", mb / copy.second,
              copy.first / copy.second);
  std::printf("    CPU per GB: raw %.2f s, log %.2f s (ratio %.2fx)\n", copy_cpu.first * 1e3 / mb,
              copy_cpu.second * 1e3 / mb, copy_cpu.first / copy_cpu.second);
  std::printf("  after FADV_DONTNEED: raw read(2)   %8.0f MB/s\n", mb / cold.first);
  std::printf("  after FADV_DONTNEED: Read + pread  %8.0f MB/s   ratio %.2fx\n", mb / cold.second,
              cold.first / cold.second);
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
