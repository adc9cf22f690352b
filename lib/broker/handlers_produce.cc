// Produce: validate each partition's batch, check idempotent-producer sequences, append.
#include "base/clock.h"
#include "broker/broker_metrics.h"
#include "broker/delayed_operation.h"
#include "broker/handlers.h"
#include "broker/leader_hint.h"
#include "broker/logging.h"
#include "format/legacy_convert.h"
#include "format/record_batch.h"
#include "protocol/messages.h"

namespace silt::broker {

using protocol::ErrorCode;

namespace {

struct PartitionOutcome {
  ErrorCode error = ErrorCode::NONE;
  std::string message;
  int64_t base_offset = -1;
  int64_t log_append_time = -1;
  int64_t log_start_offset = -1;
  Offset last_offset = kInvalidOffset;
  std::shared_ptr<Partition> partition;  // set when the batch is in the log (or a duplicate)
  int32_t min_insync_replicas = 1;       // the topic's, when the batch is in the log
};

// Validates and appends one partition's record set.
PartitionOutcome ProducePartition(BrokerContext& ctx, Request& req, const std::string& topic,
                                  int32_t partition, const protocol::RecordSet& records,
                                  int16_t version, int16_t acks) {
  PartitionOutcome out;
  auto fail = [&out](ErrorCode c, std::string m) {
    out.error = c;
    out.message = std::move(m);
    return out;
  };
  auto part_r = ctx.partitions.Get(topic, PartitionId(partition));
  if (!part_r.ok()) {
    if (part_r.status().IsNotFound()) return fail(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, "");
    // (An offline partition, IOError, was logged once when it went offline.)
    if (part_r.status().code() != Status::Code::kNotLeader &&
        part_r.status().code() != Status::Code::kIOError) {
      LogError("produce to " + topic + "-" + std::to_string(partition) + ": " +
               part_r.status().ToString());
    }
    return fail(protocol::ErrorCodeFromStatus(part_r.status()), part_r.status().message());
  }
  Partition& part = **part_r;
  const storage::LogConfig cfg = part.config();
  if (!part.serves_as_leader()) {
    part.NoteRetriableRefusal(records.bytes.value_or(std::string_view()),
                              ErrorCode::NOT_LEADER_OR_FOLLOWER);
    return fail(ErrorCode::NOT_LEADER_OR_FOLLOWER, part.name() + " is a follower here");
  }
  // A mirror topic is written only by `silt replicate` (SiltAppendBatches, handlers_mirror.cc)
  // until it is promoted. POLICY_VIOLATION: a permanent error that clients report by name.
  if (cfg.mirror()) {
    return fail(ErrorCode::POLICY_VIOLATION,
                "topic '" + topic + "' is a mirror topic (silt.mirror=true), written only by "
                "silt replicate until promoted");
  }
  // acks=all with fewer in-sync replicas than min.insync.replicas is refused before the
  // append (Kafka's check, against the effective minimum: never more than the replicas).
  if (acks == -1) {
    const size_t in_sync = part.isr().size();
    const int32_t min_isr = part.EffectiveMinIsr(cfg);
    if (in_sync < static_cast<size_t>(min_isr)) {
      part.NoteRetriableRefusal(records.bytes.value_or(std::string_view()),
                                ErrorCode::NOT_ENOUGH_REPLICAS);
      return fail(ErrorCode::NOT_ENOUGH_REPLICAS,
                  part.name() + " has " + std::to_string(in_sync) +
                      " in-sync replica(s), below min.insync.replicas " + std::to_string(min_isr));
    }
  }

  std::string_view bytes = records.bytes.value_or(std::string_view());
  if (bytes.empty()) return fail(ErrorCode::CORRUPT_MESSAGE, "empty record set");
  if (static_cast<int64_t>(bytes.size()) > cfg.max_message_bytes) {
    return fail(ErrorCode::MESSAGE_TOO_LARGE,
                "record set of " + std::to_string(bytes.size()) + " bytes exceeds max.message.bytes " +
                    std::to_string(cfg.max_message_bytes));
  }
  // Produce v0-2 carry legacy message sets (magic 0/1): stored as one v2 batch built from
  // them, which then goes through the same checks and append as a v2 producer's.
  std::string converted;
  if (bytes.size() >= static_cast<size_t>(format::kMagicPrefixSize) &&
      bytes[format::kMagicOffset] != format::kMagicV2) {
    if (version >= 3) return fail(ErrorCode::INVALID_RECORD, "only magic 2 record batches are accepted");
    format::UpConvertOptions up_options;
    up_options.max_size = cfg.max_message_bytes;
    auto up = format::UpConvertMessageSet(bytes, up_options);
    // A bad CRC or message is CORRUPT_MESSAGE, a wrapper inflating too far MESSAGE_TOO_LARGE.
    if (!up.ok()) return fail(protocol::ErrorCodeFromStatus(up.status()), up.status().message());
    converted = std::move(up->batch);
    bytes = converted;
  }
  format::ValidateLimits limits;
  limits.max_batch_size = cfg.max_message_bytes;
  // Decompression is bounded by the same limit: a batch that inflates past max.message.bytes
  // is refused rather than allocated (Kafka only bounds the compressed size).
  limits.max_uncompressed_size = cfg.max_message_bytes;
  // A producer's batch has no gaps: offset deltas run 0..lastOffsetDelta exactly.
  limits.contiguous_offsets = true;
  auto view = format::RecordBatchView::Parse(bytes, limits);
  if (!view.ok()) {
    ErrorCode c = view.status().IsTooLarge() ? ErrorCode::MESSAGE_TOO_LARGE : ErrorCode::CORRUPT_MESSAGE;
    return fail(c, view.status().message());
  }
  if (view->bytes().size() != bytes.size()) {
    return fail(ErrorCode::INVALID_RECORD,
                "a produce request must carry exactly one record batch per partition");
  }
  const format::BatchHeader& h = view->header();
  if (h.control()) return fail(ErrorCode::INVALID_RECORD, "clients may not write control batches");
  if (h.transactional()) {
    return fail(ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "transactions are not supported");
  }
  if (h.records_count <= 0) return fail(ErrorCode::INVALID_RECORD, "batch without records");
  Status v = view->Validate(limits);
  if (!v.ok()) {
    if (v.IsTooLarge()) return fail(ErrorCode::MESSAGE_TOO_LARGE, v.message());
    if (v.code() == Status::Code::kUnsupported) {
      return fail(ErrorCode::UNSUPPORTED_COMPRESSION_TYPE, v.message());
    }
    // INVALID_RECORD exists from Produce v8; older clients get CORRUPT_MESSAGE.
    return fail(version >= 8 ? ErrorCode::INVALID_RECORD : ErrorCode::CORRUPT_MESSAGE, v.message());
  }

  // The batch is appended where it was received: the request owns its frame, and nothing
  // reads these bytes after the append patches baseOffset into them.
  char* batch = converted.empty() ? req.mutable_bytes(view->bytes()) : converted.data();
  ProduceAppend a = part.AppendFromProducer(batch, view->bytes().size(), cfg);
  if (a.error == ErrorCode::INVALID_RECORD && version < 8) a.error = ErrorCode::CORRUPT_MESSAGE;
  out.error = a.error;
  out.message = std::move(a.message);
  out.base_offset = a.base_offset.value();
  out.log_append_time = a.log_append_time;
  out.log_start_offset = a.log_start_offset.value();
  out.last_offset = a.last_offset;
  out.partition = *part_r;
  out.min_insync_replicas = cfg.min_insync_replicas;
  return out;
}

}  // namespace

namespace {

// KIP-951 (v10+): a partition turned away names its leader, and the response lists that
// leader's endpoint.
void AddLeaderHint(BrokerContext& ctx, int16_t version, const std::string& topic,
                   const Partition* part, protocol::ProduceResponse::PartitionResponse& pr,
                   protocol::ProduceResponse& resp) {
  if (version < 10 || !WantsLeaderHint(pr.error_code)) return;
  LeaderHint h = CurrentLeader(ctx, topic, pr.index, part);
  pr.current_leader.leader_id = h.leader_id;
  pr.current_leader.leader_epoch = h.leader_epoch;
  AddNodeEndpoint(ctx, h.leader_id, &resp.node_endpoints);
}

// A partition of an acks=all produce whose batch is in the leader's log but not yet committed.
struct AwaitedCommit {
  protocol::ProduceResponse::PartitionResponse* response;
  std::string topic;
  std::shared_ptr<Partition> partition;
  Offset needed;  // the high watermark that commits the batch: its last offset + 1
  int32_t min_insync_replicas = 1;  // the topic's config when the batch was appended
  LeaderEpoch epoch = kNoLeaderEpoch;  // the partition's leader epoch just after the append
  bool done = false;                // answered (committed, or an error)
};

// An acks=all Produce waiting until every in-sync replica has its batches (the high watermark
// passes them) or its timeout passes: committed partitions answer as appended, the others
// REQUEST_TIMED_OUT (the batch may still be committed later, as in Kafka). As Kafka's
// checkEnoughReplicasReachOffset: a partition whose ISR shrank below min.insync.replicas by
// the time its batch is committed answers NOT_ENOUGH_REPLICAS_AFTER_APPEND (the batch is in the
// log, but not on as many replicas as asked), and one whose leadership moved away while
// waiting NOT_LEADER_OR_FOLLOWER at once (BecomeFollower wakes the waiters) — moved away means
// another leader or a new epoch: a replica only without a role for a while keeps waiting.
class DelayedProduce : public DelayedOperation {
 public:
  DelayedProduce(BrokerContext& ctx, std::shared_ptr<Request> req,
                 std::unique_ptr<protocol::ProduceResponse> resp, std::vector<AwaitedCommit> waits,
                 Respond respond)
      : DelayedOperation(req->executor, &ctx.stopping),
        ctx_(ctx),
        req_(std::move(req)),
        resp_(std::move(resp)),
        waits_(std::move(waits)),
        respond_(std::move(respond)) {}

