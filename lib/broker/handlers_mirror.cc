// SiltAppendBatches (silt's own API, protocol/messages.h): `silt replicate`'s append into a
// mirror topic of batches that keep their offsets, at an expected offset, answered once the
// high watermark passes them (acks=all). See man/silt-serve.1, SILT APPEND BATCHES.
//
// Checks, in order (nothing is written when one fails):
//   UNKNOWN_TOPIC_OR_PARTITION  no such partition
//   NOT_LEADER_OR_FOLLOWER      this node does not lead it
//   POLICY_VIOLATION            the topic is not a mirror (silt.mirror is not true): promoted,
//                               or never one
//   NOT_ENOUGH_REPLICAS         fewer in-sync replicas than min.insync.replicas
//   CORRUPT_MESSAGE             a batch that is not a whole magic 2 batch with a valid CRC
//   SILT_OFFSET_MISMATCH        expected_offset is not the log end (or the first batch starts
//                               below it); log_end_offset says where the log ends
// then REQUEST_TIMED_OUT (the batches are in the leader's log but not yet committed),
// NOT_ENOUGH_REPLICAS_AFTER_APPEND or NOT_LEADER_OR_FOLLOWER while waiting, as for Produce.
// An empty record set appends nothing and answers the log end, on any topic the node leads.
// Producer ids this node hands out afterwards are above those of every batch appended here.
#include <algorithm>

#include "broker/delayed_operation.h"
#include "broker/handlers.h"
#include "broker/logging.h"
#include "format/batch_header.h"
#include "protocol/messages.h"

namespace silt::broker {

using protocol::ErrorCode;

namespace {

// Waits until the high watermark reaches `needed` (the appended batches are committed).
class DelayedMirrorAppend : public DelayedOperation {
 public:
  DelayedMirrorAppend(BrokerContext& ctx, std::shared_ptr<Request> req,
                      std::shared_ptr<Partition> part, Offset needed, int32_t min_isr,
                      protocol::SiltAppendBatchesResponse resp, Respond respond)
      : DelayedOperation(req->executor, &ctx.stopping),
        req_(std::move(req)),
        part_(std::move(part)),
        needed_(needed),
        min_isr_(min_isr),
        resp_(std::move(resp)),
        respond_(std::move(respond)) {}

  void Start(int64_t timeout_ms) {
    DelayedOperation::Start({part_}, WatchOffset::kHighWatermark, std::max<int64_t>(timeout_ms, 0));
  }

 protected:
  bool TryComplete(bool final) override {
    ErrorCode error = ErrorCode::NONE;
    if (!part_->alive() || !part_->is_leader()) {
      error = ErrorCode::NOT_LEADER_OR_FOLLOWER;
    } else if (part_->high_watermark() >= needed_) {
      storage::LogConfig cfg;
      cfg.min_insync_replicas = min_isr_;
      if (part_->isr().size() < static_cast<size_t>(part_->EffectiveMinIsr(cfg))) {
        error = ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND;
      }
    } else if (!final) {
      return false;
    } else {
      error = ErrorCode::REQUEST_TIMED_OUT;
    }
    resp_.error_code = Wire(error);
    resp_.high_watermark = part_->high_watermark().value();
    Respond r = std::move(respond_);
    r(EncodeBody(resp_, req_->api_version));
    return true;
  }
  void OnCompleted() override { part_.reset(); }

