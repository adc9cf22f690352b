// LogCleaner: log compaction passes, the swap protocol and its recovery (see log_cleaner.h).
#include "storage/log_cleaner.h"

#include <algorithm>
#include <climits>
#include <functional>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/coding.h"
#include "base/file.h"
#include "format/batch_header.h"
#include "format/compression.h"
#include "format/layout.h"
#include "format/record_batch.h"
#include "storage/data_dir.h"
#include "storage/index.h"
#include "storage/partition_log.h"
#include "storage/segment.h"

namespace silt::storage {
namespace {

constexpr const char* kCleanedSuffix = ".cleaned";
constexpr const char* kSwapSuffix = ".swap";
constexpr const char* kDeletedSuffix = ".deleted";
// Bytes an offset map entry costs besides its key (node, hash bucket, offset).
constexpr int64_t kMapEntryOverhead = 48;

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}


// Iterates the batches of one segment file, reading ahead in chunks; each batch is checked
// (framing and CRC-32C) before it is handed out.
class BatchScanner {
 public:
  BatchScanner(std::shared_ptr<const File> file, int64_t size, int64_t chunk)
      : file_(std::move(file)), size_(size), chunk_(std::max<int64_t>(chunk, 4096)) {}

  // Sets *batch (valid until the next call) and returns true, or false at the end.
  Result<bool> Next(std::string_view* batch, format::BatchHeader* header) {
    if (pos_ >= size_) return false;
    SILT_TRY(Ensure(pos_, format::kLogOverhead));
    int64_t len = format::kLogOverhead +
                  static_cast<int32_t>(DecodeBE32(buf_.data() + (pos_ - buf_pos_) + 8));
    if (len < format::kBatchHeaderSize || pos_ + len > size_)
      return Status::Corruption(file_->path() + ": position " + std::to_string(pos_) +
                                ": bad batch length");
    SILT_TRY(Ensure(pos_, len));
    std::string_view view(buf_.data() + (pos_ - buf_pos_), static_cast<size_t>(len));
    Status s = format::CheckBatchFraming(view, {}, header);
    if (!s.ok()) return s.WithContext(file_->path() + ": position " + std::to_string(pos_));
    *batch = view;
    pos_ += len;
    return true;
  }
  bool at_end() const { return pos_ >= size_; }

 private:
  Status Ensure(int64_t at, int64_t need) {
    if (at >= buf_pos_ && at + need <= buf_pos_ + static_cast<int64_t>(buf_.size()))
      return Status::OK();
    int64_t want = std::min(std::max(need, chunk_), size_ - at);
    buf_pos_ = at;
    SILT_TRY(file_->PRead(at, static_cast<size_t>(want), &buf_));
    if (static_cast<int64_t>(buf_.size()) < need)
      return Status::Corruption(file_->path() + ": ends inside the batch at position " +
                                std::to_string(at));
    return Status::OK();
  }

  std::shared_ptr<const File> file_;
  int64_t size_;
  int64_t chunk_;
  int64_t pos_ = 0;
  std::string buf_;
  int64_t buf_pos_ = 0;
};

// Writes a group's replacement: B.log.cleaned with its two indexes, kept as Segment::Append
// keeps them (an entry whenever more than index.interval.bytes went by since the last one, and
// the final time index entry a closed segment carries).
class CleanedWriter {
 public:
  CleanedWriter(const std::string& dir, Offset base, int32_t interval)
      : dir_(dir),
        base_(base),
        interval_(interval),
        log_path_(JoinPath(dir, SegmentFileName(base, format::kLogSuffix)) + kCleanedSuffix),
        index_(JoinPath(dir, SegmentFileName(base, format::kIndexSuffix)) + kCleanedSuffix, base),
        time_index_(JoinPath(dir, SegmentFileName(base, format::kTimeIndexSuffix)) +
                        kCleanedSuffix,
                    base),
        offset_of_max_(base) {}

