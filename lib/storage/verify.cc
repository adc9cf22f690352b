#include "storage/verify.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cinttypes>
#include <map>
#include <set>

#include "base/coding.h"
#include "base/file.h"
#include "format/layout.h"
#include "format/producer_snapshot.h"
#include "format/record_batch.h"
#include "storage/partition_log.h"
#include "storage/segment.h"

namespace silt::storage {
namespace {

using format::kLogOverhead;

// Both formats put the magic byte at the same place: offset:int64, size:int32, then either
// partitionLeaderEpoch:int32 (v2) or crc:uint32 (v0/v1), then magic.
constexpr int kMagicPosition = 8 + 4 + 4;
static_assert(kMagicPosition == format::kMagicOffset);
static_assert(kMagicPosition == format::kLegacyLogOverhead + format::kLegacyMagicOffset);

std::string Pos(int64_t p) { return std::to_string(p); }

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The base offset spelled by a segment file name ("00000000000000000042.log" → 42), or -1.
int64_t NameOffset(const std::string& path) {
  std::string base = BaseName(path);
  size_t dot = base.find('.');
  int64_t v = -1;
  if (dot == std::string::npos || !ParseSegmentFileName(base, std::string_view(base).substr(dot), &v))
    return -1;
  return v;
}

std::string SiblingPath(const std::string& log_path, const char* suffix) {
  return log_path.substr(0, log_path.size() - 4) + suffix;
}

// Reads a file sequentially in large chunks, handing out views of whole entries.
class ChunkReader {
 public:
  explicit ChunkReader(const File* f, int64_t size) : f_(f), size_(size) {}
  // Makes [pos, pos+n) available (n may exceed the chunk size); false on EOF before pos+n.
  Status Window(int64_t pos, int64_t n, std::string_view* out, bool* eof) {
    *eof = false;
    if (pos + n > size_) {
      *eof = true;
      return Status::OK();
    }
    if (pos < buf_pos_ || pos + n > buf_pos_ + static_cast<int64_t>(buf_.size())) {
      size_t want = static_cast<size_t>(std::max<int64_t>(n, kChunk));
      want = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(want), size_ - pos));
      SILT_TRY(f_->PRead(pos, want, &buf_));
      buf_pos_ = pos;
      if (static_cast<int64_t>(buf_.size()) < n) {
        *eof = true;
        return Status::OK();
      }
    }
    *out = std::string_view(buf_).substr(static_cast<size_t>(pos - buf_pos_), static_cast<size_t>(n));
    return Status::OK();
  }

 private:
  static constexpr int64_t kChunk = 1 << 20;
  const File* f_;
  int64_t size_;
  std::string buf_;
  int64_t buf_pos_ = 0;
};

void Add(VerifyReport* r, const std::string& file, int64_t pos, ProblemKind kind, std::string d) {
  r->problems.push_back(Problem{file, pos, kind, std::move(d)});
}

// Checks a legacy (magic 0/1) message: lengths and the CRC-32 over magic..end.
Status CheckLegacy(std::string_view e, EntryInfo* info) {
  const char* p = e.data() + format::kLegacyLogOverhead;
  int64_t msg_size = static_cast<int64_t>(e.size()) - format::kLegacyLogOverhead;
  int8_t magic = static_cast<int8_t>(p[format::kLegacyMagicOffset]);
  int64_t min = magic == 0 ? format::kLegacyV0MinSize : format::kLegacyV1MinSize;
  if (msg_size < min)
    return Status::Corruption("message of " + std::to_string(msg_size) +
                              " bytes is below the minimum " + std::to_string(min));
  info->crc = DecodeBE32(p + format::kLegacyCrcOffset);
  uLong c = crc32(0L, Z_NULL, 0);
  c = crc32(c, reinterpret_cast<const Bytef*>(p + format::kLegacyMagicOffset),
            static_cast<uInt>(msg_size - format::kLegacyMagicOffset));
  info->crc_valid = static_cast<uint32_t>(c) == info->crc;
  info->legacy_attributes = static_cast<int8_t>(p[format::kLegacyAttributesOffset]);
  if (magic == 1)
    info->timestamp = static_cast<int64_t>(DecodeBE64(p + format::kLegacyV1TimestampOffset));
  if (!info->crc_valid) {
    char buf[80];
    std::snprintf(buf, sizeof buf, "crc mismatch: stored 0x%08x, computed 0x%08x", info->crc,
                  static_cast<uint32_t>(c));
    return Status::Corruption(buf);
  }
  return Status::OK();
}

