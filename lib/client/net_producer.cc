// Network producer: batching, idempotent sequences, pipelined Produce requests and retries.
#include "client/net_producer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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

// SILT_PRODUCE_TRACE=1 in the environment: one line on stderr per Produce request sent and per
// answer read, with a microsecond clock, for finding where a producer waits.
bool Tracing() {
  static const bool on = [] {
    const char* v = std::getenv("SILT_PRODUCE_TRACE");
    return v != nullptr && *v != '\0' && *v != '0';
  }();
  return on;
}

int64_t TraceUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::vector<const protocol::ProduceResponse::PartitionResponse*> MatchProduceAnswers(
    const std::vector<int32_t>& partitions,
    const std::vector<const protocol::ProduceResponse::PartitionResponse*>& answers) {
  std::vector<const protocol::ProduceResponse::PartitionResponse*> out(partitions.size(), nullptr);
  // Brokers answer in the request's order, so the i-th answer is normally the i-th partition's;
  // only an answer out of place costs a lookup.
  std::map<int32_t, const protocol::ProduceResponse::PartitionResponse*> by_index;
  for (size_t i = 0; i < partitions.size(); ++i) {
    if (i < answers.size() && answers[i]->index == partitions[i]) {
      out[i] = answers[i];
      continue;
    }
    if (by_index.empty())
      for (const auto* a : answers) by_index.emplace(a->index, a);
    auto found = by_index.find(partitions[i]);
    if (found != by_index.end()) out[i] = found->second;
  }
  return out;
}

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
  // The open batch; held in the Part itself, one pointer less to follow per record.
  std::optional<format::RecordBatchBuilder> builder;
  size_t open_bytes = 0;
  int64_t open_since_ms = 0;
  size_t last_batch_bytes = 0;  // the size of the batch closed last (to size the next one)
  std::deque<std::unique_ptr<Batch>> queue;  // closed batches not yet acknowledged, in order
  int in_flight = 0;
  int32_t next_sequence = 0;   // for the next batch closed
  int32_t acked_sequence = 0;  // after the last batch acknowledged
  bool rewinding = false;      // wait for in-flight answers, then resend from the first queued
  bool resequence = false;     // a batch failed for good: renumber what follows it
  bool pending = false;        // listed in pending_
  int64_t retry_at_ms = 0;
  int backoff_ms = 0;

  Batch* FirstQueued() const {
    for (const auto& b : queue)
      if (b->state == Batch::State::kQueued) return b.get();
    return nullptr;
  }
};

