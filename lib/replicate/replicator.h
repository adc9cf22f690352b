// The loop of `silt replicate`: any Source into any Sink (endpoint.h), partition by partition,
// chunk by chunk, with a checkpoint stored after each durable step.
//
// For each partition of each topic that matches, the copy starts at the destination's own log
// end when it already holds records (after checking that its tail equals the source's bytes at
// the same offsets), else at the checkpoint, else where `from` says. What happens at the edges:
//   - the destination's tail differs from the source (other data, a source that was rebuilt):
//     InvalidArgument naming topic, partition and offset, unless `truncate_destination`, which
//     cuts the destination there and copies again;
//   - the source's log start moved past the next offset to copy (retention deleted records that
//     were never copied): OutOfRange naming the offsets, unless `allow_gaps`, which skips them;
//   - the destination is ahead of the checkpoint (a copy killed between append and checkpoint):
//     those records are compared with the source's and the copy goes on after them, so there is
//     no duplicate and no gap;
//   - the destination is behind the checkpoint (a crash of the machine lost bytes that were
//     never fsynced, `fsync` other than kStep): the copy goes on at the destination's own end,
//     which its recovery cut at the last whole batch; an empty destination starts at the
//     checkpoint, which for such a partition is never past the destination's first offset;
//   - an Append refused because the destination's end moved (another writer, a retry): the same
//     comparison from the end the sink reports.
// Thread-safety: none; Run() uses the Source and Sink from the calling thread only. `stop` may
// be set from any thread (a signal handler): the step in progress is finished and checkpointed.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "replicate/endpoint.h"

namespace silt::replicate {

struct PartitionProgress {
  std::string topic;
  int32_t partition = 0;
  int64_t records = 0;   // copied by this run
  int64_t bytes = 0;     // copied by this run
  int64_t batches = 0;
  Offset next;           // the next source offset to copy
  Offset source_end;     // as last seen
  int64_t lag_records = 0;
  int64_t lag_ms = 0;    // 0 when caught up; else how long since it last was
};

struct Progress {
  std::vector<PartitionProgress> partitions;  // by topic, then partition
  bool final = false;
};

struct ReplicatorOptions {
  // Topics to copy: those named in `topics` and those whose whole name matches one of
  // `patterns` (ECMAScript regexes). Both empty: every topic but internal ones.
  std::vector<std::string> topics;
  std::vector<std::string> patterns;
  // Where a partition with no checkpoint and an empty destination starts.
  enum class From { kBeginning, kEnd, kTime };
  From from = From::kBeginning;
  int64_t from_time_ms = 0;  // kTime
  bool follow = false;        // keep copying new records, partitions and topics
  bool copy_configs = false;  // --configs
  std::optional<std::string> groups;  // --groups REGEX: copy those groups' committed offsets
  bool promote = false;               // make the copies writable once complete
  bool allow_gaps = false;
  bool truncate_destination = false;
  // A stable name of the source, under which the sink keeps the checkpoint.
  std::string source_id;
  // When set, the checkpoint is this file (Kafka's offset checkpoint format) instead of the
  // sink's own.
  std::string checkpoint_file;
  // When the sink's Flush is called (endpoint.h): before each step's checkpoint (kStep), only
  // before the last one (kEnd), or never. Checkpoints stored before a Flush never name, for a
  // partition none of whose records is durable at the destination, more than where the
  // destination begins (Sink::DurableEnd, Sink::LogStart): a crash of the machine that loses
  // the partition's copy whole then leaves a checkpoint that starts it again, not one past a
  // gap. Other modes than kStep need an offset-preserving sink.
  FsyncMode fsync = FsyncMode::kStep;
  int64_t chunk_bytes = 8 << 20;   // one read of one partition; bounds memory per partition
  // One copy of one partition file to file (data dir to data dir), which holds no memory: large,
  // so that the copies of several partitions at once (a step's worth) keep every lane busy.
  int64_t file_chunk_bytes = 64 << 20;
  int64_t step_bytes = 64 << 20;   // a Flush and a checkpoint after this much ...
  int64_t step_ms = 1000;          // ... or this long
  int64_t rescan_ms = 3000;        // --follow: how often new topics and partitions are looked for
  int idle_wait_ms = 10;           // --follow: the wait for new records when caught up
  const std::atomic<bool>* stop = nullptr;
  // Called about every `progress_ms` (and once at the end) with every partition's progress.
  int64_t progress_ms = 1000;
  std::function<void(const Progress&)> on_progress;
};

struct Summary {
  int64_t topics = 0;
  int64_t partitions = 0;
  int64_t records = 0;
  int64_t bytes = 0;
  int64_t batches = 0;
  int64_t groups_copied = 0;
  int64_t groups_skipped_active = 0;
  int64_t gaps_skipped = 0;     // partitions where allow_gaps skipped records
  int64_t truncated = 0;        // partitions cut by truncate_destination
  std::vector<std::string> promoted;
  bool stopped = false;         // by `stop`
  // Run() failed because the two ends disagree (a gap or a divergence), not for an I/O error.
  bool mismatch = false;
};

class Replicator {
 public:
  // `source` and `sink` must outlive the replicator.
  Replicator(Source* source, Sink* sink, ReplicatorOptions options);
  ~Replicator();

  // Copies until every partition is caught up with the source's end as seen when it got there
  // (or forever with `follow`, until `stop`), then copies groups and promotes as asked. The
  // checkpoint is stored after the last step also on failure of a later one.
  Status Run();

  const Summary& summary() const { return summary_; }
  Progress Snapshot() const;

 private:
  struct Part;
  Status Rescan(bool first);
  Status Prepare(Part* p);
  Status VerifyTail(Part* p, Offset from, Offset to, Offset* dest_end);
  Status CopyOnce(Part* p, bool* progressed, int wait_ms);
  bool PlanFiles(Part* p, int wait_ms, FileChunk* chunk);
  Status FilesAppended(Part* p, const FileChunk& chunk, int64_t bytes, const AppendOutcome& out,
                       int64_t batches, int64_t records);
  Status CopyFilesOnce(Part* p, bool* progressed, int wait_ms, bool* handled);
  Status CopyFilesRound(std::vector<bool>* handled, bool* progressed);
  Status HandleGap(Part* p);
  Status Commit(bool last);
  Result<Offset> CheckpointOf(const Part& p);
  Status CopyGroups();
  Status PromoteAll();
  bool Matches(const std::string& topic) const;
  Status Mismatch(Status s);

  Source* source_;
  Sink* sink_;
  ReplicatorOptions options_;
  std::map<std::pair<std::string, int32_t>, Offset> checkpoint_;
  std::vector<std::unique_ptr<Part>> parts_;
  std::map<std::string, int32_t> topics_;  // copied topics -> partitions prepared
  std::map<std::string, std::map<std::pair<std::string, int32_t>, int64_t>> groups_done_;
  bool dirty_ = false;          // appended since the last Flush
  bool checkpoint_changed_ = false;
  std::vector<CheckpointEntry> stored_;  // as last stored by this run
  bool copy_files_ = true;  // until the source or the sink says it cannot copy file to file
  size_t round_start_ = 0;  // the part CopyFilesRound looks at first
  Summary summary_;
};

// True when two byte strings hold the same batches, batch for batch, except for the
// partitionLeaderEpoch field (outside the CRC, restamped by a destination). For the divergence
// check; exposed for tests. `*first_difference` is the base offset of the first batch that
// differs (or the offset where one of them ends early).
bool SameBatches(std::string_view a, std::string_view b, Offset* first_difference);

}  // namespace silt::replicate
