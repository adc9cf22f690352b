// PartitionLog: segments, append, read, roll, retention, truncation, flush and recovery.
//
// Locking (always taken in this order):
//   append_mu  serialises everything that writes: append, roll, truncate, retention, flush.
//   mu         guards the segment list and log start; readers hold it shared for a whole read,
//              writers hold it exclusively only to change the list. Appends that do not roll
//              never take it exclusively.
//   Segment's own lock guards its indexes and published size.
//   config_mu  guards config against config() readers; UpdateConfig holds append_mu as well, so
//              code under append_mu reads config without it.
// log_end and recovery_point are atomics so that readers and appenders need no common lock.
#include "storage/partition_log.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <sstream>
#include <utility>

#include "base/clock.h"
#include "base/coding.h"
#include "base/crc32c.h"
#include "base/metrics.h"
#include "format/batch_header.h"
#include "format/layout.h"
#include "storage/log_cleaner.h"
#include "storage/segment.h"

namespace silt::storage {
namespace {

Status ParseEpochCheckpoint(const std::string& path, const std::string& text,
                            std::vector<PartitionLog::EpochEntry>* out) {
  std::istringstream in(text);
  int version = -1;
  int64_t count = -1;
  if (!(in >> version) || version != 0 || !(in >> count) || count < 0)
    return Status::Corruption(path + ": bad leader-epoch-checkpoint header");
  for (int64_t i = 0; i < count; ++i) {
    int64_t epoch, offset;
    if (!(in >> epoch >> offset) || epoch < 0 || epoch > INT32_MAX || offset < 0)
      return Status::Corruption(path + ": bad leader-epoch-checkpoint entry " +
                                std::to_string(i));
    out->push_back({static_cast<int32_t>(epoch), Offset(offset)});
  }
  return Status::OK();
}

}  // namespace

Result<std::string> ReadResult::ReadAll() const {
  std::string out;
  SILT_TRY(ReadInto(&out));
  return out;
}

Status ReadResult::ReadInto(std::string* out) const {
  // One buffer, filled in place by pread: a single copy out of the page cache. A buffer too
  // small is replaced, not grown (growing would copy its old bytes).
  const size_t total = static_cast<size_t>(total_bytes);
  if (out->capacity() < total) {
    std::string().swap(*out);
    out->reserve(total);
  }
  out->resize(total);
  size_t at = 0;
  for (const FileSlice& s : slices) {
    size_t got = 0;
    while (got < static_cast<size_t>(s.length)) {
      ssize_t n = ::pread(s.file->fd(), out->data() + at + got, static_cast<size_t>(s.length) - got,
                          s.position + static_cast<int64_t>(got));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Status::FromErrno("read " + s.file->path(), errno);
      if (n == 0)
        return Status::OutOfRange(s.file->path() + ": data at position " +
                                  std::to_string(s.position) + " is gone (log truncated)");
      got += static_cast<size_t>(n);
    }
    at += got;
  }
  return Status::OK();
}

struct PartitionLog::Impl {
  std::string dir;
  LogConfig config;  // written under append_mu and config_mu
  mutable std::mutex config_mu;
  bool read_only = false;

  mutable std::mutex append_mu;
  mutable std::shared_mutex mu;
  std::vector<std::shared_ptr<Segment>> segments;  // by base offset; the last is active
  Offset log_start{0};
  std::atomic<int64_t> log_end{0};
  std::atomic<int64_t> recovery_point{0};

  int64_t unflushed_messages = 0;
  int64_t last_flush_ms = 0;
  bool dir_dirty = false;  // segments created or deleted since the last directory fsync
  bool closed = false;
  std::vector<RecoveryCut> cuts;  // set by Open, then never changed
  // The first failed fsync, or write error other than a full disk (under append_mu). It sticks:
  // after a failed fsync Linux may have dropped the dirty pages and reports the error once,
  // so a later fsync that "succeeds" proves nothing. No append or flush is tried again, and
  // the recovery point stays below the failed range, until a reopen recovers from it.
  Status failed;
  std::atomic<bool> has_failed{false};

  Status Fail(const Status& s) {
    if (failed.ok()) {
      failed = Status::IOError(dir + " takes no more writes until it is reopened: " + s.message());
      has_failed.store(true);
    }
    return failed;
  }

  std::vector<EpochEntry> epochs;  // guarded by mu
  // `epochs` changed since the checkpoint file was last written (guarded by append_mu).
  bool epochs_dirty = false;
  // The checkpoint file exists: once a log holds data a flush writes it (even with no epochs),
  // so that later opens need not look for epochs in every batch.
  bool epoch_file_exists = false;

  std::function<Status(int64_t, int64_t)> checkpoint_hook;
  int64_t checkpointed_rp = 0;  // the recovery point the data dir's checkpoint holds

  std::mutex listener_mu;
  std::function<void(Offset)> listener;       // guarded by listener_mu
  std::function<void(Offset)> roll_listener;  // guarded by listener_mu
  std::vector<Offset> pending_rolls;          // guarded by append_mu; see TakeRolls

  std::shared_ptr<Segment> active() const { return segments.back(); }

  Status NewSegmentLocked(Offset base) {
    // Called with append_mu held; takes mu for the list change.
    static metrics::Counter& rolls = metrics::Default().GetCounter(
        "silt_log_segment_rolls_total", "New active segments started after a full or old one");
    if (!segments.empty()) {
      auto act = active();
      if (act->size() == 0 && act->base_offset() == base) return Status::OK();
      SILT_TRY(act->OnBecomeInactive());
      rolls.Inc();
    }
    SILT_ASSIGN_OR_RETURN(std::shared_ptr<Segment> seg, Segment::Create(dir, base));
    std::unique_lock l(mu);
    if (!segments.empty() && segments.back()->size() == 0) {
      // An empty active segment is replaced rather than kept in the middle of the log.
      auto old = segments.back();
      segments.pop_back();
      if (old->base_offset() != base) (void)old->Delete();
    }
    segments.push_back(std::move(seg));
    dir_dirty = true;
    pending_rolls.push_back(base);
    return Status::OK();
  }

  // The leader-epoch checkpoint's text for `epochs`. Called with append_mu held: only holders
  // of append_mu change `epochs`, so reading it needs no mu.
  std::string EpochText() const {
    std::string text = "0\n" + std::to_string(epochs.size()) + "\n";
    for (const EpochEntry& e : epochs)
      text += std::to_string(e.epoch) + " " + std::to_string(e.start_offset.value()) + "\n";
    return text;
  }
  std::string EpochPath() const { return JoinPath(dir, format::kLeaderEpochCheckpointFile); }
  // Writes the checkpoint now, durably (truncation and a new log start rewrite history, which
  // recovery could not rebuild).
  Status WriteEpochsLocked() {
    if (read_only) return Status::OK();
    SILT_TRY(WriteFileAtomic(EpochPath(), EpochText()));
    epochs_dirty = false;
    epoch_file_exists = true;
    return Status::OK();
  }

  // The epochs that appending batches with these (epoch, base offset) pairs would add: each
  // epoch newer than every one before it starts at its batch. Called with append_mu held.
  std::vector<EpochEntry> NewEpochs(const std::vector<EpochEntry>& batches) const {
    std::vector<EpochEntry> out;
    int32_t latest = epochs.empty() ? -1 : epochs.back().epoch;
    for (const EpochEntry& b : batches) {
      if (b.epoch < 0 || b.epoch <= latest) continue;
      out.push_back(b);
      latest = b.epoch;
    }
    return out;
  }