  Status Open() {
    SILT_ASSIGN_OR_RETURN(log_, File::Open(log_path_, File::kCreate));
    SILT_TRY(log_.Truncate(0));
    index_.EnableWrites();
    SILT_TRY(index_.Clear());
    time_index_.EnableWrites();
    return time_index_.Clear();
  }

  Status Append(std::string_view batch, const format::BatchHeader& h) {
    SILT_TRY(log_.PWrite(size_, batch));
    if (h.max_timestamp > max_ts_) {
      max_ts_ = h.max_timestamp;
      offset_of_max_ = h.last();
    }
    if (bytes_since_entry_ > interval_) {
      SILT_TRY(index_.Append(h.last(), size_, h.base(), static_cast<int64_t>(batch.size())));
      SILT_TRY(time_index_.MaybeAppend(max_ts_, offset_of_max_));
      bytes_since_entry_ = 0;
    }
    bytes_since_entry_ += static_cast<int64_t>(batch.size());
    size_ += static_cast<int64_t>(batch.size());
    return Status::OK();
  }

  // Final time index entry, everything written and fsynced, files closed.
  Status Finish() {
    SILT_TRY(time_index_.MaybeAppend(max_ts_, offset_of_max_));
    SILT_TRY(log_.Sync());
    SILT_TRY(index_.Sync());
    SILT_TRY(time_index_.Sync());
    index_.CloseFile();
    time_index_.CloseFile();
    return log_.Close();
  }

  // Removes the staging files (an abandoned or unneeded group).
  void Discard() {
    (void)log_.Close();
    index_.CloseFile();
    time_index_.CloseFile();
    (void)RemoveFile(log_path_);
    (void)RemoveFile(index_.path());
    (void)RemoveFile(time_index_.path());
  }

  int64_t size() const { return size_; }
  const std::string& log_path() const { return log_path_; }
  const std::string& index_path() const { return index_.path(); }
  const std::string& time_index_path() const { return time_index_.path(); }

