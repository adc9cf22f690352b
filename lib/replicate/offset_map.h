// The exact offset map of a partition copied into a destination that assigns its own offsets
// (Apache Kafka): which destination offset each copied source offset landed at.
//
// The map is a list of runs of constant delta, (source_start, dest_start, count), in source order
// and with both starts strictly increasing: records source_start + i landed at dest_start + i for
// i < count. A new run starts wherever the delta changes: a compaction hole in the source, a
// skipped control batch or aborted transaction, a retention gap. `source_end` is how far the
// source has been looked at: every source offset in [source_begin, source_end) is either in a
// run (copied) or a hole (nothing to copy there), and nothing at or past source_end is known.
//
// Stored form (one destination record per flush, appended in order; see EncodeChunk):
//   chunk   = version:int8 (1) from:varlong run_count:varint run* end_gap:varlong
//   run     = source_gap:varlong dest_gap:varlong count:varlong
// `from` is the map's source_end before the chunk (the first chunk's is source_begin);
// source_gap = run.source_start - the source end so far (the previous run's end, or `from`);
// dest_gap = run.dest_start - the dest end so far (0 before the first run); end_gap =
// the new source_end - the last run's source end (or `from`). All gaps are >= 0.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/ids.h"
#include "base/status.h"

namespace silt::replicate {

struct OffsetRun {
  int64_t source_start = 0;
  int64_t dest_start = 0;
  int64_t count = 0;
  int64_t source_next() const { return source_start + count; }
  int64_t dest_next() const { return dest_start + count; }
  bool operator==(const OffsetRun&) const = default;
};

class PartitionOffsetMap {
 public:
  // An empty map: nothing looked at yet.
  PartitionOffsetMap() = default;

  bool empty() const { return !started_; }
  // Where the copy began (the first source offset looked at). Only meaningful when !empty().
  Offset source_begin() const { return Offset(source_begin_); }
  // The source offset after the last one looked at.
  Offset source_end() const { return Offset(source_end_); }
  // The destination offset after the last copied record (0 when none is).
  Offset dest_end() const { return Offset(dest_end_); }
  const std::vector<OffsetRun>& runs() const { return runs_; }

  // Starts an empty map at `source` (the first source offset the copy looks at).
  // InvalidArgument when the map has already started.
  Status Begin(Offset source);

  // Records that source offset `source` was copied to destination offset `dest`. Both must be
  // at or past the ends (source >= source_end, dest >= dest_end); offsets skipped between the
  // ends are holes. Extends the last run when the delta is the same. Starts the map at `source`
  // when empty. InvalidArgument when an offset goes backwards.
  Status AddCopied(Offset source, Offset dest, int64_t count = 1);

  // Records that every source offset below `source` has been looked at (those not copied are
  // holes). A no-op when source <= source_end; starts the map at `source` when empty.
  void Advance(Offset source);

  // The destination offset for source offset `source`:
  //   - a copied offset: exactly where it landed;
  //   - a hole, or source_end itself: the destination offset of the next copied record (where a
  //     consumer resuming at `source` should read next), dest_end when none is copied after it;
  //   - below source_begin: the destination offset of the first copied record (the copy began
  //     later; dest_end when none is).
  // NotFound when `source` > source_end (not looked at yet) or the map is empty.
  Result<Offset> Translate(Offset source) const;

  // The chunk (see the top of this file) that takes a map from state `from` (the map's
  // source_end then, and its runs up to index `first_run`) to this map. `first_run` is the
  // index of the first run not yet stored; the run at first_run - 1 may have grown since, in
  // which case its growth is stored as a run of its own that Decode merges back.
  struct Mark {
    size_t runs = 0;           // runs().size() when stored
    int64_t last_count = 0;    // the last run's count when stored
    int64_t source_end = 0;    // source_end() when stored
    int64_t dest_end = 0;      // dest_end() when stored
    bool started = false;
  };
  Mark mark() const;
  // The chunk of what changed since `since` (empty string when nothing did).
  std::string EncodeChunk(const Mark& since) const;
  // Applies a chunk written by EncodeChunk. A chunk whose `from` is below source_end (stored
  // twice) is ignored; Corruption for damaged bytes or a chunk that starts past source_end
  // (one is missing).
  Status ApplyChunk(std::string_view chunk);

  bool operator==(const PartitionOffsetMap&) const = default;

 private:
  bool started_ = false;
  int64_t source_begin_ = 0;
  int64_t source_end_ = 0;
  int64_t dest_end_ = 0;
  std::vector<OffsetRun> runs_;
};

}  // namespace silt::replicate