struct IndexCheckInput {
  // batch start position -> (first offset, last offset)
  std::map<int64_t, std::pair<int64_t, int64_t>> batches;
  int64_t base = 0;
  int64_t log_size = 0;
  int64_t last_offset = -1;
};

void CheckOffsetIndex(const std::string& path, const IndexCheckInput& in, VerifyReport* report) {
  auto data = ReadFile(path);
  if (!data.ok()) {
    if (!data.status().IsNotFound())
      Add(report, path, 0, ProblemKind::kIndex, data.status().message());
    return;
  }
  report->files++;
  const std::string& d = *data;
  if (d.size() % format::kIndexEntrySize != 0)
    Add(report, path, static_cast<int64_t>(d.size() - d.size() % format::kIndexEntrySize),
        ProblemKind::kIndex,
        "size " + std::to_string(d.size()) + " is not a multiple of " +
            std::to_string(format::kIndexEntrySize));
  int64_t prev_off = -1, prev_pos = -1;
  size_t n = d.size() / format::kIndexEntrySize;
  for (size_t i = 0; i < n; ++i) {
    const char* e = d.data() + i * format::kIndexEntrySize;
    int32_t rel = static_cast<int32_t>(DecodeBE32(e));
    int32_t pos = static_cast<int32_t>(DecodeBE32(e + 4));
    int64_t at = static_cast<int64_t>(i) * format::kIndexEntrySize;
    // Kafka preallocates the active segment's index: zero entries after the first are unused.
    if (i > 0 && rel == 0 && pos == 0) break;
    int64_t off = in.base + rel;
    if (rel < 0 || pos < 0 || off <= prev_off || pos <= prev_pos) {
      Add(report, path, at, ProblemKind::kIndex,
          "entry " + std::to_string(i) + " (offset " + std::to_string(off) + ", position " +
              std::to_string(pos) + ") does not increase");
      return;
    }
    auto it = in.batches.find(pos);
    if (it == in.batches.end()) {
      Add(report, path, at, ProblemKind::kIndex,
          "entry " + std::to_string(i) + " points at position " + std::to_string(pos) +
              ", which is not the start of a batch");
    } else if (off < it->second.first || off > it->second.second) {
      Add(report, path, at, ProblemKind::kIndex,
          "entry " + std::to_string(i) + " names offset " + std::to_string(off) +
              " but the batch at position " + std::to_string(pos) + " holds offsets " +
              std::to_string(it->second.first) + ".." + std::to_string(it->second.second));
    }
    prev_off = off;
    prev_pos = pos;
  }
}

void CheckTimeIndex(const std::string& path, const IndexCheckInput& in, VerifyReport* report) {
  auto data = ReadFile(path);
  if (!data.ok()) {
    if (!data.status().IsNotFound())
      Add(report, path, 0, ProblemKind::kTimeIndex, data.status().message());
    return;
  }
  report->files++;
  const std::string& d = *data;
  if (d.size() % format::kTimeIndexEntrySize != 0)
    Add(report, path, static_cast<int64_t>(d.size() - d.size() % format::kTimeIndexEntrySize),
        ProblemKind::kTimeIndex,
        "size " + std::to_string(d.size()) + " is not a multiple of " +
            std::to_string(format::kTimeIndexEntrySize));
  int64_t prev_ts = INT64_MIN, prev_off = -1;
  size_t n = d.size() / format::kTimeIndexEntrySize;
  for (size_t i = 0; i < n; ++i) {
    const char* e = d.data() + i * format::kTimeIndexEntrySize;
    int64_t ts = static_cast<int64_t>(DecodeBE64(e));
    int32_t rel = static_cast<int32_t>(DecodeBE32(e + 8));
    int64_t at = static_cast<int64_t>(i) * format::kTimeIndexEntrySize;
    if (i > 0 && ts == 0 && rel == 0) break;  // preallocated, unused
    int64_t off = in.base + rel;
    if (ts < prev_ts || off < prev_off) {
      Add(report, path, at, ProblemKind::kTimeIndex,
          "entry " + std::to_string(i) + " (timestamp " + std::to_string(ts) + ", offset " +
              std::to_string(off) + ") goes backwards");
      return;
    }
    if (rel < 0 || (in.last_offset >= 0 && off > in.last_offset)) {
      Add(report, path, at, ProblemKind::kTimeIndex,
          "entry " + std::to_string(i) + " names offset " + std::to_string(off) +
              ", outside the segment's offsets " + std::to_string(in.base) + ".." +
              std::to_string(in.last_offset));
    }
    prev_ts = ts;
    prev_off = off;
  }
}

