// Producing records to a Kafka cluster (silt or Apache Kafka) over the network.
//
// Records are grouped into RecordBatch v2 batches per partition. A batch is closed when it
// reaches `batch_bytes`, or once its oldest record has waited `linger_ms` and its partition may
// send (as in Kafka's accumulator): while a partition waits for an answer, its open batch keeps
// growing instead of queueing many small ones. Each leader gets Produce requests carrying at most
// one batch per partition and at most max(batch_bytes, 8 MiB) of batches each; up to
// `max_in_flight` requests are pipelined per connection. Buffered bytes (open and unacknowledged
// batches) are bounded by `max_buffered_bytes`: Send() waits for answers beyond it.
//
// Idempotence (the default with acks=all, as in Kafka 3.x): InitProducerId gives a producer id
// and epoch; every batch carries them and its partition's next sequence number, fixed when the
// batch is closed. A batch that fails with a retriable error (NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE,
// UNKNOWN_TOPIC_OR_PARTITION, REQUEST_TIMED_OUT, a network error, ...) is re-sent with the same
// bytes after a metadata refresh and a backoff, together with every later batch of its
// partition, so order holds and the broker drops duplicates (DUPLICATE_SEQUENCE_NUMBER counts
// as success). A batch rejected for good (MESSAGE_TOO_LARGE, INVALID_RECORD, ...) is counted as
// failed, and the later batches of its partition are renumbered so the sequence has no gap.
// Without idempotence each partition has one batch in flight at a time, so retries keep order.
//
// With acks=0 nothing is acknowledged: a batch counts as delivered once written to the socket.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "client/cluster.h"
#include "client/local_producer.h"
#include "client/partitioner.h"
#include "format/layout.h"
#include "format/record_batch.h"
#include "protocol/messages.h"

namespace silt::client {

struct NetProducerOptions {
  format::Compression compression = format::Compression::kNone;
  size_t batch_bytes = 1 << 20;
  int64_t linger_ms = 5;
  int16_t acks = -1;  // 0, 1 or -1 (all)
  bool idempotent = true;
  Partitioner::Kind partitioner = Partitioner::Kind::kDefault;
  int32_t partition = -1;      // >= 0: every record goes there
  bool create_topic = true;    // Metadata allow_auto_topic_creation
  int max_in_flight = 5;       // Produce requests per connection
  int delivery_timeout_ms = 120000;  // give up retrying a batch after this long
  size_t max_buffered_bytes = 32 << 20;
  uint64_t seed = 0;
};

// For each of `partitions` (a Produce request's, in its order), the answer in `answers` whose
// index is that partition's, or nullptr when there is none. Linear when the answers come in the
// request's order, as brokers send them; any order is accepted.
std::vector<const protocol::ProduceResponse::PartitionResponse*> MatchProduceAnswers(
    const std::vector<int32_t>& partitions,
    const std::vector<const protocol::ProduceResponse::PartitionResponse*>& answers);

class NetProducer final : public Producer {
 public:
  // Connects through `cluster` (which must outlive the producer), looks the topic up (creating
  // it when the broker auto-creates and create_topic is on) and, when idempotent, gets a
  // producer id. NotFound for a missing topic; InvalidArgument for a partition it lacks.
  static Result<std::unique_ptr<NetProducer>> Open(Cluster* cluster, const std::string& topic,
                                                   const NetProducerOptions& options);
  ~NetProducer();

  // Queues one record (timestamp -1: now). May send and wait for answers when buffers are full.
  // TooLarge when the record alone exceeds the broker's message size limit as far as the client
  // knows (1 MiB default); nothing is queued then, and it is counted as failed.
  Status Send(std::optional<std::string_view> key, std::optional<std::string_view> value,
              const HeaderViews& headers, int64_t timestamp = -1) override;
  // Sends batches whose linger has expired and reads answers that have arrived, without
  // blocking for long.
  Status Poll();
  Status SendPending() override { return Poll(); }
  // Closes every batch and sends it, then waits until each is acknowledged or has failed.
  // Returns an error only for a problem that stopped delivery as a whole (e.g. no broker);
  // per-record failures are counted in records_failed().
  Status Flush() override;

  int32_t partitions() const { return static_cast<int32_t>(parts_.size()); }
  int64_t records_sent() const { return records_acked_; }
  int64_t records_delivered() const override { return records_acked_; }
  int64_t records_failed() const override { return records_failed_; }
  // The first per-batch error seen (empty when none).
  std::string first_error() const override { return first_error_; }
  int64_t max_message_bytes() const override { return max_record_bytes_; }

 private:
  struct Batch;
  struct Part;
  struct InFlight;
  NetProducer(Cluster* cluster, std::string topic, const NetProducerOptions& options);
  Status InitProducerId();
  // Poll(); `check_clock` false (from Send) reads the clock only every kPollsPerRead calls.
  Status PollSome(bool check_clock);
  Status CloseBatch(Part& p);
  // Sends what is ready; `all` ignores linger.
  Status SendReady(bool all);
  // Reads one answer from any connection with requests outstanding; waits up to `wait_ms`.
  Status ReadAnswers(int wait_ms);
  void HandleResult(Part& p, Batch* b, int16_t code, const std::optional<std::string>& message);
  void FailBatch(Part& p, Batch* b, const std::string& why);
  // Marks a batch acknowledged or failed for good and keeps its buffer for a later batch.
  void Finish(Batch* b);
  // A finished batch's buffer to build the next one in (its capacity kept), or an empty string.
  std::string TakeSpareBuffer();
  // Fails the queued batches whose delivery time has passed.
  void ExpireBatches(int64_t now);
  void Resequence(Part& p);
  void MarkPending(Part& p);
  // Answers everything in flight on `c` as a network error (to be re-sent) and drops it.
  void LoseConnection(Connection* c, const Status& why);
  Status RefreshLeaders();

  Cluster* cluster_;
  std::string topic_;
  NetProducerOptions options_;
  Partitioner partitioner_;
  std::vector<std::unique_ptr<Part>> parts_;
  // Partitions with an open batch, a batch waiting to be sent, or a rewind in progress: the only
  // ones SendReady() looks at, so that its cost follows the partitions in use, not the topic's.
  std::vector<Part*> pending_;
  std::map<Connection*, std::deque<std::unique_ptr<InFlight>>> in_flight_;
  int64_t requests_in_flight_ = 0;
  int64_t producer_id_ = -1;
  int16_t producer_epoch_ = -1;
  size_t buffered_ = 0;         // bytes of open batches and of closed, unacknowledged ones
  int64_t outstanding_ = 0;     // closed batches not yet acknowledged or failed
  // Buffers of finished batches, reused by the batches opened next: at most one per partition
  // and max_buffered_bytes in all (counted apart from buffered_).
  std::vector<std::string> spare_;
  size_t spare_bytes_ = 0;
  bool kick_ = false;           // something may be sendable now: SendReady() on the next Poll()
  int64_t next_wake_ms_ = 0;    // when SendReady() next has something to do without a kick
  static constexpr int kPollsPerRead = 8;
  static constexpr int kSendsPerRead = 64;
  int polls_since_read_ = 0;    // Send()s since it last looked for answers
  int polls_since_clock_ = 0;   // Send()s since Poll() last read the clock
  bool need_metadata_ = false;
  int64_t records_acked_ = 0;
  int64_t records_failed_ = 0;
  std::string first_error_;
  int64_t max_record_bytes_ = format::kDefaultMaxMessageBytes;
};

}  // namespace silt::client
