#include "storage/verify.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cinttypes>
#include <map>
#include <optional>
#include <set>
#include <sstream>

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

// Whether repair has quarantined bytes of the segment `log_path` (files named
// <segment>.log.<position>.quarantined beside it): the offsets those bytes held are then missing
// from the log on purpose.
bool HasQuarantine(const std::string& log_path) {
  auto names = ListDir(DirName(log_path));
  if (!names.ok()) return false;
  const std::string prefix = BaseName(log_path) + ".";
  for (const auto& n : *names)
    if (n.rfind(prefix, 0) == 0 && EndsWith(n, ".quarantined")) return true;
  return false;
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

// Index fallout of one damaged batch can be an entry per later batch: the first problem of an
// index file is kept whole, and any more are folded into it as one count.
void AddCollapsed(const std::vector<Problem>& found, size_t entries, VerifyReport* report) {
  if (found.empty()) return;
  Problem p = found.front();
  if (found.size() > 1)
    p.detail = std::to_string(found.size()) + " of " + std::to_string(entries) +
               " entries do not match the log; the first: " + p.detail;
  report->problems.push_back(std::move(p));
}

void CheckOffsetIndexEntries(const std::string& path, const IndexCheckInput& in,
                             VerifyReport* report, size_t* entries);
void CheckTimeIndexEntries(const std::string& path, const IndexCheckInput& in,
                           VerifyReport* report, size_t* entries);

void CheckOffsetIndex(const std::string& path, const IndexCheckInput& in, VerifyReport* report) {
  VerifyReport local;
  size_t entries = 0;
  CheckOffsetIndexEntries(path, in, &local, &entries);
  report->files += local.files;
  AddCollapsed(local.problems, entries, report);
}

void CheckTimeIndex(const std::string& path, const IndexCheckInput& in, VerifyReport* report) {
  VerifyReport local;
  size_t entries = 0;
  CheckTimeIndexEntries(path, in, &local, &entries);
  report->files += local.files;
  AddCollapsed(local.problems, entries, report);
}

void CheckOffsetIndexEntries(const std::string& path, const IndexCheckInput& in,
                             VerifyReport* report, size_t* entries) {
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
  *entries = n;
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

void CheckTimeIndexEntries(const std::string& path, const IndexCheckInput& in,
                           VerifyReport* report, size_t* entries) {
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
  *entries = n;
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

// Reads Kafka's leader-epoch-checkpoint text: "0", a count, then "epoch startOffset" lines.
Status ParseEpochCheckpoint(const std::string& text, std::vector<EpochRun>* out) {
  std::istringstream in(text);
  int version = -1;
  int64_t count = -1;
  if (!(in >> version) || version != 0 || !(in >> count) || count < 0)
    return Status::Corruption("bad header");
  for (int64_t i = 0; i < count; ++i) {
    int64_t epoch, offset;
    if (!(in >> epoch >> offset) || epoch < 0 || epoch > INT32_MAX || offset < 0)
      return Status::Corruption("bad entry " + std::to_string(i));
    out->push_back({offset, static_cast<int32_t>(epoch), 0});
  }
  return Status::OK();
}

// The partition's entry in Kafka's recovery-point-offset-checkpoint beside it ("0", a count,
// then "topic partition offset" lines), or -1 when there is none (nothing known flushed).
int64_t RecoveryPoint(const std::string& partition_dir) {
  const std::string name = BaseName(partition_dir);
  const size_t dash = name.rfind('-');
  if (dash == std::string::npos) return -1;
  auto text = ReadFile(JoinPath(DirName(partition_dir), "recovery-point-offset-checkpoint"));
  if (!text.ok()) return -1;
  std::istringstream in(*text);
  int version = -1;
  int64_t count = -1;
  if (!(in >> version >> count) || version != 0) return -1;
  std::string topic, partition;
  int64_t offset;
  for (int64_t i = 0; i < count && (in >> topic >> partition >> offset); ++i)
    if (topic == name.substr(0, dash) && partition == name.substr(dash + 1)) return offset;
  return -1;
}

// What no CRC covers: partitionLeaderEpoch never decreases along the log (a batch without one,
// -1, is passed over), and each batch's epoch is the one the leader-epoch-checkpoint gives for
// its offset. The checkpoint may lag the log by the newest epochs (it is written by the next
// flush), so a batch newer than the checkpoint's last entry is fine, unless it lies below the
// recovery point (the flush that moved the recovery point past it wrote its epoch). One problem
// per kind.
void CheckEpochs(const std::string& dir, const std::vector<std::pair<std::string, EpochRun>>& runs,
                 VerifyReport* report) {
  const int64_t recovery_point = RecoveryPoint(dir);
  int32_t prev = -1;
  for (const auto& [log, r] : runs) {
    if (r.epoch < -1 || (r.epoch < prev && r.epoch != -1) || (r.epoch == -1 && prev >= 0)) {
      Add(report, log, r.position, ProblemKind::kEpoch,
          "batch at offset " + std::to_string(r.first_offset) + " has partitionLeaderEpoch " +
              std::to_string(r.epoch) + ", below the " + std::to_string(prev) +
              " of the batch before it");
      break;
    }
    prev = std::max(prev, r.epoch);
  }
  const std::string cp_path = JoinPath(dir, format::kLeaderEpochCheckpointFile);
  auto text = ReadFile(cp_path);
  if (!text.ok() || text->empty()) return;  // none: Kafka and silt rebuild it from the batches
  std::vector<EpochRun> cp;
  Status s = ParseEpochCheckpoint(*text, &cp);
  if (!s.ok()) {
    Add(report, cp_path, 0, ProblemKind::kEpoch, "unreadable: " + s.message());
    return;
  }
  if (cp.empty()) return;
  for (const auto& [log, r] : runs) {
    if (r.epoch < 0) continue;
    // The checkpoint entry in force at this batch's offset.
    auto it = std::upper_bound(cp.begin(), cp.end(), r.first_offset,
                               [](int64_t o, const EpochRun& e) { return o < e.first_offset; });
    bool agrees;
    std::string expected;
    if (it == cp.begin()) {
      agrees = r.epoch < cp.front().epoch;  // before every checkpointed epoch: an older one
      expected = "an epoch below " + std::to_string(cp.front().epoch);
    } else {
      const EpochRun& in_force = *std::prev(it);
      agrees = r.epoch == in_force.epoch ||
               (r.epoch > in_force.epoch && it == cp.end() && r.first_offset >= recovery_point);
      expected = "epoch " + std::to_string(in_force.epoch) + " (from offset " +
                 std::to_string(in_force.first_offset) + ")";
    }
    if (!agrees) {
      Add(report, log, r.position, ProblemKind::kEpoch,
          "batch at offset " + std::to_string(r.first_offset) + " has partitionLeaderEpoch " +
              std::to_string(r.epoch) + " but " + BaseName(cp_path) + " gives " + expected);
      return;
    }
  }
}

Status VerifyPartition(const std::string& dir, ScanOptions options, VerifyReport* report) {
  if (CompactedByName(dir)) options.compacted = true;
  SILT_ASSIGN_OR_RETURN(std::vector<std::string> logs, SegmentLogs(dir));
  int64_t prev_last = -1;
  std::string prev_log;
  std::vector<std::pair<std::string, EpochRun>> runs;
  for (const auto& log : logs) {
    size_t before = report->segments.size();
    SILT_TRY(ScanLogFile(log, options, nullptr, report));
    if (report->segments.size() == before) continue;
    const SegmentReport& seg = report->segments.back();
    for (const EpochRun& r : seg.epochs)
      if (runs.empty() || runs.back().second.epoch != r.epoch) runs.emplace_back(log, r);
    if (prev_last >= 0 && seg.first_offset >= 0 && seg.first_offset <= prev_last)
      Add(report, log, 0, ProblemKind::kOffsets,
          "first offset " + std::to_string(seg.first_offset) +
              " is not after the previous segment's last offset " + std::to_string(prev_last));
    else if (prev_last >= 0 && seg.first_offset > prev_last + 1 && !options.compacted &&
             !HasQuarantine(prev_log) && !HasQuarantine(log))
      Add(report, log, 0, ProblemKind::kOffsets,
          "offsets jump from " + std::to_string(prev_last) + " to " +
              std::to_string(seg.first_offset) + " between segments");
    if (seg.last_offset >= 0) {
      prev_last = seg.last_offset;
      prev_log = log;
    }
  }
  CheckEpochs(dir, runs, report);
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
    case ProblemKind::kEpoch: return "epoch";
  }
  return "unknown";
}

namespace {

enum class Verdict { kGood, kTorn, kBad };

// Examines the entry at `pos`: kGood fills `info` (bytes valid until the next Window call);
// kTorn and kBad set `why`. kTorn means the entry claims to run past the end of the file.
Status Examine(ChunkReader* reader, int64_t pos, int64_t size, const ScanOptions& options,
               const format::ValidateLimits& limits, EntryInfo* info, Verdict* verdict,
               std::string* why) {
  *verdict = Verdict::kBad;
  std::string_view prefix;
  bool eof;
  if (size - pos < kMagicPosition + 1) {
    *verdict = Verdict::kTorn;
    *why = "file ends " + std::to_string(size - pos) + " bytes into an entry header";
    return Status::OK();
  }
  SILT_TRY(reader->Window(pos, kMagicPosition + 1, &prefix, &eof));
  int64_t entry_offset = static_cast<int64_t>(DecodeBE64(prefix.data()));
  int32_t length = static_cast<int32_t>(DecodeBE32(prefix.data() + 8));
  int8_t magic = static_cast<int8_t>(prefix[kMagicPosition]);
  int64_t entry_size = kLogOverhead + static_cast<int64_t>(length);
  if (magic < 0 || magic > 2) {
    *why = "unknown magic " + std::to_string(magic);
    return Status::OK();
  }
  int64_t min_len = magic == 2 ? format::kBatchHeaderSize - kLogOverhead
                               : (magic == 0 ? format::kLegacyV0MinSize : format::kLegacyV1MinSize);
  if (length < min_len || entry_size > options.max_entry_size) {
    *why = "entry length " + std::to_string(length) + " is out of bounds";
    return Status::OK();
  }
  if (pos + entry_size > size) {
    *verdict = Verdict::kTorn;
    *why = "entry of " + std::to_string(entry_size) + " bytes cut short after " +
           std::to_string(size - pos) + " bytes";
    return Status::OK();
  }
  std::string_view e;
  SILT_TRY(reader->Window(pos, entry_size, &e, &eof));
  *info = EntryInfo{};
  info->position = pos;
  info->size = entry_size;
  info->magic = magic;
  info->bytes = e;
  Status s;
  if (magic == 2) {
    format::FramingLimits fl;
    fl.max_batch_size = options.max_entry_size;
    fl.verify_crc = false;
    s = format::CheckBatchFraming(e, fl, &info->header);
    info->crc = info->header.crc;
    const uint32_t computed = format::ComputeBatchCrc(e);
    info->crc_valid = computed == info->crc;
    info->first_offset = info->header.base_offset;
    info->last_offset = info->header.last().value();
    if (s.ok() && !info->crc_valid) {
      char buf[80];
      std::snprintf(buf, sizeof buf, "crc mismatch: stored 0x%08x, computed 0x%08x", info->crc,
                    computed);
      s = Status::Corruption(buf);
    }
    if (s.ok() && options.check_records) {
      auto view = format::RecordBatchView::Parse(e, limits);
      s = view.ok() ? view->Validate(limits) : view.status();
    }
  } else {
    info->header.base_offset = entry_offset;
    info->header.magic = magic;
    info->first_offset = entry_offset;
    info->last_offset = entry_offset;
    s = CheckLegacy(e, info);
  }
  if (!s.ok()) {
    *why = std::string(magic == 2 ? "batch" : "message") + " at offset " +
           std::to_string(entry_offset) + ": " + s.message();
    return Status::OK();
  }
  *verdict = Verdict::kGood;
  return Status::OK();
}

}  // namespace

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
  bool after_damage = false;  // the entry before this one was damaged: a gap is expected
  int quarantined = -1;       // HasQuarantine(path), looked up when first needed
  while (pos < size && !stop) {
    EntryInfo info;
    Verdict verdict;
    std::string why;
    SILT_TRY(Examine(&reader, pos, size, options, limits, &info, &verdict, &why));
    if (verdict != Verdict::kGood) {
      if (verdict == Verdict::kBad && on_entry && info.size > 0) on_entry(info);
      seg.bad = true;
      if (seg.damaged.empty()) seg.valid_bytes = pos;
      // Resynchronise: the next position whose entry validates whole (framing, CRC, records)
      // and whose offsets come after the last good entry. Everything in between is damage.
      int64_t next = -1;
      EntryInfo found;
      if (options.resync) {
        for (int64_t p = pos + 1; p + kMagicPosition + 1 <= size; ++p) {
          std::string_view prefix;
          bool eof;
          SILT_TRY(reader.Window(p, kMagicPosition + 1, &prefix, &eof));
          const int8_t m = static_cast<int8_t>(prefix[kMagicPosition]);
          if (m < 0 || m > 2) continue;
          const int64_t len = static_cast<int32_t>(DecodeBE32(prefix.data() + 8));
          if (len <= 0 || p + kLogOverhead + len > size) continue;
          const int64_t first = static_cast<int64_t>(DecodeBE64(prefix.data()));
          if (first <= prev_last || (seg.name_offset >= 0 && first < seg.name_offset)) continue;
          // A segment's offsets stay within an int32 of its base (the indexes store them so):
          // random bytes almost never pass this, so the costly whole-entry check below is rare.
          const int64_t base = seg.name_offset >= 0 ? seg.name_offset : std::max<int64_t>(0, prev_last);
          if (first - base > INT32_MAX) continue;
          Verdict v;
          std::string w;
          EntryInfo candidate;
          SILT_TRY(Examine(&reader, p, size, options, limits, &candidate, &v, &w));
          if (v == Verdict::kGood) {
            next = p;
            found = candidate;
            break;
          }
        }
      }
      const int64_t end = next >= 0 ? next : size;
      seg.damaged.push_back({pos, end});
      if (verdict == Verdict::kTorn && next < 0) {
        Add(report, path, pos, ProblemKind::kTornTail, why);
        break;
      }
      std::string detail = why + "; " + std::to_string(end - pos) + " bytes damaged";
      if (next >= 0)
        detail += ", the next valid batch is at position " + std::to_string(next) +
                  " (offset " + std::to_string(found.first_offset) + ")";
      else if (options.resync)
        detail += ", no valid batch after them";
      Add(report, path, pos, ProblemKind::kCorruption, std::move(detail));
      if (next < 0) break;
      pos = next;
      after_damage = true;
      continue;
    }
    const int8_t magic = info.magic;
    if (prev_last >= 0 && info.first_offset <= prev_last) {
      Add(report, path, pos, ProblemKind::kOffsets,
          "offset " + std::to_string(info.first_offset) + " does not follow " +
              std::to_string(prev_last));
    } else if (prev_last >= 0 && info.first_offset != prev_last + 1 && !options.compacted &&
               magic == 2 && !after_damage) {
      if (quarantined < 0) quarantined = HasQuarantine(path) ? 1 : 0;
      if (quarantined == 0)
        Add(report, path, pos, ProblemKind::kOffsets,
            "offsets jump from " + std::to_string(prev_last) + " to " +
                std::to_string(info.first_offset));
    }
    if (seg.entries == 0 && seg.name_offset >= 0 && seg.damaged.empty() &&
        (info.first_offset < seg.name_offset ||
         (info.first_offset != seg.name_offset && !options.compacted && magic == 2 &&
          !HasQuarantine(path)))) {
      Add(report, path, pos, ProblemKind::kOffsets,
          "first offset " + std::to_string(info.first_offset) + " does not match the file name");
    }
    after_damage = false;
    if (seg.entries == 0) seg.first_offset = info.first_offset;
    seg.last_offset = info.last_offset;
    seg.entries++;
    const int64_t records = magic == 2 ? info.header.records_count : 1;
    seg.records += records;
    if (magic == 2 && (seg.epochs.empty() ||
                       seg.epochs.back().epoch != info.header.partition_leader_epoch))
      seg.epochs.push_back({info.first_offset, info.header.partition_leader_epoch, pos});
    prev_last = std::max(prev_last, info.last_offset);
    idx.batches[pos] = {info.first_offset, info.last_offset};
    if (on_entry && !on_entry(info)) stop = true;
    pos += info.size;
  }
  if (!seg.bad) seg.valid_bytes = size;
  for (const auto& r : seg.damaged) seg.damaged_bytes += r.end - r.start;
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

}  // namespace

// What the v2 header at the start of a damaged range says it held, when the header could not be
// framed (a damaged length, say): recordsCount when lastOffsetDelta agrees with it, else the
// smaller of the two that is plausible; 0 when neither is.
int64_t HeaderRecordCount(const std::string& log, const DamagedRange& d) {
  if (d.end - d.start < format::kBatchHeaderSize) return 0;
  auto f = File::Open(log, File::kReadOnly);
  std::string h;
  if (!f.ok() || !f->PRead(d.start, format::kBatchHeaderSize, &h).ok() ||
      static_cast<int64_t>(h.size()) < format::kBatchHeaderSize)
    return 0;
  const int64_t count = static_cast<int32_t>(DecodeBE32(h.data() + format::kRecordsCountOffset));
  const int64_t delta = static_cast<int32_t>(DecodeBE32(h.data() + format::kLastOffsetDeltaOffset)) + int64_t{1};
  const int64_t most = d.end - d.start;  // a record takes at least a byte
  const bool count_ok = count > 0 && count <= most, delta_ok = delta > 0 && delta <= most;
  if (count_ok && count == delta) return count;
  if (count_ok && delta_ok) return std::min(count, delta);
  return count_ok ? count : delta_ok ? delta : 0;
}

constexpr int64_t kCopyChunk = 1 << 20;

Result<RepairResult> RepairPartition(const std::string& partition_dir, const ScanOptions& options,
                                     bool dry_run) {
  RepairLock lock;
  if (!dry_run) SILT_TRY(lock.Acquire(DirName(partition_dir)));
  ScanOptions o = options;
  if (CompactedByName(partition_dir)) o.compacted = true;
  o.check_indexes = false;
  o.resync = true;
  SILT_ASSIGN_OR_RETURN(std::vector<std::string> logs, SegmentLogs(partition_dir));
  if (!dry_run)
    for (const auto& log : logs)  // left by a repair that crashed before its rename
      if (PathExists(log + ".repairing")) SILT_TRY(RemoveFile(log + ".repairing"));
  RepairResult result;
  std::vector<SegmentReport> segs(logs.size());
  // Per segment: the header's record count of each entry that starts a damaged range (when the
  // header could be read), to count what a range at the end of a segment held.
  std::vector<std::map<int64_t, int64_t>> damaged_counts(logs.size());
  // Per segment: the offsets of each good batch, by position, to bound each damaged range.
  std::vector<std::map<int64_t, std::pair<int64_t, int64_t>>> goods(logs.size());
  for (size_t i = 0; i < logs.size(); ++i) {
    VerifyReport r;
    std::map<int64_t, EntryInfo> seen;  // without bytes
    SILT_TRY(ScanLogFile(logs[i], o, [&](const EntryInfo& e) {
      EntryInfo copy = e;
      copy.bytes = {};
      seen[e.position] = copy;
      return true;
    }, &r));
    if (r.segments.empty()) continue;
    segs[i] = r.segments.back();
    for (const auto& [pos, e] : seen) {
      const int64_t position = pos;  // a structured binding cannot be captured (clang 14)
      const bool damaged = std::any_of(segs[i].damaged.begin(), segs[i].damaged.end(),
                                       [&](const DamagedRange& d) { return d.start == position; });
      if (!damaged)
        goods[i][position] = {e.first_offset, e.last_offset};
      else if (e.magic == 2 && e.header.records_count >= 0 &&
               e.header.records_count <= e.header.last_offset_delta + 1)
        damaged_counts[i][position] = e.header.records_count;
    }
  }
  // The offsets before and after each damaged range, from the good batches around it.
  int64_t prev_last = -1;
  std::vector<std::string> rewritten;
  for (size_t i = 0; i < logs.size(); ++i) {
    const SegmentReport& seg = segs[i];
    const std::string& log = logs[i];
    result.records_kept += seg.records;
    result.bytes_kept += seg.file_size - seg.damaged_bytes;
    if (seg.damaged.empty()) {
      if (seg.last_offset >= 0) prev_last = seg.last_offset;
      continue;
    }
    const auto& good = goods[i];
    int64_t before = prev_last >= 0 ? prev_last : seg.name_offset - 1;
    std::vector<DamagedRange> keep;  // the byte ranges that stay, in order
    int64_t at = 0;
    std::optional<File> in;
    if (!dry_run) {
      SILT_ASSIGN_OR_RETURN(File f, File::Open(log, File::kReadOnly));
      in.emplace(std::move(f));
    }
    for (const DamagedRange& d : seg.damaged) {
      // Offsets of the good batches before and after the range.
      for (auto it = good.begin(); it != good.end() && it->first < d.start; ++it)
        before = std::max(before, it->second.second);
      int64_t after = -1;
      if (auto it = good.lower_bound(d.end); it != good.end()) {
        after = it->second.first;
      } else {
        for (size_t j = i + 1; j < logs.size() && after < 0; ++j) after = segs[j].first_offset;
      }
      int64_t records = 0;
      if (after >= 0 && before >= -1 && !o.compacted) {
        records = std::max<int64_t>(0, after - before - 1);
      } else if (auto it = damaged_counts[i].find(d.start); it != damaged_counts[i].end()) {
        records = it->second;
      } else {
        records = HeaderRecordCount(log, d);
      }
      result.records_quarantined += records;
      result.bytes_quarantined += d.end - d.start;
      const std::string qpath = log + "." + std::to_string(d.start) + ".quarantined";
      const std::string what = "bytes " + std::to_string(d.start) + ".." + std::to_string(d.end) +
                               " of " + log + " (" + std::to_string(d.end - d.start) + " bytes, " +
                               std::to_string(records) + " record" + (records == 1 ? "" : "s") +
                               ")";
      if (dry_run) {
        result.actions.push_back({"would quarantine " + what + " to " + qpath});
        continue;
      }
      // The damaged bytes go to their quarantine file (synced) before the segment changes: a
      // crash in between leaves a copy, never a loss.
      std::string damaged;
      SILT_TRY(in->PRead(d.start, static_cast<size_t>(d.end - d.start), &damaged));
      SILT_TRY(WriteFileAtomic(qpath, damaged));
      result.actions.push_back({"quarantined " + what + " to " + qpath});
      if (d.start > at) keep.push_back({at, d.start});
      at = d.end;
    }
    if (seg.last_offset >= 0) prev_last = std::max(prev_last, seg.last_offset);
    if (dry_run) continue;
    if (at < seg.file_size) keep.push_back({at, seg.file_size});
    if (seg.damaged.size() == 1 && seg.damaged[0].end == seg.file_size) {
      // Damage only at the end: a cut, as for a torn tail.
      SILT_ASSIGN_OR_RETURN(File f, File::Open(log, File::kReadWrite));
      SILT_TRY(f.Truncate(seg.damaged[0].start));
      SILT_TRY(f.Sync());
      result.actions.push_back({"truncated " + log + " at byte " +
                                std::to_string(seg.damaged[0].start)});
    } else {
      // The good batches, in order and at their own offsets, replace the segment in one rename
      // (a crash before it leaves the segment as it was, the quarantine copies beside it).
      const std::string tmp = log + ".repairing";
      int64_t written = 0;
      {
        SILT_ASSIGN_OR_RETURN(File out, File::Open(tmp, File::kCreate));
        SILT_TRY(out.Truncate(0));
        std::string chunk;
        for (const DamagedRange& k : keep) {
          for (int64_t p = k.start; p < k.end; p += kCopyChunk) {
            const int64_t n = std::min<int64_t>(kCopyChunk, k.end - p);
            SILT_TRY(in->PRead(p, static_cast<size_t>(n), &chunk));
            if (static_cast<int64_t>(chunk.size()) != n)
              return Status::IOError(log + " changed during repair");
            SILT_TRY(out.PWrite(written, chunk));
            written += n;
          }
        }
        SILT_TRY(out.Sync());
      }
      SILT_TRY(RenameFile(tmp, log));
      result.actions.push_back({"rewrote " + log + " with the " + std::to_string(seg.entries) +
                                " valid batches (" + std::to_string(written) + " bytes)"});
    }
    rewritten.push_back(log);
  }
  if (dry_run) return result;
  // Rebuild the indexes of every segment whose index no longer matches its log (every rewritten
  // segment's: its batches moved).
  VerifyReport check;
  ScanOptions ci = options;
  ci.check_records = false;
  SILT_TRY(VerifyPartition(partition_dir, ci, &check));
  std::set<std::string> stale;
  for (const auto& p : check.problems)
    if (p.kind == ProblemKind::kIndex || p.kind == ProblemKind::kTimeIndex) stale.insert(p.file);
  for (const auto& log : rewritten)
    for (const char* suffix : {format::kIndexSuffix, format::kTimeIndexSuffix})
      if (PathExists(SiblingPath(log, suffix))) stale.insert(SiblingPath(log, suffix));
  for (const auto& p : stale) {
    SILT_TRY(RemoveFile(p));
    result.actions.push_back({"removed stale index " + p});
  }
  if (!result.actions.empty()) {
    // Opening the partition writable rebuilds missing indexes (PartitionLog recovery).
    PartitionLog::OpenOptions oo;
    oo.create = false;
    LogConfig config;
    if (o.compacted) config.cleanup_policy = "compact";
    SILT_ASSIGN_OR_RETURN(auto plog, PartitionLog::Open(partition_dir, config, oo));
    SILT_TRY(plog->Close());
    result.actions.push_back({"rebuilt the indexes of " + partition_dir});
  }
  SILT_TRY(SyncDir(partition_dir));
  return result;
}

}  // namespace silt::storage
