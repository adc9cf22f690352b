// A served partition: producer checks, offsets, high watermark and watchers over one log.
#include "broker/partition.h"

#include <algorithm>
#include <thread>

#include "base/clock.h"
#include "base/coding.h"
#include "broker/logging.h"
#include "broker/producer_recovery.h"
#include "format/batch_header.h"
#include "format/record_batch.h"
#include "storage/log_cleaner.h"
#include "storage/partition_log.h"

namespace silt::broker {

using protocol::ErrorCode;

namespace {

// Joins the leading slices that continue one another in the same file, so a partition's records
// go out as one sendfile(2) range. Later, non-adjacent slices are left for the next read.
FileSlice LeadingRange(const std::vector<FileSlice>& slices) {
  FileSlice out = slices.front();
  for (size_t i = 1; i < slices.size(); ++i) {
    const FileSlice& s = slices[i];
    if (s.file.get() != out.file.get() || s.position != out.position + out.length) break;
    out.length += s.length;
  }
  return out;
}

// Drops the dead registrations now and then, so a partition nobody writes to does not collect
// them, then adds `w`.
void AddWatcher(std::vector<std::weak_ptr<PartitionWatcher>>* v, std::weak_ptr<PartitionWatcher> w) {
  if (v->size() >= 64) {
    std::erase_if(*v, [](const std::weak_ptr<PartitionWatcher>& x) { return x.expired(); });
  }
  v->push_back(std::move(w));
}

}  // namespace

Partition::Partition(std::string topic, PartitionId partition,
                     std::shared_ptr<storage::PartitionLog> log, NodeId local, LeaderEpoch epoch)
    : topic_(std::move(topic)),
      partition_(partition),
      local_(local),
      log_(std::move(log)),
      log_dir_(log_->dir()),
      leader_epoch_(epoch),
      leader_(local),
      replicas_{local},
      isr_{local} {}

Partition::~Partition() = default;

Result<std::shared_ptr<Partition>> Partition::Open(std::string topic, PartitionId partition,
                                                   std::shared_ptr<storage::PartitionLog> log,
                                                   NodeId local, LeaderEpoch leader_epoch) {
  std::shared_ptr<Partition> p(
      new Partition(std::move(topic), partition, std::move(log), local, leader_epoch));
  {
    std::lock_guard<std::mutex> lock(p->produce_mu_);
    SILT_TRY(p->RebuildProducerStateLocked());
  }
  // One replica: everything in the log is on every in-sync replica.
  p->high_watermark_.store(p->log_->log_end_offset().value());
  // A snapshot of the producer state at each new segment, so that recovery replays only the
  // tail. Rolls happen inside this partition's appends, on the appending thread, which holds
  // produce_mu_: the table is read there without taking it again (and is then exactly the
  // state of the offsets below the new segment). A roll from any other thread (none today)
  // is skipped; a missing snapshot only makes recovery replay more.
  std::weak_ptr<Partition> weak = p;
  p->log_->SetRollListener([weak](Offset base) {
    auto self = weak.lock();
    if (!self || self->append_thread_.load() != std::this_thread::get_id()) return;
    Status s = self->producers_.WriteSnapshot(self->log_dir_, base);
    if (!s.ok()) LogWarn("producer snapshot of " + self->name() + ": " + s.ToString());
  });
  return p;
}

std::string Partition::name() const { return topic_ + "-" + std::to_string(partition_.value()); }

bool Partition::alive() const { return alive_.load(std::memory_order_acquire); }

Offset Partition::log_start_offset() const {
  std::shared_lock<std::shared_mutex> life(life_mu_);
  return log_ ? log_->log_start_offset() : kInvalidOffset;
}

Offset Partition::log_end_offset() const {
  std::shared_lock<std::shared_mutex> life(life_mu_);
  return log_ ? log_->log_end_offset() : kInvalidOffset;
}

Offset Partition::recovery_point() const {
  std::shared_lock<std::shared_mutex> life(life_mu_);
  return log_ ? log_->recovery_point() : kInvalidOffset;
}

int64_t Partition::size_bytes() const {
  std::shared_lock<std::shared_mutex> life(life_mu_);
  return log_ ? log_->size_bytes() : 0;
}

std::vector<Partition::ProducerSummary> Partition::ActiveProducers() const {
  std::vector<ProducerSummary> out;
  std::lock_guard<std::mutex> lock(produce_mu_);
  producers_.ForEach([&](ProducerId pid, const ProducerEntry& e) {
    ProducerSummary s;
    s.producer_id = pid;
    s.epoch = e.epoch;
    if (!e.batches.empty()) {
      s.last_sequence = e.batches.back().last_seq;
      s.last_timestamp = e.batches.back().max_timestamp;
    }
    out.push_back(s);
  });
  std::sort(out.begin(), out.end(), [](const ProducerSummary& a, const ProducerSummary& b) {
    return a.producer_id.value() < b.producer_id.value();
  });
  return out;
}

Offset Partition::high_watermark() const { return Offset(high_watermark_.load()); }

LeaderEpoch Partition::leader_epoch() const {
  std::lock_guard<std::mutex> lock(hw_mu_);
  return leader_epoch_;
}

storage::LogConfig Partition::config() const {
  std::shared_lock<std::shared_mutex> life(life_mu_);
  return log_ ? log_->config() : storage::LogConfig{};
}

Status Partition::RebuildProducerStateLocked() {
  // The newest good snapshot at or below the log end, then the batch headers after it: the
  // table is exactly what the log says.
  ProducerStateTable fresh;
  ProducerRecoveryReport report;
  SILT_TRY(RebuildProducerState(*log_, &fresh, &report));
  for (const Status& s : report.ignored) LogWarn(name() + ": " + s.ToString());
  producers_ = std::move(fresh);
  return Status::OK();
}

Status Partition::WriteProducerSnapshot() {
  std::shared_lock<std::shared_mutex> life(life_mu_);
  if (!log_ || offline_.load()) return Status::OK();
  std::lock_guard<std::mutex> lock(produce_mu_);
  return producers_.WriteSnapshot(log_dir_, log_->log_end_offset());
}

// Called with produce_mu_ held around one append to the log.
template <typename Fn>
auto Partition::AppendingThread(Fn&& fn) {
  append_thread_.store(std::this_thread::get_id());
  auto r = fn();
  append_thread_.store(std::thread::id());
  return r;
}

namespace {
std::atomic<bool> g_any_offline{false};
}  // namespace

bool Partition::AnyEverOffline() { return g_any_offline.load(std::memory_order_relaxed); }

Status Partition::TakeOfflineAfter(const Status& error) {
  // An fsync that should make appended batches durable failed (after which the kernel may have
  // dropped the dirty pages, so nothing written since the last good flush can be trusted), or
  // the disk failed a write. As Kafka does with a failed log directory, the partition stops
  // serving until a restart, whose recovery rescans from the last good recovery point.
  if (offline_.exchange(true))
    return Status::IOError(name() + " is offline");
  g_any_offline.store(true);
  LogError(name() + " is offline until restart: " + error.ToString());
  return Status::IOError(name() + " is offline after a failed write or flush: " +
                         error.message());
}

// ---- writes -----------------------------------------------------------------------------

ProduceAppend Partition::AppendFromProducer(char* batch, size_t size,
                                            const storage::LogConfig& config) {
  ProduceAppend out;
  auto fail = [&out](ErrorCode c, std::string m) {
    out.error = c;
    out.message = std::move(m);
    return out;
  };
  std::string_view bytes(batch, size);
  if (size < static_cast<size_t>(format::kBatchHeaderSize)) {
    return fail(ErrorCode::CORRUPT_MESSAGE, "batch shorter than its header");
  }
  const format::BatchHeader h = format::DecodeBatchHeader(bytes);
  {
    std::shared_lock<std::shared_mutex> life(life_mu_);
    if (!log_) return fail(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, "");
    if (Status k = storage::CheckKeysForCompaction(config, bytes); !k.ok()) {
      return fail(ErrorCode::INVALID_RECORD, k.message());
    }
    if (offline_.load()) return fail(ErrorCode::KAFKA_STORAGE_ERROR, name() + " is offline");
    std::lock_guard<std::mutex> lock(produce_mu_);
    // Under produce_mu_, which role changes take: this append sees one role and one epoch.
    if (!serves_as_leader()) {
      NoteRefusalLocked(h, ErrorCode::NOT_LEADER_OR_FOLLOWER);
      return fail(ErrorCode::NOT_LEADER_OR_FOLLOWER, name() + " is a follower here");
    }
    bool idempotent = h.producer_id >= 0 && h.base_sequence >= 0;
    if (idempotent && h.base_sequence != 0) {
      const ProducerEntry* known = producers_.Find(ProducerId(h.producer_id));
      const int64_t since = leading_since_ms_.load();
      if ((known == nullptr || known->epoch < 0) && since >= 0 &&
          MonotonicMs() - since < unknown_producer_grace_ms_.load()) {
        NoteRefusalLocked(h, ErrorCode::NOT_LEADER_OR_FOLLOWER);
        return fail(ErrorCode::NOT_LEADER_OR_FOLLOWER,
                    name() + " has no state for producer " + std::to_string(h.producer_id) +
                        " and took over as leader recently: its batches must start again at "
                        "the earliest unacknowledged one");
      }
    }
    if (idempotent) {
      ProducerBatch original;
      switch (producers_.Check(ProducerId(h.producer_id), h.producer_epoch, h.base_sequence,
                               h.last_sequence(), &original)) {
        case SequenceCheck::kDuplicate:
          // A retry of a batch already in the log: answer as the first time, append nothing.
          out.base_offset = Offset(original.base_offset);
          out.last_offset = Offset(original.last_offset);
          out.log_append_time = original.append_time;
          out.log_start_offset = log_->log_start_offset();
          return out;
        case SequenceCheck::kOutOfOrder:
          if (const Refusal* r = RefusalBeforeLocked(h)) {
            return fail(r->error,
                        "producer " + std::to_string(h.producer_id) + ": its batch at sequence " +
                            std::to_string(r->sequence) + " was refused; this one, at sequence " +
                            std::to_string(h.base_sequence) + ", waits for it to be sent again");
          }
          if (GapMayBeInFlightLocked(h)) {
            return fail(ErrorCode::NOT_LEADER_OR_FOLLOWER,
                        name() + " took over as leader recently and producer " +
                            std::to_string(h.producer_id) + "'s batch at sequence " +
                            std::to_string(h.base_sequence) +
                            " leaves a gap: the batches before it must come first");
          }
          return fail(ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER,
                      "sequence " + std::to_string(h.base_sequence) +
                          " out of order for producer " + std::to_string(h.producer_id));
        case SequenceCheck::kFenced:
          return fail(ErrorCode::INVALID_PRODUCER_EPOCH,
                      "producer epoch " + std::to_string(h.producer_epoch) + " is stale");
        case SequenceCheck::kAppend:
          break;
      }
    }
    int32_t epoch = leader_epoch().value();
    auto appended = AppendingThread([&] { return log_->Append(batch, size, epoch); });
    if (!appended.ok()) {
      if (log_->failed()) return fail(ErrorCode::KAFKA_STORAGE_ERROR,
                                      TakeOfflineAfter(appended.status()).message());
      LogError("append to " + name() + ": " + appended.status().ToString());
      return fail(protocol::ErrorCodeFromStatus(appended.status()), appended.status().message());
    }
    if (idempotent) {
      ProducerBatch pb;
      pb.first_seq = h.base_sequence;
      pb.last_seq = h.last_sequence();
      pb.base_offset = appended->base_offset.value();
      pb.last_offset = appended->last_offset.value();
      pb.append_time = appended->log_append_time;
      pb.max_timestamp = appended->log_append_time >= 0 ? appended->log_append_time : h.max_timestamp;
      producers_.Record(ProducerId(h.producer_id), h.producer_epoch, pb);
      if (!refused_.empty()) refused_.erase(h.producer_id);
      if (!gap_answered_.empty()) gap_answered_.erase(h.producer_id);
    }
    if (!appended->flush_error.ok()) {
      // In the log (and in producer state, so a retry is not appended twice), but not durable.
      Status s = TakeOfflineAfter(appended->flush_error);
      return fail(ErrorCode::KAFKA_STORAGE_ERROR, s.message());
    }
    out.base_offset = appended->base_offset;
    out.last_offset = appended->last_offset;
    out.log_append_time = appended->log_append_time;
    out.log_start_offset = log_->log_start_offset();
  }
  OnLogEndMoved();
  return out;
}

Partition::MirrorAppend Partition::AppendMirrored(char* batches, size_t size, Offset expected) {
  MirrorAppend out;
  auto fail = [&out](ErrorCode c, std::string m) {
    out.error = c;
    out.message = std::move(m);
    return out;
  };
  {
    std::shared_lock<std::shared_mutex> life(life_mu_);
    if (!log_) return fail(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, "");
    if (offline_.load()) return fail(ErrorCode::KAFKA_STORAGE_ERROR, name() + " is offline");
    std::lock_guard<std::mutex> lock(produce_mu_);
    out.log_end = log_->log_end_offset();
    if (!is_leader()) return fail(ErrorCode::NOT_LEADER_OR_FOLLOWER, name() + " is a follower here");
    // Every batch checked (framing, magic 2, CRC) before anything is written or patched.
    std::string_view all(batches, size);
    std::vector<std::pair<size_t, format::BatchHeader>> found;
    const format::FramingLimits limits;
    for (size_t at = 0; at < all.size();) {
      format::BatchHeader h;
      Status st = format::CheckBatchFraming(all.substr(at), limits, &h);
      if (!st.ok()) {
        return fail(ErrorCode::CORRUPT_MESSAGE,
                    "batch at byte " + std::to_string(at) + ": " + st.message());
      }
      if (!found.empty() && h.base() < found.back().second.next()) {
        return fail(ErrorCode::CORRUPT_MESSAGE, "batch at offset " + std::to_string(h.base_offset) +
                                                    " overlaps the batch before it");
      }
      found.emplace_back(at, h);
      at += static_cast<size_t>(h.size());
    }
    if (found.empty()) return out;  // nothing to append: the log end is the answer
    if (expected != out.log_end) {
      return fail(ErrorCode::SILT_OFFSET_MISMATCH,
                  "expected offset " + std::to_string(expected.value()) + " but " + name() +
                      " ends at " + std::to_string(out.log_end.value()));
    }
    if (found.front().second.base() < out.log_end) {
      return fail(ErrorCode::SILT_OFFSET_MISMATCH,
                  "first batch starts at offset " +
                      std::to_string(found.front().second.base_offset) + ", below the log end " +
                      std::to_string(out.log_end.value()));
    }
    const int32_t epoch = leader_epoch().value();
    for (auto& [at, h] : found) {
      EncodeBE32(batches + at + format::kPartitionLeaderEpochOffset, static_cast<uint32_t>(epoch));
      h.partition_leader_epoch = epoch;
    }
    // Not marked as the appending thread, as in AppendAsFollower: a roll inside a multi-batch
    // append would otherwise snapshot producer state lacking this call's earlier batches.
    auto appended = log_->AppendWithOffsets(all);
    if (!appended.ok()) {
      if (log_->failed()) (void)TakeOfflineAfter(appended.status());
      LogError("mirror append to " + name() + ": " + appended.status().ToString());
      out.log_end = log_->log_end_offset();
      return fail(protocol::ErrorCodeFromStatus(appended.status()), appended.status().message());
    }
    for (const auto& [at, h] : found) producers_.Replay(h);
    out.last_offset = appended->last_offset;
    out.log_end = log_->log_end_offset();
    if (!appended->flush_error.ok()) {
      Status st = TakeOfflineAfter(appended->flush_error);
      return fail(ErrorCode::KAFKA_STORAGE_ERROR, st.message());
    }
  }
  OnLogEndMoved();
  return out;
}

void Partition::NoteRetriableRefusal(std::string_view batch, ErrorCode error) {
  if (batch.size() < static_cast<size_t>(format::kBatchHeaderSize) ||
      batch[format::kMagicOffset] != format::kMagicV2) {
    return;
  }
  const format::BatchHeader h = format::DecodeBatchHeader(batch);
  if (h.producer_id < 0 || h.base_sequence < 0) return;
  std::lock_guard<std::mutex> lock(produce_mu_);
  NoteRefusalLocked(h, error);
}

void Partition::NoteRefusalLocked(const format::BatchHeader& h, ErrorCode error) {
  if (h.producer_id < 0 || h.base_sequence < 0) return;
  const int64_t now = MonotonicMs();
  if (refused_.size() >= 4096) {  // bounded: old entries go first, then all
    std::erase_if(refused_,
                  [now](const auto& kv) { return now - kv.second.at_ms >= kRefusalMemoryMs; });
    if (refused_.size() >= 4096) refused_.clear();
  }
  Refusal& r = refused_[h.producer_id];
  // The earliest refused sequence of an epoch is the one the producer must send again first.
  if (r.at_ms != 0 && r.epoch == h.producer_epoch && now - r.at_ms < kRefusalMemoryMs &&
      r.sequence <= h.base_sequence) {
    r.at_ms = now;
    return;
  }
  r = Refusal{h.producer_epoch, h.base_sequence, error, now};
}

bool Partition::GapMayBeInFlightLocked(const format::BatchHeader& h) {
  const int64_t since = leading_since_ms_.load();
  const int64_t now = MonotonicMs();
  if (since < 0 || now - since >= unknown_producer_grace_ms_.load()) return false;
  const ProducerEntry* e = producers_.Find(ProducerId(h.producer_id));
  if (e == nullptr || e->epoch != h.producer_epoch || e->batches.empty()) return false;
  // Only a batch that starts past the next sequence: a rewind or an overlap is no batch in
  // flight elsewhere, and answering it retriably would only make the client repeat it.
  if (static_cast<int64_t>(h.base_sequence) <= static_cast<int64_t>(e->batches.back().last_seq) + 1)
    return false;
  if (gap_answered_.size() >= 4096) gap_answered_.clear();
  const int64_t first_answer = gap_answered_.try_emplace(h.producer_id, now).first->second;
  return now - first_answer < kGapGraceMs;
}

const Partition::Refusal* Partition::RefusalBeforeLocked(const format::BatchHeader& h) const {
  auto it = refused_.find(h.producer_id);
  if (it == refused_.end()) return nullptr;
  const Refusal& r = it->second;
  if (r.epoch != h.producer_epoch || h.base_sequence <= r.sequence) return nullptr;
  if (MonotonicMs() - r.at_ms >= kRefusalMemoryMs) return nullptr;
  return &r;
}

Result<Offset> Partition::AppendInternal(std::string* batch) {
  Offset base;
  {
    std::shared_lock<std::shared_mutex> life(life_mu_);
    if (!log_) return Status::NotFound(name() + " was deleted");
    if (offline_.load()) return Status::IOError(name() + " is offline");
    std::lock_guard<std::mutex> lock(produce_mu_);
    if (!serves_as_leader()) return Status::NotLeader(name() + " is a follower here");
    int32_t epoch = leader_epoch().value();
    auto appended = AppendingThread([&] { return log_->Append(batch, epoch); });
    if (!appended.ok()) {
      if (log_->failed()) return TakeOfflineAfter(appended.status());
      return appended.status();
    }
    storage::AppendResult& r = *appended;
    base = r.base_offset;
    if (!r.flush_error.ok()) return TakeOfflineAfter(r.flush_error);
  }
  OnLogEndMoved();
  return base;
}

Result<Offset> Partition::DeleteRecordsBefore(int64_t offset, ErrorCode* error) {
  *error = ErrorCode::NONE;
  std::shared_lock<std::shared_mutex> life(life_mu_);
  if (!log_) {
    *error = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION;
    return Status::NotFound(name() + " was deleted");
  }
  Offset hw = high_watermark();
  // -1 means "up to the high watermark"; nothing above it may be deleted (it is not committed).
  Offset target = offset == -1 ? hw : Offset(offset);
  if (target.value() < 0 || target > hw) {
    *error = ErrorCode::OFFSET_OUT_OF_RANGE;
    return Status::OutOfRange("offset " + std::to_string(offset) + " is beyond the high watermark " +
                              std::to_string(hw.value()));
  }
  if (target > log_->log_start_offset()) {
    Status s = log_->AdvanceLogStart(target);
    if (!s.ok()) {
      *error = protocol::ErrorCodeFromStatus(s);
      return s;
    }
  }
  return log_->log_start_offset();
}

Status Partition::TruncateTo(Offset offset) {
  std::shared_lock<std::shared_mutex> life(life_mu_);
  if (!log_) return Status::NotFound(name() + " was deleted");
  std::lock_guard<std::mutex> lock(produce_mu_);
  SILT_TRY(log_->TruncateTo(offset));
  // Producer state must describe the log as it now is: batches cut here are forgotten.
  SILT_TRY(RebuildProducerStateLocked());
  int64_t end = log_->log_end_offset().value();
  std::lock_guard<std::mutex> hw(hw_mu_);
  if (high_watermark_.load() > end) high_watermark_.store(end);
  return Status::OK();
}

// ---- reads ------------------------------------------------------------------------------

PartitionRead Partition::Read(Offset offset, int64_t max_bytes, bool min_one,
                              ReadIsolation isolation) const {
  PartitionRead out;
  std::shared_lock<std::shared_mutex> life(life_mu_);
  if (!log_) {
    out.error = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION;
    return out;
  }
  if (offline_.load()) {
    out.error = ErrorCode::KAFKA_STORAGE_ERROR;
    return out;
  }
  // The high watermark first: it never passes the log end read after it.
  out.high_watermark = high_watermark();
  out.log_start_offset = log_->log_start_offset();
  out.log_end_offset = log_->log_end_offset();
  if (out.high_watermark > out.log_end_offset) out.high_watermark = out.log_end_offset;
  if (offset < out.log_start_offset || offset > out.log_end_offset) {
    out.error = ErrorCode::OFFSET_OUT_OF_RANGE;
    return out;
  }
  Offset bound = isolation == ReadIsolation::kCommitted ? out.high_watermark : out.log_end_offset;
  if (offset >= bound || (max_bytes <= 0 && !min_one)) return out;
  auto r = log_->Read(offset, std::max<int64_t>(max_bytes, 0), bound, min_one);
  if (!r.ok()) {
    if (r.status().code() == Status::Code::kOutOfRange) {
      out.error = ErrorCode::OFFSET_OUT_OF_RANGE;
    } else {
      LogError("read from " + name() + ": " + r.status().ToString());
      out.error = protocol::ErrorCodeFromStatus(r.status());
    }
    return out;
  }
  if (!r->slices.empty()) out.records = LeadingRange(r->slices);
  return out;
}

namespace {

// The first record at or after `ts` below `bound`: (offset, timestamp), or (-1, -1).
std::pair<int64_t, int64_t> LookupTimestamp(const storage::PartitionLog& log, int64_t ts,
                                            Offset bound) {
  auto off = log.OffsetForTimestamp(ts);
  if (!off.ok() || *off >= bound) return {-1, -1};
  // The index finds a batch; the exact record and its timestamp are inside it.
  auto r = log.Read(*off, 1, bound, true);
  if (r.ok()) {
    auto bytes = r->ReadAll();
    if (bytes.ok()) {
      std::string_view rest = *bytes;
      while (!rest.empty()) {
        auto view = format::RecordBatchView::Parse(rest);
        if (!view.ok()) break;
        std::pair<int64_t, int64_t> found{-1, -1};
        const format::BatchHeader& h = view->header();
        if (h.log_append_time()) {
          if (h.max_timestamp >= ts && h.base_offset >= off->value()) {
            return {h.base_offset, h.max_timestamp};
          }
        } else {
          Status s = view->ForEachRecord([&](const format::RecordView& rec) {
            if (rec.offset >= off->value() && rec.timestamp >= ts) {
              found = {rec.offset, rec.timestamp};
              return false;
            }
            return true;
          });
          if (s.ok() && found.first >= 0) {
            return found.first < bound.value() ? found : std::pair<int64_t, int64_t>{-1, -1};
          }
        }
        rest.remove_prefix(view->bytes().size());
      }
    }
  }
  return {off->value(), ts};
}

}  // namespace

OffsetAnswer Partition::ListOffset(int64_t timestamp) const {
  constexpr int64_t kLatest = -1;
  constexpr int64_t kEarliest = -2;
  constexpr int64_t kMaxTimestamp = -3;
  constexpr int64_t kEarliestLocal = -4;
  constexpr int64_t kLatestTiered = -5;
  OffsetAnswer out;
  std::shared_lock<std::shared_mutex> life(life_mu_);
  if (!log_) {
    out.error = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION;
    return out;
  }
  Offset hw = std::min(high_watermark(), log_->log_end_offset());
  // A new leader whose high watermark has not yet reached its epoch's start does not know what
  // is committed (the old leader's last records may or may not be): Kafka answers
  // OFFSET_NOT_AVAILABLE for the latest offset, and for a timestamp found nowhere below it.
  const Offset epoch_start = leader_epoch_start_offset();
  const bool unsure = epoch_start.value() >= 0 && epoch_start > hw;
  if (timestamp == kLatest) {
    if (unsure) {
      out.error = ErrorCode::OFFSET_NOT_AVAILABLE;
      return out;
    }
    out.offset = hw;
  } else if (timestamp == kEarliest || timestamp == kEarliestLocal) {
    // With no tiered storage the earliest local offset (v8+, KIP-405) is the log start.
    out.offset = log_->log_start_offset();
  } else if (timestamp == kLatestTiered) {
    // v9+ (KIP-1005): nothing is tiered, so there is no such offset. Kafka answers -1.
    out.offset = Offset(-1);
    return out;
  } else if (timestamp == kMaxTimestamp) {
    // v7+ (KIP-734): the first record carrying the largest timestamp in the log. Each
    // segment knows its largest; the record is then found as for any timestamp. Like Kafka, a
    // record at or past the high watermark is not answered (-1).
    int64_t max_ts = -1;
    const Offset start = log_->log_start_offset();
    for (const storage::SegmentInfo& seg : log_->Segments()) {
      if (seg.next_offset > start) max_ts = std::max(max_ts, seg.largest_timestamp);
    }
    if (max_ts < 0) {
      out.offset = Offset(-1);
      return out;
    }
    auto [off, ts] = LookupTimestamp(*log_, max_ts, hw);
    out.offset = Offset(off);
    out.timestamp = ts;
  } else if (timestamp < 0) {
    out.error = ErrorCode::UNSUPPORTED_VERSION;
    return out;
  } else {
    auto [off, ts] = LookupTimestamp(*log_, timestamp, hw);
    out.offset = Offset(off);
    out.timestamp = ts;
    if (off < 0 && unsure) {
      out.error = ErrorCode::OFFSET_NOT_AVAILABLE;
      return out;
    }
  }
  if (out.offset.value() < 0) return out;
  // The epoch of the leader that wrote the offset's batch (the latest epoch at the log end).
  LeaderEpoch epoch = leader_epoch();
  for (const auto& e : log_->LeaderEpochs()) {
    if (e.start_offset <= out.offset) epoch = LeaderEpoch(e.epoch);
  }
  out.leader_epoch = epoch;
  return out;
}

Status Partition::ForEachBatch(Offset upper_bound,
                               const std::function<Status(std::string_view batch)>& fn) const {
  std::shared_lock<std::shared_mutex> life(life_mu_);
  if (!log_) return Status::NotFound(name() + " was deleted");
  Offset next = log_->log_start_offset();
  Offset end = std::min(upper_bound, log_->log_end_offset());
  while (next < end) {
    SILT_ASSIGN_OR_RETURN(storage::ReadResult r, log_->Read(next, 4 << 20, end, true));
    if (r.slices.empty() || r.next_offset <= next) break;
    SILT_ASSIGN_OR_RETURN(std::string bytes, r.ReadAll());
    std::string_view rest = bytes;
    while (rest.size() >= static_cast<size_t>(format::kBatchHeaderSize)) {
      format::BatchHeader h = format::DecodeBatchHeader(rest);
      if (h.size() < format::kBatchHeaderSize || static_cast<size_t>(h.size()) > rest.size()) {
        return Status::Corruption(name() + ": batch at offset " + std::to_string(h.base_offset) +
                                  " runs past the read");
      }
      SILT_TRY(fn(rest.substr(0, h.size())));
      rest.remove_prefix(h.size());
    }
    next = r.next_offset;
  }
  return Status::OK();
}

// ---- replication seam -------------------------------------------------------------------

Partition::Follower* Partition::FindFollowerLocked(NodeId id) {
  for (Follower& f : followers_) {
    if (f.state.id == id) return &f;
  }
  return nullptr;
}

void Partition::SyncFollowersLocked() {
  std::vector<Follower> next;
  for (NodeId r : replicas_) {
    if (r == local_) continue;
    Follower* f = FindFollowerLocked(r);
    if (f) {
      next.push_back(*f);
    } else {
      Follower fresh;
      fresh.state.id = r;
      next.push_back(fresh);
    }
  }
  followers_ = std::move(next);
}

void Partition::SetIsr(std::vector<NodeId> isr) {
  bool moved;
  Offset local_end = log_end_offset();  // before hw_mu_: see MaybeAdvanceHighWatermarkLocked
  {
    std::lock_guard<std::mutex> lock(hw_mu_);
    isr_ = std::move(isr);
    for (NodeId n : isr_) {
      if (std::find(replicas_.begin(), replicas_.end(), n) == replicas_.end()) {
        replicas_.push_back(n);
      }
    }
    SyncFollowersLocked();
    moved = MaybeAdvanceHighWatermarkLocked(local_end);
  }
  if (moved) Notify(WatchOffset::kHighWatermark);
}

void Partition::RecordFollowerLogEnd(NodeId follower, Offset log_end) {
  bool moved;
  Offset local_end = log_end_offset();  // before hw_mu_: see MaybeAdvanceHighWatermarkLocked
  {
    std::lock_guard<std::mutex> lock(hw_mu_);
    if (std::find(replicas_.begin(), replicas_.end(), follower) == replicas_.end()) {
      replicas_.push_back(follower);
      SyncFollowersLocked();
    }
    FindFollowerLocked(follower)->state.log_end = log_end;
    moved = MaybeAdvanceHighWatermarkLocked(local_end);
  }
  if (moved) Notify(WatchOffset::kHighWatermark);
}

bool Partition::MaybeAdvanceHighWatermarkLocked(Offset local_end) {
  // A follower's high watermark is the leader's (UpdateFollowerHighWatermark), not its own.
  if (!leading_ || local_end.value() < 0) return false;
  Offset hw = local_end;
  for (NodeId n : isr_) {
    if (n == local_) continue;
    // A member that has not fetched since this replica began leading holds it back (-1).
    Offset theirs = kInvalidOffset;
    for (const Follower& f : followers_) {
      if (f.state.id == n) theirs = f.state.log_end;
    }
    hw = std::min(hw, theirs);
  }
  // The high watermark never moves back (a follower restarting reports a smaller log end).
  if (hw.value() <= high_watermark_.load()) return false;
  high_watermark_.store(hw.value());
  return true;
}

void Partition::OnLogEndMoved() {
  bool moved;
  Offset local_end = log_end_offset();  // before hw_mu_: see MaybeAdvanceHighWatermarkLocked
  {
    std::lock_guard<std::mutex> lock(hw_mu_);
    moved = MaybeAdvanceHighWatermarkLocked(local_end);
  }
  Notify(WatchOffset::kLogEnd);
  if (moved) Notify(WatchOffset::kHighWatermark);
}

// ---- delayed operations -----------------------------------------------------------------

void Partition::Watch(WatchOffset which, std::weak_ptr<PartitionWatcher> w) {
  std::lock_guard<std::mutex> lock(watch_mu_);
  AddWatcher(which == WatchOffset::kLogEnd ? &log_end_watchers_ : &hw_watchers_, std::move(w));
}

void Partition::Notify(WatchOffset which) {
  std::vector<std::weak_ptr<PartitionWatcher>> ws;
  {
    std::lock_guard<std::mutex> lock(watch_mu_);
    ws.swap(which == WatchOffset::kLogEnd ? log_end_watchers_ : hw_watchers_);
  }
  for (auto& w : ws) {
    if (auto p = w.lock()) p->OnPartitionChanged();
  }
}

void Partition::WakeAll() {
  Notify(WatchOffset::kLogEnd);
  Notify(WatchOffset::kHighWatermark);
}

void Partition::Shutdown() {
  alive_.store(false, std::memory_order_release);
  {
    std::unique_lock<std::shared_mutex> life(life_mu_);
    log_.reset();
  }
  WakeAll();
}

Status Partition::MaybeFlush() {
  std::shared_lock<std::shared_mutex> life(life_mu_);
  return log_ ? log_->MaybeFlush() : Status::OK();
}

Result<int> Partition::ApplyRetention() {
  std::shared_lock<std::shared_mutex> life(life_mu_);
  return log_ ? log_->ApplyRetention() : Result<int>(0);
}

// ---- roles -----------------------------------------------------------------------------

bool Partition::is_leader() const {
  std::lock_guard<std::mutex> lock(hw_mu_);
  return leading_;
}

void Partition::SetLeaderLease(int64_t until_ms) { lease_until_ms_.store(until_ms); }

bool Partition::serves_as_leader() const {
  const int64_t until = lease_until_ms_.load();
  return is_leader() && (until < 0 || MonotonicMs() <= until);
}

NodeId Partition::leader() const {
  std::lock_guard<std::mutex> lock(hw_mu_);
  return leader_;
}

int32_t Partition::partition_epoch() const {
  std::lock_guard<std::mutex> lock(hw_mu_);
  return partition_epoch_;
}

std::vector<NodeId> Partition::isr() const {
  std::lock_guard<std::mutex> lock(hw_mu_);
  return isr_;
}

std::vector<NodeId> Partition::replicas() const {
  std::lock_guard<std::mutex> lock(hw_mu_);
  return replicas_;
}

Offset Partition::leader_epoch_start_offset() const {
  std::lock_guard<std::mutex> lock(hw_mu_);
  return leading_ ? leader_epoch_start_ : kInvalidOffset;
}

int32_t Partition::EffectiveMinIsr(const storage::LogConfig& config) const {
  std::lock_guard<std::mutex> lock(hw_mu_);
  return std::min<int32_t>(config.min_insync_replicas,
                           static_cast<int32_t>(std::max<size_t>(replicas_.size(), 1)));
}

ErrorCode Partition::CheckLeaderEpoch(int32_t current_leader_epoch, bool leader_only) const {
  std::lock_guard<std::mutex> lock(hw_mu_);
  if (current_leader_epoch >= 0) {
    if (current_leader_epoch < leader_epoch_.value()) return ErrorCode::FENCED_LEADER_EPOCH;
    if (current_leader_epoch > leader_epoch_.value()) return ErrorCode::UNKNOWN_LEADER_EPOCH;
  }
  if (leader_only) {
    const int64_t until = lease_until_ms_.load();
    if (!leading_ || (until >= 0 && MonotonicMs() > until)) return ErrorCode::NOT_LEADER_OR_FOLLOWER;
  }
  return ErrorCode::NONE;
}

bool Partition::role_set() const {
  std::lock_guard<std::mutex> lock(hw_mu_);
  return role_set_;
}

void Partition::SetHighWatermarkHint(Offset hint) {
  std::lock_guard<std::mutex> lock(hw_mu_);
  hw_hint_ = hint;
}

void Partition::SetUnknownProducerGraceMs(int64_t ms) { unknown_producer_grace_ms_.store(ms); }

Status Partition::BecomeLeader(LeaderEpoch epoch, int32_t partition_epoch,
                               std::vector<NodeId> replicas, std::vector<NodeId> isr) {
  bool moved = false;
  {
    std::shared_lock<std::shared_mutex> life(life_mu_);
    if (!log_) return Status::NotFound(name() + " was deleted");
    // Held throughout: no append runs between the epoch's checkpoint entry and the switch.
    std::lock_guard<std::mutex> produce(produce_mu_);
    bool new_epoch;
    bool new_leader;
    {
      std::lock_guard<std::mutex> lock(hw_mu_);
      if (role_set_ && partition_epoch < partition_epoch_) {
        LogInfo(name() + ": become-leader at partition epoch " + std::to_string(partition_epoch) +
                " skipped, already at " + std::to_string(partition_epoch_));
        return Status::OK();
      }
      if (epoch < leader_epoch_) {
        return Status::InvalidArgument(name() + ": leader epoch " + std::to_string(epoch.value()) +
                                       " is older than the current " +
                                       std::to_string(leader_epoch_.value()));
      }
      new_epoch = !role_set_ || epoch > leader_epoch_;
      new_leader = !role_set_ || !leading_;
    }
    const Offset end = log_->log_end_offset();
    if (new_epoch && !log_->read_only()) {
      // Before any batch of the epoch: a follower that asks where an older epoch ended is
      // answered from this entry even if nothing has been appended in this epoch yet.
      SILT_TRY(log_->AssignLeaderEpoch(epoch.value()));
    }
    const int64_t now = MonotonicMs();
    std::lock_guard<std::mutex> lock(hw_mu_);
    if (!role_set_) {
      // Beyond the restart hint the log may hold records that were never committed.
      Offset start = hw_hint_.value() >= 0 ? hw_hint_ : log_->log_start_offset();
      high_watermark_.store(std::min(start, end).value());
      role_set_ = true;
    }
    replicas_ = std::move(replicas);
    isr_ = std::move(isr);
    partition_epoch_ = partition_epoch;
    if (new_leader) {
      leading_since_ms_.store(now);
      gap_answered_.clear();  // each leadership has its own leader-change grace
    }
    leading_ = true;
    leader_ = local_;
    SyncFollowersLocked();
    if (new_epoch) {
      leader_epoch_ = epoch;
      leader_epoch_start_ = end;
      // Kafka's makeLeader/resetReplicaState.
      for (Follower& f : followers_) {
        bool in_sync = std::find(isr_.begin(), isr_.end(), f.state.id) != isr_.end();
        f.state.last_caught_up_ms = in_sync ? now : 0;
        f.state.last_fetch_ms = in_sync ? now : 0;
        if (new_leader) {
          f.state.log_end = kInvalidOffset;
          f.state.log_start = kInvalidOffset;
          f.state.last_fetch_ms = 0;
          f.last_fetch_leader_log_end = kInvalidOffset;
        } else {
          f.last_fetch_leader_log_end = end;
        }
      }
      LogInfo(name() + " leads epoch " + std::to_string(epoch.value()) + " from offset " +
              std::to_string(end.value()) + ", high watermark " +
              std::to_string(high_watermark_.load()));
    }
    moved = MaybeAdvanceHighWatermarkLocked(end);
  }
  (void)moved;
  // Waiting fetches re-check the epoch and role; acks=all waiters the high watermark.
  WakeAll();
  return Status::OK();
}

Status Partition::BecomeFollower(LeaderEpoch epoch, int32_t partition_epoch, NodeId leader) {
  {
    std::shared_lock<std::shared_mutex> life(life_mu_);
    if (!log_) return Status::NotFound(name() + " was deleted");
    std::lock_guard<std::mutex> produce(produce_mu_);
    const Offset end = log_->log_end_offset();
    std::lock_guard<std::mutex> lock(hw_mu_);
    if (role_set_ && partition_epoch < partition_epoch_) {
      LogInfo(name() + ": become-follower at partition epoch " + std::to_string(partition_epoch) +
              " skipped, already at " + std::to_string(partition_epoch_));
      return Status::OK();
    }
    if (epoch < leader_epoch_) {
      return Status::InvalidArgument(name() + ": leader epoch " + std::to_string(epoch.value()) +
                                     " is older than the current " +
                                     std::to_string(leader_epoch_.value()));
    }
    if (!role_set_) {
      Offset start = hw_hint_.value() >= 0 ? hw_hint_ : log_->log_start_offset();
      high_watermark_.store(std::min(start, end).value());
      role_set_ = true;
    }
    if (leading_ || epoch != leader_epoch_ || leader != leader_) {
      LogInfo(name() + " follows " + std::to_string(leader.value()) + " in epoch " +
              std::to_string(epoch.value()) + " from offset " + std::to_string(end.value()));
    }
    leading_ = false;
    leader_ = leader;
    leader_epoch_ = epoch;
    partition_epoch_ = partition_epoch;
    leader_epoch_start_ = kInvalidOffset;
    isr_.clear();
    followers_.clear();
  }
  // acks=all produces and client fetches waiting here answer NOT_LEADER_OR_FOLLOWER now.
  WakeAll();
  return Status::OK();
}

// ---- follower side ----------------------------------------------------------------------

Result<Offset> Partition::AppendAsFollower(std::string_view batches) {
  Offset end;
  {
    std::shared_lock<std::shared_mutex> life(life_mu_);
    if (!log_) return Status::NotFound(name() + " was deleted");
    if (offline_.load()) return Status::IOError(name() + " is offline");
    std::lock_guard<std::mutex> lock(produce_mu_);
    if (is_leader()) return Status::InvalidArgument(name() + " leads: it takes no replica append");
    // The whole batches, checked (framing, magic 2, CRC) before anything is written.
    std::vector<format::BatchHeader> headers;
    size_t whole = 0;
    const format::FramingLimits limits;
    while (batches.size() - whole >= static_cast<size_t>(format::kBatchHeaderSize)) {
      std::string_view rest = batches.substr(whole);
      format::BatchHeader h = format::DecodeBatchHeader(rest);
      // A fetch stops at max_bytes, possibly inside a batch: the partial one comes next time.
      if (h.size() >= format::kBatchHeaderSize && static_cast<size_t>(h.size()) > rest.size()) {
        break;
      }
      Status s = format::CheckBatchFraming(rest, limits, &h);
      if (!s.ok()) {
        return Status::Corruption(name() + ": replicated batch at offset " +
                                  std::to_string(h.base_offset) + ": " + s.message());
      }
      headers.push_back(h);
      whole += static_cast<size_t>(h.size());
    }
    const Offset log_end = log_->log_end_offset();
    if (headers.empty()) return log_end;
    const bool empty = log_->log_start_offset() == log_end;
    if (headers.front().base() != log_end && !(empty && headers.front().base() > log_end)) {
      return Status::InvalidArgument(name() + ": replicated batch at offset " +
                                     std::to_string(headers.front().base_offset) +
                                     " does not start at the log end " +
                                     std::to_string(log_end.value()));
    }
    // Not marked as the appending thread: a roll inside a multi-batch append would otherwise
    // snapshot producer state that lacks this call's earlier batches (see Open).
    auto appended = log_->AppendWithOffsets(batches.substr(0, whole));
    if (!appended.ok()) {
      if (log_->failed()) return TakeOfflineAfter(appended.status());
      LogError("replica append to " + name() + ": " + appended.status().ToString());
      return appended.status();
    }
    // As a replica: no sequence checks, but the state a new leader needs for retries.
    for (const format::BatchHeader& h : headers) producers_.Replay(h);
    if (!appended->flush_error.ok()) return TakeOfflineAfter(appended->flush_error);
    end = log_->log_end_offset();
  }
  OnLogEndMoved();
  return end;
}

void Partition::UpdateFollowerHighWatermark(Offset leader_high_watermark) {
  Offset local_end = log_end_offset();
  bool moved = false;
  {
    std::lock_guard<std::mutex> lock(hw_mu_);
    if (leading_) return;
    Offset hw = std::min(leader_high_watermark, local_end);
    if (hw.value() > high_watermark_.load()) {
      high_watermark_.store(hw.value());
      moved = true;
    }
  }
  if (moved) Notify(WatchOffset::kHighWatermark);
}

Result<Partition::EpochEnd> Partition::EndOffsetForEpoch(LeaderEpoch epoch) const {
  std::shared_lock<std::shared_mutex> life(life_mu_);
  if (!log_) return Status::NotFound(name() + " was deleted");
  auto undefined = [&] {
    return Status::NotFound(name() + ": no end offset for leader epoch " +
                            std::to_string(epoch.value()));
  };
  if (epoch.value() < 0) return undefined();
  const std::vector<storage::PartitionLog::EpochEntry> epochs = log_->LeaderEpochs();
  const Offset end = log_->log_end_offset();
  if (epochs.empty()) return undefined();
  // The latest epoch is the one still being written to: it ends at the log end.
  if (epochs.back().epoch == epoch.value()) return EpochEnd{epoch, end};
  auto higher = std::upper_bound(
      epochs.begin(), epochs.end(), epoch.value(),
      [](int32_t v, const storage::PartitionLog::EpochEntry& e) { return v < e.epoch; });
  if (higher == epochs.end()) return undefined();
  // Older than every known epoch: its records are gone, the first known epoch starts after.
  if (higher == epochs.begin()) return EpochEnd{epoch, higher->start_offset};
  return EpochEnd{LeaderEpoch((higher - 1)->epoch), higher->start_offset};
}

// ---- leader side: followers -------------------------------------------------------------

void Partition::RecordFollowerFetch(NodeId follower, Offset fetch_offset, Offset log_start,
                                    int64_t now_ms) {
  bool moved;
  Offset leader_end = log_end_offset();  // before hw_mu_: see MaybeAdvanceHighWatermarkLocked
  {
    std::lock_guard<std::mutex> lock(hw_mu_);
    if (!leading_) return;
    Follower* f = FindFollowerLocked(follower);
    if (!f) return;
    FollowerState& st = f->state;
    // Kafka's Replica.updateFetchStateOrThrow: a follower fetching at the leader's log end is
    // caught up now; one fetching at the end the leader had when it last fetched was caught up
    // then (so a busy partition's followers, always a little behind, still count as caught up).
    if (fetch_offset >= leader_end) {
      st.last_caught_up_ms = std::max(st.last_caught_up_ms, now_ms);
    } else if (f->last_fetch_leader_log_end.value() >= 0 &&
               fetch_offset >= f->last_fetch_leader_log_end) {
      st.last_caught_up_ms = std::max(st.last_caught_up_ms, st.last_fetch_ms);
    }
    st.log_end = fetch_offset;
    st.log_start = log_start;
    st.last_fetch_ms = now_ms;
    f->last_fetch_leader_log_end = std::max(leader_end, f->last_fetch_leader_log_end);
    moved = MaybeAdvanceHighWatermarkLocked(leader_end);
  }
  if (moved) Notify(WatchOffset::kHighWatermark);
}

std::vector<Partition::FollowerState> Partition::Followers() const {
  std::lock_guard<std::mutex> lock(hw_mu_);
  std::vector<FollowerState> out;
  if (!leading_) return out;
  for (const Follower& f : followers_) out.push_back(f.state);
  return out;
}

}  // namespace silt::broker