bool IsPartitionDirName(const std::string& name) {
  size_t dash = name.rfind('-');
  if (dash == std::string::npos || dash == 0 || dash + 1 == name.size()) return false;
  return std::all_of(name.begin() + static_cast<long>(dash) + 1, name.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

// Whether the partition's topic is compacted (gaps between batches are then normal): Kafka's
// internal compacted topics by name, and silt topics by the cleanup.policy in their
// silt-topics/<topic>.properties beside the partition directories.
bool CompactedByName(const std::string& partition_dir) {
  std::string name = BaseName(partition_dir);
  if (name.rfind("__consumer_offsets-", 0) == 0 || name.rfind("__cluster_metadata-", 0) == 0 ||
      name.rfind("__transaction_state-", 0) == 0)
    return true;
  size_t dash = name.rfind('-');
  if (dash == std::string::npos) return false;
  auto text = ReadFile(JoinPath(JoinPath(DirName(partition_dir), "silt-topics"),
                                name.substr(0, dash) + ".properties"));
  if (!text.ok()) return false;
  std::string_view rest = *text;
  while (!rest.empty()) {
    size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    if (line.rfind("cleanup.policy=", 0) == 0 && line.find("compact") != std::string_view::npos)
      return true;
  }
  return false;
}

Result<std::vector<std::string>> SegmentLogs(const std::string& dir) {
  SILT_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(dir));
  std::vector<std::string> logs;
  for (const auto& n : names)
    if (EndsWith(n, format::kLogSuffix) && NameOffset(n) >= 0) logs.push_back(JoinPath(dir, n));
  return logs;  // sorted by name == sorted by base offset (fixed-width digits)
}

Status VerifyPartition(const std::string& dir, ScanOptions options, VerifyReport* report) {
  if (CompactedByName(dir)) options.compacted = true;
  SILT_ASSIGN_OR_RETURN(std::vector<std::string> logs, SegmentLogs(dir));
  int64_t prev_last = -1;
  for (const auto& log : logs) {
    size_t before = report->segments.size();
    SILT_TRY(ScanLogFile(log, options, nullptr, report));
    if (report->segments.size() == before) continue;
    const SegmentReport& seg = report->segments.back();
    if (prev_last >= 0 && seg.first_offset >= 0 && seg.first_offset <= prev_last)
      Add(report, log, 0, ProblemKind::kOffsets,
          "first offset " + std::to_string(seg.first_offset) +
              " is not after the previous segment's last offset " + std::to_string(prev_last));
    else if (prev_last >= 0 && seg.first_offset > prev_last + 1 && !options.compacted)
      Add(report, log, 0, ProblemKind::kOffsets,
          "offsets jump from " + std::to_string(prev_last) + " to " +
              std::to_string(seg.first_offset) + " between segments");
    if (seg.last_offset >= 0) prev_last = seg.last_offset;
  }
  return Status::OK();
}

}  // namespace

const char* ProblemKindName(ProblemKind k) {
  switch (k) {
    case ProblemKind::kTornTail: return "torn-tail";
    case ProblemKind::kCorruption: return "corruption";
    case ProblemKind::kOffsets: return "offsets";
    case ProblemKind::kIndex: return "index";
    case ProblemKind::kTimeIndex: return "timeindex";
  }
  return "unknown";
}