 private:
  std::string dir_;
  Offset base_;
  int32_t interval_;
  std::string log_path_;
  File log_;
  OffsetIndex index_;
  TimeIndex time_index_;
  int64_t size_ = 0;
  int64_t bytes_since_entry_ = 0;
  int64_t max_ts_ = -1;
  Offset offset_of_max_;
};

// The cleanable range of a log: indices [0, count) of its closed segments.
size_t CleanableCount(const std::vector<std::shared_ptr<Segment>>& closed, const LogConfig& cfg,
                      int64_t now_ms, Offset uncleanable_from) {
  size_t n = 0;
  for (; n < closed.size(); ++n) {
    const Segment& s = *closed[n];
    if (s.next_offset() > uncleanable_from) break;
    if (cfg.min_compaction_lag_ms > 0 && s.max_timestamp() >= 0 &&
        s.max_timestamp() > now_ms - cfg.min_compaction_lag_ms)
      break;
  }
  return n;
}

int64_t HorizonFor(int64_t now_ms, int64_t delete_retention_ms) {
  if (now_ms > INT64_MAX - delete_retention_ms) return INT64_MAX;
  return now_ms + delete_retention_ms;
}

// Keys are looked up by string_view, without a copy per record.
struct KeyHash {
  using is_transparent = void;
  size_t operator()(std::string_view k) const { return std::hash<std::string_view>()(k); }
};
using OffsetMap = std::unordered_map<std::string, int64_t, KeyHash, std::equal_to<>>;

// What happened to one batch.
struct BatchOutcome {
  int64_t records = 0;
  int64_t kept = 0;
  int64_t tombstones_removed = 0;
  bool tombstone_kept = false;
};

// Copies or re-encodes one batch into `out` per the retention rules; `must_keep` asks for an
// empty batch rather than nothing when no record stays. `rebuilt` is set when `out` differs
// from the original bytes; `out` stays empty when the batch goes.
Status FilterBatch(std::string_view batch, const format::BatchHeader& h, const OffsetMap& map,
                   int64_t now_ms, const LogConfig& cfg, bool must_keep, std::string* out,
                   bool* rebuilt, BatchOutcome* outcome, int64_t* horizon_kept) {
  out->clear();
  *rebuilt = false;
  *outcome = BatchOutcome{};
  if (h.control()) {
    // Transaction markers and leader-change records are kept as they are.
    outcome->records = h.records_count;
    outcome->kept = h.records_count;
    out->assign(batch);
    return Status::OK();
  }
  SILT_ASSIGN_OR_RETURN(format::RecordBatchView view, format::RecordBatchView::Parse(batch));
  const bool horizon_passed = h.has_delete_horizon() && now_ms >= h.base_timestamp;

  format::RecordBatchBuilder::Options o;
  o.compression = h.compression();
  o.base_offset = h.base_offset;
  o.partition_leader_epoch = h.partition_leader_epoch;
  o.producer_id = h.producer_id;
  o.producer_epoch = h.producer_epoch;
  o.base_sequence = h.base_sequence;
  o.transactional = h.transactional();
  o.log_append_time = h.log_append_time();
  o.last_offset_delta = h.last_offset_delta;
  if (o.compression == format::Compression::kSnappy)
    o.snappy_xerial = format::IsXerialSnappy(view.records_block());
  // Records go to a builder as they are judged; whether the base timestamp must become a delete
  // horizon is known only at the end, so the builder is created then from these.
  struct Kept {
    int32_t delta;
    format::Record record;
  };
  std::vector<Kept> kept;
  SILT_TRY(view.ForEachRecord([&](const format::RecordView& r) {
    ++outcome->records;
    bool keep = true;
    if (!r.key_null) {
      auto it = map.find(r.key);
      if (it != map.end() && it->second > r.offset) {
        keep = false;  // a later record of the key exists
      } else if (r.value_null) {
        if (horizon_passed) {
          keep = false;
          ++outcome->tombstones_removed;
        } else {
          outcome->tombstone_kept = true;
        }
      }
    }
    if (keep) kept.push_back({static_cast<int32_t>(r.offset - h.base_offset), r.ToRecord()});
    return true;
  }));
  outcome->kept = static_cast<int64_t>(kept.size());

  const bool all_kept = outcome->kept == outcome->records;
  const bool needs_stamp = outcome->tombstone_kept && !h.has_delete_horizon();
  const int64_t horizon =
      h.has_delete_horizon() ? h.base_timestamp : HorizonFor(now_ms, cfg.delete_retention_ms);
  if (outcome->tombstone_kept) *horizon_kept = std::min(*horizon_kept, horizon);
  if (all_kept && !needs_stamp) {
    out->assign(batch);
    return Status::OK();
  }
  if (kept.empty() && !must_keep) return Status::OK();

  if (kept.empty()) {
    // An empty batch holding the offset range (and producer state) of the original.
    o.compression = format::Compression::kNone;
    o.base_timestamp = h.max_timestamp;
  } else if (outcome->tombstone_kept) {
    o.delete_horizon = true;
    o.base_timestamp = horizon;
  } else {
    // Without the horizon bit the base is the original's, or the first record's when the
    // original's base was a horizon.
    o.base_timestamp = h.has_delete_horizon() ? -1 : h.base_timestamp;
  }
  format::RecordBatchBuilder builder(o);
  for (const Kept& k : kept) {
    format::RecordView rv;
    rv.offset = h.base_offset + k.delta;
    rv.timestamp = k.record.timestamp;
    rv.key_null = !k.record.key.has_value();
    if (k.record.key) rv.key = *k.record.key;
    rv.value_null = !k.record.value.has_value();
    if (k.record.value) rv.value = *k.record.value;
    for (const format::Header& hd : k.record.headers)
      rv.headers.emplace_back(hd.key, hd.value ? std::optional<std::string_view>(*hd.value)
                                               : std::nullopt);
    builder.AddAt(k.delta, rv);
  }
  SILT_ASSIGN_OR_RETURN(*out, builder.Finish());
  *rebuilt = true;
  return Status::OK();
}

// The files of a segment, by base offset.
std::vector<std::string> SegmentFiles(const std::string& dir, Offset base) {
  return {JoinPath(dir, SegmentFileName(base, format::kLogSuffix)),
          JoinPath(dir, SegmentFileName(base, format::kIndexSuffix)),
          JoinPath(dir, SegmentFileName(base, format::kTimeIndexSuffix))};
}

// The offset after the last batch of a committed swap file.
Result<int64_t> SwapEndOffset(const std::string& path) {
  SILT_ASSIGN_OR_RETURN(File f, File::Open(path, File::kReadOnly));
  SILT_ASSIGN_OR_RETURN(int64_t size, f.Size());
  int64_t pos = 0;
  int64_t end = -1;
  std::string h;
  while (pos < size) {
    SILT_TRY(f.PRead(pos, format::kBatchHeaderSize, &h));
    if (h.size() < static_cast<size_t>(format::kBatchHeaderSize))
      return Status::Corruption(path + ": ends inside a batch header at " + std::to_string(pos));
    format::BatchHeader bh = format::DecodeBatchHeader(h);
    if (bh.magic != format::kMagicV2 ||
        bh.batch_length < format::kBatchHeaderSize - format::kLogOverhead ||
        pos + bh.size() > size || bh.last_offset_delta < 0)
      return Status::Corruption(path + ": no batch at position " + std::to_string(pos));
    end = bh.last().value() + 1;
    pos += bh.size();
  }
  if (end < 0) return Status::Corruption(path + ": committed swap file holds no batch");
  return end;
}

}  // namespace

