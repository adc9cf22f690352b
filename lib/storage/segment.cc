// Segment: one .log with its sparse indexes (see segment.h).
#include "storage/segment.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <mutex>

#include "base/clock.h"
#include "base/coding.h"
#include "format/layout.h"
#include "storage/partition_log.h"

namespace silt::storage {
namespace {

constexpr int64_t kScanChunk = 1 << 20;

std::string PositionError(const std::string& path, int64_t pos, std::string_view what) {
  return path + ": position " + std::to_string(pos) + ": " + std::string(what);
}

}  // namespace

std::string SegmentFileName(Offset base, const char* suffix) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%020lld", static_cast<long long>(base.value()));
  return std::string(buf) + suffix;
}

bool ParseSegmentFileName(std::string_view name, std::string_view suffix, int64_t* base) {
  if (name.size() != static_cast<size_t>(format::kSegmentNameDigits) + suffix.size() ||
      name.substr(format::kSegmentNameDigits) != suffix)
    return false;
  int64_t v = 0;
  for (int i = 0; i < format::kSegmentNameDigits; ++i) {
    char c = name[static_cast<size_t>(i)];
    if (c < '0' || c > '9' || v > (INT64_MAX - (c - '0')) / 10) return false;
    v = v * 10 + (c - '0');
  }
  *base = v;
  return true;
}

Segment::Segment(std::string dir, Offset base, bool read_only)
    : dir_(std::move(dir)),
      base_(base),
      read_only_(read_only),
      log_path_(JoinPath(dir_, SegmentFileName(base, format::kLogSuffix))),
      index_(JoinPath(dir_, SegmentFileName(base, format::kIndexSuffix)), base),
      time_index_(JoinPath(dir_, SegmentFileName(base, format::kTimeIndexSuffix)), base),
      next_offset_(base),
      offset_of_max_timestamp_(base),
      created_ms_(NowMs().value()) {}

Segment::~Segment() = default;

Result<std::shared_ptr<Segment>> Segment::Create(const std::string& dir, Offset base) {
  std::shared_ptr<Segment> s(new Segment(dir, base, /*read_only=*/false));
  SILT_ASSIGN_OR_RETURN(File f, File::Open(s->log_path_, File::kCreate));
  // A new file holds nothing to cut or to fsync (its name is the directory's business, synced
  // by the log's next flush); one left over from an earlier segment at this base is emptied.
  SILT_ASSIGN_OR_RETURN(int64_t size, f.Size());
  s->log_unsynced_ = size > 0;
  if (size > 0) SILT_TRY(f.Truncate(0));
  s->log_ = std::make_shared<File>(std::move(f));
  // The index files are created by their first entry (or the first flush of data); a leftover
  // one is cut to nothing now.
  s->index_.EnableWrites(/*absent=*/!PathExists(s->index_.path()));
  s->time_index_.EnableWrites(/*absent=*/!PathExists(s->time_index_.path()));
  SILT_TRY(s->index_.Clear());
  SILT_TRY(s->time_index_.Clear());
  return s;
}

Result<std::shared_ptr<Segment>> Segment::Open(const std::string& dir, Offset base,
                                               bool read_only) {
  std::shared_ptr<Segment> s(new Segment(dir, base, read_only));
  SILT_ASSIGN_OR_RETURN(File f,
                        File::Open(s->log_path_, read_only ? File::kReadOnly : File::kReadWrite));
  s->log_ = std::make_shared<File>(std::move(f));
  return s;
}

void Segment::EnableIndexWrites() {
  if (read_only_) return;
  index_.EnableWrites();
  time_index_.EnableWrites();
}

Offset Segment::next_offset() const {
  std::shared_lock l(mu_);
  return next_offset_;
}

int64_t Segment::size() const {
  std::shared_lock l(mu_);
  return size_;
}

int64_t Segment::max_timestamp() const {
  std::shared_lock l(mu_);
  return max_timestamp_;
}

int64_t Segment::LargestTimestampOrMtime() const {
  int64_t ts = max_timestamp();
  if (ts >= 0) return ts;
  struct stat st;
  if (::fstat(log_->fd(), &st) != 0) return NowMs().value();
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
}

std::vector<OffsetIndex::Entry> Segment::IndexEntries() const {
  std::shared_lock l(mu_);
  return index_.entries();
}