Status ScanLogFile(const std::string& path, const ScanOptions& options,
                   const std::function<bool(const EntryInfo&)>& on_entry, VerifyReport* report) {
  SILT_ASSIGN_OR_RETURN(File f, File::Open(path, File::kReadOnly));
  SILT_ASSIGN_OR_RETURN(int64_t size, f.Size());
  report->files++;
  SegmentReport seg;
  seg.path = path;
  seg.name_offset = NameOffset(path);
  seg.file_size = size;
  ChunkReader reader(&f, size);
  IndexCheckInput idx;
  idx.base = seg.name_offset >= 0 ? seg.name_offset : 0;
  idx.log_size = size;

  format::ValidateLimits limits;
  limits.max_batch_size = options.max_entry_size;
  int64_t pos = 0;
  int64_t prev_last = -1;
  bool stop = false;
  while (pos < size && !stop) {
    std::string_view prefix;
    bool eof;
    SILT_TRY(reader.Window(pos, std::min<int64_t>(kMagicPosition + 1, size - pos), &prefix, &eof));
    if (size - pos < kMagicPosition + 1) {
      Add(report, path, pos, ProblemKind::kTornTail,
          "file ends " + std::to_string(size - pos) + " bytes into an entry header");
      seg.bad = true;
      break;
    }
    int64_t entry_offset = static_cast<int64_t>(DecodeBE64(prefix.data()));
    int32_t length = static_cast<int32_t>(DecodeBE32(prefix.data() + 8));
    int8_t magic = static_cast<int8_t>(prefix[kMagicPosition]);
    int64_t entry_size = kLogOverhead + static_cast<int64_t>(length);
    if (magic < 0 || magic > 2) {
      Add(report, path, pos, ProblemKind::kCorruption, "unknown magic " + std::to_string(magic));
      seg.bad = true;
      break;
    }
    int64_t min_len = magic == 2 ? format::kBatchHeaderSize - kLogOverhead
                                 : (magic == 0 ? format::kLegacyV0MinSize : format::kLegacyV1MinSize);
    if (length < min_len || entry_size > options.max_entry_size) {
      Add(report, path, pos, ProblemKind::kCorruption,
          "entry length " + std::to_string(length) + " is out of bounds");
      seg.bad = true;
      break;
    }
    if (pos + entry_size > size) {
      Add(report, path, pos, ProblemKind::kTornTail,
          "entry of " + std::to_string(entry_size) + " bytes cut short after " +
              std::to_string(size - pos) + " bytes");
      seg.bad = true;
      break;
    }
    std::string_view e;
    SILT_TRY(reader.Window(pos, entry_size, &e, &eof));
    EntryInfo info;
    info.position = pos;
    info.size = entry_size;
    info.magic = magic;
    info.bytes = e;
    Status s;
    if (magic == 2) {
      format::FramingLimits fl;
      fl.max_batch_size = options.max_entry_size;
      fl.verify_crc = false;
      s = format::CheckBatchFraming(e, fl, &info.header);
      info.crc = info.header.crc;
      info.crc_valid = format::ComputeBatchCrc(e) == info.crc;
      info.first_offset = info.header.base_offset;
      info.last_offset = info.header.last().value();
      if (s.ok() && !info.crc_valid) {
        char buf[80];
        std::snprintf(buf, sizeof buf, "crc mismatch: stored 0x%08x, computed 0x%08x", info.crc,
                      format::ComputeBatchCrc(e));
        s = Status::Corruption(buf);
      }
      if (s.ok() && options.check_records) {
        auto view = format::RecordBatchView::Parse(e, limits);
        s = view.ok() ? view->Validate(limits) : view.status();
      }
    } else {
      info.header.base_offset = entry_offset;
      info.header.magic = magic;
      info.first_offset = entry_offset;
      info.last_offset = entry_offset;
      s = CheckLegacy(e, &info);
    }
    if (!s.ok()) {
      Add(report, path, pos, ProblemKind::kCorruption,
          std::string(magic == 2 ? "batch" : "message") + " at offset " +
              std::to_string(entry_offset) + ": " + s.message());
      seg.bad = true;
      if (on_entry) on_entry(info);
      break;
    }
    if (prev_last >= 0 && info.first_offset <= prev_last) {
      Add(report, path, pos, ProblemKind::kOffsets,
          "offset " + std::to_string(info.first_offset) + " does not follow " +
              std::to_string(prev_last));
    } else if (prev_last >= 0 && info.first_offset != prev_last + 1 && !options.compacted &&
               magic == 2) {
      Add(report, path, pos, ProblemKind::kOffsets,
          "offsets jump from " + std::to_string(prev_last) + " to " +
              std::to_string(info.first_offset));
    }
    if (seg.entries == 0 && seg.name_offset >= 0 &&
        (info.first_offset < seg.name_offset ||
         (info.first_offset != seg.name_offset && !options.compacted && magic == 2))) {
      Add(report, path, pos, ProblemKind::kOffsets,
          "first offset " + std::to_string(info.first_offset) + " does not match the file name");
    }
    if (seg.entries == 0) seg.first_offset = info.first_offset;
    seg.last_offset = info.last_offset;
    seg.entries++;
    seg.records += magic == 2 ? info.header.records_count : 1;
    prev_last = std::max(prev_last, info.last_offset);
    idx.batches[pos] = {info.first_offset, info.last_offset};
    if (on_entry && !on_entry(info)) stop = true;
    pos += entry_size;
  }
  seg.valid_bytes = seg.bad ? pos : size;
  idx.last_offset = seg.last_offset;
  if (options.check_indexes && EndsWith(path, format::kLogSuffix) && seg.name_offset >= 0 && !stop) {
    CheckOffsetIndex(SiblingPath(path, format::kIndexSuffix), idx, report);
    CheckTimeIndex(SiblingPath(path, format::kTimeIndexSuffix), idx, report);
  }
  report->segments.push_back(seg);
  return Status::OK();
}