// ---- produce-time check -----------------------------------------------------------------

Status CheckKeysForCompaction(const LogConfig& config, std::string_view batch) {
  if (!config.compact()) return Status::OK();
  format::ValidateLimits limits;
  limits.verify_crc = false;
  SILT_ASSIGN_OR_RETURN(format::RecordBatchView view,
                        format::RecordBatchView::Parse(batch, limits));
  if (view.header().control()) return Status::OK();
  bool keyless = false;
  SILT_TRY(view.ForEachRecord(
      [&](const format::RecordView& r) {
        keyless = r.key_null;
        return !keyless;
      },
      limits));
  if (keyless)
    return Status::InvalidArgument("Compacted topic cannot accept message without key");
  return Status::OK();
}

// ---- recovery ---------------------------------------------------------------------------

bool HasCleanerStagingFiles(const std::vector<std::string>& names) {
  for (const std::string& n : names)
    if (EndsWith(n, kCleanedSuffix) || EndsWith(n, kSwapSuffix) || EndsWith(n, kDeletedSuffix))
      return true;
  return false;
}

Status FinishInterruptedSwaps(const std::string& dir) {
  if (!IsDirectory(dir)) return Status::OK();
  SILT_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(dir));
  bool changed = false;
  for (const std::string& n : names) {
    if (EndsWith(n, kCleanedSuffix)) {
      SILT_TRY(RemoveFile(JoinPath(dir, n)));
      changed = true;
    }
  }
  const std::string log_swap = std::string(format::kLogSuffix) + kSwapSuffix;
  for (const std::string& n : names) {
    int64_t base;
    if (!ParseSegmentFileName(n, log_swap, &base)) continue;
    std::string swap_path = JoinPath(dir, n);
    SILT_ASSIGN_OR_RETURN(int64_t end, SwapEndOffset(swap_path));
    // Every segment file whose base lies in [base, end) belonged to the replaced group.
    for (const std::string& m : names) {
      int64_t b;
      if ((ParseSegmentFileName(m, format::kLogSuffix, &b) ||
           ParseSegmentFileName(m, format::kIndexSuffix, &b) ||
           ParseSegmentFileName(m, format::kTimeIndexSuffix, &b)) &&
          b >= base && b < end && PathExists(JoinPath(dir, m)))
        SILT_TRY(RemoveFile(JoinPath(dir, m)));
    }
    SILT_TRY(SyncDir(dir));
    SILT_TRY(RenameFile(swap_path, JoinPath(dir, SegmentFileName(Offset(base),
                                                                 format::kLogSuffix))));
    changed = true;
  }
  for (const std::string& n : names) {
    if (EndsWith(n, kDeletedSuffix) || (EndsWith(n, kSwapSuffix) && !EndsWith(n, log_swap))) {
      SILT_TRY(RemoveFile(JoinPath(dir, n)));
      changed = true;
    }
  }
  if (changed) SILT_TRY(SyncDir(dir));
  return Status::OK();
}