  void Start(int64_t timeout_ms) {
    std::vector<std::shared_ptr<Partition>> parts;
    for (const AwaitedCommit& w : waits_) parts.push_back(w.partition);
    CountWhileWaiting(RequestMetrics::Get().delayed_produces());
    DelayedOperation::Start(std::move(parts), WatchOffset::kHighWatermark,
                            std::max<int64_t>(timeout_ms, 0));
  }

 protected:
  bool TryComplete(bool final) override {
    bool all = true;
    for (AwaitedCommit& w : waits_) {
      if (w.done) continue;
      auto fail = [this, &w](ErrorCode c) {
        w.response->error_code = Wire(c);
        w.response->base_offset = -1;
        w.done = true;
        AddLeaderHint(ctx_, req_->api_version, w.topic, w.partition.get(), *w.response, *resp_);
      };
      if (!w.partition->alive()) {
        fail(ErrorCode::NOT_LEADER_OR_FOLLOWER);
      } else if (!w.partition->is_leader()) {
        // A replica that stopped acting as leader without a new leader or epoch (it lost the
        // controller for its session timeout) may lead again in the same epoch with the batch
        // still in its log: NOT_LEADER_OR_FOLLOWER would tell the client the batch was not
        // written (librdkafka then bumps its producer epoch and sends it again under new
        // sequences, a duplicate). It waits instead, and times out as possibly written.
        if (w.partition->leader().value() >= 0 || w.partition->leader_epoch() != w.epoch) {
          fail(ErrorCode::NOT_LEADER_OR_FOLLOWER);
        } else {
          all = false;
        }
      } else if (w.partition->high_watermark() >= w.needed) {
        storage::LogConfig cfg;
        cfg.min_insync_replicas = w.min_insync_replicas;
        if (w.partition->isr().size() < static_cast<size_t>(w.partition->EffectiveMinIsr(cfg))) {
          fail(ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND);
        } else {
          w.done = true;
        }
      } else {
        all = false;
      }
    }
    if (!all && !final) return false;
    for (AwaitedCommit& w : waits_) {
      if (!w.done) {
        w.response->error_code = Wire(ErrorCode::REQUEST_TIMED_OUT);
        w.response->base_offset = -1;
      }
    }
    Respond r = std::move(respond_);
    r(EncodeBody(*resp_, req_->api_version));
    return true;
  }
  void OnCompleted() override { waits_.clear(); }