Status VerifyPath(const std::string& path, const ScanOptions& options, VerifyReport* report) {
  if (!PathExists(path)) return Status::NotFound("no such file or directory: " + path);
  if (!IsDirectory(path)) {
    if (EndsWith(path, format::kSnapshotSuffix)) {
      // A producer-state snapshot: its own CRC-32C and framing (format/producer_snapshot.h).
      SILT_ASSIGN_OR_RETURN(std::string data, ReadFile(path));
      std::vector<format::ProducerSnapshotEntry> entries;
      Status s = format::DecodeProducerSnapshot(data, &entries);
      if (!s.ok()) Add(report, path, 0, ProblemKind::kCorruption, s.message());
      return Status::OK();
    }
    if (EndsWith(path, format::kIndexSuffix) || EndsWith(path, format::kTimeIndexSuffix)) {
      std::string log = path.substr(0, path.rfind('.')) + format::kLogSuffix;
      if (!PathExists(log))
        return Status::NotFound("no " + BaseName(log) + " beside " + path + " to check it against");
      // Scan the log (without reporting its own index twice) and check just this index.
      VerifyReport scratch;
      ScanOptions o = options;
      o.check_indexes = false;
      IndexCheckInput idx;
      std::map<int64_t, std::pair<int64_t, int64_t>> batches;
      SILT_TRY(ScanLogFile(log, o, [&](const EntryInfo& e) {
        batches[e.position] = {e.first_offset, e.last_offset};
        return true;
      }, &scratch));
      idx.batches = std::move(batches);
      idx.base = std::max<int64_t>(0, NameOffset(log));
      idx.last_offset = scratch.segments.empty() ? -1 : scratch.segments.back().last_offset;
      if (EndsWith(path, format::kIndexSuffix)) CheckOffsetIndex(path, idx, report);
      else CheckTimeIndex(path, idx, report);
      return Status::OK();
    }
    ScanOptions o = options;
    if (CompactedByName(DirName(path))) o.compacted = true;
    return ScanLogFile(path, o, nullptr, report);
  }
  SILT_ASSIGN_OR_RETURN(std::vector<std::string> logs, SegmentLogs(path));
  if (!logs.empty() || IsPartitionDirName(BaseName(path))) return VerifyPartition(path, options, report);
  SILT_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(path));
  for (const auto& n : names) {
    std::string p = JoinPath(path, n);
    if (IsDirectory(p) && IsPartitionDirName(n)) SILT_TRY(VerifyPartition(p, options, report));
  }
  return Status::OK();
}

