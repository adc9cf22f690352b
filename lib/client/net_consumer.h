// Reading a topic from a Kafka cluster (silt or Apache Kafka) over the network.
//
// Start positions come from ListOffsets (earliest, latest, or a timestamp lookup for @TIME);
// then Fetch requests go to each partition's leader with max_wait/min_bytes long polling. Record
// sets are decoded batch by batch: RecordBatch v2 through RecordBatchView, legacy magic 0/1
// message sets (which a real Kafka may still serve) through format/legacy.h; control batches
// are skipped and a partial batch at the end of a response is where the data stops. Without
// `follow` each partition is read up to the log end it had when reading started there.
//
// With a group (`group` non-empty) the consumer is a member of a classic Kafka consumer group:
// FindCoordinator, JoinGroup (protocol type "consumer", assignor "range"), SyncGroup (the leader
// computes the range assignment for every member, whatever its client), a heartbeat thread at
// heartbeat_interval_ms, a rejoin on REBALANCE_IN_PROGRESS (committing and revoking first),
// OffsetFetch to resume, OffsetCommit after every batch of records delivered and on Close(),
// and LeaveGroup on Close().
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "client/cluster.h"
#include "client/consumer.h"
#include "client/offset_spec.h"

namespace silt::format {
struct RecordView;
}

namespace silt::client {

struct NetConsumerOptions {
  std::vector<int32_t> partitions;  // empty: every partition (ignored with a group)
  OffsetSpec start = OffsetSpec::Beginning();  // where to start without a committed offset
  bool follow = false;
  int max_wait_ms = 500;                 // Fetch MaxWaitMs
  int32_t min_bytes = 1;                 // Fetch MinBytes
  int32_t max_bytes = 50 << 20;          // Fetch MaxBytes (fetch.max.bytes)
  int32_t partition_max_bytes = 1 << 20;  // max.partition.fetch.bytes
  std::string group;
  int session_timeout_ms = 45000;
  int rebalance_timeout_ms = 60000;
  int heartbeat_interval_ms = 3000;
};

class NetConsumer final : public Consumer {
 public:
  // Looks the topic up and, without a group, resolves the start of each partition. With a group
  // the first Run() joins it. NotFound for an unknown topic; InvalidArgument for a partition the
  // topic lacks.
  static Result<std::unique_ptr<NetConsumer>> Open(Cluster* cluster, const std::string& topic,
                                                   const NetConsumerOptions& options);
  ~NetConsumer();

  // Delivers records until every partition is at its end (not following), `fn` returns false, or
  // *stop becomes true. `after_batch` runs after each fetch's records were delivered (flush the
  // output); an error from it ends the run. With a group, offsets are committed after it.
  Status Run(const RecordFn& fn, const std::function<Status()>& after_batch,
             const std::atomic<bool>* stop) override;

  // With a group: commits the positions (when `commit`) and leaves the group (also stops the
  // heartbeat).
  Status Close(bool commit = true) override;

  // Next offset to read per partition.
  std::map<int32_t, int64_t> Positions() const override;

 private:
  struct Part;
  struct Group;
  NetConsumer(Cluster* cluster, std::string topic, NetConsumerOptions options);
  Status Assign(const std::vector<int32_t>& partitions,
                const std::map<int32_t, int64_t>& committed);
  Status FetchOnce(const RecordFn& fn, const std::atomic<bool>* stop, bool* stopped,
                   bool* delivered);
  Status Deliver(Part& p, std::string_view records, const RecordFn& fn, bool* stopped,
                 bool* delivered);
  Status ResetOutOfRange(Part& p);
  Status JoinGroup();
  Status Commit();
  bool AllDone() const;

  Cluster* cluster_;
  std::string topic_;
  NetConsumerOptions options_;
  std::map<int32_t, std::unique_ptr<Part>> parts_;
  std::unique_ptr<Group> group_;
  bool need_metadata_ = false;
};

}  // namespace silt::client