  // After an append that started new epochs: records them in memory only. The checkpoint file
  // follows at the next flush, before the recovery point passes them; until then a crash
  // leaves their batches above the recovery point, where Open() rescans them and takes the
  // epochs back from their partitionLeaderEpoch fields (as Kafka rebuilds a checkpoint that
  // is behind the log). So an append never waits for the checkpoint, and cannot fail on it.
  void CommitEpochs(const std::vector<EpochEntry>& added) {
    if (added.empty()) return;
    std::unique_lock l(mu);
    epochs.insert(epochs.end(), added.begin(), added.end());
    epochs_dirty = true;
  }
  // Open(): an epoch found in a batch (Kafka's LeaderEpochFileCache.assign): kept when newer
  // than every known one; a known one starting at or after it conflicts and goes.
  void AssignEpoch(int32_t epoch, Offset start) {
    if (epoch < 0 || (!epochs.empty() && epoch <= epochs.back().epoch)) return;
    while (!epochs.empty() && epochs.back().start_offset >= start) epochs.pop_back();
    epochs.push_back({epoch, start});
    epochs_dirty = true;
  }

  Status FlushLocked() {
    if (read_only) return Status::OK();
    static metrics::Histogram& latency = metrics::Default().GetHistogram(
        "silt_log_flush_duration_seconds",
        "Time of each log flush: the fsyncs of segments, indexes and the directory",
        metrics::LatencyBuckets());
    if (!failed.ok()) return failed;
    const auto started = std::chrono::steady_clock::now();
    Status s = FlushFilesLocked();
    latency.Observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    // A full disk that stops index or checkpoint writes is not a failing one (fsync errors are
    // never NoSpace): the flush fails, and a later one may succeed.
    if (!s.ok() && !s.IsNoSpace()) return Fail(s);
    return s;
  }

  Status FlushFilesLocked() {
    std::vector<std::shared_ptr<Segment>> todo;
    {
      std::shared_lock l(mu);
      Offset rp(recovery_point.load());
      for (const auto& s : segments)
        if (s->next_offset() > rp || s == segments.back()) todo.push_back(s);
    }
    for (const auto& s : todo) SILT_TRY(s->Sync());
    if (epochs_dirty || (!epoch_file_exists && log_end.load() > recovery_point.load())) {
      // Durable with the directory fsync below, before the recovery point moves past them.
      SILT_TRY(ReplaceFile(EpochPath(), EpochText()));
      epochs_dirty = false;
      epoch_file_exists = true;
      dir_dirty = true;
    }
    if (dir_dirty) {
      SILT_TRY(SyncDir(dir));
      dir_dirty = false;
    }
    recovery_point.store(log_end.load());
    unflushed_messages = 0;
    last_flush_ms = NowMs().value();
    return Status::OK();
  }

  Status MaybeFlushAfterAppend(int64_t messages) {
    unflushed_messages += messages;
    if (unflushed_messages >= config.flush_messages) return FlushLocked();
    if (config.flush_ms != INT64_MAX && NowMs().value() - last_flush_ms >= config.flush_ms)
      return FlushLocked();
    return Status::OK();
  }

  // Appends one batch at its own offsets (already in the header), rolling first if needed.
  Status AppendOneLocked(std::string_view batch, const BatchInfo& info) {
    if (!failed.ok()) return failed;
    Status s = AppendOneUnchecked(batch, info);
    // A full disk is not a failing one: the append fails clean, and the next may succeed.
    if (s.code() == Status::Code::kIOError) return Fail(s);
    return s;
  }
  Status AppendOneUnchecked(std::string_view batch, const BatchInfo& info) {
    auto act = active();
    if (act->ShouldRoll(info.size, info.max_timestamp, info.last, config.segment_bytes,
                        config.segment_ms, config.segment_index_bytes)) {
      // A gap (from a compacted source) may put the batch far past the log end; the new
      // segment then starts at the batch so that relative offsets fit.
      Offset base(log_end.load());
      if (info.last.value() - base.value() > INT32_MAX) base = info.base;
      SILT_TRY(NewSegmentLocked(base));
      act = active();
    }
    SILT_TRY(act->Append(batch, info, config.index_interval_bytes));
    log_end.store(info.last.value() + 1);
    return Status::OK();
  }

  // The segments created since the last call (append_mu held).
  std::vector<Offset> TakeRolls() { return std::exchange(pending_rolls, {}); }
  // Tells the roll listener about them; called with no lock of the log held.
  void NotifyRolls(const std::vector<Offset>& rolls) {
    if (rolls.empty()) return;
    std::function<void(Offset)> fn;
    {
      std::lock_guard l(listener_mu);
      fn = roll_listener;
    }
    if (fn)
      for (Offset o : rolls) fn(o);
  }

  void NotifyAppend() {
    std::function<void(Offset)> fn;
    {
      std::lock_guard l(listener_mu);
      fn = listener;
    }
    if (fn) fn(Offset(log_end.load()));
  }

  Status TruncateToLocked(Offset offset);
  // `ul` holds mu exclusively on entry and on return; it is released while files are removed.
  Status DeleteSegmentsLocked(size_t count, std::unique_lock<std::shared_mutex>& ul);
  // Unlinks the producer-state snapshots whose offset `drop` selects, then fsyncs the
  // directory; stops at the first failure.
  Status DeleteSnapshotsIf(const std::function<bool(int64_t)>& drop);

  // append_mu, held by a writer; Release() (or the destructor) unlocks it and then calls the
  // roll listener for the segments created meanwhile, so the listener runs under no lock of
  // the log.
  class WriterLock {
   public:
    explicit WriterLock(Impl& im) : im_(im), l_(im.append_mu) {}
    ~WriterLock() { Release(); }
    WriterLock(const WriterLock&) = delete;
    WriterLock& operator=(const WriterLock&) = delete;
    void Release() {
      if (!l_.owns_lock()) return;
      std::vector<Offset> rolls = im_.TakeRolls();
      l_.unlock();
      im_.NotifyRolls(rolls);
    }