std::vector<TimeIndex::Entry> Segment::TimeIndexEntries() const {
  std::shared_lock l(mu_);
  return time_index_.entries();
}

Result<BatchInfo> Segment::HeaderAt(int64_t position, int64_t limit) const {
  if (position + format::kBatchHeaderSize > limit)
    return Status::Corruption(PositionError(log_path_, position, "batch header past the end"));
  std::string h;
  SILT_TRY(log_->PRead(position, format::kBatchHeaderSize, &h));
  if (h.size() < static_cast<size_t>(format::kBatchHeaderSize))
    return Status::Corruption(PositionError(log_path_, position, "file ends inside a header"));
  format::BatchHeader hd = format::DecodeBatchHeader(h);
  if (hd.magic != format::kMagicV2 ||
      hd.batch_length < format::kBatchHeaderSize - format::kLogOverhead ||
      position + hd.size() > limit || hd.last_offset_delta < 0)
    return Status::Corruption(PositionError(log_path_, position, "not a batch header"));
  BatchInfo b;
  b.position = position;
  b.size = hd.size();
  b.base = hd.base();
  b.last = hd.last();
  b.max_timestamp = hd.max_timestamp;
  b.partition_leader_epoch = hd.partition_leader_epoch;
  b.attributes = hd.attributes;
  b.base_timestamp = hd.base_timestamp;
  return b;
}

// ---- loading and recovery ---------------------------------------------------------------

Status Segment::Load(LoadMode mode, bool is_last, int32_t interval, LoadReport* report,
                     Offset cut_from) {
  std::unique_lock l(mu_);
  SILT_ASSIGN_OR_RETURN(int64_t file_size, log_->Size());
  next_offset_ = base_;
  max_timestamp_ = -1;
  offset_of_max_timestamp_ = base_;
  bytes_since_index_entry_ = 0;
  first_batch_timestamp_ = -1;
  size_ = 0;

  if (mode == LoadMode::kTrusted) {
    bool oi_ok = false, ti_ok = false;
    SILT_TRY(index_.Load(file_size, &oi_ok));
    SILT_TRY(time_index_.Load(INT64_MAX, &ti_ok));
    bool usable = (oi_ok && ti_ok) || file_size == 0;
    int64_t start = 0;
    bool skip_first = false;
    if (usable && !index_.entries().empty()) {
      const OffsetIndex::Entry e = index_.entries().back();
      auto h = HeaderAt(e.position, file_size);
      if (h.ok() && h->last.value() == e.offset) {
        start = e.position;
        skip_first = true;
        next_offset_ = h->base;
      } else {
        usable = false;
      }
    }
    if (usable) {
      if (const TimeIndex::Entry* t = time_index_.last()) {
        max_timestamp_ = t->timestamp;
        offset_of_max_timestamp_ = Offset(t->offset);
      }
      EnableIndexWrites();
      SILT_TRY(ScanFrom(start, skip_first, /*verify=*/true, is_last, interval, file_size,
                        cut_from, report));
      SILT_TRY(time_index_.TruncateFrom(next_offset_));
      if (max_timestamp_ >= 0 && offset_of_max_timestamp_ >= next_offset_) {
        // The time index pointed past the data: recompute from what is there.
        usable = false;
      } else {
        if (size_ > 0) {
          auto first = HeaderAt(0, size_);
          if (first.ok()) first_batch_timestamp_ = first->max_timestamp;
        }
        return Status::OK();
      }
    }
    report->index_rebuilt = true;
    index_.CloseFile();
    time_index_.CloseFile();
    next_offset_ = base_;
    max_timestamp_ = -1;
    offset_of_max_timestamp_ = base_;
    bytes_since_index_entry_ = 0;
    size_ = 0;
  }

  // Full scan: both indexes are rebuilt in memory, then written in one go.
  report->full_scan = true;
  SILT_TRY(index_.Clear());
  SILT_TRY(time_index_.Clear());
  SILT_TRY(ScanFrom(0, false, /*verify=*/true, is_last, interval, file_size, cut_from, report));
  if (!read_only_) {
    // Index files that do not exist are not created for nothing.
    index_.EnableWrites(/*absent=*/!PathExists(index_.path()));
    time_index_.EnableWrites(/*absent=*/!PathExists(time_index_.path()));
    SILT_TRY(index_.WriteAll());
    SILT_TRY(time_index_.WriteAll());
  }
  return Status::OK();
}