// ---- the cleaner ------------------------------------------------------------------------

LogCleaner::LogCleaner(std::string checkpoint_dir, CleanerOptions options)
    : checkpoint_path_(JoinPath(checkpoint_dir, kCleanerCheckpointFile)), options_(options) {
  // A malformed or missing file means "no checkpoints": the next passes reclean from the
  // start, which is safe.
  auto text = ReadFile(checkpoint_path_);
  if (!text.ok()) return;
  std::istringstream in(text.value());
  int version;
  int64_t count;
  if (!(in >> version >> count) || version != 0 || count < 0) return;
  std::map<PartitionKey, int64_t> cps;
  for (int64_t i = 0; i < count; ++i) {
    std::string topic;
    int64_t p, off;
    if (!(in >> topic >> p >> off) || p < 0 || p > INT32_MAX || off < 0) return;
    cps[{topic, static_cast<int32_t>(p)}] = off;
  }
  checkpoints_ = std::move(cps);
}

LogCleaner::~LogCleaner() { Stop(); }

LogCleaner::PartitionKey LogCleaner::KeyOf(const PartitionLog& log) {
  std::string name = BaseName(log.dir());
  size_t dash = name.rfind('-');
  if (dash != std::string::npos && dash > 0 && dash + 1 < name.size()) {
    int64_t p = 0;
    bool digits = name.size() - dash - 1 <= 10;
    for (size_t i = dash + 1; digits && i < name.size(); ++i) {
      digits = name[i] >= '0' && name[i] <= '9';
      p = p * 10 + (name[i] - '0');
    }
    if (digits && p <= INT32_MAX) return {name.substr(0, dash), static_cast<int32_t>(p)};
  }
  return {name, 0};
}

Status LogCleaner::WriteCheckpointLocked() {
  std::string text = "0\n" + std::to_string(checkpoints_.size()) + "\n";
  for (const auto& [k, v] : checkpoints_)
    text += k.first + " " + std::to_string(k.second) + " " + std::to_string(v) + "\n";
  return WriteFileAtomic(checkpoint_path_, text);
}

Offset LogCleaner::CheckpointFor(const std::string& topic, int32_t partition) const {
  std::lock_guard l(mu_);
  auto it = checkpoints_.find({topic, partition});
  return it == checkpoints_.end() ? kInvalidOffset : Offset(it->second);
}

int64_t LogCleaner::passes() const {
  std::lock_guard l(mu_);
  return passes_;
}

Status LogCleaner::last_error() const {
  std::lock_guard l(mu_);
  return last_error_;
}