   private:
    Impl& im_;
    std::unique_lock<std::mutex> l_;
  };
};

PartitionLog::PartitionLog(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PartitionLog::~PartitionLog() = default;

Result<std::unique_ptr<PartitionLog>> PartitionLog::Open(const std::string& dir,
                                                         const LogConfig& config,
                                                         const OpenOptions& options) {
  if (!IsDirectory(dir)) {
    if (options.read_only || !options.create)
      return Status::NotFound("partition directory " + dir + " does not exist");
    SILT_TRY(CreateDirs(dir));
  }
  auto impl = std::make_unique<Impl>();
  impl->dir = dir;
  impl->config = config;
  impl->read_only = options.read_only;
  impl->last_flush_ms = NowMs().value();
  impl->checkpoint_hook = options.checkpoint_hook;
  impl->checkpointed_rp = options.recovery_point;

  SILT_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(dir));
  // A log cleaner pass cut short by a crash leaves staging files (see storage/log_cleaner.h).
  if (!options.read_only && HasCleanerStagingFiles(names)) {
    SILT_TRY(FinishInterruptedSwaps(dir));
    SILT_ASSIGN_OR_RETURN(names, ListDir(dir));
  }
  std::vector<int64_t> bases;
  std::vector<std::string> orphans;
  for (const std::string& n : names) {
    int64_t b;
    if (ParseSegmentFileName(n, format::kLogSuffix, &b)) bases.push_back(b);
  }
  std::sort(bases.begin(), bases.end());
  for (const std::string& n : names) {
    int64_t b;
    if ((ParseSegmentFileName(n, format::kIndexSuffix, &b) ||
         ParseSegmentFileName(n, format::kTimeIndexSuffix, &b)) &&
        !std::binary_search(bases.begin(), bases.end(), b))
      orphans.push_back(n);
  }
  if (!options.read_only)
    for (const std::string& n : orphans) SILT_TRY(RemoveFile(JoinPath(dir, n)));
  // A snapshot write cut short by a crash leaves its temp file (see WriteFileAtomic).
  const std::string snapshot_tmp = std::string(format::kSnapshotSuffix) + ".tmp";
  if (!options.read_only)
    for (const std::string& n : names)
      if (n.size() > snapshot_tmp.size() &&
          n.compare(n.size() - snapshot_tmp.size(), snapshot_tmp.size(), snapshot_tmp) == 0)
        SILT_TRY(RemoveFile(JoinPath(dir, n)));

  // Segments wholly below the recovery point were flushed; after a clean shutdown all were.
  size_t first_unflushed = 0;
  for (size_t i = 0; i < bases.size(); ++i)
    if (bases[i] <= options.recovery_point) first_unflushed = i;
  std::vector<Segment::LoadReport> reports;
  reports.reserve(bases.size());
  for (size_t i = 0; i < bases.size(); ++i) {
    SILT_ASSIGN_OR_RETURN(std::shared_ptr<Segment> seg,
                          Segment::Open(dir, Offset(bases[i]), options.read_only));
    bool trusted = options.clean_shutdown || i < first_unflushed;
    Segment::LoadReport& report = reports.emplace_back();
    // Past the recovery point nothing was fsynced: an invalid batch there ends the log.
    Offset cut_from = trusted ? Offset(INT64_MAX) : Offset(options.recovery_point);
    if (options.read_only && options.stop_at_damage) cut_from = Offset(0);
    SILT_TRY(seg->Load(trusted ? Segment::LoadMode::kTrusted : Segment::LoadMode::kFullScan,
                       i + 1 == bases.size(), config.index_interval_bytes, &report, cut_from));
    if (!impl->segments.empty() && impl->segments.back()->next_offset() > seg->base_offset())
      return Status::Corruption(seg->log_path() + ": segment starts at offset " +
                                std::to_string(bases[i]) + " but the previous one ends at " +
                                std::to_string(impl->segments.back()->next_offset().value()));
    if (report.cut_position >= 0) {
      impl->cuts.push_back({seg->log_path(), report.cut_position, report.torn_bytes,
                            report.cut_reason, report.quarantine_path,
                            trusted || seg->next_offset().value() < options.recovery_point});
    }
    const bool ends_log = report.cut_position >= 0 && i + 1 < bases.size();
    if (i + 1 < bases.size() && !ends_log) SILT_TRY(seg->OnBecomeInactive());
    impl->segments.push_back(std::move(seg));
    if (!ends_log) continue;
    // The log ends inside this segment, so every later one is past the cut (as Kafka, which
    // deletes them; here they are kept aside whole, their indexes dropped).
    for (size_t j = i + 1; j < bases.size(); ++j) {
      const std::string log_path = JoinPath(dir, SegmentFileName(Offset(bases[j]), format::kLogSuffix));
      int64_t size = 0;
      if (auto f = File::Open(log_path, File::kReadOnly); f.ok())
        if (auto n = f->Size(); n.ok()) size = *n;
      RecoveryCut cut{log_path, 0, size, "it follows a cut in an earlier segment", "",
                      impl->cuts.back().below_recovery_point};
      if (!options.read_only) {
        cut.quarantine_path = log_path + ".0.quarantined";
        SILT_TRY(RenameFile(log_path, cut.quarantine_path));
        for (const char* suffix : {format::kIndexSuffix, format::kTimeIndexSuffix}) {
          const std::string p = JoinPath(dir, SegmentFileName(Offset(bases[j]), suffix));
          if (PathExists(p)) SILT_TRY(RemoveFile(p));
        }
        impl->dir_dirty = true;
      }
      impl->cuts.push_back(std::move(cut));
    }
    bases.resize(i + 1);
    break;
  }

  Offset start(0);
  if (!impl->segments.empty()) start = impl->segments.front()->base_offset();
  if (impl->segments.empty()) {
    if (options.log_start_offset > 0) start = Offset(options.log_start_offset);
    if (!options.read_only) {
      SILT_ASSIGN_OR_RETURN(std::shared_ptr<Segment> seg, Segment::Create(dir, start));
      impl->segments.push_back(std::move(seg));
      impl->dir_dirty = true;
    }
  }
  Offset end = impl->segments.empty() ? start : impl->segments.back()->next_offset();
  if (options.log_start_offset > start.value())
    start = Offset(std::min(options.log_start_offset, end.value()));
  impl->log_start = start;
  impl->log_end.store(end.value());

  // Leader epochs: the checkpoint covers at least every batch below the recovery point (a
  // flush writes it before moving the recovery point). The batches rescanned above it may
  // start newer epochs than it names (appends since the last flush): those are taken from the
  // batches. A missing, empty or unreadable checkpoint is rebuilt from every batch.
  std::string epoch_path = impl->EpochPath();
  bool whole_rebuild = true;
  const bool listed = std::binary_search(names.begin(), names.end(),
                                         std::string(format::kLeaderEpochCheckpointFile));
  if (auto text = listed ? ReadFile(epoch_path) : Result<std::string>(Status::NotFound(""));
      text.ok()) {
    impl->epoch_file_exists = true;
    // (Kafka reads an empty one as no epochs; the batches say more.)
    if (text->empty()) {
      impl->epochs_dirty = true;
    } else if (Status p = ParseEpochCheckpoint(epoch_path, *text, &impl->epochs); p.ok()) {
      whole_rebuild = false;
    } else {
      impl->epochs.clear();
      impl->epochs_dirty = true;
    }
  } else if (!text.status().IsNotFound()) {
    return text.status();
  }
  {
    // Entries past the log end name epochs whose records are gone (a crash before they were
    // durable, or a checkpoint written before a truncation); the one starting exactly at the
    // log end stays, as a leader's does before its first append.
    size_t keep = impl->epochs.size();
    while (keep > 0 && impl->epochs[keep - 1].start_offset > end) --keep;
    if (keep != impl->epochs.size()) impl->epochs_dirty = true;
    impl->epochs.resize(keep);
  }
  // A rebuilt checkpoint is written by the flush below, even with no epochs found.
  if (whole_rebuild && end > start) impl->epochs_dirty = true;
  for (size_t i = 0; i < reports.size(); ++i) {  // (a segment just created holds nothing)
    std::vector<std::pair<int32_t, int64_t>> found;
    if (whole_rebuild && !reports[i].full_scan) {
      SILT_TRY(impl->segments[i]->CollectEpochStarts(&found));
    } else {
      found = reports[i].epoch_starts;
    }
    for (const auto& [epoch, at] : found)
      impl->AssignEpoch(epoch, std::max(Offset(at), start));
  }

  auto log = std::unique_ptr<PartitionLog>(new PartitionLog(std::move(impl)));
  Impl& im = *log->impl_;
  // A producer-state snapshot past the log end describes records that are gone (a crash before
  // they were durable): it must never be loaded, nor match records appended later.
  if (!options.read_only) {
    bool removed = false;
    for (const std::string& n : names) {
      int64_t o;
      if (!ParseSegmentFileName(n, format::kSnapshotSuffix, &o) || o <= end.value()) continue;
      SILT_TRY(RemoveFile(JoinPath(dir, n)));
      removed = true;
    }
    if (removed) SILT_TRY(SyncDir(dir));
  }
  int64_t rp = std::clamp(options.recovery_point, start.value(), end.value());
  im.recovery_point.store(rp);
  if (!options.read_only && (rp < end.value() || im.epochs_dirty)) {
    // Everything was checked; make it durable so the recovery point can move to the end (and
    // the epochs taken from the batches with it). A log with nothing above its recovery point
    // (a new or empty one among them) has nothing to make durable.
    std::lock_guard l(im.append_mu);
    SILT_TRY(im.FlushLocked());
  }
  return log;
}

// ---- append -----------------------------------------------------------------------------

Result<AppendResult> PartitionLog::Append(std::string* batch, int32_t leader_epoch) {
  return Append(batch->data(), batch->size(), leader_epoch);
}

Result<AppendResult> PartitionLog::Append(char* p, size_t size, int32_t leader_epoch) {
  Impl& im = *impl_;
  if (im.read_only) return Status::InvalidArgument(im.dir + " is open read-only");
  if (size < static_cast<size_t>(format::kBatchHeaderSize))
    return Status::InvalidArgument("batch of " + std::to_string(size) +
                                   " bytes is shorter than a batch header");
  const std::string_view batch(p, size);
  format::BatchHeader h = format::DecodeBatchHeader(batch);
  if (h.magic != format::kMagicV2 || h.size() != static_cast<int64_t>(size) ||
      h.last_offset_delta < 0)
    return Status::InvalidArgument("not a single well-framed v2 batch");

  Impl::WriterLock l(im);
  if (im.closed) return Status::InvalidArgument(im.dir + " is closed");
  if (static_cast<int64_t>(size) > im.config.max_message_bytes)
    return Status::TooLarge("batch of " + std::to_string(size) +
                            " bytes exceeds max.message.bytes " +
                            std::to_string(im.config.max_message_bytes));
  Offset base(im.log_end.load());
  // baseOffset and partitionLeaderEpoch lie outside the CRC: patch them in place.
  EncodeBE64(p + format::kBaseOffsetOffset, static_cast<uint64_t>(base.value()));
  if (leader_epoch >= 0)
    EncodeBE32(p + format::kPartitionLeaderEpochOffset, static_cast<uint32_t>(leader_epoch));
  AppendResult r;
  if (im.config.log_append_time()) {
    // maxTimestamp and attributes are covered by the CRC, so LogAppendTime (only) costs a
    // checksum of the batch, as in Kafka.
    int64_t now = NowMs().value();
    EncodeBE64(p + format::kMaxTimestampOffset, static_cast<uint64_t>(now));
    EncodeBE16(p + format::kAttributesOffset,
               static_cast<uint16_t>(h.attributes | format::kTimestampTypeBit));
    EncodeBE32(p + format::kCrcOffset, format::ComputeBatchCrc(batch));
    h.max_timestamp = now;
    r.log_append_time = now;
  }
  BatchInfo info;
  info.size = static_cast<int64_t>(size);
  info.base = base;
  info.last = base + h.last_offset_delta;
  info.max_timestamp = h.max_timestamp;
  // The one step that can fail, the segment append, undoes its own partial work; a new epoch
  // is recorded after it (see CommitEpochs).
  const std::vector<EpochEntry> added = im.NewEpochs({{leader_epoch, base}});
  if (Status s = im.AppendOneLocked(batch, info); !s.ok()) {
    l.Release();
    return s;
  }
  im.CommitEpochs(added);
  r.base_offset = info.base;
  r.last_offset = info.last;
  {
    std::shared_lock sl(im.mu);
    r.position = FilePos(im.active()->size() - info.size);
  }
  // The batch is in the log: a failed fsync of the flush policy is reported beside the result,
  // not as a failure (see the header).
  r.flush_error = im.MaybeFlushAfterAppend(std::max<int64_t>(1, h.records_count));
  l.Release();
  im.NotifyAppend();
  return r;
}

namespace {

// Reads exactly `length` bytes of `fd` at `position` into `out`.
Status PReadExactly(int fd, int64_t position, size_t length, char* out, const std::string& path) {
  for (size_t got = 0; got < length;) {
    ssize_t n = ::pread(fd, out + got, length - got, position + static_cast<int64_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno("read " + path, errno);
    if (n == 0)
      return Status::OutOfRange(path + ": data at position " + std::to_string(position) +
                                " is gone");
    got += static_cast<size_t>(n);
  }
  return Status::OK();
}

// Bytes copied by one copy_file_range step of AppendCopiedWithOffsets; they are read back at
// once, kCheckPiece at a time, into a buffer that stays in the CPU's cache, and checked as they
// stream through it (a batch need not fit: its CRC is extended piece by piece).
constexpr int64_t kCopyPiece = 512 << 10;
constexpr size_t kCheckPiece = 128 << 10;

// Read-back buffers, shared by every log: a replicate goes through many logs in turn, and each
// fresh page of a buffer costs a fault on its first touch.
std::mutex g_windows_mu;
std::vector<std::unique_ptr<char[]>> g_windows;

std::unique_ptr<char[]> TakeWindow() {
  std::lock_guard<std::mutex> l(g_windows_mu);
  if (g_windows.empty()) return std::make_unique_for_overwrite<char[]>(kCheckPiece);
  std::unique_ptr<char[]> w = std::move(g_windows.back());
  g_windows.pop_back();
  return w;
}

void GiveWindow(std::unique_ptr<char[]> w) {
  std::lock_guard<std::mutex> l(g_windows_mu);
  if (g_windows.size() < 4) g_windows.push_back(std::move(w));
}

// The check of a copy staged past the published end of a segment: reads back, from the
// segment's own file, the bytes [0, total) of the copy as they land and checks each batch as
// its bytes go by (framing, CRC, offsets increasing from `expect`; the first one's header equal
// to `head`, read from the source before the copy). Calls to Advance must come from one thread
// at a time.
class CopyChecker {
 public:
  struct Item {
    size_t at;  // position in the copy
    BatchInfo info;
    int32_t epoch;
    int32_t records;
  };
  CopyChecker(int fd, const std::string& path, int64_t start, Offset expect,
              std::string_view head)
      : fd_(fd), path_(path), start_(start), expect_(expect), head_(head),
        window_(TakeWindow()) {}
  ~CopyChecker() { GiveWindow(std::move(window_)); }

  // Reads back and checks the copy up to `copied` bytes. A batch not whole yet waits for the
  // next call; at the end of the copy, checked() < the copy's size says one was cut short.
  Status Advance(int64_t copied) {
    while (read_ < copied) {
      const size_t n = static_cast<size_t>(std::min<int64_t>(kCheckPiece, copied - read_));
      SILT_TRY(PReadExactly(fd_, start_ + read_, n, window_.get(), path_));
      read_ += static_cast<int64_t>(n);
      Status s = Consume(window_.get(), n);
      if (!s.ok()) return s.WithContext("copied batch at byte " + std::to_string(checked_));
    }
    return Status::OK();
  }
  int64_t checked() const { return checked_; }
  const std::vector<Item>& items() const { return items_; }

 private:
  // The next n bytes of the copy: a batch's header is gathered in header_ and checked whole,
  // the rest of the batch only goes through its CRC.
  Status Consume(const char* p, size_t n) {
    constexpr size_t kHeader = format::kBatchHeaderSize;
    while (n > 0) {
      if (have_ < kHeader) {
        const size_t k = std::min(n, kHeader - have_);
        std::memcpy(header_ + have_, p, k);
        have_ += k;
        p += k;
        n -= k;
        if (have_ < kHeader) break;
        SILT_TRY(StartBatch());
      } else {
        const size_t k = static_cast<size_t>(
            std::min<int64_t>(static_cast<int64_t>(n), batch_.size() - static_cast<int64_t>(have_)));
        crc_ = crc32c::Extend(crc_, p, k);
        have_ += k;
        p += k;
        n -= k;
      }
      if (static_cast<int64_t>(have_) == batch_.size()) SILT_TRY(EndBatch());
    }
    return Status::OK();
  }

  Status StartBatch() {
    const std::string_view h(header_, format::kBatchHeaderSize);
    SILT_TRY(format::CheckBatchHeader(h, limits_, &batch_));
    if (batch_.base() < expect_)
      return Status::InvalidArgument("batch at offset " + std::to_string(batch_.base_offset) +
                                     " is below the log end " + std::to_string(expect_.value()));
    if (checked_ == 0 && h.substr(0, head_.size()) != head_)
      return Status::OutOfRange("the source changed while it was copied (log truncated?)");
    crc_ = crc32c::Extend(0, header_ + format::kAttributesOffset,
                          format::kBatchHeaderSize - format::kAttributesOffset);
    return Status::OK();
  }

  Status EndBatch() {
    SILT_TRY(format::CheckBatchCrc(batch_, crc_));
    BatchInfo info;
    info.size = batch_.size();
    info.base = batch_.base();
    info.last = batch_.last();
    info.max_timestamp = batch_.max_timestamp;
    items_.push_back({static_cast<size_t>(checked_), info, batch_.partition_leader_epoch,
                      batch_.records_count});
    expect_ = batch_.next();
    checked_ += batch_.size();
    have_ = 0;
    return Status::OK();
  }

  const int fd_;
  const std::string& path_;
  const int64_t start_;  // the copy's position in the file
  Offset expect_;
  const std::string_view head_;
  format::FramingLimits limits_;
  std::unique_ptr<char[]> window_;  // kCheckPiece bytes
  char header_[format::kBatchHeaderSize];
  size_t have_ = 0;  // bytes of the batch at checked_ seen so far
  format::BatchHeader batch_;  // its header, once have_ >= kBatchHeaderSize
  uint32_t crc_ = 0;
  int64_t read_ = 0;
  int64_t checked_ = 0;
  std::vector<Item> items_;
};

}  // namespace

Result<AppendResult> PartitionLog::AppendCopiedWithOffsets(const std::vector<FileSlice>& from,
                                                           int64_t* batch_count,
                                                           int64_t* record_count) {
  Impl& im = *impl_;
  if (im.read_only) return Status::InvalidArgument(im.dir + " is open read-only");
  int64_t total = 0;
  for (const FileSlice& s : from) total += s.length;
  if (total <= 0) return Status::InvalidArgument("no batches to append");
  Impl::WriterLock l(im);
  if (im.closed) return Status::InvalidArgument(im.dir + " is closed");
  // The first batch's header, read from the source, says which segment the copy goes to (a new
  // one when the active one is full; a new log start for an empty log). The header is checked
  // again once copied.
  char head[format::kBatchHeaderSize];
  if (from.front().length < format::kBatchHeaderSize)
    return Status::Truncated("the first batch to copy is cut short");
  SILT_TRY(PReadExactly(from.front().file->fd(), from.front().position, sizeof head, head,
                        from.front().file->path()));
  const format::BatchHeader first = format::DecodeBatchHeader(std::string_view(head, sizeof head));
  // Nothing is decided on a header that is not one (a damaged source): no roll, no new start.
  if (first.magic != format::kMagicV2 ||
      first.batch_length < format::kBatchHeaderSize - format::kLogOverhead ||
      first.last_offset_delta < 0)
    return Status::Corruption("the first batch to copy has no valid header (magic " +
                              std::to_string(first.magic) + ", batchLength " +
                              std::to_string(first.batch_length) + ")");
  if (first.base() < Offset(im.log_end.load()))
    return Status::InvalidArgument("batch at offset " + std::to_string(first.base_offset) +
                                   " is below the log end " + std::to_string(im.log_end.load()));
  if (first.base().value() > im.log_end.load() && im.active()->size() == 0 &&
      im.segments.size() == 1) {
    // As in AppendWithOffsets: an empty log starts at the first offset it is given.
    SILT_TRY(im.NewSegmentLocked(first.base()));
    {
      std::unique_lock ul(im.mu);
      im.log_start = first.base();
      im.log_end.store(first.base().value());
      im.recovery_point.store(first.base().value());
    }
    if (im.checkpoint_hook)
      SILT_TRY(im.checkpoint_hook(first.base().value(), first.base().value()));
  }
  auto act = im.active();
  if (act->ShouldRoll(first.size(), first.max_timestamp, first.last(), im.config.segment_bytes,
                      im.config.segment_ms, im.config.segment_index_bytes)) {
    Offset base(im.log_end.load());
    if (first.last().value() - base.value() > INT32_MAX) base = first.base();
    SILT_TRY(im.NewSegmentLocked(base));
    act = im.active();
  }
  // Copied a piece at a time; each piece is read back from this log's file right after it
  // lands (while its pages are in the CPU's cache) and its whole batches are checked
  // (CopyChecker). (Checking on a second thread, a piece behind the copy, was measured: it
  // cost more CPU than it saved, and more time than copying two partitions at once.)
  const int64_t start = act->size();
  CopyChecker checker(act->log_file()->fd(), act->log_path(), start, Offset(im.log_end.load()),
                      std::string_view(head, sizeof head));
  {
    size_t slice = 0;
    int64_t in_slice = 0;  // bytes of from[slice] already copied
    int64_t copied = 0;
    // Copies the next piece (at most kCopyPiece bytes) into the active segment's staging area.
    auto copy_piece = [&]() -> Status {
      for (int64_t want = std::min(kCopyPiece, total - copied); want > 0;) {
        const FileSlice& f = from[slice];
        const int64_t n = std::min(want, f.length - in_slice);
        SILT_TRY(act->StageCopy(f.file->fd(), f.position + in_slice, n, copied));
        copied += n;
        want -= n;
        in_slice += n;
        if (in_slice == f.length) {
          ++slice;
          in_slice = 0;
        }
      }
      return Status::OK();
    };
    Status s;
    while (s.ok() && copied < total) {
      s = copy_piece();
      if (s.ok()) s = checker.Advance(copied);
    }
    if (s.ok() && checker.checked() < total)
      s = Status::Truncated("copied batch at byte " + std::to_string(checker.checked()) +
                            ": cut short");
    if (!s.ok()) {
      (void)act->DropStaged();
      return s;
    }
  }
  const std::vector<CopyChecker::Item>& items = checker.items();
  Offset old_end(im.log_end.load());
  std::vector<EpochEntry> starts;
  for (const CopyChecker::Item& it : items) starts.push_back({it.epoch, it.info.base});
  const std::vector<EpochEntry> added = im.NewEpochs(starts);
  AppendResult r;
  r.base_offset = items.front().info.base;
  r.last_offset = items.back().info.last;
  r.position = FilePos(start);
  int64_t records = 0;         // for the flush policy: at least one per batch
  int64_t copied_records = 0;  // recordsCount summed
  for (size_t i = 0; i < items.size(); ++i) {
    const CopyChecker::Item& it = items[i];
    Status s;
    if (i > 0 &&
        act->ShouldRoll(it.info.size, it.info.max_timestamp, it.info.last, im.config.segment_bytes,
                        im.config.segment_ms, im.config.segment_index_bytes)) {
      // The rest belongs in a new segment: it goes there as AppendWithOffsets writes, from
      // memory (a roll comes once per segment.bytes).
      std::string rest(static_cast<size_t>(total) - it.at, '\0');
      s = PReadExactly(act->log_file()->fd(), start + static_cast<int64_t>(it.at), rest.size(),
                       rest.data(), act->log_path());
      if (s.ok()) s = act->DropStaged();
      for (size_t j = i; j < items.size() && s.ok(); ++j) {
        s = im.AppendOneLocked(std::string_view(rest).substr(
                                   items[j].at - it.at, static_cast<size_t>(items[j].info.size)),
                               items[j].info);
        if (s.ok()) {
          records += std::max(1, items[j].records);
          copied_records += items[j].records;
        }
      }
      if (s.ok()) break;
    } else {
      s = act->PublishStaged(it.info, im.config.index_interval_bytes);
      if (s.ok()) {
        im.log_end.store(it.info.last.value() + 1);
        records += std::max(1, it.records);
        copied_records += it.records;
        continue;
      }
    }
    // Take back the batches of this call that did land.
    (void)act->DropStaged();
    if (Offset(im.log_end.load()) > old_end) {
      Status t = im.TruncateToLocked(old_end);
      if (!t.ok()) s = t.WithContext(s.ToString());
    }
    l.Release();
    return s;
  }
  (void)act->DropStaged();  // nothing is left past the published end: clears the mark
  im.CommitEpochs(added);
  r.flush_error = im.MaybeFlushAfterAppend(records);
  if (batch_count) *batch_count = static_cast<int64_t>(items.size());
  if (record_count) *record_count = copied_records;
  l.Release();
  im.NotifyAppend();
  return r;
}

Result<AppendResult> PartitionLog::AppendWithOffsets(std::string_view batches) {
  Impl& im = *impl_;
  if (im.read_only) return Status::InvalidArgument(im.dir + " is open read-only");
  Impl::WriterLock l(im);
  if (im.closed) return Status::InvalidArgument(im.dir + " is closed");
  // Check all of it before writing any of it.
  struct Item {
    size_t at;
    BatchInfo info;
    int32_t epoch;
    int32_t records;
  };
  std::vector<Item> items;
  Offset expect(im.log_end.load());
  format::FramingLimits limits;
  for (size_t at = 0; at < batches.size();) {
    format::BatchHeader h;
    Status s = format::CheckBatchFraming(batches.substr(at), limits, &h);
    if (!s.ok()) return s.WithContext("batch at byte " + std::to_string(at));
    if (h.base() < expect)
      return Status::InvalidArgument("batch at offset " + std::to_string(h.base_offset) +
                                     " is below the log end " +
                                     std::to_string(expect.value()));
    BatchInfo info;
    info.size = h.size();
    info.base = h.base();
    info.last = h.last();
    info.max_timestamp = h.max_timestamp;
    items.push_back({at, info, h.partition_leader_epoch, h.records_count});
    expect = h.next();
    at += static_cast<size_t>(h.size());
  }
  if (items.empty()) return Status::InvalidArgument("no batches to append");
  if (items.front().info.base.value() > im.log_end.load() && im.active()->size() == 0 &&
      im.segments.size() == 1) {
    // An empty log takes the first offset it is given as its start (a copy of a log whose
    // start has moved on), rather than holding a gap from 0.
    Offset first = items.front().info.base;
    SILT_TRY(im.NewSegmentLocked(first));
    {
      std::unique_lock ul(im.mu);
      im.log_start = first;
      im.log_end.store(first.value());
      im.recovery_point.store(first.value());
    }
    if (im.checkpoint_hook) SILT_TRY(im.checkpoint_hook(first.value(), first.value()));
  }
  Offset old_end(im.log_end.load());
  std::vector<EpochEntry> starts;
  for (const Item& it : items) starts.push_back({it.epoch, it.info.base});
  const std::vector<EpochEntry> added = im.NewEpochs(starts);
  AppendResult r;
  r.base_offset = items.front().info.base;
  r.last_offset = items.back().info.last;
  int64_t records = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const Item& it = items[i];
    Status s = im.AppendOneLocked(batches.substr(it.at, static_cast<size_t>(it.info.size)),
                                  it.info);
    if (!s.ok()) {
      if (i > 0) {
        // Take back the batches of this call that did land.
        Status t = im.TruncateToLocked(old_end);
        if (!t.ok()) s = t.WithContext(s.ToString());
      }
      l.Release();
      return s;
    }
    if (i == 0) {
      std::shared_lock sl(im.mu);
      r.position = FilePos(im.active()->size() - it.info.size);
    }
    records += std::max(1, it.records);
  }
  im.CommitEpochs(added);
  r.flush_error = im.MaybeFlushAfterAppend(records);
  l.Release();
  im.NotifyAppend();
  return r;
}

// ---- read -------------------------------------------------------------------------------

Result<ReadResult> PartitionLog::Read(Offset start, int64_t max_bytes, Offset upper_bound,
                                      bool min_one) const {
  const Impl& im = *impl_;
  std::shared_lock l(im.mu);
  Offset end(im.log_end.load());
  if (start < im.log_start || start > end)
    return Status::OutOfRange("offset " + std::to_string(start.value()) +
                              " is outside the log [" + std::to_string(im.log_start.value()) +
                              ", " + std::to_string(end.value()) + "]");
  ReadResult out;
  out.next_offset = start;
  if (start == end || start >= upper_bound) return out;
  // The segment holding `start`: the last one whose base is <= start.
  auto it = std::upper_bound(im.segments.begin(), im.segments.end(), start,
                             [](Offset o, const std::shared_ptr<Segment>& s) {
                               return o < s->base_offset();
                             });
  if (it != im.segments.begin()) --it;
  int64_t budget = std::max<int64_t>(max_bytes, 0);
  for (; it != im.segments.end(); ++it) {
    bool done = false;
    Offset from = std::max(start, out.next_offset);
    SILT_TRY((*it)->Read(from, &budget, upper_bound, min_one, &out, &done));
    if (done || budget == 0) break;
  }
  return out;
}

Result<Offset> PartitionLog::OffsetForTimestamp(int64_t ts) const {
  const Impl& im = *impl_;
  std::shared_lock l(im.mu);
  for (const auto& s : im.segments) {
    if (s->next_offset() <= im.log_start) continue;
    SILT_ASSIGN_OR_RETURN(std::optional<Offset> o, s->OffsetForTimestamp(ts));
    if (o) return std::max(*o, im.log_start);
  }
  return Status::NotFound("no record with a timestamp at or after " + std::to_string(ts));
}

// ---- accessors --------------------------------------------------------------------------

Offset PartitionLog::log_start_offset() const {
  std::shared_lock l(impl_->mu);
  return impl_->log_start;
}
Offset PartitionLog::log_end_offset() const { return Offset(impl_->log_end.load()); }
const std::vector<RecoveryCut>& PartitionLog::recovery_cuts() const { return impl_->cuts; }

bool PartitionLog::failed() const { return impl_->has_failed.load(); }

Offset PartitionLog::recovery_point() const { return Offset(impl_->recovery_point.load()); }

int64_t PartitionLog::size_bytes() const {
  std::shared_lock l(impl_->mu);
  int64_t n = 0;
  for (const auto& s : impl_->segments) n += s->size();
  return n;
}

std::vector<SegmentInfo> PartitionLog::Segments() const {
  std::shared_lock l(impl_->mu);
  std::vector<SegmentInfo> out;
  for (const auto& s : impl_->segments) {
    SegmentInfo i;
    i.base_offset = s->base_offset();
    i.next_offset = s->next_offset();
    i.size_bytes = s->size();
    i.largest_timestamp = s->max_timestamp();
    i.log_path = s->log_path();
    out.push_back(i);
  }
  return out;
}

const std::string& PartitionLog::dir() const { return impl_->dir; }
bool PartitionLog::read_only() const { return impl_->read_only; }
LogConfig PartitionLog::config() const {
  std::lock_guard l(impl_->config_mu);
  return impl_->config;
}

void PartitionLog::UpdateConfig(const LogConfig& config) {
  std::lock_guard l(impl_->append_mu);
  std::lock_guard c(impl_->config_mu);
  impl_->config = config;
}

void PartitionLog::SetAppendListener(std::function<void(Offset)> fn) {
  std::lock_guard l(impl_->listener_mu);
  impl_->listener = std::move(fn);
}

void PartitionLog::SetRollListener(std::function<void(Offset)> fn) {
  std::lock_guard l(impl_->listener_mu);
  impl_->roll_listener = std::move(fn);
}

std::vector<PartitionLog::EpochEntry> PartitionLog::LeaderEpochs() const {
  std::shared_lock l(impl_->mu);
  return impl_->epochs;
}

Result<PartitionLog::EpochEntry> PartitionLog::EndOffsetForEpoch(int32_t epoch) const {
  std::shared_lock l(impl_->mu);
  const auto& e = impl_->epochs;
  auto it = std::upper_bound(e.begin(), e.end(), epoch,
                             [](int32_t v, const EpochEntry& x) { return v < x.epoch; });
  if (it == e.begin())
    return Status::NotFound("no leader epoch at or below " + std::to_string(epoch));
  const EpochEntry& found = *(it - 1);
  Offset end = it == e.end() ? Offset(impl_->log_end.load()) : it->start_offset;
  return EpochEntry{found.epoch, end};
}

Status PartitionLog::AssignLeaderEpoch(int32_t epoch) {
  Impl& im = *impl_;
  if (im.read_only) return Status::InvalidArgument(im.dir + " is open read-only");
  if (epoch < 0) return Status::InvalidArgument("leader epoch " + std::to_string(epoch));
  std::lock_guard l(im.append_mu);
  if (!im.epochs.empty() && epoch <= im.epochs.back().epoch) return Status::OK();
  const Offset start(im.log_end.load());
  std::vector<EpochEntry> before;
  {
    std::unique_lock ul(im.mu);
    before = im.epochs;
    im.AssignEpoch(epoch, start);
  }
  Status s = im.WriteEpochsLocked();
  if (!s.ok()) {
    // Not durable: forget it, so the caller may retry and no append runs under an epoch the
    // checkpoint does not name.
    std::unique_lock ul(im.mu);
    im.epochs = std::move(before);
  }
  return s;
}

// ---- flush, roll, truncate, retention ---------------------------------------------------

Status PartitionLog::Flush() {
  std::lock_guard l(impl_->append_mu);
  return impl_->FlushLocked();
}

Status PartitionLog::MaybeFlush() {
  std::lock_guard l(impl_->append_mu);
  Impl& im = *impl_;
  if (im.read_only || im.recovery_point.load() == im.log_end.load()) return Status::OK();
  if (NowMs().value() - im.last_flush_ms >= im.config.flush_ms) return im.FlushLocked();
  return Status::OK();
}

Status PartitionLog::Roll() {
  Impl& im = *impl_;
  if (im.read_only) return Status::InvalidArgument(im.dir + " is open read-only");
  Impl::WriterLock l(im);
  return im.NewSegmentLocked(Offset(im.log_end.load()));
}

Status PartitionLog::Impl::DeleteSegmentsLocked(size_t count,
                                               std::unique_lock<std::shared_mutex>& ul) {
  // Called with append_mu and mu (exclusive, in `ul`) held; never deletes the active segment.
  // The segments leave the list first, under mu; their files are removed after mu is released,
  // so that readers (fetches, which take mu shared) never wait for an unlink or an fsync: a
  // reader that picked a segment up before keeps reading its open files. Oldest first; a
  // segment whose removal fails goes back at the head of the list with those after it, so the
  // list matches the files again (the log start moves back with them).
  count = std::min(count, segments.size() - 1);
  if (count == 0) return Status::OK();
  const Offset start_before = log_start;
  std::vector<std::shared_ptr<Segment>> leaving(segments.begin(),
                                                segments.begin() + static_cast<ptrdiff_t>(count));
  segments.erase(segments.begin(), segments.begin() + static_cast<ptrdiff_t>(count));
  if (log_start < segments.front()->base_offset()) log_start = segments.front()->base_offset();
  ul.unlock();
  Status error;
  size_t gone = 0;
  for (; gone < leaving.size(); ++gone) {
    error = leaving[gone]->Delete();
    if (!error.ok()) break;
  }
  ul.lock();
  if (gone < leaving.size()) {
    segments.insert(segments.begin(), leaving.begin() + static_cast<ptrdiff_t>(gone),
                    leaving.end());
    log_start = std::max(start_before, segments.front()->base_offset());
  }
  if (gone > 0) dir_dirty = true;
  if (recovery_point.load() < log_start.value()) recovery_point.store(log_start.value());
  if (gone > 0) {
    // Producer-state snapshots below the oldest segment go too, except the newest one at or
    // below the log start, from which the state can still be rebuilt (as Kafka keeps it).
    const int64_t oldest = segments.front()->base_offset().value();
    const int64_t start = log_start.value();
    int64_t keep = -1;
    auto names = ListDir(dir);
    if (names.ok())
      for (const std::string& n : *names) {
        int64_t o;
        if (ParseSegmentFileName(n, format::kSnapshotSuffix, &o) && o <= start)
          keep = std::max(keep, o);
      }
    ul.unlock();  // snapshots are written and removed under append_mu alone
    Status t = DeleteSnapshotsIf([&](int64_t o) { return o < oldest && o != keep; });
    ul.lock();
    if (error.ok()) error = t;
  }
  return error;
}

Status PartitionLog::Impl::DeleteSnapshotsIf(const std::function<bool(int64_t)>& drop) {
  if (read_only) return Status::OK();
  SILT_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(dir));
  bool removed = false;
  for (const std::string& n : names) {
    int64_t o;
    if (!ParseSegmentFileName(n, format::kSnapshotSuffix, &o) || !drop(o)) continue;
    SILT_TRY(RemoveFile(JoinPath(dir, n)));
    removed = true;
  }
  return removed ? SyncDir(dir) : Status::OK();
}

