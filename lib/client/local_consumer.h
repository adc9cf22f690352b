// Reading a topic straight from a local data directory (no broker), like `tail`: from a start
// position in each partition to the log end seen when it opened, or with `follow` on and on,
// woken by inotify(7) when a partition directory changes rather than by polling.
//
// The data directory is opened read-only, so a producer in another process can append while this
// reads. Positions are found through the partition log (its offset and time indexes); after that
// the segment files are read sequentially in large chunks and decoded with RecordBatchView.
// Following survives segment rolls (a newer segment is taken once the current one has been read
// to its end, re-checked after the newer one appeared) and retention (an open segment stays
// readable; a segment deleted before it was reached is skipped: its records are gone).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "client/consumer.h"
#include "client/offset_spec.h"
#include "client/parallel_scan.h"

namespace silt::format {
struct RecordView;
}
namespace silt::storage {
class DataDir;
}
namespace silt::offsets {
class LocalOffsets;
}

namespace silt::client {

struct ConsumerOptions {
  std::vector<int32_t> partitions;      // empty: every partition of the topic
  OffsetSpec start = OffsetSpec::Beginning();
  std::map<int32_t, int64_t> committed;  // per partition, takes precedence over `start`
  // A consumer group: its committed offsets in the data dir (offsets::LocalOffsets) are where
  // partitions start (over `committed`), and the positions are committed every
  // commit_interval_ms while following (from on_idle) and at Close(). Refused (Busy) while a
  // broker runs on the directory: it owns the groups then.
  std::string group;
  int64_t commit_interval_ms = 1000;
  bool follow = false;
  // Damage in a partition's files (a batch that fails its checks, with the data dir opened
  // with DataDir::Options::stop_at_damage) ends that partition's reading there: `on_damage`
  // gets a message naming the file and byte position, and the other partitions go on. Without
  // it, the damage is Run's error.
  bool stop_at_damage = false;
  // (message, whether the bytes had been fsynced: false for the torn tail of a crash, which
  // the next writable open cuts). Called on the thread that calls Open or Run.
  std::function<void(const std::string& message, bool fsynced)> on_damage;
  int idle_check_ms = 2000;  // follow: longest sleep without an inotify event (a safety net)
  size_t read_chunk_bytes = 4 << 20;
  // With SetBulkOutput: a segment stretch of at least this many unread bytes is formatted on
  // two threads (see client/parallel_scan.h); 0 never.
  int64_t parallel_min_bytes = 16 << 20;
  size_t parallel_chunk_bytes = 256 << 10;
};

class LocalConsumer final : public Consumer {
 public:
  // Resolves the start position of each partition. NotFound for an unknown topic;
  // InvalidArgument for a partition the topic does not have.
  static Result<std::unique_ptr<LocalConsumer>> Open(storage::DataDir* dir, const std::string& topic,
                                                     const ConsumerOptions& options);
  ~LocalConsumer();

  // Delivers records until every partition is at its end (not following), `fn` returns false,
  // or *stop becomes true (checked between batches and while waiting). `on_idle` runs before
  // each wait when following (flush output), then the group's positions are committed if
  // commit_interval_ms has passed; an error from either ends the run.
  Status Run(const RecordFn& fn, const std::function<Status()>& on_idle,
             const std::atomic<bool>* stop) override;

  // For a caller that only formats records: long stretches of a segment are then formatted by
  // `format` on two threads and written by `emit` in order (see client/parallel_scan.h),
  // instead of going through Run's `fn` one record at a time. The output is the same.
  void SetBulkOutput(ScanFormatFn format, ScanEmitFn emit) override {
    bulk_format_ = std::move(format);
    bulk_emit_ = std::move(emit);
  }

  // The next offset to read in each partition (what a consumer group records).
  std::map<int32_t, int64_t> Positions() const override;
  // The partitions being read.
  std::vector<int32_t> partitions() const;
  // With a group (and `commit`): commits the positions that moved. Otherwise nothing.
  Status Close(bool commit = true) override;

 private:
  struct Part;
  LocalConsumer(std::string topic, const ConsumerOptions& options);
  // Reads what is available in one partition (at most a few chunks). Sets *progress when a
  // position moved, *stopped when fn asked to stop.
  Status Pump(Part* p, const RecordFn& fn, const std::atomic<bool>* stop, bool* progress,
              bool* stopped);
  Status WaitForChange(const std::atomic<bool>* stop);
  Status CommitGroup();

  std::string topic_;
  ConsumerOptions options_;
  std::vector<std::unique_ptr<Part>> parts_;
  std::unique_ptr<char[]> buf_;
  size_t buf_size_ = 0;
  int inotify_fd_ = -1;
  ScanFormatFn bulk_format_;
  ScanEmitFn bulk_emit_;
  std::unique_ptr<offsets::LocalOffsets> group_store_;  // with a group
  std::map<int32_t, int64_t> group_committed_;          // what the group has now
  int64_t last_commit_ms_ = 0;
};

}  // namespace silt::client
