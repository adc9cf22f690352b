// The two ends of `silt replicate`: a Source that batches are read from and a Sink they are
// written to. Each is a data dir or a cluster (`kafka://HOST:PORT[,HOST:PORT...]`); the
// replicator (replicator.h) drives any Source into any Sink, so the four pairs share one loop.
//
// Batches travel as they are stored: whole RecordBatch v2 (magic 2) frames, byte for byte, so a
// destination that preserves offsets ends up with the source's bytes (only baseOffset and
// partitionLeaderEpoch, outside the CRC, may be restamped by it).
//
// Thread-safety: none. A replicator uses each endpoint from one thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/file_slice.h"
#include "base/ids.h"
#include "base/status.h"

namespace silt::replicate {

// A parsed SOURCE or DEST argument.
struct EndpointSpec {
  enum class Kind { kDataDir, kCluster };
  Kind kind = Kind::kDataDir;
  std::string dir;                     // kDataDir
  std::vector<std::string> bootstrap;  // kCluster: "host:port", in the order given
  std::string text;                    // as the user wrote it, for messages
};
// "kafka://h:p[,h:p...]" is a cluster (a missing port is 9092); anything else is a data dir
// path. InvalidArgument for "kafka://" with no host, or another "scheme://".
Result<EndpointSpec> ParseEndpoint(std::string_view text);

struct TopicDesc {
  std::string name;
  int32_t partitions = 0;
  std::map<std::string, std::string> configs;  // overrides only (not defaults)
};

// One partition's readable range at a source: [log_start, end). `end` is what may be copied:
// a cluster's high watermark (committed records only), a data dir's log end (or the
// checkpointed high watermark of a replica's data dir, as `consume -d` reads it).
struct Bounds {
  Offset log_start;
  Offset end;
};

// Batches read from a source.
struct Chunk {
  std::string batches;  // whole v2 batches in offset order; the first may start before `from`
  Offset next_offset;   // the offset after the last batch (== from when empty)
  Bounds bounds;        // the partition's range when this was read
};

// The batches of a chunk where they lie in a data dir source's files, for a data dir sink to
// copy file to file (Source::ReadFiles, Sink::AppendFiles).
struct FileChunk {
  std::vector<FileSlice> files;  // whole v2 batches in offset order; the first holds `from`
  Offset first_base{-1};         // the first batch's baseOffset (-1 when `files` is empty)
  Offset next_offset;            // the offset after the last batch (== from when empty)
  Bounds bounds;
};

// A group's committed offsets.
struct GroupOffsets {
  std::string group;
  struct Entry {
    std::string topic;
    int32_t partition = 0;
    Offset offset;
    std::string metadata;
  };
  std::vector<Entry> offsets;
};

class Source {
 public:
  virtual ~Source() = default;
  // Every topic but internal ones (__consumer_offsets, silt's own), sorted by name.
  virtual Result<std::vector<TopicDesc>> ListTopics() = 0;
  virtual Result<Bounds> GetBounds(const std::string& topic, int32_t partition) = 0;
  // Whole batches from the one holding `from` on, at most about `max_bytes` (at least one batch
  // when any is there), never past Bounds::end. When `from` == end, waits up to `max_wait_ms`
  // for more (0: return at once). OutOfRange when `from` is below the log start (retention
  // deleted it: a gap) or above the end.
  virtual Result<Chunk> Read(const std::string& topic, int32_t partition, Offset from,
                             int64_t max_bytes, int max_wait_ms) = 0;
  // Kafka's ListOffsets by time: the first offset whose batch's max timestamp is >= `ts_ms`;
  // Bounds::end when none is.
  virtual Result<Offset> OffsetForTime(const std::string& topic, int32_t partition,
                                       int64_t ts_ms) = 0;
  // Committed offsets of every group (for --groups).
  virtual Result<std::vector<GroupOffsets>> ListGroupOffsets() = 0;
  // What Read(from, max_bytes, 0) would return, as ranges of the source's files instead of
  // bytes. A data dir only; Unsupported elsewhere.
  virtual Result<FileChunk> ReadFiles(const std::string& /*topic*/, int32_t /*partition*/,
                                      Offset /*from*/, int64_t /*max_bytes*/) {
    return Status::Unsupported("the source is not a data dir");
  }
  // Hands back the buffer of a Chunk the caller is done with, for the next Read to fill (a
  // data dir reads chunk after chunk into the same memory instead of fresh pages each time).
  virtual void Recycle(std::string&& /*buffer*/) {}
};

// When `silt replicate` makes what it copied into a data dir durable (`--fsync`):
//   kStep  — at every step: the appended segment bytes are fsynced before the checkpoint that
//            covers them is stored, so a crash of the machine loses at most the step under way;
//   kEnd   — once, when the run ends (finished, interrupted or failed): everything is fsynced
//            before the last checkpoint and the clean close; a crash of the machine before that
//            may lose any of the run's bytes, never more than a kill would (a rerun resumes);
//   kNever — never, as cp and rsync do: the bytes stay in the page cache for the kernel to
//            write back; the destination is closed without its clean-shutdown marker, so the
//            next open of it checks what was written as after a crash (and fsyncs it).
// Whatever the mode, a checkpoint never claims a copy of records that could be lost while the
// checkpoint is not (Replicator: a partition with no durable record is checkpointed at its
// destination's first offset), and a kill of the process loses nothing the page cache holds.
// A cluster destination is always kStep (acks=all).
enum class FsyncMode { kStep, kEnd, kNever };

// How a Sink places batches.
enum class Placement {
  kPreservesOffsets,  // batches land at their own offsets (a data dir, a silt cluster)
  kReproduces,        // batches are produced anew and get the destination's offsets (Kafka)
};

// Where a partition's copy stands at the destination, as the sink last made it durable.
struct CheckpointEntry {
  std::string topic;
  int32_t partition = 0;
  Offset source_next;  // the next source offset to copy
  bool operator==(const CheckpointEntry&) const = default;
};

struct AppendOutcome {
  bool appended = false;  // false: `expected` was not the destination's log end
  Offset log_end;         // the destination's log end after the call (either way)
};

// One partition's share of Sink::AppendFilesEach: the arguments of an AppendFiles, and what it
// gave.
struct FileAppend {
  std::string topic;
  int32_t partition = 0;
  Offset expected;
  std::vector<FileSlice> files;
  Status status;          // the outcome, when OK
  AppendOutcome outcome;
  int64_t batches = 0;    // appended
  int64_t records = 0;
};

class Sink {
 public:
  virtual ~Sink() = default;
  virtual Placement placement() const = 0;
  virtual Result<std::vector<TopicDesc>> ListTopics() = 0;
  // Creates `topic` with the same partition count (a mirror topic at a silt cluster: read-only
  // for ordinary producers until Promote), or adds partitions to reach it. With
  // `copy_configs`, sets the source's overrides except those that describe the destination
  // cluster itself (min.insync.replicas, unclean.leader.election.enable, ...).
  virtual Status EnsureTopic(const TopicDesc& topic, bool copy_configs) = 0;
  // The destination's log end for a partition (0 for a new one).
  virtual Result<Offset> LogEnd(const std::string& topic, int32_t partition) = 0;
  // The destination's first offset for a partition (where a copy made --from a time or the
  // end begins); only offset-preserving sinks need it.
  virtual Result<Offset> LogStart(const std::string& /*topic*/, int32_t /*partition*/) {
    return Offset(0);
  }
  // Whole batches stored at the destination from the one holding `from` on, to compare the
  // destination's tail with the source before continuing (divergence check).
  virtual Result<std::string> ReadBack(const std::string& topic, int32_t partition, Offset from,
                                       int64_t max_bytes) = 0;
  // Appends `batches` (whole v2 batches from the source). kPreservesOffsets: only when
  // `expected` is the destination's log end, at the batches' own offsets; otherwise nothing is
  // written and appended=false with the actual log end. kReproduces: produces them (an
  // idempotent producer) and records the offset map; `expected` is the source offset the
  // batches start at.
  virtual Result<AppendOutcome> Append(const std::string& topic, int32_t partition,
                                       Offset expected, std::string_view batches) = 0;
  // Append of the batches in `files` (a FileChunk of a data dir source) as they are, copied
  // file to file and checked where they land; adds the batches and records appended to
  // *batches and *records. A data dir only; Unsupported elsewhere.
  virtual Result<AppendOutcome> AppendFiles(const std::string& /*topic*/, int32_t /*partition*/,
                                            Offset /*expected*/,
                                            const std::vector<FileSlice>& /*files*/,
                                            int64_t* /*batches*/, int64_t* /*records*/) {
    return Status::Unsupported("the destination is not a data dir");
  }
  // AppendFiles of each of `appends` (distinct partitions), each with its own outcome, as if
  // called in turn; a sink that can runs them at once on a few threads. The default calls
  // AppendFiles for each.
  virtual void AppendFilesEach(std::vector<FileAppend>* appends) {
    for (FileAppend& a : *appends) {
      auto r = AppendFiles(a.topic, a.partition, a.expected, a.files, &a.batches, &a.records);
      if (r.ok()) {
        a.outcome = *r;
      } else {
        a.status = r.status();
      }
    }
  }
  // Makes every Append so far durable (fsync for a data dir, acks=all for a cluster).
  virtual Status Flush() = 0;
  // The offset below which a partition's records survive a crash of the machine: the log end
  // after Flush(); for a data dir written without Flush, where its segments were last fsynced
  // (by a Flush, or as its open found them). The default: every append is durable.
  virtual Result<Offset> DurableEnd(const std::string& topic, int32_t partition) {
    return LogEnd(topic, partition);
  }
  // Drops every record at or after `offset` of a partition (a batch holding it goes whole), for
  // `--truncate-destination` after a divergence; durable when it returns. Unsupported where the
  // destination cannot (the default).
  virtual Status TruncateTo(const std::string& topic, int32_t partition, Offset offset) {
    return Status::Unsupported("this destination cannot be truncated");
  }