Status PartitionLog::Impl::TruncateToLocked(Offset offset) {
  // Called with append_mu held. Durable or loud: snapshots above the cut go first (a later
  // rebuild must never trust one), then the newest segments one at a time, then the cut in the
  // last one, then the fsyncs of that file and of the directory. A step that fails stops the
  // truncation with its error; the segment list still matches the files (the log end follows
  // the last remaining segment), so nothing truncated in memory can come back at a reopen.
  if (offset.value() >= log_end.load()) return Status::OK();
  SILT_TRY(DeleteSnapshotsIf([&](int64_t o) { return o > offset.value(); }));
  std::unique_lock l(mu);
  Status s;
  bool removed = false;
  if (offset < log_start || offset <= segments.front()->base_offset()) {
    // Nothing survives: start again, empty, at `offset`.
    while (s.ok() && segments.size() > 1) {
      s = segments.back()->Delete();
      if (s.ok()) {
        segments.pop_back();
        removed = true;
      }
    }
    if (s.ok() && segments.front()->base_offset() == offset) {
      s = segments.front()->TruncateTo(offset, config.index_interval_bytes).status();
    } else if (s.ok()) {
      auto fresh = Segment::Create(dir, offset);
      s = fresh.status();
      if (s.ok()) {
        s = segments.front()->Delete();
        if (s.ok()) {
          segments.front() = std::move(fresh).value();
        } else {
          (void)(*fresh)->Delete();
        }
        removed = true;
      }
    }
    if (s.ok()) log_start = offset;
  } else {
    while (s.ok() && segments.size() > 1 && segments.back()->base_offset() >= offset) {
      s = segments.back()->Delete();
      if (s.ok()) {
        segments.pop_back();
        removed = true;
      }
    }
    if (s.ok()) s = segments.back()->TruncateTo(offset, config.index_interval_bytes).status();
  }
  // The log end follows the segments, whether or not every step succeeded.
  const Offset end = segments.back()->next_offset();
  log_end.store(end.value());
  if (recovery_point.load() > end.value()) recovery_point.store(end.value());
  if (log_start > end) log_start = end;
  if (recovery_point.load() < log_start.value()) recovery_point.store(log_start.value());
  if (removed) dir_dirty = true;
  std::shared_ptr<Segment> last = segments.back();
  size_t keep = epochs.size();
  while (keep > 0 && epochs[keep - 1].start_offset >= end) --keep;
  const bool epochs_changed = keep != epochs.size();
  epochs.resize(keep);
  l.unlock();
  // Readers no longer wait: make the cut durable.
  if (s.ok()) s = last->Sync();
  if (s.ok() && dir_dirty) {
    s = SyncDir(dir);
    if (s.ok()) dir_dirty = false;
  }
  if (epochs_changed) {
    Status e = WriteEpochsLocked();
    if (s.ok()) s = e;
  }
  // Snapshots need not lie on batch boundaries: drop any left between the new end and `offset`.
  Status t = DeleteSnapshotsIf([&](int64_t o) { return o > end.value(); });
  if (s.ok()) s = t;
  return s;
}

