// Offline consumer over a local data directory (see local_consumer.h).
#include "client/local_consumer.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "base/clock.h"
#include "base/coding.h"
#include "base/file.h"
#include "format/batch_header.h"
#include "format/record_batch.h"
#include "offsets/local.h"
#include "storage/data_dir.h"
#include "storage/offset_checkpoint.h"
#include "storage/partition_log.h"

namespace silt::client {
namespace {

// Base offset of a segment file name ("00000000000000000042.log"), or -1.
int64_t SegmentBase(const std::string& name) {
  const size_t suffix = std::strlen(format::kLogSuffix);
  if (name.size() != format::kSegmentNameDigits + suffix ||
      name.compare(format::kSegmentNameDigits, suffix, format::kLogSuffix) != 0)
    return -1;
  int64_t v = -1;
  auto [p, ec] = std::from_chars(name.data(), name.data() + format::kSegmentNameDigits, v);
  if (ec != std::errc() || p != name.data() + format::kSegmentNameDigits) return -1;
  return v;
}

// Base offsets of the partition's segments, ascending.
std::vector<int64_t> ListSegments(const std::string& dir) {
  std::vector<int64_t> out;
  auto names = ListDir(dir);
  if (!names.ok()) return out;
  for (const auto& n : *names) {
    int64_t b = SegmentBase(n);
    if (b >= 0) out.push_back(b);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string SegmentPath(const std::string& dir, int64_t base) {
  std::string name = std::to_string(base);
  name.insert(0, format::kSegmentNameDigits - name.size(), '0');
  return JoinPath(dir, name + format::kLogSuffix);
}

}  // namespace

struct LocalConsumer::Part {
  int32_t id = 0;
  std::string dir;
  int64_t next = 0;        // next offset to deliver
  int64_t end = 0;         // the log end when opened: where a non-following read stops
  int64_t seg_base = -1;   // base offset of the open segment, -1 when none is open
  int fd = -1;
  int64_t pos = 0;         // read position in the open segment
  bool done = false;
  ~Part() {
    if (fd >= 0) ::close(fd);
  }
  // Opens segment `base` at `position`; false if it has gone (deleted by retention).
  Result<bool> OpenSegment(int64_t base, int64_t position) {
    std::string path = SegmentPath(dir, base);
    int nfd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (nfd < 0) {
      if (errno == ENOENT) return false;
      return Status::FromErrno("open " + path, errno);
    }
    if (fd >= 0) ::close(fd);
    fd = nfd;
    seg_base = base;
    pos = position;
    return true;
  }
};

LocalConsumer::LocalConsumer(std::string topic, const ConsumerOptions& options)
    : topic_(std::move(topic)), options_(options) {}

LocalConsumer::~LocalConsumer() {
  if (inotify_fd_ >= 0) ::close(inotify_fd_);
}

Result<std::unique_ptr<LocalConsumer>> LocalConsumer::Open(storage::DataDir* dir,
                                                           const std::string& topic,
                                                           const ConsumerOptions& options) {
  auto info = dir->GetTopic(topic);
  if (!info.ok()) {
    if (info.status().IsNotFound())
      return Status::NotFound("topic '" + topic + "' does not exist");
    return info.status();
  }
  ConsumerOptions opts = options;
  std::unique_ptr<offsets::LocalOffsets> store;
  if (!opts.group.empty()) {
    if (auto pid = offsets::RunningBrokerPid(dir->path()))
      return offsets::BrokerRunningError(dir->path(), *pid);
    SILT_ASSIGN_OR_RETURN(store, offsets::LocalOffsets::Open(dir));
    SILT_ASSIGN_OR_RETURN(std::optional<offsets::GroupState> g, store->Group(opts.group));
    if (g) {
      auto t = g->offsets.find(topic);
      if (t != g->offsets.end())
        for (const auto& [p, c] : t->second) opts.committed[p] = c.offset;
    }
  }
  std::unique_ptr<LocalConsumer> c(new LocalConsumer(topic, opts));
  c->group_store_ = std::move(store);
  if (c->group_store_) c->group_committed_ = opts.committed;
  // Partitions present here (a directory copied from a broker may hold only some).
  std::vector<int32_t> present = info->partition_ids;
  if (present.empty())
    for (int32_t p = 0; p < info->partitions; ++p) present.push_back(p);
  std::vector<int32_t> ids = options.partitions.empty() ? present : options.partitions;
  for (int32_t id : ids) {
    if (std::find(present.begin(), present.end(), id) == present.end())
      return Status::InvalidArgument("topic '" + topic + "' has " +
                                     std::to_string(info->partitions) +
                                     " partition(s); there is no partition " + std::to_string(id) +
                                     " here");
  }
  // A data dir that has been a cluster replica holds the high watermark of each of its
  // partitions at its last stop: beyond it the records may not be committed (a follower's log
  // can hold records its leader never committed and a new leader will cut), so a read that
  // stops at the end stops there, as a consumer of the cluster would.
  storage::OffsetCheckpointMap committed_ends;
  if (auto cp = storage::ReadOffsetCheckpoint(JoinPath(dir->path(), storage::kReplicationCheckpointFile));
      cp.ok()) {
    committed_ends = std::move(cp).value();
  }
  if (options.follow) {
    c->inotify_fd_ = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (c->inotify_fd_ < 0) return Status::FromErrno("inotify_init1", errno);
  }
  for (int32_t id : ids) {
    SILT_ASSIGN_OR_RETURN(storage::PartitionLog * log, dir->Partition(topic, id));
    if (opts.on_damage) {
      for (const storage::RecoveryCut& cut : log->recovery_cuts()) {
        const std::string what = cut.file + ": position " + std::to_string(cut.position) + ": " +
                                 cut.reason + "; " + std::to_string(cut.bytes) +
                                 " bytes from there not read";
        opts.on_damage(cut.below_recovery_point
                           ? what
                           : what + " (a torn write past the last fsync, cut at the next "
                                    "writable open)",
                       cut.below_recovery_point);
      }
    }
    auto part = std::make_unique<Part>();
    part->id = id;
    part->dir = log->dir();
    if (c->inotify_fd_ >= 0 &&
        ::inotify_add_watch(c->inotify_fd_, part->dir.c_str(),
                            IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE |
                                IN_DELETE_SELF | IN_MOVE_SELF) < 0)
      return Status::FromErrno("inotify_add_watch " + part->dir, errno);
    const int64_t start = log->log_start_offset().value();
    int64_t end = log->log_end_offset().value();
    if (auto hw = committed_ends.find({topic, id}); hw != committed_ends.end())
      end = std::clamp(hw->second, start, end);
    part->end = end;
    auto committed = opts.committed.find(id);
    if (committed != opts.committed.end()) {
      part->next = std::clamp(committed->second, start, end);
    } else {
      SILT_ASSIGN_OR_RETURN(
          part->next, ResolveOffset(options.start, start, end, [log](int64_t ts) -> Result<int64_t> {
            auto r = log->OffsetForTimestamp(ts);
            if (!r.ok()) return r.status();
            return r->value();
          }));
    }
    // Where to start reading: the batch holding `next`, or just after the last batch.
    int64_t position = 0;
    int64_t lookup = part->next < end ? part->next : (end > start ? end - 1 : -1);
    if (lookup >= 0) {
      SILT_ASSIGN_OR_RETURN(storage::ReadResult rr,
                            log->Read(Offset(lookup), 1, Offset(end), /*min_one=*/true));
      if (!rr.slices.empty()) {
        position = rr.slices.front().position;
        if (part->next >= end) position += rr.slices.front().length;
      }
    }
    // The segment holding `lookup` (for an empty log, the one where `next` will be written).
    const int64_t key = lookup >= 0 ? lookup : part->next;
    int64_t base = -1;
    for (const storage::SegmentInfo& s : log->Segments())
      if (s.base_offset.value() <= key) base = s.base_offset.value();
    if (lookup < 0) position = 0;
    if (base >= 0) {
      SILT_ASSIGN_OR_RETURN(bool opened, part->OpenSegment(base, position));
      if (!opened) part->seg_base = -1;
    }
    if (!options.follow && part->next >= end) part->done = true;
    c->parts_.push_back(std::move(part));
  }
  c->buf_size_ = std::max<size_t>(options.read_chunk_bytes, 64 * 1024);
  c->buf_.reset(new char[c->buf_size_]);
  return c;
}

std::map<int32_t, int64_t> LocalConsumer::Positions() const {
  std::map<int32_t, int64_t> out;
  for (const auto& p : parts_) out[p->id] = p->next;
  return out;
}

std::vector<int32_t> LocalConsumer::partitions() const {
  std::vector<int32_t> out;
  for (const auto& p : parts_) out.push_back(p->id);
  return out;
}

Status LocalConsumer::Pump(Part* p, const RecordFn& fn, const std::atomic<bool>* stop,
                           bool* progress, bool* stopped) {
  bool rechecked = false;  // the current segment was re-read after a newer one was seen
  for (int rounds = 0; rounds < 4 && !p->done; ++rounds) {
    if (p->seg_base < 0) {
      // No segment open: take the first one that can hold `next`.
      std::vector<int64_t> segs = ListSegments(p->dir);
      int64_t pick = -1;
      for (int64_t b : segs)
        if (b <= p->next) pick = b;
      if (pick < 0 && !segs.empty()) pick = segs.front();
      if (pick < 0) return Status::OK();
      SILT_ASSIGN_OR_RETURN(bool opened, p->OpenSegment(pick, 0));
      if (!opened) return Status::OK();
      if (pick > p->next) p->next = pick;  // records below it are gone
      *progress = true;
    }
    if (bulk_format_ && options_.parallel_min_bytes > 0) {
      struct stat st;
      if (::fstat(p->fd, &st) == 0 && st.st_size - p->pos >= options_.parallel_min_bytes) {
        ScanRange range;
        range.fd = p->fd;
        range.partition = p->id;
        range.start = p->pos;
        range.limit = st.st_size;
        range.min_offset = p->next;
        range.stop_offset = options_.follow ? INT64_MAX : p->end;
        range.chunk_bytes = options_.parallel_chunk_bytes;
        ScanResult r = ParallelScan(range, bulk_format_, bulk_emit_, stop);
        if (r.position > p->pos) {
          p->pos = r.position;
          *progress = true;
          rechecked = false;
        }
        p->next = std::max(p->next, r.next_offset);
        if (r.stopped) {
          *stopped = true;
          return Status::OK();
        }
        if (!options_.follow && p->next >= p->end) {
          p->done = true;
          return Status::OK();
        }
        // What is left (the tail, or whatever stopped the scan) is read below, one batch at a
        // time, which also reports any damage with its position.
      }
    }
    ssize_t n = ::pread(p->fd, buf_.get(), buf_size_, p->pos);
    if (n < 0) return Status::FromErrno("read " + SegmentPath(p->dir, p->seg_base), errno);
    std::string_view data(buf_.get(), static_cast<size_t>(n));
    size_t consumed = 0;
    while (consumed < data.size()) {
      std::string_view rest = data.substr(consumed);
      auto view = format::RecordBatchView::Parse(rest);
      if (!view.ok()) {
        if (view.status().IsTruncated()) {
          // A batch bigger than the buffer: grow the buffer to hold it (bounded by the file).
          if (consumed == 0 && rest.size() >= static_cast<size_t>(format::kLogOverhead) &&
              static_cast<size_t>(n) == buf_size_) {
            int64_t need = format::kLogOverhead +
                           static_cast<int32_t>(DecodeBE32(rest.data() + format::kBatchLengthOffset));
            struct stat st;
            if (::fstat(p->fd, &st) == 0 && need > static_cast<int64_t>(buf_size_) &&
                p->pos + need <= st.st_size) {
              buf_size_ = static_cast<size_t>(need);
              buf_.reset(new char[buf_size_]);
              return Pump(p, fn, stop, progress, stopped);
            }
          }
          break;  // the rest of this batch is not written yet
        }
        // All-zero bytes past the data (preallocated space) read as "nothing more yet".
        if (rest.size() >= static_cast<size_t>(format::kMagicPrefixSize) &&
            std::all_of(rest.begin(), rest.begin() + format::kMagicPrefixSize,
                        [](char c) { return c == 0; }))
          break;
        Status damage = view.status().WithContext(
            SegmentPath(p->dir, p->seg_base) + " at byte " +
            std::to_string(p->pos + static_cast<int64_t>(consumed)));
        if (!options_.stop_at_damage) return damage;
        if (options_.on_damage)
          options_.on_damage(damage.message() + "; the rest of partition " +
                                 std::to_string(p->id) + " not read",
                             true);
        p->pos += static_cast<int64_t>(consumed);
        p->done = true;
        return Status::OK();
      }
      const format::BatchHeader& h = view->header();
      const int64_t stop_at = options_.follow ? INT64_MAX : p->end;
      if (h.base_offset >= stop_at) {
        p->done = true;
        return Status::OK();
      }
      if (h.next().value() > p->next && !h.control()) {
        bool cut = false;
        Status st = view->ForEachRecord([&](const format::RecordView& r) {
          if (r.offset < p->next) return true;
          if (r.offset >= stop_at) {
            cut = true;
            return false;
          }
          if (!fn(p->id, r)) {
            *stopped = true;
            p->next = r.offset + 1;
            return false;
          }
          p->next = r.offset + 1;
          return true;
        });
        if (!st.ok())
          return st.WithContext(SegmentPath(p->dir, p->seg_base) + " at byte " +
                                std::to_string(p->pos + static_cast<int64_t>(consumed)));
        *progress = true;
        if (*stopped) return Status::OK();
        if (cut) {
          p->done = true;
          return Status::OK();
        }
      }
      p->next = std::max(p->next, h.next().value());
      consumed += static_cast<size_t>(h.size());
      if (!options_.follow && p->next >= p->end) {
        p->pos += static_cast<int64_t>(consumed);
        p->done = true;
        return Status::OK();
      }
      if (stop && stop->load(std::memory_order_relaxed)) break;
    }
    p->pos += static_cast<int64_t>(consumed);
    if (consumed > 0) {
      *progress = true;
      rechecked = false;
      if (stop && stop->load(std::memory_order_relaxed)) return Status::OK();
      continue;
    }
    // Nothing more in this segment for now. Move on only if a newer segment exists, and only
    // after one more read of this one: the writer finishes a segment before creating the next.
    std::vector<int64_t> segs = ListSegments(p->dir);
    auto newer = std::upper_bound(segs.begin(), segs.end(), p->seg_base);
    if (newer == segs.end()) {
      if (!options_.follow) p->done = true;  // the snapshot's end lies beyond what is on disk
      return Status::OK();
    }
    if (!rechecked) {
      rechecked = true;
      continue;
    }
    rechecked = false;
    for (; newer != segs.end(); ++newer) {
      SILT_ASSIGN_OR_RETURN(bool opened, p->OpenSegment(*newer, 0));
      if (opened) break;
    }
    if (newer == segs.end()) {
      p->seg_base = -1;
      return Status::OK();
    }
    *progress = true;
  }
  return Status::OK();
}

Status LocalConsumer::WaitForChange(const std::atomic<bool>* stop) {
  pollfd pfd{inotify_fd_, POLLIN, 0};
  int r = ::poll(&pfd, 1, options_.idle_check_ms);
  if (r < 0 && errno != EINTR) return Status::FromErrno("poll inotify", errno);
  if (r > 0) {
    alignas(inotify_event) char events[16 * 1024];
    while (::read(inotify_fd_, events, sizeof events) > 0) {
    }
  }
  for (const auto& p : parts_)
    if (!IsDirectory(p->dir))
      return Status::NotFound("partition directory " + p->dir + " was removed (topic deleted?)");
  return Status::OK();
}

Status LocalConsumer::Run(const RecordFn& fn, const std::function<Status()>& on_idle,
                          const std::atomic<bool>* stop) {
  for (;;) {
    bool progress = false, stopped = false, all_done = true;
    for (auto& p : parts_) {
      if (p->done) continue;
      SILT_TRY(Pump(p.get(), fn, stop, &progress, &stopped));
      if (stopped) return Status::OK();
      if (stop && stop->load()) return Status::OK();
      if (!p->done) all_done = false;
    }
    if (!options_.follow) {
      if (all_done || !progress) return Status::OK();
      continue;
    }
    if (progress) continue;
    if (on_idle) SILT_TRY(on_idle());
    if (group_store_ && MonotonicMs() - last_commit_ms_ >= options_.commit_interval_ms) {
      last_commit_ms_ = MonotonicMs();
      SILT_TRY(CommitGroup());
    }
    if (stop && stop->load()) return Status::OK();
    SILT_TRY(WaitForChange(stop));
    if (stop && stop->load()) return Status::OK();
  }
}

Status LocalConsumer::CommitGroup() {
  if (!group_store_) return Status::OK();
  std::map<int32_t, int64_t> pos = Positions();
  offsets::GroupOffsets moved;
  for (const auto& [p, o] : pos) {
    auto was = group_committed_.find(p);
    if (was == group_committed_.end() || was->second != o) moved[topic_][p].offset = o;
  }
  if (moved.empty()) return Status::OK();
  Status s = group_store_->Commit(options_.group, moved);
  if (!s.ok()) return s.WithContext("recording the position of group '" + options_.group + "'");
  group_committed_ = std::move(pos);
  return Status::OK();
}

Status LocalConsumer::Close(bool commit) { return commit ? CommitGroup() : Status::OK(); }

}  // namespace silt::client