 private:
  std::shared_ptr<Request> req_;
  std::shared_ptr<Partition> part_;
  Offset needed_;
  int32_t min_isr_;
  protocol::SiltAppendBatchesResponse resp_;
  Respond respond_;
};

}  // namespace

namespace {
// The largest producer id among the whole batches at the start of `bytes` (-1: none has one).
// A torn or short batch ends the scan; the append itself rejects it.
int64_t MaxProducerId(std::string_view bytes) {
  int64_t max_pid = -1;
  while (bytes.size() >= static_cast<size_t>(format::kBatchHeaderSize)) {
    const format::BatchHeader h = format::DecodeBatchHeader(bytes);
    if (h.size() < format::kBatchHeaderSize || static_cast<size_t>(h.size()) > bytes.size()) break;
    max_pid = std::max(max_pid, h.producer_id);
    bytes.remove_prefix(static_cast<size_t>(h.size()));
  }
  return max_pid;
}
}  // namespace

Status HandleSiltAppendBatches(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond) {
  protocol::SiltAppendBatchesRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  protocol::SiltAppendBatchesResponse resp;
  const std::string where = request.topic + "-" + std::to_string(request.partition);
  auto answer = [&](ErrorCode c, std::string message) {
    resp.error_code = Wire(c);
    if (!message.empty()) resp.error_message = std::move(message);
    if (c != ErrorCode::NONE) {
      LogDebug("silt append from " + req->peer + " to " + where +
               " failed: " + protocol::ErrorName(c) + " " + resp.error_message.value_or(""));
    }
    respond(EncodeBody(resp, req->api_version));
    return Status::OK();
  };
  auto part_r = ctx.partitions.Get(request.topic, PartitionId(request.partition));
  if (!part_r.ok()) {
    if (part_r.status().IsNotFound()) return answer(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, "");
    return answer(protocol::ErrorCodeFromStatus(part_r.status()), part_r.status().message());
  }
  std::shared_ptr<Partition> part = *part_r;
  auto fill = [&] {
    resp.log_end_offset = part->log_end_offset().value();
    resp.high_watermark = part->high_watermark().value();
    resp.log_start_offset = part->log_start_offset().value();
  };
  fill();
  if (!part->is_leader()) {
    return answer(ErrorCode::NOT_LEADER_OR_FOLLOWER, part->name() + " is a follower here");
  }
  std::string_view bytes = request.records.bytes.value_or(std::string_view());
  if (bytes.empty()) return answer(ErrorCode::NONE, "");
  const storage::LogConfig cfg = part->config();
  if (!cfg.mirror()) {
    return answer(ErrorCode::POLICY_VIOLATION,
                  "topic '" + request.topic +
                      "' is not a mirror topic (silt.mirror=true): it takes ordinary produce only");
  }
  const size_t in_sync = part->isr().size();
  const int32_t min_isr = part->EffectiveMinIsr(cfg);
  if (in_sync < static_cast<size_t>(min_isr)) {
    return answer(ErrorCode::NOT_ENOUGH_REPLICAS,
                  part->name() + " has " + std::to_string(in_sync) +
                      " in-sync replica(s), below min.insync.replicas " + std::to_string(min_isr));
  }
  // The copied batches keep the source cluster's producer ids: ids this node hands out later
  // must not be among them, or a producer here after promote would meet a copied producer's
  // sequence state (OUT_OF_ORDER_SEQUENCE_NUMBER on its first batch).
  if (int64_t max_pid = MaxProducerId(bytes); max_pid >= 0) {
    Status st = ctx.producer_ids.ReserveThrough(ProducerId(max_pid));
    if (!st.ok()) return answer(protocol::ErrorCodeFromStatus(st), st.message());
  }
  // Appended where it was received (the request owns its frame): only the leader epoch field
  // of each batch is patched.
  Partition::MirrorAppend a = part->AppendMirrored(req->mutable_bytes(bytes), bytes.size(),
                                                   Offset(request.expected_offset));
  fill();
  if (a.log_end.value() >= 0) resp.log_end_offset = a.log_end.value();
  if (a.error != ErrorCode::NONE) return answer(a.error, a.message);
  if (part->high_watermark() > a.last_offset) return answer(ErrorCode::NONE, "");
  auto delayed = std::make_shared<DelayedMirrorAppend>(ctx, req, part, a.last_offset + 1,
                                                       cfg.min_insync_replicas, std::move(resp),
                                                       std::move(respond));
  delayed->Start(request.timeout_ms);
  return Status::OK();
}

}  // namespace silt::broker