Status Segment::ScanFrom(int64_t pos, bool skip_first_index, bool verify, bool is_last,
                         int32_t interval, int64_t file_size, Offset cut_from,
                         LoadReport* report) {
  std::string buf;
  int64_t buf_pos = pos;
  // Makes buf hold file bytes [at, at + need) (fewer at EOF), reading ahead a chunk.
  auto ensure = [&](int64_t at, int64_t need) -> Status {
    if (at >= buf_pos && at + need <= buf_pos + static_cast<int64_t>(buf.size())) return Status::OK();
    int64_t want = std::min(std::max(need, kScanChunk), file_size - at);
    buf_pos = at;
    return log_->PRead(at, static_cast<size_t>(want), &buf);
  };
  format::FramingLimits limits;
  limits.verify_crc = verify;
  Offset expected_min = base_;
  bool check_min = !skip_first_index;
  bool first = true;
  int32_t max_epoch = -1;
  while (pos < file_size) {
    SILT_TRY(ensure(pos, format::kBatchHeaderSize));
    std::string_view view(buf.data() + (pos - buf_pos), buf.size() - (pos - buf_pos));
    format::BatchHeader h;
    Status s = format::CheckBatchFraming(view, limits, &h);
    if (s.IsTruncated()) {
      int64_t need = format::kBatchHeaderSize;
      if (view.size() >= static_cast<size_t>(format::kLogOverhead))
        need = format::kLogOverhead +
               static_cast<int64_t>(static_cast<int32_t>(DecodeBE32(view.data() + 8)));
      if (static_cast<int64_t>(view.size()) < need && pos + need <= file_size) {
        SILT_TRY(ensure(pos, need));
        continue;
      }
    }
    if (s.ok() && check_min && h.base() < expected_min) {
      s = Status::Corruption("baseOffset " + std::to_string(h.base_offset) +
                             " is below the expected " + std::to_string(expected_min.value()));
    }
    if (s.ok() && h.last().value() - base_.value() > INT32_MAX) {
      s = Status::Corruption("offset " + std::to_string(h.last().value()) +
                             " too far from the segment's base");
    }
    if (s.ok() && h.partition_leader_epoch >= 0 && h.partition_leader_epoch < max_epoch) {
      s = Status::Corruption("partitionLeaderEpoch " + std::to_string(h.partition_leader_epoch) +
                             " is below the " + std::to_string(max_epoch) +
                             " of a batch before it");
    }
    if (!s.ok()) {
      // Past cut_from nothing was fsynced: whatever is there may be a write the crash tore.
      bool torn = next_offset_ >= cut_from || (is_last && s.IsTruncated());
      bool zeros = false;
      if (is_last || torn) {
        // A tail of zeros is what a crash leaves when the file grew but the data never landed.
        zeros = true;
        for (int64_t at = pos; zeros && at < file_size; at += kScanChunk) {
          std::string chunk;
          SILT_TRY(log_->PRead(at, static_cast<size_t>(std::min(kScanChunk, file_size - at)),
                               &chunk));
          zeros = std::all_of(chunk.begin(), chunk.end(), [](char c) { return c == 0; });
          if (chunk.empty()) break;
        }
        torn = torn || (is_last && zeros);
      }
      if (!torn) {
        std::string what = s.IsTruncated()
                               ? "partial batch at the end of a segment that is not the last (" +
                                     s.message() + ")"
                               : s.message();
        return Status::Corruption(PositionError(log_path_, pos, what));
      }
      report->cut_reason = zeros ? "zero-filled tail" : s.message();
      SILT_TRY(CutTail(pos, file_size, zeros, report));
      break;
    }
    if (pos == 0) first_batch_timestamp_ = h.max_timestamp;
    max_epoch = std::max(max_epoch, h.partition_leader_epoch);
    if (h.partition_leader_epoch >= 0 && (report->epoch_starts.empty() ||
                                          h.partition_leader_epoch >
                                              report->epoch_starts.back().first))
      report->epoch_starts.emplace_back(h.partition_leader_epoch, h.base_offset);
    if (h.max_timestamp > max_timestamp_) {
      max_timestamp_ = h.max_timestamp;
      offset_of_max_timestamp_ = h.last();
    }
    if (!(skip_first_index && first) && bytes_since_index_entry_ > interval) {
      SILT_TRY(index_.Append(h.last(), pos, h.base(), h.size()));
      SILT_TRY(time_index_.MaybeAppend(max_timestamp_, offset_of_max_timestamp_));
      bytes_since_index_entry_ = 0;
    }
    bytes_since_index_entry_ += h.size();
    next_offset_ = h.next();
    expected_min = h.next();
    check_min = true;
    first = false;
    pos += h.size();
  }
  size_ = pos;
  return Status::OK();
}

