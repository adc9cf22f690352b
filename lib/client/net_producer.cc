// Network producer: batching, idempotent sequences, pipelined Produce requests and retries.
#include "client/net_producer.h"

#include <algorithm>
#include <thread>

#include "base/clock.h"
#include "base/coding.h"
#include "base/crc32c.h"
#include "protocol/errors.h"
#include "protocol/messages.h"

namespace silt::client {

using protocol::ErrorCode;

namespace {

constexpr int16_t kDuplicateSequence = static_cast<int16_t>(ErrorCode::DUPLICATE_SEQUENCE_NUMBER);
constexpr int16_t kOutOfOrderSequence =
    static_cast<int16_t>(ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER);

bool IsLeaderError(int16_t code) {
  switch (static_cast<ErrorCode>(code)) {
    case ErrorCode::NOT_LEADER_OR_FOLLOWER:
    case ErrorCode::LEADER_NOT_AVAILABLE:
    case ErrorCode::UNKNOWN_TOPIC_OR_PARTITION:
    case ErrorCode::FENCED_LEADER_EPOCH:
    case ErrorCode::UNKNOWN_LEADER_EPOCH:
    case ErrorCode::NETWORK_EXCEPTION:
      return true;
    default:
      return false;
  }
}

// Rewrites a closed batch's baseSequence and recomputes its CRC-32C (which covers attributes to
// the end of the batch, so the sequence is inside it).
void Restamp(std::string* batch, int32_t base_sequence) {
  char* p = batch->data();
  EncodeBE32(p + format::kBaseSequenceOffset, static_cast<uint32_t>(base_sequence));
  uint32_t crc = crc32c::Value(p + format::kAttributesOffset,
                               batch->size() - format::kAttributesOffset);
  EncodeBE32(p + format::kCrcOffset, crc);
}

}  // namespace

struct NetProducer::Batch {
  enum class State { kQueued, kInFlight, kDone };
  std::string bytes;
  int32_t records = 0;
  int32_t base_sequence = -1;
  int64_t deadline_ms = 0;
  State state = State::kQueued;
  std::string last_error;
};

struct NetProducer::Part {
  int32_t id = 0;
  int32_t leader = -1;
  std::unique_ptr<format::RecordBatchBuilder> builder;
  size_t open_bytes = 0;
  int64_t open_since_ms = 0;
  std::deque<std::unique_ptr<Batch>> queue;  // closed batches not yet acknowledged, in order
  int in_flight = 0;
  int32_t next_sequence = 0;   // for the next batch closed
  int32_t acked_sequence = 0;  // after the last batch acknowledged
  bool rewinding = false;      // wait for in-flight answers, then resend from the first queued
  bool resequence = false;     // a batch failed for good: renumber what follows it
  int64_t retry_at_ms = 0;
  int backoff_ms = 0;
};

struct NetProducer::InFlight {
  std::vector<std::pair<Part*, Batch*>> batches;
  int16_t version = 0;
};

NetProducer::NetProducer(Cluster* cluster, std::string topic, const NetProducerOptions& options)
    : cluster_(cluster),
      topic_(std::move(topic)),
      options_(options),
      partitioner_(options.partitioner, 1, options.seed ? options.seed : MonotonicMs()) {}

NetProducer::~NetProducer() = default;

Result<std::unique_ptr<NetProducer>> NetProducer::Open(Cluster* cluster, const std::string& topic,
                                                       const NetProducerOptions& options) {
  std::unique_ptr<NetProducer> p(new NetProducer(cluster, topic, options));
  SILT_ASSIGN_OR_RETURN(TopicMeta meta, cluster->Topic(topic, options.create_topic));
  const int32_t n = static_cast<int32_t>(meta.partitions.size());
  if (options.partition >= n)
    return Status::InvalidArgument("topic '" + topic + "' has " + std::to_string(n) +
                                   " partition(s); there is no partition " +
                                   std::to_string(options.partition));
  p->partitioner_ = Partitioner(options.partitioner, n, options.seed ? options.seed : NowMs().value());
  for (int32_t i = 0; i < n; ++i) {
    auto part = std::make_unique<Part>();
    part->id = i;
    part->leader = meta.partitions[i].leader;
    p->parts_.push_back(std::move(part));
  }
  // Idempotence needs acks=all, as in Kafka (whose producer turns it off otherwise).
  if (options.acks != -1) p->options_.idempotent = false;
  if (p->options_.idempotent) SILT_TRY(p->InitProducerId());
  return p;
}

Status NetProducer::InitProducerId() {
  const int64_t deadline = MonotonicMs() + cluster_->options().retry_timeout_ms;
  for (;;) {
    SILT_ASSIGN_OR_RETURN(Connection * conn, cluster_->Any());
    int16_t v = conn->Version(protocol::ApiKey::kInitProducerId);
    if (v < 0) {
      // An old broker without idempotence: fall back to one batch in flight per partition.
      options_.idempotent = false;
      return Status::OK();
    }
    protocol::InitProducerIdRequest req;
    req.transaction_timeout_ms = 60000;
    protocol::InitProducerIdResponse resp;
    Status st = conn->Call(req, &resp, v);
    if (st.ok() && resp.error_code == 0) {
      producer_id_ = resp.producer_id;
      producer_epoch_ = resp.producer_epoch;
      return Status::OK();
    }
    if (!st.ok()) cluster_->Drop(conn);
    bool retry = st.ok() ? IsRetriableError(resp.error_code) : st.code() == Status::Code::kIOError;
    if (!retry || MonotonicMs() >= deadline)
      return st.ok() ? ErrorStatus(resp.error_code, "InitProducerId") : st;
    std::this_thread::sleep_for(std::chrono::milliseconds(cluster_->options().retry_backoff_ms));
  }
}

Status NetProducer::Send(std::optional<std::string_view> key, std::optional<std::string_view> value,
                         const HeaderViews& headers, int64_t timestamp) {
  size_t single = LocalProducer::SingleRecordBatchSize(key, value, headers);
  if (static_cast<int64_t>(single) > max_record_bytes_) {
    ++records_failed_;
    std::string why = "a record of " + std::to_string(single) +
                      " bytes is larger than the maximum request size (" +
                      std::to_string(max_record_bytes_) + " bytes)";
    if (first_error_.empty()) first_error_ = why;
    return Status::TooLarge(why);
  }
  int32_t partition = options_.partition >= 0 ? options_.partition : partitioner_.Choose(key);
  Part& p = *parts_[partition];
  if (p.builder && p.open_bytes + single > options_.batch_bytes) {
    SILT_TRY(CloseBatch(partition));
  }
  if (!p.builder) {
    format::RecordBatchBuilder::Options bo;
    bo.compression = options_.compression;
    if (options_.idempotent && producer_id_ >= 0) {
      bo.producer_id = producer_id_;
      bo.producer_epoch = producer_epoch_;
      bo.base_sequence = p.next_sequence;
    }
    p.builder = std::make_unique<format::RecordBatchBuilder>(bo);
    p.open_bytes = format::kBatchHeaderSize;
    p.open_since_ms = MonotonicMs();
  }
  p.builder->Add(key, value, timestamp, headers);
  p.open_bytes += single - format::kBatchHeaderSize;
  buffered_ += single - format::kBatchHeaderSize;
  if (p.open_bytes >= options_.batch_bytes) SILT_TRY(CloseBatch(partition));
  // Bounded memory: send and wait for answers while too much is buffered.
  while (buffered_ > options_.max_buffered_bytes) {
    SILT_TRY(SendReady(true));
    SILT_TRY(ReadAnswers(100));
  }
  return Poll();
}

Status NetProducer::CloseBatch(int32_t partition) {
  Part& p = *parts_[partition];
  if (!p.builder || p.builder->empty()) return Status::OK();
  auto b = std::make_unique<Batch>();
  b->records = p.builder->record_count();
  SILT_ASSIGN_OR_RETURN(b->bytes, p.builder->Finish());
  p.builder.reset();
  if (options_.idempotent && producer_id_ >= 0) {
    b->base_sequence = p.next_sequence;
    p.next_sequence += b->records;
  }
  b->deadline_ms = MonotonicMs() + options_.delivery_timeout_ms;
  buffered_ -= std::min(buffered_, p.open_bytes - format::kBatchHeaderSize);
  p.open_bytes = 0;
  p.queue.push_back(std::move(b));
  partitioner_.OnBatchSent(partition);
  return Status::OK();
}

Status NetProducer::Poll() {
  SILT_TRY(SendReady(false));
  return ReadAnswers(0);
}

Status NetProducer::RefreshLeaders() {
  need_metadata_ = false;
  auto meta = cluster_->Topic(topic_, options_.create_topic);
  if (!meta.ok()) {
    // Keep retrying on the next round; a persistent failure ends in delivery timeouts.
    need_metadata_ = true;
    return meta.status().IsNotFound() ? meta.status() : Status::OK();
  }
  for (const auto& pm : meta->partitions)
    if (pm.partition < partitions()) parts_[pm.partition]->leader = pm.leader;
  return Status::OK();
}

Status NetProducer::SendReady(bool all) {
  const int64_t now = MonotonicMs();
  for (auto& pp : parts_) {
    Part& p = *pp;
    if (p.builder && (all || now - p.open_since_ms >= options_.linger_ms)) SILT_TRY(CloseBatch(p.id));
  }
  if (need_metadata_) {
    Status st = RefreshLeaders();
    if (!st.ok()) return st;
  }
  // One request per leader, with at most one batch per partition (as Kafka's clients send).
  std::map<int32_t, std::vector<std::pair<Part*, Batch*>>> by_leader;
  const int max_part_in_flight = options_.idempotent ? 5 : 1;
  for (auto& pp : parts_) {
    Part& p = *pp;
    while (!p.queue.empty() && p.queue.front()->state == Batch::State::kDone) p.queue.pop_front();
    if (p.rewinding) {
      if (p.in_flight > 0) continue;
      if (p.resequence) Resequence(p);
      p.rewinding = false;
    }
    if (p.retry_at_ms > now || p.leader < 0 || p.in_flight >= max_part_in_flight) continue;
    for (auto& b : p.queue) {
      if (b->state != Batch::State::kQueued) continue;
      by_leader[p.leader].push_back({&p, b.get()});
      break;
    }
  }
  for (auto& [leader, batches] : by_leader) {
    auto conn = cluster_->Node(leader);
    if (!conn.ok()) {
      for (auto& [p, b] : batches) {
        p->retry_at_ms = now + cluster_->options().retry_backoff_ms;
        b->last_error = conn.status().message();
        if (now >= b->deadline_ms) FailBatch(*p, b, conn.status().message());
      }
      need_metadata_ = true;
      continue;
    }
    Connection* c = *conn;
    auto& queue = in_flight_[c];
    if (static_cast<int>(queue.size()) >= options_.max_in_flight) continue;
    auto version = c->RequireVersion(protocol::ApiKey::kProduce);
    if (!version.ok()) return version.status();
    protocol::ProduceRequest req;
    req.acks = options_.acks;
    req.timeout_ms = cluster_->options().request_timeout_ms;
    req.topic_data.push_back({topic_, {}});
    for (auto& [p, b] : batches) {
      protocol::ProduceRequest::PartitionData pd;
      pd.index = p->id;
      pd.records.bytes = std::string_view(b->bytes);
      req.topic_data[0].partition_data.push_back(pd);
    }
    const bool expect = options_.acks != 0;
    auto id = c->Send(req, *version, expect);
    if (!id.ok()) {
      // The connection broke: what was in flight on it is answered by ReadAnswers' error path.
      for (auto& [p, b] : batches) {
        p->retry_at_ms = now + cluster_->options().retry_backoff_ms;
        b->last_error = id.status().message();
      }
      need_metadata_ = true;
      SILT_TRY(ReadAnswers(0));
      cluster_->Drop(c);
      in_flight_.erase(c);
      continue;
    }
    if (!expect) {
      for (auto& [p, b] : batches) {
        b->state = Batch::State::kDone;
        records_acked_ += b->records;
      }
      continue;
    }
    auto f = std::make_unique<InFlight>();
    f->version = *version;
    for (auto& [p, b] : batches) {
      b->state = Batch::State::kInFlight;
      ++p->in_flight;
      f->batches.push_back({p, b});
    }
    queue.push_back(std::move(f));
  }
  return Status::OK();
}

void NetProducer::FailBatch(Part& p, Batch* b, const std::string& why) {
  if (b->state == Batch::State::kDone) return;
  b->state = Batch::State::kDone;
  records_failed_ += b->records;
  if (first_error_.empty()) first_error_ = why;
  if (options_.idempotent && producer_id_ >= 0) {
    // The broker never took this sequence range: what follows must be renumbered.
    p.resequence = true;
    p.rewinding = true;
  }
}

void NetProducer::Resequence(Part& p) {
  p.resequence = false;
  int32_t seq = p.acked_sequence;
  for (auto& b : p.queue) {
    if (b->state == Batch::State::kDone) continue;
    b->base_sequence = seq;
    Restamp(&b->bytes, seq);
    seq += b->records;
  }
  if (p.builder) {
    // The open batch was started with a sequence that is now wrong: close it later with the
    // renumbered one by restamping at close time.
    p.next_sequence = seq;
    auto b = std::make_unique<Batch>();
    b->records = p.builder->record_count();
    auto bytes = p.builder->Finish();
    p.builder.reset();
    if (bytes.ok()) {
      b->bytes = std::move(*bytes);
      b->base_sequence = seq;
      Restamp(&b->bytes, seq);
      b->deadline_ms = MonotonicMs() + options_.delivery_timeout_ms;
      p.next_sequence = seq + b->records;
      buffered_ -= std::min(buffered_, p.open_bytes - format::kBatchHeaderSize);
      p.open_bytes = 0;
      p.queue.push_back(std::move(b));
    }
  } else {
    p.next_sequence = seq;
  }
}

void NetProducer::HandleResult(Part& p, Batch* b, int16_t code,
                               const std::optional<std::string>& message) {
  if (b->state == Batch::State::kInFlight) --p.in_flight;
  if (b->state == Batch::State::kDone) return;
  const int64_t now = MonotonicMs();
  if (code == 0 || code == kDuplicateSequence) {
    b->state = Batch::State::kDone;
    records_acked_ += b->records;
    if (b->base_sequence >= 0) p.acked_sequence = b->base_sequence + b->records;
    p.backoff_ms = 0;
    return;
  }
  std::string why = std::string(protocol::ErrorName(code));
  if (message && !message->empty()) why += " (" + *message + ")";
  b->last_error = why;
  // A later batch refused because an earlier one is being re-sent.
  bool follows_failure = p.rewinding && code == kOutOfOrderSequence;
  if (follows_failure || (IsRetriableError(code) && now < b->deadline_ms)) {
    b->state = Batch::State::kQueued;
    p.rewinding = true;
    p.backoff_ms = p.backoff_ms == 0 ? cluster_->options().retry_backoff_ms
                                     : std::min(p.backoff_ms * 2, 1000);
    p.retry_at_ms = now + p.backoff_ms;
    if (IsLeaderError(code)) need_metadata_ = true;
    return;
  }
  FailBatch(p, b, "partition " + std::to_string(p.id) + ": " + why);
}

Status NetProducer::ReadAnswers(int wait_ms) {
  for (auto it = in_flight_.begin(); it != in_flight_.end();) {
    Connection* c = it->first;
    auto& queue = it->second;
    if (queue.empty()) {
      ++it;
      continue;
    }
    if (!c->Readable(wait_ms)) {
      ++it;
      continue;
    }
    int32_t id = 0;
    std::string body;
    Status st = c->Receive(&id, &body, c->timeout_ms());
    std::unique_ptr<InFlight> f = std::move(queue.front());
    queue.pop_front();
    protocol::ProduceResponse resp;
    if (st.ok()) {
      ByteReader r(body);
      st = resp.Decode(r, f->version);
    }
    if (!st.ok()) {
      // Everything in flight on this connection is unanswered: re-send it all.
      std::vector<std::unique_ptr<InFlight>> lost;
      lost.push_back(std::move(f));
      for (auto& g : queue) lost.push_back(std::move(g));
      for (auto& g : lost)
        for (auto& [p, b] : g->batches)
          HandleResult(*p, b, static_cast<int16_t>(ErrorCode::NETWORK_EXCEPTION), st.message());
      cluster_->Drop(c);
      it = in_flight_.erase(it);
      need_metadata_ = true;
      continue;
    }
    for (auto& [p, b] : f->batches) {
      int16_t code = static_cast<int16_t>(ErrorCode::NETWORK_EXCEPTION);
      std::optional<std::string> message = std::string("no answer for this partition");
      for (const auto& t : resp.responses) {
        if (t.name != topic_) continue;
        for (const auto& pr : t.partition_responses) {
          if (pr.index != p->id) continue;
          code = pr.error_code;
          message = pr.error_message;
        }
      }
      HandleResult(*p, b, code, message);
    }
    ++it;
  }
  return Status::OK();
}

int64_t NetProducer::Outstanding() const {
  int64_t n = 0;
  for (const auto& p : parts_)
    for (const auto& b : p->queue)
      if (b->state != Batch::State::kDone) ++n;
  return n;
}

Status NetProducer::Flush() {
  for (auto& p : parts_) SILT_TRY(CloseBatch(p->id));
  for (;;) {
    SILT_TRY(SendReady(true));
    // Give up on batches whose delivery time passed while they waited for a retry.
    const int64_t now = MonotonicMs();
    for (auto& p : parts_)
      for (auto& b : p->queue)
        if (b->state == Batch::State::kQueued && now >= b->deadline_ms)
          FailBatch(*p, b.get(), "partition " + std::to_string(p->id) + ": " +
                                     (b->last_error.empty() ? "delivery timed out" : b->last_error));
    if (Outstanding() == 0) break;
    bool waiting = false;
    for (auto& [c, q] : in_flight_)
      if (!q.empty()) waiting = true;
    if (waiting) {
      SILT_TRY(ReadAnswers(50));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  return Status::OK();
}

}  // namespace silt::client