namespace {

// Holds the data directory's lock for the length of a repair (see DataDir: <dir>/.lock).
class RepairLock {
 public:
  ~RepairLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  Status Acquire(const std::string& data_dir) {
    std::string path = JoinPath(data_dir, ".lock");
    if (!PathExists(path)) return Status::OK();  // not a silt data dir (e.g. a Kafka copy)
    fd_ = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd_ < 0) return Status::FromErrno("open " + path, errno);
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      std::string holder;
      auto content = ReadFile(path);
      if (content.ok()) holder = content->substr(0, content->find('\n'));
      return Status::Busy("data directory " + data_dir + " is in use by pid " +
                          (holder.empty() ? std::string("?") : holder) +
                          "; stop it before repairing");
    }
    return Status::OK();
  }

 private:
  int fd_ = -1;
};

Status MoveToQuarantine(const std::string& from, std::vector<RepairAction>* actions) {
  std::string to = from + ".quarantined";
  SILT_TRY(RenameFile(from, to));
  actions->push_back({"moved " + from + " to " + to});
  return Status::OK();
}

}  // namespace

Result<std::vector<RepairAction>> RepairPartition(const std::string& partition_dir,
                                                  const ScanOptions& options) {
  RepairLock lock;
  SILT_TRY(lock.Acquire(DirName(partition_dir)));
  ScanOptions o = options;
  if (CompactedByName(partition_dir)) o.compacted = true;
  o.check_indexes = false;
  SILT_ASSIGN_OR_RETURN(std::vector<std::string> logs, SegmentLogs(partition_dir));
  std::vector<RepairAction> actions;
  size_t bad = logs.size();
  int64_t cut_at = 0;
  for (size_t i = 0; i < logs.size(); ++i) {
    VerifyReport r;
    SILT_TRY(ScanLogFile(logs[i], o, nullptr, &r));
    if (!r.segments.empty() && r.segments.back().bad) {
      bad = i;
      cut_at = r.segments.back().valid_bytes;
      break;
    }
  }
  if (bad < logs.size()) {
    const std::string& log = logs[bad];
    // Cut bytes first go to the quarantine file (synced), then the segment is truncated: a crash
    // in between leaves a copy, never a loss.
    SILT_ASSIGN_OR_RETURN(File f, File::Open(log, File::kReadWrite));
    SILT_ASSIGN_OR_RETURN(int64_t size, f.Size());
    std::string tail;
    SILT_TRY(f.PRead(cut_at, static_cast<size_t>(size - cut_at), &tail));
    std::string qpath = log + "." + std::to_string(cut_at) + ".quarantined";
    SILT_TRY(WriteFileAtomic(qpath, tail));
    SILT_TRY(f.Truncate(cut_at));
    SILT_TRY(f.Sync());
    actions.push_back({"truncated " + log + " at byte " + std::to_string(cut_at) + "; " +
                       std::to_string(size - cut_at) + " bytes moved to " + qpath});
    for (size_t i = bad + 1; i < logs.size(); ++i) {
      SILT_TRY(MoveToQuarantine(logs[i], &actions));
      for (const char* suffix : {format::kIndexSuffix, format::kTimeIndexSuffix}) {
        std::string p = SiblingPath(logs[i], suffix);
        if (PathExists(p)) SILT_TRY(MoveToQuarantine(p, &actions));
      }
    }
  }
  // Rebuild the indexes of every segment whose index no longer matches its log.
  VerifyReport check;
  ScanOptions ci = options;
  ci.check_records = false;
  SILT_TRY(VerifyPartition(partition_dir, ci, &check));
  std::set<std::string> stale;
  for (const auto& p : check.problems)
    if (p.kind == ProblemKind::kIndex || p.kind == ProblemKind::kTimeIndex) stale.insert(p.file);
  for (const auto& p : stale) {
    SILT_TRY(RemoveFile(p));
    actions.push_back({"removed stale index " + p});
  }
  if (!actions.empty()) {
    // Opening the partition writable rebuilds missing indexes (PartitionLog recovery).
    PartitionLog::OpenOptions oo;
    oo.create = false;
    LogConfig config;
    if (o.compacted) config.cleanup_policy = "compact";
    SILT_ASSIGN_OR_RETURN(auto plog, PartitionLog::Open(partition_dir, config, oo));
    SILT_TRY(plog->Close());
    actions.push_back({"rebuilt the indexes of " + partition_dir});
  }
  SILT_TRY(SyncDir(partition_dir));
  return actions;
}

}  // namespace silt::storage