Status Segment::CutTail(int64_t pos, int64_t file_size, bool zeros, LoadReport* report) {
  report->torn_bytes = file_size - pos;
  report->cut_position = pos;
  if (read_only_) return Status::OK();
  if (!zeros) {
    // The bytes go to their quarantine file (synced, with its directory entry) before the
    // segment is cut: a crash in between leaves a copy, never a loss. A chunk at a time, as
    // the cut may be most of a large segment.
    report->quarantine_path = log_path_ + "." + std::to_string(pos) + ".quarantined";
    const std::string tmp = report->quarantine_path + ".tmp";
    {
      SILT_ASSIGN_OR_RETURN(File out, File::Open(tmp, File::kCreate));
      SILT_TRY(out.Truncate(0));
      std::string chunk;
      for (int64_t at = pos; at < file_size; at += kScanChunk) {
        SILT_TRY(log_->PRead(at, static_cast<size_t>(std::min(kScanChunk, file_size - at)), &chunk));
        SILT_TRY(out.PWrite(at - pos, chunk));
      }
      SILT_TRY(out.Sync());
    }
    SILT_TRY(RenameFile(tmp, report->quarantine_path));
    SILT_TRY(SyncDir(dir_));
  }
  SILT_TRY(log_->Truncate(pos));
  log_unsynced_ = true;
  return Status::OK();
}

Status Segment::CollectEpochStarts(std::vector<std::pair<int32_t, int64_t>>* out) const {
  std::shared_lock l(mu_);
  for (int64_t pos = 0; pos < size_;) {
    SILT_ASSIGN_OR_RETURN(BatchInfo h, HeaderAt(pos, size_));
    if (h.partition_leader_epoch >= 0 &&
        (out->empty() || h.partition_leader_epoch > out->back().first))
      out->emplace_back(h.partition_leader_epoch, h.base.value());
    pos += h.size;
  }
  return Status::OK();
}

// ---- appending --------------------------------------------------------------------------

bool Segment::ShouldRoll(int64_t batch_size, int64_t batch_max_ts, Offset last,
                         int64_t segment_bytes, int64_t segment_ms,
                         int32_t segment_index_bytes) const {
  std::shared_lock l(mu_);
  // Index entries store offsets relative to the base as int32.
  if (last.value() - base_.value() > INT32_MAX) return true;
  if (size_ == 0) return false;
  if (size_ + batch_size > segment_bytes) return true;
  if (static_cast<int64_t>(index_.entries().size()) >=
      segment_index_bytes / OffsetIndex::kEntrySize)
    return true;
  if (static_cast<int64_t>(time_index_.entries().size()) >=
      segment_index_bytes / TimeIndex::kEntrySize)
    return true;
  // Kafka's rule: time since the first batch's timestamp, or since creation when it has none.
  if (first_batch_timestamp_ >= 0 && batch_max_ts >= 0)
    return batch_max_ts - first_batch_timestamp_ > segment_ms;
  return NowMs().value() - created_ms_ > segment_ms;
}

Status Segment::Append(std::string_view batch, const BatchInfo& info, int32_t interval) {
  // size_ and tail_dirty_ change only on the (single) appender's thread.
  if (tail_dirty_) {
    SILT_TRY(log_->Truncate(size_));
    tail_dirty_ = false;
  }
  const int64_t pos = size_;
  log_unsynced_ = true;
  Status s = log_->PWrite(pos, batch);
  if (!s.ok()) {
    if (!log_->Truncate(pos).ok()) tail_dirty_ = true;
    return s;
  }
  return PublishLocked(pos, static_cast<int64_t>(batch.size()), info, interval);
}

