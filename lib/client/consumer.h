// What `silt consume` reads records through, in either mode: LocalConsumer (local_consumer.h,
// segment files of a data directory) and NetConsumer (net_consumer.h, Fetch from a cluster).
// With a group, both resume from its committed offsets and commit their positions: a local one
// in the data dir's __consumer_offsets (offsets/local.h), a network one as a Kafka group member.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>

#include "base/status.h"
#include "client/parallel_scan.h"

namespace silt::format {
struct RecordView;
}

namespace silt::client {

class Consumer {
 public:
  virtual ~Consumer() = default;

  // Called for each record in offset order within a partition; return false to stop.
  using RecordFn = std::function<bool(int32_t partition, const format::RecordView& record)>;
  // Delivers records until every partition is at its end (not following), `fn` returns false,
  // or *stop becomes true. `on_idle` runs whenever what was read has been delivered, before the
  // consumer commits or waits for more (flush output there, so that what is committed has been
  // written); an error from it ends the run.
  virtual Status Run(const RecordFn& fn, const std::function<Status()>& on_idle,
                     const std::atomic<bool>* stop) = 0;

  // For a caller that only formats records: the consumer may format long stretches with
  // `format` on two threads and write them with `emit` in order, instead of calling Run's fn.
  // Implementations that cannot ignore it (the output is the same either way).
  virtual void SetBulkOutput(ScanFormatFn format, ScanEmitFn emit) {}

  // The next offset to read in each partition.
  virtual std::map<int32_t, int64_t> Positions() const = 0;

  // With a group: commits the positions unless `commit` is false (the output failed, so some
  // records delivered were not written), and leaves a network group. Call after the output is
  // flushed. Without a group: nothing.
  virtual Status Close(bool commit = true) = 0;
};

}  // namespace silt::client