Status PartitionLog::TruncateTo(Offset offset) {
  Impl& im = *impl_;
  if (im.read_only) return Status::InvalidArgument(im.dir + " is open read-only");
  std::lock_guard l(im.append_mu);
  SILT_TRY(im.TruncateToLocked(offset));
  int64_t end = im.log_end.load();
  if (end < im.checkpointed_rp && im.checkpoint_hook) {
    SILT_TRY(im.checkpoint_hook(end, log_start_offset().value()));
    im.checkpointed_rp = end;
  }
  return Status::OK();
}

Status PartitionLog::AdvanceLogStart(Offset offset) {
  Impl& im = *impl_;
  if (im.read_only) return Status::InvalidArgument(im.dir + " is open read-only");
  Impl::WriterLock l(im);
  if (offset.value() > im.log_end.load())
    return Status::OutOfRange("offset " + std::to_string(offset.value()) +
                              " is past the log end " + std::to_string(im.log_end.load()));
  {
    std::shared_lock sl(im.mu);
    if (offset <= im.log_start) return Status::OK();
  }
  // When everything goes, roll so that the old active segment can be deleted too.
  if (offset.value() == im.log_end.load() && im.active()->size() > 0)
    SILT_TRY(im.NewSegmentLocked(offset));
  std::unique_lock ul(im.mu);
  im.log_start = offset;
  size_t n = 0;
  while (n + 1 < im.segments.size() && im.segments[n]->next_offset() <= offset) ++n;
  Status s = im.DeleteSegmentsLocked(n, ul);
  im.log_start = std::max(im.log_start, offset);
  if (im.recovery_point.load() < offset.value()) im.recovery_point.store(offset.value());
  // Kafka's truncateFromStart: the epoch in force at the new start now begins there.
  size_t drop = 0;
  while (drop + 1 < im.epochs.size() && im.epochs[drop + 1].start_offset <= offset) ++drop;
  bool changed = drop > 0;
  im.epochs.erase(im.epochs.begin(), im.epochs.begin() + static_cast<ptrdiff_t>(drop));
  if (!im.epochs.empty() && im.epochs.front().start_offset < offset) {
    im.epochs.front().start_offset = offset;
    changed = true;
  }
  const int64_t new_start = im.log_start.value();
  ul.unlock();
  // The checkpoint reads the epochs, which only holders of append_mu change: its fsyncs need
  // not keep readers out.
  if (changed) SILT_TRY(im.WriteEpochsLocked());
  if (s.ok() && im.checkpoint_hook) {
    int64_t rp = std::min(im.checkpointed_rp, im.recovery_point.load());
    s = im.checkpoint_hook(std::max(rp, offset.value()), new_start);
  }
  return s;
}