Cleanability LogCleaner::Measure(const PartitionLog& log, int64_t now_ms,
                                 Offset uncleanable_from) const {
  Cleanability c;
  std::vector<std::shared_ptr<Segment>> closed = log.ClosedSegments();
  LogConfig cfg = log.config();
  size_t n = CleanableCount(closed, cfg, now_ms, uncleanable_from);
  // Taken from the same list as the segments, never from the log end read later: appends in
  // between would put first_dirty past segments that CleanPartitionOnce (which lists them
  // again) then takes for clean, moving the checkpoint over data no pass has compacted.
  Offset start = !closed.empty() ? closed.front()->base_offset() : log.log_start_offset();
  c.first_uncleanable = n > 0 ? closed[n - 1]->next_offset() : start;
  int64_t cp = -1;
  {
    std::lock_guard l(mu_);
    auto it = checkpoints_.find(KeyOf(log));
    if (it != checkpoints_.end()) cp = it->second;
  }
  // Kafka's rule: a checkpoint outside the log (truncated, or deleted and recreated) restarts
  // cleaning from the log's start.
  c.first_dirty = (cp < start.value() || cp > c.first_uncleanable.value()) ? start : Offset(cp);
  for (size_t i = 0; i < n; ++i) {
    if (closed[i]->next_offset() <= c.first_dirty)
      c.clean_bytes += closed[i]->size();
    else
      c.dirty_bytes += closed[i]->size();
  }
  return c;
}