struct NetProducer::InFlight {
  std::vector<std::pair<Part*, Batch*>> batches;
  int16_t version = 0;
  int64_t sent_us = 0;  // for the trace
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
  if (p.builder && p.open_bytes + single > options_.batch_bytes) SILT_TRY(CloseBatch(p));
  if (!p.builder) {
    format::RecordBatchBuilder::Options bo;
    bo.compression = options_.compression;
    if (options_.idempotent && producer_id_ >= 0) {
      bo.producer_id = producer_id_;
      bo.producer_epoch = producer_epoch_;
      bo.base_sequence = p.next_sequence;
    }
    // Room for a batch like the last one and a half: a batch grown in place reallocates and
    // copies itself several times, each time into memory not yet touched.
    std::string buffer = TakeSpareBuffer();
    buffer.reserve(std::min(options_.batch_bytes + options_.batch_bytes / 8,
                            p.last_batch_bytes + p.last_batch_bytes / 2));
    p.builder.emplace(bo, std::move(buffer));
    p.open_bytes = format::kBatchHeaderSize;
    p.open_since_ms = MonotonicMs();
    next_wake_ms_ = std::min(next_wake_ms_, p.open_since_ms + options_.linger_ms);
    MarkPending(p);
  }
  p.builder->Add(key, value, timestamp, headers);
  p.open_bytes += single - format::kBatchHeaderSize;
  buffered_ += single - format::kBatchHeaderSize;
  if (p.open_bytes >= options_.batch_bytes) SILT_TRY(CloseBatch(p));
  // Bounded memory: send and wait for answers while too much is buffered.
  while (buffered_ > options_.max_buffered_bytes) {
    SILT_TRY(SendReady(true));
    ExpireBatches(MonotonicMs());
    if (buffered_ <= options_.max_buffered_bytes) break;
    if (requests_in_flight_ > 0) {
      SILT_TRY(ReadAnswers(100));
    } else {
      // Nothing to wait for on the network (a retry backoff, an unknown leader).
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  return PollSome(false);
}

void NetProducer::MarkPending(Part& p) {
  if (p.pending) return;
  p.pending = true;
  pending_.push_back(&p);
}

Status NetProducer::CloseBatch(Part& p) {
  if (!p.builder || p.builder->empty()) return Status::OK();
  auto b = std::make_unique<Batch>();
  b->records = p.builder->record_count();
  SILT_ASSIGN_OR_RETURN(b->bytes, p.builder->Finish());
  p.builder.reset();
  p.last_batch_bytes = b->bytes.size();
  if (options_.idempotent && producer_id_ >= 0) {
    b->base_sequence = p.next_sequence;
    p.next_sequence += b->records;
  }
  b->deadline_ms = MonotonicMs() + options_.delivery_timeout_ms;
  // From here the batch's own bytes stand for what the open batch buffered.
  buffered_ -= std::min(buffered_, p.open_bytes - format::kBatchHeaderSize);
  buffered_ += b->bytes.size();
  p.open_bytes = 0;
  p.queue.push_back(std::move(b));
  ++outstanding_;
  MarkPending(p);
  kick_ = true;
  partitioner_.OnBatchSent(p.id);
  return Status::OK();
}

void NetProducer::Finish(Batch* b) {
  b->state = Batch::State::kDone;
  buffered_ -= std::min(buffered_, b->bytes.size());
  --outstanding_;
  // Nothing reads a finished batch's bytes again: the next open batch is built in them.
  if (spare_.size() < parts_.size() &&
      spare_bytes_ + b->bytes.capacity() <= options_.max_buffered_bytes) {
    spare_bytes_ += b->bytes.capacity();
    spare_.push_back(std::move(b->bytes));
  }
  b->bytes = std::string();
}

std::string NetProducer::TakeSpareBuffer() {
  if (spare_.empty()) return std::string();
  std::string buffer = std::move(spare_.back());
  spare_.pop_back();
  spare_bytes_ -= std::min(spare_bytes_, buffer.capacity());
  return buffer;
}

Status NetProducer::Poll() { return PollSome(true); }

Status NetProducer::PollSome(bool check_clock) {
  // Looking for answers costs a system call (poll): Poll() looks every time, Send() every
  // kSendsPerRead records. A request's answer takes a round trip of the broker's work for it
  // (milliseconds for a request of many partitions), next to which 64 records are microseconds;
  // looking every few records instead cost a fifth of the producer's time at 1,024 partitions,
  // where a request is nearly always outstanding.
  if (requests_in_flight_ > 0 && (check_clock || ++polls_since_read_ >= kSendsPerRead)) {
    polls_since_read_ = 0;
    for (;;) {
      const int64_t before = requests_in_flight_;
      SILT_TRY(ReadAnswers(0));
      if (requests_in_flight_ == 0 || requests_in_flight_ == before) break;
    }
  }
  // Reading the clock for every record is a measurable part of its cost: Send() looks at it for
  // every few records only.
  if (!check_clock && ++polls_since_clock_ >= kPollsPerRead) check_clock = true;
  if (check_clock) polls_since_clock_ = 0;
  if (kick_ || need_metadata_ || (check_clock && MonotonicMs() >= next_wake_ms_))
    SILT_TRY(SendReady(false));
  return Status::OK();
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
  kick_ = false;
  next_wake_ms_ = INT64_MAX;
  if (need_metadata_) {
    Status st = RefreshLeaders();
    if (!st.ok()) return st;
  }
  // One batch per partition in a request (as Kafka's clients send), at most kMaxRequestBytes of
  // them, so that the broker can start on one request while the next is on its way.
  const size_t max_request_bytes = std::max<size_t>(options_.batch_bytes, 8 << 20);
  const int max_part_in_flight = options_.idempotent ? 5 : 1;
  std::map<int32_t, std::vector<std::pair<Part*, Batch*>>> by_leader;
  for (Part* pp : pending_) {
    Part& p = *pp;
    while (!p.queue.empty() && p.queue.front()->state == Batch::State::kDone) p.queue.pop_front();
    if (p.rewinding) {
      if (p.in_flight > 0) continue;  // woken by the answer
      if (p.resequence) Resequence(p);
      p.rewinding = false;
    }
    if (p.retry_at_ms > now) {
      next_wake_ms_ = std::min(next_wake_ms_, p.retry_at_ms);
      continue;
    }
    if (p.leader < 0) {
      next_wake_ms_ = std::min(next_wake_ms_, now + cluster_->options().retry_backoff_ms);
      continue;
    }
    if (p.in_flight >= max_part_in_flight) continue;  // woken by the answer
    Batch* b = p.FirstQueued();
    if (b == nullptr && p.builder) {
      // The open batch goes once it has lingered; until then it keeps taking records.
      if (all || now - p.open_since_ms >= options_.linger_ms) {
        SILT_TRY(CloseBatch(p));
        b = p.queue.back().get();
      } else {
        next_wake_ms_ = std::min(next_wake_ms_, p.open_since_ms + options_.linger_ms);
      }
    }
    if (b != nullptr) by_leader[p.leader].push_back({&p, b});
  }
  kick_ = false;  // CloseBatch above asked for the round this is

  for (auto& [leader, batches] : by_leader) {
    auto conn = cluster_->Node(leader);
    if (!conn.ok()) {
      for (auto& [p, b] : batches) {
        p->retry_at_ms = now + cluster_->options().retry_backoff_ms;
        next_wake_ms_ = std::min(next_wake_ms_, p->retry_at_ms);
        b->last_error = conn.status().message();
        if (now >= b->deadline_ms) FailBatch(*p, b, conn.status().message());
      }
      need_metadata_ = true;
      continue;
    }
    Connection* c = *conn;
    auto version = c->RequireVersion(protocol::ApiKey::kProduce);
    if (!version.ok()) return version.status();
    const bool expect = options_.acks != 0;
    for (size_t next = 0; next < batches.size();) {
      auto& queue = in_flight_[c];
      if (static_cast<int>(queue.size()) >= options_.max_in_flight) break;  // woken by an answer
      size_t end = next, bytes = 0;
      while (end < batches.size() &&
             (end == next || bytes + batches[end].second->bytes.size() <= max_request_bytes)) {
        bytes += batches[end].second->bytes.size();
        ++end;
      }
      protocol::ProduceRequest req;
      req.acks = options_.acks;
      req.timeout_ms = cluster_->options().request_timeout_ms;
      req.topic_data.push_back({topic_, {}});
      req.topic_data[0].partition_data.reserve(end - next);
      for (size_t i = next; i < end; ++i) {
        protocol::ProduceRequest::PartitionData pd;
        pd.index = batches[i].first->id;
        pd.records.bytes = std::string_view(batches[i].second->bytes);
        req.topic_data[0].partition_data.push_back(pd);
      }
      auto id = c->Send(req, *version, expect);
      if (!id.ok()) {
        // The connection broke: what was in flight on it is lost too, and everything is
        // re-sent after a metadata refresh.
        for (size_t i = next; i < batches.size(); ++i) {
          batches[i].first->retry_at_ms = now + cluster_->options().retry_backoff_ms;
          batches[i].second->last_error = id.status().message();
        }
        next_wake_ms_ = std::min<int64_t>(next_wake_ms_, now + cluster_->options().retry_backoff_ms);
        LoseConnection(c, id.status());
        break;
      }
      if (!expect) {
        for (size_t i = next; i < end; ++i) {
          records_acked_ += batches[i].second->records;
          Finish(batches[i].second);
        }
      } else {
        auto f = std::make_unique<InFlight>();
        f->version = *version;
        f->batches.assign(batches.begin() + static_cast<std::ptrdiff_t>(next),
                          batches.begin() + static_cast<std::ptrdiff_t>(end));
        for (auto& [p, b] : f->batches) {
          b->state = Batch::State::kInFlight;
          ++p->in_flight;
        }
        if (Tracing()) {
          f->sent_us = TraceUs();
          std::fprintf(stderr, "produce-trace sent us=%lld in_flight=%zu partitions=%zu bytes=%zu\n",
                       static_cast<long long>(f->sent_us), queue.size(), end - next, bytes);
        }
        queue.push_back(std::move(f));
        ++requests_in_flight_;
      }
      next = end;
    }
  }

  // Drop the partitions left with nothing to send.
  size_t keep = 0;
  for (Part* p : pending_) {
    while (!p->queue.empty() && p->queue.front()->state == Batch::State::kDone) p->queue.pop_front();
    if (p->builder || p->rewinding || p->FirstQueued() != nullptr) {
      pending_[keep++] = p;
    } else {
      p->pending = false;
    }
  }
  pending_.resize(keep);
  return Status::OK();
}

void NetProducer::FailBatch(Part& p, Batch* b, const std::string& why) {
  if (b->state == Batch::State::kDone) return;
  Finish(b);
  records_failed_ += b->records;
  if (first_error_.empty()) first_error_ = why;
  if (options_.idempotent && producer_id_ >= 0) {
    // The broker never took this sequence range: what follows must be renumbered.
    p.resequence = true;
    p.rewinding = true;
    MarkPending(p);
    kick_ = true;
  }
}

void NetProducer::ExpireBatches(int64_t now) {
  for (Part* p : pending_)
    for (auto& b : p->queue)
      if (b->state == Batch::State::kQueued && now >= b->deadline_ms)
        FailBatch(*p, b.get(), "partition " + std::to_string(p->id) + ": " +
                                   (b->last_error.empty() ? "delivery timed out" : b->last_error));
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
    // The open batch was started with a sequence that is now wrong: close it with the
    // renumbered one.
    p.next_sequence = seq;
    auto b = std::make_unique<Batch>();
    b->records = p.builder->record_count();
    auto bytes = p.builder->Finish();
    p.builder.reset();
    buffered_ -= std::min(buffered_, p.open_bytes - format::kBatchHeaderSize);
    p.open_bytes = 0;
    if (bytes.ok()) {
      b->bytes = std::move(*bytes);
      b->base_sequence = seq;
      Restamp(&b->bytes, seq);
      b->deadline_ms = MonotonicMs() + options_.delivery_timeout_ms;
      p.next_sequence = seq + b->records;
      buffered_ += b->bytes.size();
      ++outstanding_;
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
    Finish(b);
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
    MarkPending(p);
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
    if (Tracing()) {
      const int64_t t = TraceUs();
      std::fprintf(stderr, "produce-trace answered us=%lld latency_us=%lld partitions=%zu\n",
                   static_cast<long long>(t), static_cast<long long>(t - f->sent_us),
                   f->batches.size());
    }
    --requests_in_flight_;
    kick_ = true;  // the answered partitions may send again
    protocol::ProduceResponse resp;
    if (st.ok()) {
      ByteReader r(body);
      st = resp.Decode(r, f->version);
    }
    if (!st.ok()) {
      // Everything in flight on this connection is unanswered: re-send it all.
      queue.push_front(std::move(f));
      ++requests_in_flight_;
      ++it;
      LoseConnection(c, st);
      continue;
    }
    std::vector<const protocol::ProduceResponse::PartitionResponse*> answers;
    answers.reserve(f->batches.size());
    for (const auto& t : resp.responses) {
      if (t.name != topic_) continue;
      for (const auto& pr : t.partition_responses) answers.push_back(&pr);
    }
    std::vector<int32_t> ids;
    ids.reserve(f->batches.size());
    for (const auto& [p, b] : f->batches) ids.push_back(p->id);
    std::vector<const protocol::ProduceResponse::PartitionResponse*> matched =
        MatchProduceAnswers(ids, answers);
    for (size_t i = 0; i < f->batches.size(); ++i) {
      auto [p, b] = f->batches[i];
      const protocol::ProduceResponse::PartitionResponse* a = matched[i];
      if (a == nullptr) {
        HandleResult(*p, b, static_cast<int16_t>(ErrorCode::NETWORK_EXCEPTION),
                     std::string("no answer for this partition"));
      } else {
        HandleResult(*p, b, a->error_code, a->error_message);
      }
    }
    ++it;
  }
  return Status::OK();
}

void NetProducer::LoseConnection(Connection* c, const Status& why) {
  auto it = in_flight_.find(c);
  if (it != in_flight_.end()) {
    std::deque<std::unique_ptr<InFlight>> lost = std::move(it->second);
    in_flight_.erase(it);
    requests_in_flight_ -= static_cast<int64_t>(lost.size());
    for (auto& g : lost)
      for (auto& [p, b] : g->batches)
        HandleResult(*p, b, static_cast<int16_t>(ErrorCode::NETWORK_EXCEPTION), why.message());
  }
  cluster_->Drop(c);
  need_metadata_ = true;
  kick_ = true;
}

Status NetProducer::Flush() {
  for (Part* p : std::vector<Part*>(pending_)) SILT_TRY(CloseBatch(*p));
  for (;;) {
    SILT_TRY(SendReady(true));
    // Give up on batches whose delivery time passed while they waited for a retry.
    ExpireBatches(MonotonicMs());
    if (outstanding_ == 0) break;
    if (requests_in_flight_ > 0) {
      SILT_TRY(ReadAnswers(50));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  return Status::OK();
}

}  // namespace silt::client