Result<int> PartitionLog::ApplyRetention() {
  Impl& im = *impl_;
  if (im.read_only) return Status::InvalidArgument(im.dir + " is open read-only");
  std::lock_guard l(im.append_mu);
  std::unique_lock ul(im.mu);
  const int64_t now = NowMs().value();
  // Time and size retention apply to cleanup.policy delete (alone or with compact) only.
  const bool deletes = im.config.cleanup_policy.find("delete") != std::string::npos;
  int64_t total = 0;
  for (const auto& s : im.segments) total += s->size();
  int64_t excess =
      deletes && im.config.retention_bytes >= 0 ? total - im.config.retention_bytes : -1;
  size_t n = 0;
  while (n + 1 < im.segments.size()) {
    const auto& s = im.segments[n];
    bool below_start = s->next_offset() <= im.log_start;
    bool expired = deletes && im.config.retention_ms >= 0 &&
                   now - s->LargestTimestampOrMtime() > im.config.retention_ms;
    bool over = excess >= 0 && excess - s->size() >= 0;
    if (!below_start && !expired && !over) break;
    if (excess >= 0) excess -= s->size();
    ++n;
  }
  SILT_TRY(im.DeleteSegmentsLocked(n, ul));
  return static_cast<int>(n);
}

// ---- log cleaner hooks ------------------------------------------------------------------

