#include "replicate/dir_source.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <thread>

#include "base/clock.h"
#include "base/coding.h"
#include "base/file.h"
#include "offsets/local.h"
#include "storage/data_dir.h"
#include "storage/offset_checkpoint.h"
#include "storage/partition_log.h"

namespace silt::replicate {
namespace {

bool Internal(const std::string& topic) { return topic.rfind("__", 0) == 0; }

// The 20-digit segment file name of `base` in `dir`.
std::string SegmentPath(const std::string& dir, int64_t base) {
  char name[32];
  std::snprintf(name, sizeof name, "%020lld.log", static_cast<long long>(base));
  return JoinPath(dir, name);
}

int64_t FileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return -1;
  return st.st_size;
}

class DirSource final : public Source {
 public:
  DirSource(std::string path, std::unique_ptr<storage::DataDir> dir)
      : path_(std::move(path)), dir_(std::move(dir)) {
    LoadHighWatermarks();
  }

  Result<std::vector<TopicDesc>> ListTopics() override {
    // A fresh look at the directory, for topics created since it was opened (the first call,
    // right after the open, looks at what the open found).
    std::unique_ptr<storage::DataDir> now;
    if (listed_) {
      storage::DataDir::Options o;
      o.read_only = true;
      o.create = false;
      SILT_ASSIGN_OR_RETURN(now, storage::DataDir::Open(path_, o));
    }
    listed_ = true;
    std::vector<TopicDesc> out;
    for (const auto& t : (now ? now : dir_)->ListTopics()) {
      if (Internal(t.name)) continue;
      if (auto known = dir_->GetTopic(t.name); !known.ok() || known->partitions != t.partitions)
        (void)dir_->RefreshTopic(t.name);
      TopicDesc d;
      d.name = t.name;
      d.partitions = t.partitions;
      d.configs = t.configs;
      out.push_back(std::move(d));
    }
    std::sort(out.begin(), out.end(),
              [](const TopicDesc& a, const TopicDesc& b) { return a.name < b.name; });
    if (now) LoadHighWatermarks();
    return out;
  }

  Result<Bounds> GetBounds(const std::string& topic, int32_t partition) override {
    SILT_ASSIGN_OR_RETURN(Part * p, Get(topic, partition));
    SILT_TRY(MaybeReopen(topic, partition, p));
    return BoundsOf(topic, partition, *p);
  }

  Result<Chunk> Read(const std::string& topic, int32_t partition, Offset from, int64_t max_bytes,
                     int max_wait_ms) override {
    Part* p = nullptr;
    Chunk c;
    SILT_TRY(Locate(topic, partition, from, max_wait_ms, &p, &c.bounds));
    c.next_offset = from;
    if (from == c.bounds.end) return c;
    SILT_ASSIGN_OR_RETURN(auto r, p->log->Read(from, max_bytes, c.bounds.end, /*min_one=*/true));
    c.batches = std::move(spare_);
    SILT_TRY(r.ReadInto(&c.batches));
    c.next_offset = c.batches.empty() ? from : r.next_offset;
    return c;
  }

  Result<FileChunk> ReadFiles(const std::string& topic, int32_t partition, Offset from,
                              int64_t max_bytes) override {
    Part* p = nullptr;
    FileChunk c;
    SILT_TRY(Locate(topic, partition, from, 0, &p, &c.bounds));
    c.next_offset = from;
    if (from == c.bounds.end) return c;
    SILT_ASSIGN_OR_RETURN(auto r, p->log->Read(from, max_bytes, c.bounds.end, /*min_one=*/true));
    if (r.slices.empty()) return c;
    // baseOffset: the first 8 bytes of the first batch.
    char base[8];
    const FileSlice& s = r.slices.front();
    if (s.length < static_cast<int64_t>(sizeof base) ||
        ::pread(s.file->fd(), base, sizeof base, s.position) != static_cast<ssize_t>(sizeof base))
      return Status::OutOfRange(s.file->path() + ": data at position " +
                                std::to_string(s.position) + " is gone (log truncated)");
    c.first_base = Offset(static_cast<int64_t>(DecodeBE64(base)));
    c.files = std::move(r.slices);
    c.next_offset = r.next_offset;
    return c;
  }

  void Recycle(std::string&& buffer) override {
    if (buffer.capacity() > spare_.capacity()) spare_ = std::move(buffer);
  }

  Result<Offset> OffsetForTime(const std::string& topic, int32_t partition,
                               int64_t ts_ms) override {
    SILT_ASSIGN_OR_RETURN(Part * p, Get(topic, partition));
    Bounds b = BoundsOf(topic, partition, *p);
    auto o = p->log->OffsetForTimestamp(ts_ms);
    if (!o.ok()) {
      if (o.status().IsNotFound()) return b.end;
      return o.status();
    }
    return std::clamp(*o, b.log_start, b.end);
  }