Status Segment::StageCopy(int from_fd, int64_t from_position, int64_t length, int64_t at) {
  if (tail_dirty_ && at == 0) {
    SILT_TRY(log_->Truncate(size_));
    tail_dirty_ = false;
  }
  log_unsynced_ = true;
  tail_dirty_ = true;  // until published or dropped
  loff_t in = from_position;
  loff_t out = size_ + at;
  int64_t left = length;
  bool kernel_copy = true;
  std::string buf;
  while (left > 0) {
    if (kernel_copy) {
      ssize_t n = ::copy_file_range(from_fd, &in, log_->fd(), &out, static_cast<size_t>(left), 0);
      if (n > 0) {
        left -= n;
        continue;
      }
      if (n == 0) break;  // the source ends here
      if (errno == EINTR) continue;
      if (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP ||
          errno == EBADF) {
        kernel_copy = false;  // not between these two files: through a buffer
        continue;
      }
      return Status::FromErrno("copy_file_range into " + log_path_, errno);
    }
    if (buf.empty()) buf.resize(1 << 20);
    ssize_t n =
        ::pread(from_fd, buf.data(), std::min<size_t>(buf.size(), static_cast<size_t>(left)), in);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno("read while copying into " + log_path_, errno);
    if (n == 0) break;
    SILT_TRY(log_->PWrite(out, std::string_view(buf.data(), static_cast<size_t>(n))));
    in += n;
    out += n;
    left -= n;
  }
  if (left > 0)
    return Status::OutOfRange("the source ended " + std::to_string(left) +
                              " bytes short while copying into " + log_path_ + " (log truncated)");
  return Status::OK();
}

Status Segment::PublishStaged(const BatchInfo& info, int32_t interval) {
  Status s = PublishLocked(size_, info.size, info, interval);
  if (!s.ok()) (void)DropStaged();
  return s;
}

Status Segment::DropStaged() {
  Status s = log_->Truncate(size_);
  tail_dirty_ = !s.ok();
  return s;
}

Status Segment::PublishLocked(int64_t pos, int64_t size, const BatchInfo& info, int32_t interval) {
  std::unique_lock l(mu_);
  const int64_t old_max = max_timestamp_;
  const Offset old_max_offset = offset_of_max_timestamp_;
  if (info.max_timestamp > max_timestamp_) {
    max_timestamp_ = info.max_timestamp;
    offset_of_max_timestamp_ = info.last;
  }
  if (bytes_since_index_entry_ > interval) {
    size_t index_entries = index_.entries().size();
    Status s = index_.Append(info.last, pos, info.base, size);
    if (s.ok()) s = time_index_.MaybeAppend(max_timestamp_, offset_of_max_timestamp_);
    if (!s.ok()) {
      // Undo everything so that the segment is exactly as before the call.
      if (index_.entries().size() > index_entries) (void)index_.TruncateFrom(info.last);
      max_timestamp_ = old_max;
      offset_of_max_timestamp_ = old_max_offset;
      if (!log_->Truncate(pos).ok()) tail_dirty_ = true;
      return s;
    }
    bytes_since_index_entry_ = 0;
  }
  if (pos == 0) first_batch_timestamp_ = info.max_timestamp;
  bytes_since_index_entry_ += size;
  size_ = pos + size;
  next_offset_ = info.last + 1;
  return Status::OK();
}

Status Segment::OnBecomeInactive() {
  std::unique_lock l(mu_);
  SILT_TRY(time_index_.MaybeAppend(max_timestamp_, offset_of_max_timestamp_));
  SILT_TRY(index_.WritePending());
  return time_index_.WritePending();
}

void Segment::RecomputeTail(int32_t interval) {
  max_timestamp_ = -1;
  offset_of_max_timestamp_ = base_;
  if (const TimeIndex::Entry* t = time_index_.last()) {
    max_timestamp_ = t->timestamp;
    offset_of_max_timestamp_ = Offset(t->offset);
  }
  int64_t pos = 0;
  bool skip_first = false;
  if (!index_.entries().empty()) {
    pos = index_.entries().back().position;
    skip_first = true;
  }
  bytes_since_index_entry_ = 0;
  bool first = true;
  while (pos < size_) {
    auto h = HeaderAt(pos, size_);
    if (!h.ok()) break;
    if (h->max_timestamp > max_timestamp_) {
      max_timestamp_ = h->max_timestamp;
      offset_of_max_timestamp_ = h->last;
    }
    if (!(skip_first && first) && bytes_since_index_entry_ > interval) bytes_since_index_entry_ = 0;
    bytes_since_index_entry_ += h->size;
    first = false;
    pos += h->size;
  }
  if (size_ == 0) {
    first_batch_timestamp_ = -1;
    created_ms_ = NowMs().value();
  }
}