std::vector<std::shared_ptr<Segment>> PartitionLog::ClosedSegments() const {
  std::shared_lock l(impl_->mu);
  if (impl_->segments.empty()) return {};
  return {impl_->segments.begin(), impl_->segments.end() - 1};
}

Status PartitionLog::ReplaceSegments(
    const std::vector<std::shared_ptr<Segment>>& old,
    const std::function<Result<std::shared_ptr<Segment>>()>& install) {
  Impl& im = *impl_;
  if (im.read_only) return Status::InvalidArgument(im.dir + " is open read-only");
  if (old.empty()) return Status::InvalidArgument("no segments to replace");
  std::lock_guard l(im.append_mu);
  if (im.closed) return Status::InvalidArgument(im.dir + " is closed");
  size_t first;
  {
    std::shared_lock sl(im.mu);
    auto it = std::find(im.segments.begin(), im.segments.end(), old.front());
    first = static_cast<size_t>(it - im.segments.begin());
    // Still a run of closed segments: retention, truncation or another swap would break it.
    bool intact = it != im.segments.end() && first + old.size() < im.segments.size();
    for (size_t i = 0; intact && i < old.size(); ++i) intact = im.segments[first + i] == old[i];
    if (!intact)
      return Status::Busy(im.dir + ": segments changed while the cleaner was rewriting them");
  }
  SILT_ASSIGN_OR_RETURN(std::shared_ptr<Segment> seg, install());
  std::unique_lock ul(im.mu);
  im.segments.erase(im.segments.begin() + static_cast<ptrdiff_t>(first),
                    im.segments.begin() + static_cast<ptrdiff_t>(first + old.size()));
  im.segments.insert(im.segments.begin() + static_cast<ptrdiff_t>(first), std::move(seg));
  return Status::OK();
}

Status PartitionLog::Close() {
  Impl& im = *impl_;
  std::lock_guard l(im.append_mu);
  if (im.closed) return Status::OK();
  im.closed = true;
  Status s;
  if (!im.read_only) {
    if (!im.segments.empty()) s = im.active()->OnBecomeInactive();
    Status f = im.FlushLocked();
    if (s.ok()) s = f;
  }
  std::unique_lock ul(im.mu);
  for (auto& seg : im.segments) seg->CloseFiles();
  return s;
}

void PartitionLog::CloseWithoutFlush() {
  std::lock_guard l(impl_->append_mu);
  impl_->closed = true;
}

}  // namespace silt::storage