  Result<std::vector<GroupOffsets>> ListGroupOffsets() override {
    std::vector<GroupOffsets> out;
    // RefreshTopic: the offsets topic may have been created since the dir was opened.
    if (!dir_->RefreshTopic("__consumer_offsets").ok() && !dir_->HasLegacyGroups()) return out;
    SILT_ASSIGN_OR_RETURN(auto store, offsets::LocalOffsets::Open(dir_.get()));
    SILT_ASSIGN_OR_RETURN(auto view, store->Load());
    for (const auto& [group, state] : view) {
      GroupOffsets g;
      g.group = group;
      for (const auto& [topic, parts] : state.offsets)
        for (const auto& [partition, c] : parts)
          if (c.offset >= 0) g.offsets.push_back({topic, partition, Offset(c.offset), c.metadata});
      if (!g.offsets.empty()) out.push_back(std::move(g));
    }
    return out;
  }

 private:
  struct Part {
    std::shared_ptr<storage::PartitionLog> log;
  };

  Result<Part*> Get(const std::string& topic, int32_t partition) {
    auto key = std::make_pair(topic, partition);
    auto it = parts_.find(key);
    if (it != parts_.end()) return &it->second;
    SILT_ASSIGN_OR_RETURN(auto log, dir_->SharedPartition(topic, partition));
    Part& p = parts_[key];
    p.log = std::move(log);
    return &p;
  }

  // The partition and its bounds for a read from `from` (waiting up to `max_wait_ms` for more
  // when `from` is at the end); OutOfRange when `from` is outside them.
  Status Locate(const std::string& topic, int32_t partition, Offset from, int max_wait_ms,
                Part** part, Bounds* bounds) {
    SILT_ASSIGN_OR_RETURN(Part * p, Get(topic, partition));
    Bounds b = BoundsOf(topic, partition, *p);
    if (from >= b.end) {
      const int64_t deadline = MonotonicMs() + max_wait_ms;
      for (;;) {
        SILT_TRY(MaybeReopen(topic, partition, p));
        b = BoundsOf(topic, partition, *p);
        if (from < b.end || MonotonicMs() >= deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    }
    const std::string where = topic + "/" + std::to_string(partition);
    if (from < b.log_start)
      return Status::OutOfRange(where + ": offset " + std::to_string(from.value()) +
                                " is below the source's log start " +
                                std::to_string(b.log_start.value()));
    if (from > b.end)
      return Status::OutOfRange(where + ": offset " + std::to_string(from.value()) +
                                " is past the source's end " + std::to_string(b.end.value()));
    *part = p;
    *bounds = b;
    return Status::OK();
  }

  Bounds BoundsOf(const std::string& topic, int32_t partition, const Part& p) const {
    Bounds b{p.log->log_start_offset(), p.log->log_end_offset()};
    if (auto hw = high_watermarks_.find({topic, partition}); hw != high_watermarks_.end())
      b.end = std::clamp(Offset(hw->second), b.log_start, b.end);
    return b;
  }

  void LoadHighWatermarks() {
    auto cp = storage::ReadOffsetCheckpoint(JoinPath(path_, storage::kReplicationCheckpointFile));
    if (cp.ok()) high_watermarks_ = std::move(cp).value();
  }

  // Reopens the partition when its files grew past what the open log knows (another process
  // appends to it): only the new tail is scanned.
  Status MaybeReopen(const std::string& topic, int32_t partition, Part* p) {
    auto segs = p->log->Segments();
    bool grown = false;
    if (segs.empty()) {
      grown = true;
    } else {
      const auto& last = segs.back();
      grown = FileSize(last.log_path) > last.size_bytes ||
              FileSize(SegmentPath(p->log->dir(), last.next_offset.value())) >= 0;
    }
    if (!grown) {
      // Retention at the writer deleted our oldest segment: the log start moved.
      if (segs.empty() || FileSize(segs.front().log_path) >= 0) return Status::OK();
    }
    SILT_ASSIGN_OR_RETURN(auto config, dir_->TopicConfig(topic));
    storage::PartitionLog::OpenOptions o;
    o.read_only = true;
    o.create = false;
    o.clean_shutdown = true;
    o.recovery_point = p->log->log_end_offset().value();
    auto log = storage::PartitionLog::Open(p->log->dir(), config, o);
    if (!log.ok()) return log.status();
    p->log = std::shared_ptr<storage::PartitionLog>(std::move(log).value());
    LoadHighWatermarks();
    return Status::OK();
  }

  std::string path_;
  std::unique_ptr<storage::DataDir> dir_;
  bool listed_ = false;
  std::map<std::pair<std::string, int32_t>, Part> parts_;
  storage::OffsetCheckpointMap high_watermarks_;
  std::string spare_;  // a buffer handed back by Recycle, filled by the next Read
};

}  // namespace

Result<std::unique_ptr<Source>> OpenDirSource(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return Status::NotFound("source data dir '" + path + "' does not exist");
  storage::DataDir::Options o;
  o.read_only = true;
  o.create = false;
  SILT_ASSIGN_OR_RETURN(auto dir, storage::DataDir::Open(path, o));
  return std::unique_ptr<Source>(new DirSource(path, std::move(dir)));
}

}  // namespace silt::replicate