 private:
  BrokerContext& ctx_;
  std::shared_ptr<Request> req_;
  std::unique_ptr<protocol::ProduceResponse> resp_;
  std::vector<AwaitedCommit> waits_;
  Respond respond_;
};

}  // namespace

Status HandleProduce(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond) {
  protocol::ProduceRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  auto resp_ptr = std::make_unique<protocol::ProduceResponse>();
  protocol::ProduceResponse& resp = *resp_ptr;
  std::vector<std::pair<size_t, size_t>> awaited_at;  // (topic, partition) response indexes
  std::vector<AwaitedCommit> waits;
  bool acks_ok = request.acks == 0 || request.acks == 1 || request.acks == -1;
  std::string first_error;
  for (const auto& td : request.topic_data) {
    protocol::ProduceResponse::TopicResponse tr;
    tr.name = td.name;
    for (const auto& pd : td.partition_data) {
      protocol::ProduceResponse::PartitionResponse pr;
      pr.index = pd.index;
      PartitionOutcome o;
      if (!acks_ok) {
        o.error = ErrorCode::INVALID_REQUIRED_ACKS;
      } else if (request.transactional_id.has_value()) {
        o.error = ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
        o.message = "transactions are not supported";
      } else {
        o = ProducePartition(ctx, *req, td.name, pd.index, pd.records, req->api_version,
                             request.acks);
      }
      if (o.error != ErrorCode::NONE) {
        // Answered errors are counted when the response is encoded; acks=0 sends none.
        if (request.acks == 0) RequestMetrics::Get().OnError(req->api_key, Wire(o.error));
      } else if (o.base_offset >= 0 && o.last_offset.value() >= o.base_offset) {
        RequestMetrics::Get().OnProduced(o.last_offset.value() - o.base_offset + 1);
      }
      if (request.acks == -1 && o.error == ErrorCode::NONE && o.partition &&
          o.partition->high_watermark() <= o.last_offset) {
        // acks=all: answered once the in-sync replicas have the batch. On a single node the
        // high watermark has already passed it and nothing waits.
        awaited_at.emplace_back(resp.responses.size(), tr.partition_responses.size());
        waits.push_back(
            AwaitedCommit{nullptr, td.name, o.partition, o.last_offset + 1, o.min_insync_replicas,
                          o.partition->leader_epoch()});
      }
      pr.error_code = Wire(o.error);
      pr.base_offset = o.base_offset;
      pr.log_append_time_ms = o.log_append_time;
      pr.log_start_offset = o.log_start_offset;
      if (WantsLeaderHint(pr.error_code)) {
        std::shared_ptr<Partition> replica = ctx.partitions.Find(td.name, PartitionId(pd.index));
        AddLeaderHint(ctx, req->api_version, td.name, replica.get(), pr, resp);
      }
      if (o.error != ErrorCode::NONE) {
        if (!o.message.empty()) pr.error_message = o.message;
        if (first_error.empty()) {
          first_error = td.name + "-" + std::to_string(pd.index) + ": " +
                        protocol::ErrorName(o.error) + (o.message.empty() ? "" : " (" + o.message + ")");
        }
        LogDebug("produce from " + req->peer + " to " + td.name + "-" +
                 std::to_string(pd.index) + " failed: " + protocol::ErrorName(o.error) + " " +
                 o.message);
      }
      tr.partition_responses.push_back(std::move(pr));
    }
    resp.responses.push_back(std::move(tr));
  }
  if (request.acks == 0) {
    // No response is sent for acks=0; like Kafka, a failure closes the connection so the
    // producer notices (through its metadata refresh) that something went wrong.
    if (!first_error.empty()) return Status::InvalidArgument("acks=0 produce failed: " + first_error);
    respond(std::nullopt);
    return Status::OK();
  }
  if (waits.empty()) {
    respond(EncodeBody(resp, req->api_version));
    return Status::OK();
  }
  // The response's vectors are complete now: pointers into them stay valid.
  for (size_t i = 0; i < waits.size(); ++i) {
    waits[i].response =
        &resp.responses[awaited_at[i].first].partition_responses[awaited_at[i].second];
  }
  auto delayed = std::make_shared<DelayedProduce>(ctx, req, std::move(resp_ptr), std::move(waits),
                                                  std::move(respond));
  delayed->Start(request.timeout_ms);
  return Status::OK();
}

}  // namespace silt::broker