  // The checkpoint of `source_id` (a stable name of the source), stored at the destination (a
  // file for a data dir, a record for a cluster); empty when there is none yet.
  virtual Result<std::vector<CheckpointEntry>> LoadCheckpoint(const std::string& source_id) = 0;
  // Replaces it atomically; called only after Flush().
  virtual Status StoreCheckpoint(const std::string& source_id,
                                 const std::vector<CheckpointEntry>& entries) = 0;

  // The destination offset that source offset `source` of a partition maps to (identity for
  // kPreservesOffsets; the exact offset map for kReproduces). NotFound when not copied yet.
  virtual Result<Offset> TranslateOffset(const std::string& topic, int32_t partition,
                                         Offset source) = 0;
  // True when `group` has live members at the destination (its offsets are then left alone).
  virtual Result<bool> GroupActive(const std::string& group) = 0;
  // Commits a group's offsets at the destination. `offsets` are source offsets: the sink
  // translates each as TranslateOffset does (entries not copied yet are left out).
  virtual Status CommitGroupOffsets(const GroupOffsets& offsets) = 0;

  // Makes a mirror topic writable by ordinary producers. A no-op for a data dir.
  virtual Status Promote(const std::string& topic) = 0;
};

// Opens the ends named by specs. A data dir source opens read-only (it may belong to a running
// broker); a data dir sink takes the directory's lock like `produce -d`. `client_id` names
// the connections of a cluster end.
struct OpenOptions {
  std::string client_id = "silt-replicate";
  int request_timeout_ms = 30000;
  // For a cluster sink: treat it as a broker without silt's offset-preserving append even if it
  // has one (tests the Kafka path against silt).
  bool force_reproduce = false;
  // For a data dir sink: kNever starts no writeback and leaves the directory without its
  // clean-shutdown marker at close (nothing was fsynced); kStep and kEnd fsync at close.
  FsyncMode fsync = FsyncMode::kStep;
};
Result<std::unique_ptr<Source>> OpenSource(const EndpointSpec& spec, const OpenOptions& options);
Result<std::unique_ptr<Sink>> OpenSink(const EndpointSpec& spec, const OpenOptions& options);

}  // namespace silt::replicate
