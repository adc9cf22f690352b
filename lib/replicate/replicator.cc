#include "replicate/replicator.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <regex>
#include <set>
#include <thread>

#include "base/clock.h"
#include "format/batch_header.h"
#include "format/layout.h"
#include "storage/offset_checkpoint.h"

namespace silt::replicate {
namespace {

// Calls fn(header, bytes) for each whole batch at the front of `data`; stops at a partial one
// or when fn returns false.
template <class Fn>
void ForEachBatch(std::string_view data, Fn fn) {
  while (data.size() >= static_cast<size_t>(format::kBatchHeaderSize)) {
    format::BatchHeader h = format::DecodeBatchHeader(data);
    if (h.batch_length < 0) return;
    const int64_t size = h.size();
    if (size < format::kBatchHeaderSize || static_cast<int64_t>(data.size()) < size) return;
    if (!fn(h, data.substr(0, static_cast<size_t>(size)))) return;
    data.remove_prefix(static_cast<size_t>(size));
  }
}

// Batches of `data` from the first that ends after `from`.
std::string_view DropBefore(std::string_view data, Offset from) {
  size_t skip = 0;
  ForEachBatch(data, [&](const format::BatchHeader& h, std::string_view b) {
    if (h.next() > from) return false;
    skip += b.size();
    return true;
  });
  return data.substr(skip);
}

// The partitionLeaderEpoch field: bytes [12, 16) of a batch.
constexpr size_t kEpochAt = 12;
constexpr size_t kEpochEnd = 16;

bool SameBatch(std::string_view a, std::string_view b) {
  if (a.size() != b.size() || a.size() < kEpochEnd) return false;
  return std::memcmp(a.data(), b.data(), kEpochAt) == 0 &&
         std::memcmp(a.data() + kEpochEnd, b.data() + kEpochEnd, a.size() - kEpochEnd) == 0;
}

std::string Where(const std::string& topic, int32_t partition) {
  return topic + "/" + std::to_string(partition);
}

}  // namespace

bool SameBatches(std::string_view a, std::string_view b, Offset* first_difference) {
  std::vector<std::pair<format::BatchHeader, std::string_view>> bs;
  ForEachBatch(b, [&](const format::BatchHeader& h, std::string_view v) {
    bs.emplace_back(h, v);
    return true;
  });
  size_t i = 0;
  bool same = true;
  Offset last_next(0);
  ForEachBatch(a, [&](const format::BatchHeader& h, std::string_view v) {
    if (i >= bs.size() || !SameBatch(v, bs[i].second)) {
      same = false;
      Offset at = h.base();
      if (i < bs.size()) at = std::min(at, bs[i].first.base());
      *first_difference = at;
      return false;
    }
    last_next = h.next();
    ++i;
    return true;
  });
  if (same && i < bs.size()) {
    same = false;
    *first_difference = bs[i].first.base();
  }
  (void)last_next;
  return same;
}

struct Replicator::Part {
  std::string topic;
  int32_t partition = 0;
  Offset next{0};       // next source offset to copy
  Offset expected{0};   // preserving sinks: the destination's log end
  bool dest_empty = false;  // nothing at the destination yet (a first batch may start before next)
  Offset source_end{0};
  Offset log_start{0};
  int64_t caught_up_ms = 0;
  bool stalled = false;  // the last read found no whole batch below the source's end
  int64_t records = 0, bytes = 0, batches = 0;
};

Replicator::Replicator(Source* source, Sink* sink, ReplicatorOptions options)
    : source_(source), sink_(sink), options_(std::move(options)) {}
Replicator::~Replicator() = default;

Status Replicator::Mismatch(Status s) {
  summary_.mismatch = true;
  return s;
}

bool Replicator::Matches(const std::string& topic) const {
  if (options_.topics.empty() && options_.patterns.empty()) return topic.rfind("__", 0) != 0;
  for (const auto& t : options_.topics)
    if (t == topic) return true;
  for (const auto& p : options_.patterns)
    if (std::regex_match(topic, std::regex(p))) return true;
  return false;
}

Status Replicator::Rescan(bool first) {
  SILT_ASSIGN_OR_RETURN(auto topics, source_->ListTopics());
  if (first) {
    for (const auto& name : options_.topics) {
      bool found = std::any_of(topics.begin(), topics.end(),
                               [&](const TopicDesc& t) { return t.name == name; });
      if (!found) return Status::NotFound("topic '" + name + "' does not exist at the source");
    }
  }
  for (const auto& t : topics) {
    if (!Matches(t.name)) continue;
    auto it = topics_.find(t.name);
    int32_t have = it == topics_.end() ? 0 : it->second;
    if (it != topics_.end() && have >= t.partitions && !first) continue;
    Status st = sink_->EnsureTopic(t, options_.copy_configs);
    if (!st.ok()) return st.WithContext("destination topic " + t.name);
    for (int32_t p = have; p < t.partitions; ++p) {
      auto part = std::make_unique<Part>();
      part->topic = t.name;
      part->partition = p;
      SILT_TRY(Prepare(part.get()));
      parts_.push_back(std::move(part));
    }
    topics_[t.name] = std::max(have, t.partitions);
  }
  std::sort(parts_.begin(), parts_.end(), [](const auto& a, const auto& b) {
    return std::tie(a->topic, a->partition) < std::tie(b->topic, b->partition);
  });
  summary_.topics = static_cast<int64_t>(topics_.size());
  summary_.partitions = static_cast<int64_t>(parts_.size());
  return Status::OK();
}

Status Replicator::Prepare(Part* p) {
  const std::string where = Where(p->topic, p->partition);
  SILT_ASSIGN_OR_RETURN(Bounds b, source_->GetBounds(p->topic, p->partition));
  p->source_end = b.end;
  p->log_start = b.log_start;
  SILT_ASSIGN_OR_RETURN(Offset dest_end, sink_->LogEnd(p->topic, p->partition));
  std::optional<Offset> cp;
  if (auto it = checkpoint_.find({p->topic, p->partition}); it != checkpoint_.end())
    cp = it->second;

  auto start_from_option = [&]() -> Result<Offset> {
    switch (options_.from) {
      case ReplicatorOptions::From::kBeginning:
        return b.log_start;
      case ReplicatorOptions::From::kEnd:
        return b.end;
      case ReplicatorOptions::From::kTime:
        return source_->OffsetForTime(p->topic, p->partition, options_.from_time_ms);
    }
    return b.log_start;
  };

  if (sink_->placement() == Placement::kPreservesOffsets) {
    if (dest_end > Offset(0)) {
      if (dest_end > b.end) {
        if (!options_.truncate_destination)
          return Mismatch(Status::InvalidArgument(
              where + ": the destination ends at offset " + std::to_string(dest_end.value()) +
              ", past the source's end " + std::to_string(b.end.value()) +
              " (it holds records the source does not); --truncate-destination cuts it there"));
        SILT_TRY(sink_->TruncateTo(p->topic, p->partition, b.end));
        ++summary_.truncated;
        SILT_ASSIGN_OR_RETURN(dest_end, sink_->LogEnd(p->topic, p->partition));
      }
      // Compare what the destination holds past the checkpoint (all of it after a crash between
      // append and checkpoint), or at least its last batch.
      Offset verify_from = (cp && *cp < dest_end) ? *cp : dest_end - 1;
      if (dest_end > Offset(0)) SILT_TRY(VerifyTail(p, verify_from, dest_end, &dest_end));
    }
    p->dest_empty = dest_end == Offset(0);
    p->expected = dest_end;
    if (!p->dest_empty) {
      p->next = dest_end;
    } else if (cp) {
      p->next = *cp;
    } else {
      SILT_ASSIGN_OR_RETURN(p->next, start_from_option());
    }
  } else {
    if (cp) {
      p->next = *cp;
    } else {
      SILT_ASSIGN_OR_RETURN(p->next, start_from_option());
    }
    p->expected = p->next;
    p->dest_empty = !cp;
  }
  if (p->next < b.log_start) SILT_TRY(HandleGap(p));
  if (p->next > b.end)
    return Mismatch(Status::InvalidArgument(where + ": the next offset to copy, " +
                                   std::to_string(p->next.value()) +
                                   ", is past the source's end " + std::to_string(b.end.value()) +
                                   " (was the source topic deleted and made again?)"));
  p->caught_up_ms = MonotonicMs();
  return Status::OK();
}

Status Replicator::HandleGap(Part* p) {
  SILT_ASSIGN_OR_RETURN(Bounds b, source_->GetBounds(p->topic, p->partition));
  p->log_start = b.log_start;
  p->source_end = b.end;
  if (p->next >= b.log_start) return Status::OK();
  if (!options_.allow_gaps)
    return Mismatch(Status::OutOfRange(
        Where(p->topic, p->partition) + ": the source's log start moved to offset " +
        std::to_string(b.log_start.value()) + ", past the next offset to copy " +
        std::to_string(p->next.value()) + " (retention deleted " +
        std::to_string(b.log_start - p->next) +
        " offsets that were never copied); --allow-gaps skips them"));
  ++summary_.gaps_skipped;
  p->next = b.log_start;
  if (sink_->placement() == Placement::kReproduces) p->expected = p->next;
  return Status::OK();
}

// Compares the destination's batches in [from, to) with the source's. A difference: error, or
// with truncate_destination the destination is cut there and *dest_end is its new end.
Status Replicator::VerifyTail(Part* p, Offset from, Offset to, Offset* dest_end) {
  const std::string where = Where(p->topic, p->partition);
  SILT_ASSIGN_OR_RETURN(Bounds b, source_->GetBounds(p->topic, p->partition));
  Offset pos = std::max(from, b.log_start);
  while (pos < to) {
    SILT_ASSIGN_OR_RETURN(std::string dest,
                          sink_->ReadBack(p->topic, p->partition, pos, options_.chunk_bytes));
    std::string_view d = DropBefore(dest, pos);
    if (d.empty()) break;
    std::string_view s;
    Chunk chunk;
    if (pos < b.end) {
      SILT_ASSIGN_OR_RETURN(chunk, source_->Read(p->topic, p->partition, pos,
                                                 options_.chunk_bytes, 0));
      s = DropBefore(chunk.batches, pos);
    }
    // Compare as many whole batches as both have.
    Offset differs(-1);
    Offset compared_to = pos;
    std::string_view dv = d, sv = s;
    bool mismatch = false;
    while (!dv.empty()) {
      format::BatchHeader hd, hs;
      std::string_view bd, bs;
      ForEachBatch(dv, [&](const format::BatchHeader& h, std::string_view v) {
        hd = h;
        bd = v;
        return false;
      });
      if (bd.empty()) break;
      if (hd.base() >= to) break;
      ForEachBatch(sv, [&](const format::BatchHeader& h, std::string_view v) {
        hs = h;
        bs = v;
        return false;
      });
      if (bs.empty()) {
        if (sv.empty() && pos >= b.end) {
          mismatch = true;
          differs = hd.base();
        }
        break;
      }
      if (!SameBatch(bd, bs)) {
        mismatch = true;
        differs = std::min(hd.base(), hs.base());
        break;
      }
      compared_to = hd.next();
      dv.remove_prefix(bd.size());
      sv.remove_prefix(bs.size());
    }
    if (mismatch) {
      if (!options_.truncate_destination)
        return Mismatch(Status::InvalidArgument(
            where + ": the destination differs from the source at offset " +
            std::to_string(differs.value()) +
            " (its records there are not the source's); --truncate-destination cuts the "
            "destination there and copies again"));
      SILT_TRY(sink_->TruncateTo(p->topic, p->partition, differs));
      ++summary_.truncated;
      SILT_ASSIGN_OR_RETURN(*dest_end, sink_->LogEnd(p->topic, p->partition));
      return Status::OK();
    }
    if (compared_to == pos) break;  // nothing comparable (a batch larger than a chunk)
    pos = compared_to;
  }
  return Status::OK();
}

// From a data dir into a data dir: the chunk goes file to file (Source::ReadFiles,
// Sink::AppendFiles), never through this process's memory; the sink checks the batches where
// they land. PlanFiles finds the chunk; anything out of the ordinary (no batch to copy, a first
// batch that starts before where the copy stands, a wait for more, an end that cannot) is left
// to the ordinary path: it returns false.
bool Replicator::PlanFiles(Part* p, int wait_ms, FileChunk* chunk) {
  if (wait_ms > 0 || sink_->placement() != Placement::kPreservesOffsets) return false;
  auto fc = source_->ReadFiles(p->topic, p->partition, p->next, options_.file_chunk_bytes);
  if (!fc.ok()) {
    if (fc.status().code() == Status::Code::kUnsupported) copy_files_ = false;
    return false;  // errors and gaps are reported by the ordinary path
  }
  if (fc->files.empty()) return false;
  if (!p->dest_empty && fc->first_base != p->expected) return false;
  *chunk = std::move(fc).value();
  return true;
}

// Where the copy of `p` stands after the sink appended `chunk` (`bytes` of it) file to file.
Status Replicator::FilesAppended(Part* p, const FileChunk& chunk, int64_t bytes,
                                 const AppendOutcome& out, int64_t batches, int64_t records) {
  p->source_end = chunk.bounds.end;
  p->log_start = chunk.bounds.log_start;
  p->stalled = false;
  if (!out.appended) {
    // The destination's end moved under us: compare what it now holds with the source.
    Offset dest_end = out.log_end;
    if (dest_end > p->expected) SILT_TRY(VerifyTail(p, p->expected, dest_end, &dest_end));
    p->expected = dest_end;
    p->next = dest_end;
    p->dest_empty = dest_end == Offset(0);
    return Status::OK();
  }
  p->records += records;
  p->bytes += bytes;
  p->batches += batches;
  summary_.records += records;
  summary_.bytes += bytes;
  summary_.batches += batches;
  p->dest_empty = false;
  p->next = chunk.next_offset;
  p->expected = out.log_end;
  if (p->next >= p->source_end) p->caught_up_ms = MonotonicMs();
  dirty_ = true;
  checkpoint_changed_ = true;
  return Status::OK();
}

Status Replicator::CopyFilesOnce(Part* p, bool* progressed, int wait_ms, bool* handled) {
  *handled = false;
  FileChunk fc;
  if (!PlanFiles(p, wait_ms, &fc)) return Status::OK();
  int64_t batches = 0, records = 0;
  auto out = sink_->AppendFiles(p->topic, p->partition, p->expected, fc.files, &batches, &records);
  if (!out.ok()) {
    if (out.status().code() == Status::Code::kUnsupported) {
      copy_files_ = false;
      return Status::OK();
    }
    return out.status();
  }
  *handled = true;
  *progressed = true;
  int64_t bytes = 0;
  for (const auto& f : fc.files) bytes += f.length;
  return FilesAppended(p, fc, bytes, *out, batches, records);
}

// A chunk of each partition that has one to copy file to file, about a step's worth in all,
// handed to the sink at once (Sink::AppendFilesEach: a data dir copies several partitions in
// parallel); the next round starts with the partition after the last one taken, so that
// every partition gets its turn. (*handled)[i] is set for each part of parts_ copied so, and
// for those left for the next round. The
// outcome of every append that was made is taken in before the first error is returned.
Status Replicator::CopyFilesRound(std::vector<bool>* handled, bool* progressed) {
  std::vector<FileChunk> chunks;
  std::vector<size_t> which;
  std::vector<FileAppend> appends;
  int64_t planned = 0;
  const size_t n = parts_.size();
  size_t round_next = round_start_;
  for (size_t k = 0; k < n && copy_files_ && planned < options_.step_bytes; ++k) {
    const size_t i = (round_start_ + k) % n;
    round_next = (i + 1) % n;
    Part* p = parts_[i].get();
    FileChunk fc;
    if (!PlanFiles(p, 0, &fc)) continue;
    for (const auto& f : fc.files) planned += f.length;
    FileAppend a;
    a.topic = p->topic;
    a.partition = p->partition;
    a.expected = p->expected;
    a.files = fc.files;
    appends.push_back(std::move(a));
    chunks.push_back(std::move(fc));
    which.push_back(i);
  }
  // The parts not looked at wait for the next round.
  for (size_t i = round_next; i != round_start_; i = (i + 1) % n) (*handled)[i] = true;
  round_start_ = round_next;
  if (appends.empty()) return Status::OK();
  sink_->AppendFilesEach(&appends);
  Status first;
  for (size_t k = 0; k < appends.size(); ++k) {
    FileAppend& a = appends[k];
    if (!a.status.ok()) {
      if (a.status.code() == Status::Code::kUnsupported) {
        copy_files_ = false;
      } else if (first.ok()) {
        first = a.status;
      }
      continue;
    }
    (*handled)[which[k]] = true;
    *progressed = true;
    int64_t bytes = 0;
    for (const auto& f : a.files) bytes += f.length;
    Status s =
        FilesAppended(parts_[which[k]].get(), chunks[k], bytes, a.outcome, a.batches, a.records);
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

Status Replicator::CopyOnce(Part* p, bool* progressed, int wait_ms) {
  if (copy_files_) {
    bool handled = false;
    SILT_TRY(CopyFilesOnce(p, progressed, wait_ms, &handled));
    if (handled) return Status::OK();
  }
  auto chunk = source_->Read(p->topic, p->partition, p->next, options_.chunk_bytes, wait_ms);
  if (!chunk.ok()) {
    if (chunk.status().code() == Status::Code::kOutOfRange) {
      SILT_ASSIGN_OR_RETURN(Bounds b, source_->GetBounds(p->topic, p->partition));
      if (p->next < b.log_start) return HandleGap(p);
    }
    return chunk.status().WithContext("reading " + Where(p->topic, p->partition));
  }
  // The chunk's buffer goes back to the source for its next read, whichever way this returns.
  struct Recycler {
    Source* source;
    std::string* buffer;
    ~Recycler() { source->Recycle(std::move(*buffer)); }
  } recycler{source_, &chunk->batches};
  p->source_end = chunk->bounds.end;
  p->log_start = chunk->bounds.log_start;
  std::string_view batches = chunk->batches;
  if (!p->dest_empty || sink_->placement() == Placement::kReproduces) {
    batches = DropBefore(batches, p->next);
  }
  if (sink_->placement() == Placement::kPreservesOffsets && !p->dest_empty) {
    // Never a batch that overlaps what the destination has.
    size_t skip = 0;
    ForEachBatch(batches, [&](const format::BatchHeader& h, std::string_view b) {
      if (h.base() >= p->expected) return false;
      skip += b.size();
      return true;
    });
    batches.remove_prefix(skip);
  }
  // Nothing to read below the end: the end falls inside a batch (a high watermark in the
  // middle of one), which is copied once it is whole.
  p->stalled = chunk->batches.empty() && chunk->next_offset == p->next;
  if (batches.empty()) {
    if (chunk->next_offset > p->next) {
      p->next = chunk->next_offset;
      if (sink_->placement() == Placement::kReproduces) p->expected = p->next;
      checkpoint_changed_ = true;
      *progressed = true;
    }
    if (p->next >= p->source_end) p->caught_up_ms = MonotonicMs();
    return Status::OK();
  }
  Offset first_base = format::DecodeBatchHeader(batches).base();
  Offset expected =
      sink_->placement() == Placement::kPreservesOffsets ? p->expected : first_base;
  SILT_ASSIGN_OR_RETURN(AppendOutcome out,
                        sink_->Append(p->topic, p->partition, expected, batches));
  if (!out.appended) {
    if (sink_->placement() == Placement::kPreservesOffsets) {
      // The destination's end moved under us: compare what it now holds with the source.
      Offset dest_end = out.log_end;
      if (dest_end > p->expected) SILT_TRY(VerifyTail(p, p->expected, dest_end, &dest_end));
      p->expected = dest_end;
      p->next = dest_end;
      p->dest_empty = dest_end == Offset(0);
    } else {
      // A reproducing sink already holds the source's records up to log_end.
      p->next = std::max(p->next, out.log_end);
      p->expected = p->next;
    }
    *progressed = true;
    return Status::OK();
  }
  ForEachBatch(batches, [&](const format::BatchHeader& h, std::string_view b) {
    p->records += h.records_count;
    p->bytes += static_cast<int64_t>(b.size());
    ++p->batches;
    summary_.records += h.records_count;
    summary_.bytes += static_cast<int64_t>(b.size());
    ++summary_.batches;
    return true;
  });
  p->dest_empty = false;
  p->next = chunk->next_offset;
  p->expected = sink_->placement() == Placement::kPreservesOffsets ? out.log_end : p->next;
  if (p->next >= p->source_end) p->caught_up_ms = MonotonicMs();
  dirty_ = true;
  checkpoint_changed_ = true;
  *progressed = true;
  return Status::OK();
}

// Where a partition's checkpoint may say its copy stands. While appends are not durable
// (dirty_), a partition none of whose records is durable at the destination may lose its whole
// copy in a crash of the machine while the checkpoint survives: the checkpoint then names where
// the destination begins, so that a rerun that finds it empty starts there again (it would
// otherwise start at the checkpoint and leave a gap). Anywhere else a rerun goes on at the
// destination's end, whatever the checkpoint says (Prepare).
Result<Offset> Replicator::CheckpointOf(const Part& p) {
  if (!dirty_ || p.dest_empty || sink_->placement() != Placement::kPreservesOffsets)
    return p.next;
  SILT_ASSIGN_OR_RETURN(Offset durable, sink_->DurableEnd(p.topic, p.partition));
  SILT_ASSIGN_OR_RETURN(Offset start, sink_->LogStart(p.topic, p.partition));
  if (durable > start) return p.next;
  return std::min(start, p.next);
}

Status Replicator::Commit(bool last) {
  const bool flush = options_.fsync == FsyncMode::kStep ||
                     (last && options_.fsync == FsyncMode::kEnd);
  if (dirty_ && flush) {
    SILT_TRY(sink_->Flush());
    dirty_ = false;
    checkpoint_changed_ = true;  // a checkpoint held back by CheckpointOf may move now
  }
  if (!checkpoint_changed_) return Status::OK();
  for (const auto& p : parts_) {
    SILT_ASSIGN_OR_RETURN(Offset at, CheckpointOf(*p));
    checkpoint_[{p->topic, p->partition}] = at;
  }
  std::vector<CheckpointEntry> entries;
  for (const auto& [tp, off] : checkpoint_) entries.push_back({tp.first, tp.second, off});
  if (entries == stored_) {  // (a step that could not move a held-back checkpoint)
    checkpoint_changed_ = false;
    return Status::OK();
  }
  if (!options_.checkpoint_file.empty()) {
    storage::OffsetCheckpointMap m;
    for (const auto& e : entries) m[{e.topic, e.partition}] = e.source_next.value();
    SILT_TRY(storage::WriteOffsetCheckpoint(options_.checkpoint_file, m));
  } else {
    SILT_TRY(sink_->StoreCheckpoint(options_.source_id, entries));
  }
  stored_ = std::move(entries);
  checkpoint_changed_ = false;
  return Status::OK();
}

Status Replicator::CopyGroups() {
  if (!options_.groups) return Status::OK();
  std::regex re(*options_.groups);
  SILT_ASSIGN_OR_RETURN(auto groups, source_->ListGroupOffsets());
  std::map<std::pair<std::string, int32_t>, const Part*> copied;
  for (const auto& p : parts_) copied[{p->topic, p->partition}] = p.get();
  for (const auto& g : groups) {
    if (!std::regex_match(g.group, re)) continue;
    GroupOffsets out;
    out.group = g.group;
    std::map<std::pair<std::string, int32_t>, int64_t> translated;  // destination offsets
    auto& done = groups_done_[g.group];
    for (const auto& e : g.offsets) {
      auto it = copied.find({e.topic, e.partition});
      if (it == copied.end()) continue;
      auto t = sink_->TranslateOffset(e.topic, e.partition, e.offset);
      if (!t.ok()) {
        if (t.status().IsNotFound()) continue;
        return t.status().WithContext("group " + g.group);
      }
      auto d = done.find({e.topic, e.partition});
      if (d != done.end() && d->second == t->value()) continue;
      // The source's offset: the sink translates it itself (a reproducing sink through its
      // map; translating here as well would move the group back by the holes twice).
      out.offsets.push_back({e.topic, e.partition, e.offset, e.metadata});
      translated[{e.topic, e.partition}] = t->value();
    }
    if (out.offsets.empty()) continue;
    SILT_ASSIGN_OR_RETURN(bool active, sink_->GroupActive(g.group));
    if (active) {
      ++summary_.groups_skipped_active;
      continue;
    }
    Status st = sink_->CommitGroupOffsets(out);
    if (!st.ok()) return st.WithContext("committing the offsets of group " + g.group);
    for (const auto& [tp, dest] : translated) done[tp] = dest;
    ++summary_.groups_copied;
  }
  return Status::OK();
}

Status Replicator::PromoteAll() {
  for (const auto& [topic, n] : topics_) {
    for (const auto& p : parts_) {
      if (p->topic != topic) continue;
      SILT_ASSIGN_OR_RETURN(Bounds b, source_->GetBounds(p->topic, p->partition));
      if (p->next < b.end)
        return Mismatch(Status::InvalidArgument(Where(p->topic, p->partition) +
                                       ": not promoted: the copy ends at " +
                                       std::to_string(p->next.value()) + ", the source at " +
                                       std::to_string(b.end.value())));
      if (sink_->placement() == Placement::kPreservesOffsets) {
        SILT_ASSIGN_OR_RETURN(Offset dest_end, sink_->LogEnd(p->topic, p->partition));
        if (dest_end != p->expected)
          return Mismatch(Status::InvalidArgument(Where(p->topic, p->partition) +
                                         ": not promoted: the destination ends at " +
                                         std::to_string(dest_end.value()) + ", not at " +
                                         std::to_string(p->expected.value())));
        // Every batch the destination holds is compared with the source's, from the
        // destination's first batch (a copy made --from a time or the end starts past the
        // source's log start; VerifyTail starts no earlier than the source's log start).
        SILT_ASSIGN_OR_RETURN(Offset from, sink_->LogStart(p->topic, p->partition));
        const bool truncate = options_.truncate_destination;
        options_.truncate_destination = false;
        Status st = from < dest_end ? VerifyTail(p.get(), from, dest_end, &dest_end) : Status::OK();
        options_.truncate_destination = truncate;
        if (!st.ok()) return st.WithContext("not promoted");
      }
    }
    SILT_TRY(sink_->Promote(topic));
    summary_.promoted.push_back(topic);
  }
  return Status::OK();
}

Progress Replicator::Snapshot() const {
  Progress pr;
  const int64_t now = MonotonicMs();
  for (const auto& p : parts_) {
    PartitionProgress pp;
    pp.topic = p->topic;
    pp.partition = p->partition;
    pp.records = p->records;
    pp.bytes = p->bytes;
    pp.batches = p->batches;
    pp.next = p->next;
    pp.source_end = p->source_end;
    pp.lag_records = std::max<int64_t>(0, p->source_end - p->next);
    pp.lag_ms = pp.lag_records > 0 ? now - p->caught_up_ms : 0;
    pr.partitions.push_back(pp);
  }
  return pr;
}

Status Replicator::Run() {
  for (const auto& p : options_.patterns) {
    try {
      std::regex re(p);
    } catch (const std::regex_error& e) {
      return Status::InvalidArgument("bad --topics pattern '" + p + "': " + e.what());
    }
  }
  if (options_.groups) {
    try {
      std::regex re(*options_.groups);
    } catch (const std::regex_error& e) {
      return Status::InvalidArgument("bad --groups pattern '" + *options_.groups + "': " +
                                     e.what());
    }
  }
  if (!options_.checkpoint_file.empty()) {
    auto cp = storage::ReadOffsetCheckpoint(options_.checkpoint_file);
    if (cp.ok()) {
      for (const auto& [tp, off] : *cp) checkpoint_[tp] = Offset(off);
    } else if (!cp.status().IsNotFound()) {
      return cp.status();
    }
  } else {
    SILT_ASSIGN_OR_RETURN(auto entries, sink_->LoadCheckpoint(options_.source_id));
    for (const auto& e : entries) checkpoint_[{e.topic, e.partition}] = e.source_next;
  }
  if (options_.fsync != FsyncMode::kStep && sink_->placement() != Placement::kPreservesOffsets)
    return Status::InvalidArgument("a destination that reproduces batches is made durable at "
                                   "every step: only a data dir takes another fsync mode");
  SILT_TRY(Rescan(true));
  // A prepared start (a crash's leftovers adopted, a gap skipped) is worth a checkpoint, and
  // adopted leftovers must be durable before one covers them.
  checkpoint_changed_ = true;
  if (sink_->placement() == Placement::kPreservesOffsets) dirty_ = true;

  auto stopped = [&] { return options_.stop && options_.stop->load(); };
  int64_t step_bytes = 0;
  int64_t step_start = MonotonicMs();
  int64_t last_rescan = MonotonicMs();
  int64_t last_progress = MonotonicMs();
  size_t waiter = 0;
  Status failure;
  while (!stopped()) {
    bool progressed = false;
    // Between data dirs, a chunk of every partition at once, then the others one by one.
    std::vector<bool> handled(parts_.size(), false);
    if (copy_files_ && parts_.size() > 1) {
      const int64_t before = summary_.bytes;
      failure = CopyFilesRound(&handled, &progressed);
      if (!failure.ok()) break;
      step_bytes += summary_.bytes - before;
      if (step_bytes >= options_.step_bytes) {
        failure = Commit(false);
        if (!failure.ok()) break;
        step_bytes = 0;
        step_start = MonotonicMs();
      }
    }
    for (size_t i = 0; i < parts_.size() && !stopped(); ++i) {
      if (handled[i]) continue;
      Part* p = parts_[i].get();
      const int64_t before = p->bytes;
      bool moved = false;
      failure = CopyOnce(p, &moved, 0);
      if (!failure.ok()) break;
      progressed |= moved;
      step_bytes += p->bytes - before;
      if (step_bytes >= options_.step_bytes) {
        failure = Commit(false);
        if (!failure.ok()) break;
        step_bytes = 0;
        step_start = MonotonicMs();
      }
    }
    if (!failure.ok()) break;
    const int64_t now = MonotonicMs();
    if (!progressed || now - step_start >= options_.step_ms) {
      failure = Commit(false);
      if (!failure.ok()) break;
      step_bytes = 0;
      step_start = now;
    }
    if (options_.on_progress && now - last_progress >= options_.progress_ms) {
      options_.on_progress(Snapshot());
      last_progress = now;
    }
    if (!progressed) {
      bool caught_up = std::all_of(parts_.begin(), parts_.end(),
                                   [](const auto& p) {
                                     return p->next >= p->source_end || p->stalled;
                                   });
      if (!options_.follow && caught_up) break;
      if (options_.follow && now - last_rescan >= options_.rescan_ms) {
        failure = Rescan(false);
        if (failure.ok()) failure = CopyGroups();
        if (!failure.ok()) break;
        last_rescan = now;
        continue;
      }
      // Caught up: wait for new records at one partition (a long poll at a cluster), the
      // next one the next time, so that a single busy partition is copied the moment its
      // records come and none waits more than one pause per partition.
      if (parts_.empty()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(options_.idle_wait_ms));
        continue;
      }
      waiter = (waiter + 1) % parts_.size();
      bool moved = false;
      failure = CopyOnce(parts_[waiter].get(), &moved, options_.idle_wait_ms);
      if (!failure.ok()) break;
    }
  }
  summary_.stopped = stopped();
  Status committed = Commit(true);
  if (!failure.ok()) return failure;
  SILT_TRY(committed);
  SILT_TRY(CopyGroups());
  if (options_.promote && !summary_.stopped) SILT_TRY(PromoteAll());
  if (options_.on_progress) {
    Progress pr = Snapshot();
    pr.final = true;
    options_.on_progress(pr);
  }
  return Status::OK();
}

}  // namespace silt::replicate