Result<CleanStats> LogCleaner::CleanPartitionOnce(PartitionLog* log, int64_t now_ms,
                                                  Offset uncleanable_from) {
  std::lock_guard pass(pass_mu_);
  if (log->read_only()) return Status::InvalidArgument(log->dir() + " is open read-only");
  const LogConfig cfg = log->config();
  if (!cfg.compact())
    return Status::InvalidArgument(log->dir() + ": cleanup.policy is " + cfg.cleanup_policy +
                                   ", not compact");
  const PartitionKey key = KeyOf(*log);
  const std::string dir = log->dir();
  CleanStats st;
  Cleanability m = Measure(*log, now_ms, uncleanable_from);
  std::vector<std::shared_ptr<Segment>> closed = log->ClosedSegments();
  size_t n = CleanableCount(closed, cfg, now_ms, uncleanable_from);
  closed.resize(n);
  // Segments cleaned before Measure looked are not ours to judge: keep the run Measure saw.
  while (!closed.empty() && closed.back()->next_offset() > m.first_uncleanable) closed.pop_back();
  if (closed.empty()) return st;

  // 1. The offset map over the dirty section, a whole segment at a time.
  OffsetMap map;
  int64_t map_bytes = 0;
  size_t range = 0;  // segments [0, range) are rewritten
  bool took_dirty = false;
  for (; range < closed.size(); ++range) {
    const auto& seg = closed[range];
    if (seg->next_offset() <= m.first_dirty) continue;  // clean section
    if (took_dirty && map_bytes >= options_.max_map_bytes) break;
    took_dirty = true;
    BatchScanner scan(seg->log_file(), seg->size(), options_.io_buffer_bytes);
    std::string_view batch;
    format::BatchHeader h;
    while (true) {
      SILT_ASSIGN_OR_RETURN(bool more, scan.Next(&batch, &h));
      if (!more) break;
      if (h.control() || h.last() < m.first_dirty) continue;
      SILT_ASSIGN_OR_RETURN(format::RecordBatchView view, format::RecordBatchView::Parse(batch));
      SILT_TRY(view.ForEachRecord([&](const format::RecordView& r) {
        if (r.key_null || Offset(r.offset) < m.first_dirty) return true;
        auto it = map.find(r.key);
        if (it != map.end()) {
          it->second = r.offset;
        } else {
          map.emplace(std::string(r.key), r.offset);
          map_bytes += static_cast<int64_t>(r.key.size()) + kMapEntryOverhead;
        }
        return true;
      }));
    }
  }
  closed.resize(range);
  st.first_dirty = m.first_dirty;
  st.end_offset = closed.back()->next_offset();
  st.map_entries = static_cast<int64_t>(map.size());

  // 2. Groups of adjacent segments that fit one segment; empty segments never end a group
  // (the swap recovery rule needs the group's last batch to end its offset range).
  std::vector<std::vector<std::shared_ptr<Segment>>> groups;
  for (size_t i = 0; i < closed.size();) {
    std::vector<std::shared_ptr<Segment>> g{closed[i]};
    int64_t bytes = closed[i]->size();
    const Offset base = closed[i]->base_offset();
    size_t j = i + 1;
    while (j < closed.size() && bytes + closed[j]->size() <= cfg.segment_bytes &&
           closed[j]->next_offset().value() - 1 - base.value() <= INT32_MAX) {
      bytes += closed[j]->size();
      g.push_back(closed[j]);
      ++j;
    }
    while (g.size() > 1 && g.back()->size() == 0) {
      g.pop_back();
      --j;
    }
    i = j;
    if (g.back()->size() == 0) continue;  // nothing but empty segments
    groups.push_back(std::move(g));
  }

  int64_t horizon_kept = INT64_MAX;
  for (const auto& group : groups) {
    const Offset base = group.front()->base_offset();
    CleanedWriter w(dir, base, cfg.index_interval_bytes);
    Status s = w.Open();
    bool changed = group.size() > 1;
    std::string out;
    for (size_t gi = 0; s.ok() && gi < group.size(); ++gi) {
      const auto& seg = group[gi];
      ++st.segments_read;
      st.bytes_read += seg->size();
      BatchScanner scan(seg->log_file(), seg->size(), options_.io_buffer_bytes);
      std::string_view batch;
      format::BatchHeader h;
      while (s.ok()) {
        auto more = scan.Next(&batch, &h);
        if (!more.ok()) {
          s = more.status();
          break;
        }
        if (!more.value()) break;
        bool last_of_group = gi + 1 == group.size() && scan.at_end();
        bool rebuilt = false;
        BatchOutcome oc;
        s = FilterBatch(batch, h, map, now_ms, cfg, last_of_group, &out, &rebuilt, &oc,
                        &horizon_kept);
        if (!s.ok()) break;
        st.records_read += oc.records;
        st.records_kept += oc.kept;
        st.tombstones_removed += oc.tombstones_removed;
        if (out.empty()) {
          ++st.batches_removed;
          changed = true;
          continue;
        }
        if (rebuilt) changed = true;
        format::BatchHeader nh = format::DecodeBatchHeader(out);
        s = w.Append(out, nh);
      }
    }
    if (s.ok()) s = w.Finish();
    if (!s.ok()) {
      w.Discard();
      return s.WithContext(dir + ": cleaning segments from " + std::to_string(base.value()));
    }
    if (!changed) {
      w.Discard();
      continue;
    }
    // b. Commit: the replacement is whole and durable.
    const std::string swap_path =
        JoinPath(dir, SegmentFileName(base, format::kLogSuffix)) + kSwapSuffix;
    s = RenameFile(w.log_path(), swap_path);
    if (s.ok()) s = SyncDir(dir);
    if (!s.ok()) {
      w.Discard();
      (void)RemoveFile(swap_path);
      return s;
    }
    // c. Under the writer lock: old files aside, new files in, list swapped.
    std::vector<std::string> deleted;
    auto install = [&]() -> Result<std::shared_ptr<Segment>> {
      for (const auto& seg : group) {
        for (const std::string& f : SegmentFiles(dir, seg->base_offset())) {
          if (!PathExists(f)) continue;
          SILT_TRY(RenameFile(f, f + kDeletedSuffix));
          deleted.push_back(f + kDeletedSuffix);
        }
      }
      SILT_TRY(SyncDir(dir));
      std::vector<std::string> final_names = SegmentFiles(dir, base);
      SILT_TRY(RenameFile(w.index_path(), final_names[1]));
      SILT_TRY(RenameFile(w.time_index_path(), final_names[2]));
      SILT_TRY(RenameFile(swap_path, final_names[0]));
      SILT_ASSIGN_OR_RETURN(std::shared_ptr<Segment> seg, Segment::Open(dir, base, false));
      Segment::LoadReport report;
      SILT_TRY(seg->Load(Segment::LoadMode::kTrusted, /*is_last=*/false,
                         cfg.index_interval_bytes, &report));
      SILT_TRY(seg->OnBecomeInactive());
      return seg;
    };
    s = log->ReplaceSegments(group, install);
    if (s.IsBusy() || (!s.ok() && deleted.empty())) {
      // Nothing was moved: drop the staging files; a busy log is cleaned by a later pass.
      w.Discard();
      (void)RemoveFile(swap_path);
      (void)SyncDir(dir);
      if (s.IsBusy()) return st;
      return s;
    }
    if (!s.ok()) return s;  // half moved: the next open finishes the swap
    // d. The old files go for good.
    SILT_TRY(SyncDir(dir));
    for (const std::string& f : deleted) (void)RemoveFile(f);
    ++st.segments_written;
    st.bytes_written += w.size();
  }

  st.cleaned = true;
  std::lock_guard l(mu_);
  checkpoints_[key] = st.end_offset.value();
  horizons_[key] = horizon_kept;
  ++passes_;
  SILT_TRY(WriteCheckpointLocked());
  return st;
}