Result<Offset> Segment::TruncateTo(Offset offset, int32_t interval) {
  std::unique_lock l(mu_);
  int64_t pos = 0;
  if (const OffsetIndex::Entry* e = index_.Floor(offset)) pos = e->position;
  std::optional<BatchInfo> cut;
  while (pos < size_) {
    SILT_ASSIGN_OR_RETURN(BatchInfo h, HeaderAt(pos, size_));
    if (h.last >= offset) {
      cut = h;
      break;
    }
    pos += h.size;
  }
  if (!cut) return next_offset_;
  Offset new_next = std::min(cut->base, offset);
  log_unsynced_ = true;
  SILT_TRY(log_->Truncate(cut->position));
  tail_dirty_ = false;
  size_ = cut->position;
  SILT_TRY(index_.TruncateFrom(new_next));
  SILT_TRY(time_index_.TruncateFrom(new_next));
  next_offset_ = new_next;
  RecomputeTail(interval);
  return new_next;
}

Status Segment::Sync() {
  // Only what changed since the last Sync: a new, empty segment costs nothing.
  if (log_unsynced_.load()) {
    SILT_TRY(log_->Sync());
    log_unsynced_.store(false);
  }
  std::unique_lock l(mu_);
  if (size_ == 0) {
    // No data, no entries: the index files need not exist (a leftover one is cut).
    SILT_TRY(index_.WritePending());
    return time_index_.WritePending();
  }
  SILT_TRY(index_.Sync());
  return time_index_.Sync();
}

Status Segment::Delete() {
  std::unique_lock l(mu_);
  // The .log first: until it is gone the segment is whole (indexes included) and stays usable.
  if (Status s = RemoveFile(log_path_); !s.ok() && !s.IsNotFound()) return s;
  // Index files left behind are orphans, which the next PartitionLog::Open removes.
  (void)index_.Remove();
  (void)time_index_.Remove();
  return Status::OK();
}

void Segment::CloseFiles() {
  std::unique_lock l(mu_);
  index_.CloseFile();
  time_index_.CloseFile();
}

// ---- reading ----------------------------------------------------------------------------

Result<std::optional<BatchInfo>> Segment::FindBatch(Offset target) const {
  std::shared_lock l(mu_);
  int64_t pos = 0;
  if (const OffsetIndex::Entry* e = index_.Floor(target)) pos = e->position;
  while (pos < size_) {
    SILT_ASSIGN_OR_RETURN(BatchInfo h, HeaderAt(pos, size_));
    if (h.last >= target) return std::optional<BatchInfo>(h);
    pos += h.size;
  }
  return std::optional<BatchInfo>();
}

Result<BatchInfo> Segment::BatchAt(const OffsetIndex::Entry& e, int64_t limit) const {
  if (e.known() && e.position + e.size <= limit) {
    BatchInfo b;
    b.position = e.position;
    b.size = e.size;
    b.base = Offset(e.base);
    b.last = Offset(e.offset);
    return b;
  }
  return HeaderAt(e.position, limit);
}