Result<bool> LogCleaner::CleanDirtiestOnce(DataDir* dd, int64_t now_ms) {
  if (dd->read_only()) return false;
  std::shared_ptr<PartitionLog> best;
  double best_ratio = -1;
  std::shared_ptr<PartitionLog> expired;
  std::vector<TopicInfo> topics = dd->ListTopics();
  {
    // Checkpoints of deleted topics go, so that a topic created again under the same name
    // starts clean.
    std::lock_guard l(mu_);
    bool pruned = false;
    for (auto it = checkpoints_.begin(); it != checkpoints_.end();) {
      bool live = std::any_of(topics.begin(), topics.end(),
                              [&](const TopicInfo& t) { return t.name == it->first.first; });
      if (live) {
        ++it;
      } else {
        horizons_.erase(it->first);
        it = checkpoints_.erase(it);
        pruned = true;
      }
    }
    if (pruned) SILT_TRY(WriteCheckpointLocked());
  }
  for (const TopicInfo& t : topics) {
    auto cfg = dd->TopicConfig(t.name);
    if (!cfg.ok() || !cfg->compact()) continue;
    for (int32_t p : t.partition_ids) {
      auto log = dd->SharedPartition(t.name, p);
      if (!log.ok()) continue;
      Cleanability c = Measure(**log, now_ms);
      if (c.dirty_bytes > 0 && c.ratio() >= cfg->min_cleanable_dirty_ratio &&
          c.ratio() > best_ratio) {
        best_ratio = c.ratio();
        best = *log;
      }
      std::lock_guard l(mu_);
      auto h = horizons_.find({t.name, p});
      if (!expired && h != horizons_.end() && h->second <= now_ms) expired = *log;
    }
  }
  if (!best) best = expired;
  if (!best) return false;
  SILT_ASSIGN_OR_RETURN(CleanStats st, CleanPartitionOnce(best.get(), now_ms));
  return st.cleaned;
}

Status LogCleaner::Start(DataDir* dd) {
  std::lock_guard l(mu_);
  if (thread_.joinable()) return Status::InvalidArgument("the log cleaner is already running");
  stop_ = false;
  thread_ = std::thread([this, dd] { Run(dd); });
  return Status::OK();
}

void LogCleaner::Stop() {
  std::thread t;
  {
    std::lock_guard l(mu_);
    stop_ = true;
    t = std::move(thread_);
  }
  cv_.notify_all();
  if (t.joinable()) t.join();
}

void LogCleaner::Run(DataDir* dd) {
  while (true) {
    {
      std::lock_guard l(mu_);
      if (stop_) return;
    }
    auto r = CleanDirtiestOnce(dd, NowMs().value());
    bool again = r.ok() && r.value();
    std::unique_lock l(mu_);
    if (!r.ok()) last_error_ = r.status();
    if (stop_) return;
    if (!again)
      cv_.wait_for(l, std::chrono::milliseconds(options_.backoff_ms), [this] { return stop_; });
  }
}

}  // namespace silt::storage