Status Segment::Read(Offset start, int64_t* budget, Offset upper_bound, bool min_one,
                     ReadResult* out, bool* done) const {
  std::shared_lock l(mu_);
  const int64_t size = size_;
  *done = false;
  // The batch holding `start` (or the first after it): straight from the index when the
  // entries around it describe whole batches, else by scanning headers from the floor entry.
  std::optional<BatchInfo> first;
  const OffsetIndex::Entry* fl = index_.Floor(start);
  if (fl != nullptr && fl->offset == start.value()) {
    SILT_ASSIGN_OR_RETURN(first, BatchAt(*fl, size));
  } else if (const OffsetIndex::Entry* nx = index_.NextAdjacent(fl);
             nx != nullptr && nx->position + nx->size <= size) {
    SILT_ASSIGN_OR_RETURN(first, BatchAt(*nx, size));
  } else {
    int64_t pos = fl != nullptr ? fl->position : 0;
    while (pos < size) {
      SILT_ASSIGN_OR_RETURN(BatchInfo h, HeaderAt(pos, size));
      if (h.last >= start) {
        first = h;
        break;
      }
      pos += h.size;
    }
  }
  if (!first) return Status::OK();
  if (first->last >= upper_bound) {
    *done = true;
    return Status::OK();
  }
  const int64_t limit =
      *budget >= INT64_MAX - first->position ? INT64_MAX : first->position + *budget;
  int64_t end;
  Offset next;
  bool stopped = false;
  if (first->position + first->size > limit) {
    *done = true;
    if (!(min_one && out->slices.empty())) return Status::OK();
    end = first->position + first->size;
    next = first->last + 1;
    stopped = true;
  } else {
    end = first->position + first->size;
    next = first->last + 1;
    const int64_t eff_limit = std::min(limit, size);
    // Jump with the index over batches known to fit, then scan the last few headers.
    const OffsetIndex::Entry* e = index_.LastWithin(eff_limit, upper_bound);
    if (e != nullptr && e->position >= end) {
      SILT_ASSIGN_OR_RETURN(BatchInfo h, BatchAt(*e, size));
      if (h.last < upper_bound && e->position + h.size <= eff_limit) {
        end = e->position + h.size;
        next = h.last + 1;
        // The batch after it has an entry of its own, which LastWithin did not take: it ends
        // past the limit or reaches the upper bound.
        if (const OffsetIndex::Entry* nx = index_.NextAdjacent(e); nx != nullptr) {
          stopped = true;
          if (nx->base < upper_bound.value()) next = Offset(nx->base);
        }
      } else {
        end = e->position;
        next = h.base;
        stopped = true;
      }
    }
    while (!stopped && end < size) {
      SILT_ASSIGN_OR_RETURN(BatchInfo h, HeaderAt(end, size));
      if (h.last >= upper_bound || end + h.size > limit) {
        stopped = true;
        break;
      }
      end += h.size;
      next = h.last + 1;
    }
  }
  int64_t len = end - first->position;
  out->slices.push_back(FileSlice{log_, first->position, len});
  out->total_bytes += len;
  out->next_offset = next;
  *budget = *budget > len ? *budget - len : 0;
  if (stopped || *budget == 0) *done = true;
  return Status::OK();
}

Result<std::optional<Offset>> Segment::OffsetForTimestamp(int64_t ts) const {
  std::shared_lock l(mu_);
  if (max_timestamp_ < ts) return std::optional<Offset>();
  int64_t pos = 0;
  if (const TimeIndex::Entry* t = time_index_.LastBefore(ts)) {
    if (const OffsetIndex::Entry* e = index_.Floor(Offset(t->offset))) pos = e->position;
  }
  while (pos < size_) {
    SILT_ASSIGN_OR_RETURN(BatchInfo h, HeaderAt(pos, size_));
    if (h.max_timestamp >= ts) {
      // Refine to the record when the records are readable without decompression and carry
      // their own timestamps (CreateTime).
      if ((h.attributes & format::kCompressionMask) == 0 &&
          (h.attributes & format::kTimestampTypeBit) == 0) {
        std::string bytes;
        SILT_TRY(log_->PRead(h.position, static_cast<size_t>(h.size), &bytes));
        ByteReader r(std::string_view(bytes).substr(std::min<size_t>(bytes.size(),
                                                                      format::kBatchHeaderSize)));
        while (!r.empty()) {
          int32_t len;
          if (!r.Varint(&len) || len < 0 || static_cast<size_t>(len) > r.remaining()) break;
          ByteReader rec(r.rest().substr(0, static_cast<size_t>(len)));
          int8_t attrs;
          int64_t ts_delta;
          int32_t off_delta;
          if (!rec.I8(&attrs) || !rec.Varlong(&ts_delta) || !rec.Varint(&off_delta)) break;
          if (h.base_timestamp + ts_delta >= ts) return std::optional<Offset>(h.base + off_delta);
          r.Skip(static_cast<size_t>(len));
        }
      }
      return std::optional<Offset>(h.base);
    }
    pos += h.size;
  }
  return std::optional<Offset>();
}

}  // namespace silt::storage
