// Produce: validate each partition's batch, check idempotent-producer sequences, append.
#include "base/clock.h"
#include "broker/handlers.h"
#include "broker/logging.h"
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
};

// Validates and appends one partition's record set.
PartitionOutcome ProducePartition(Broker& b, Request& req, const std::string& topic,
                                  int32_t partition, const protocol::RecordSet& records,
                                  int16_t version) {
  PartitionOutcome out;
  auto fail = [&out](ErrorCode c, std::string m) {
    out.error = c;
    out.message = std::move(m);
    return out;
  };
  auto state_r = b.Partition(topic, partition);
  if (!state_r.ok()) {
    if (state_r.status().IsNotFound()) return fail(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, "");
    LogError("produce to " + topic + "-" + std::to_string(partition) + ": " +
             state_r.status().ToString());
    return fail(protocol::ErrorCodeFromStatus(state_r.status()), state_r.status().message());
  }
  std::shared_ptr<PartitionState> state = *state_r;
  auto log = state->Log();
  if (!log) return fail(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, "");
  const storage::LogConfig cfg = log->config();

  std::string_view bytes = records.bytes.value_or(std::string_view());
  if (bytes.empty()) return fail(ErrorCode::CORRUPT_MESSAGE, "empty record set");
  if (static_cast<int64_t>(bytes.size()) > cfg.max_message_bytes) {
    return fail(ErrorCode::MESSAGE_TOO_LARGE,
                "record set of " + std::to_string(bytes.size()) + " bytes exceeds max.message.bytes " +
                    std::to_string(cfg.max_message_bytes));
  }
  if (bytes.size() >= static_cast<size_t>(format::kMagicPrefixSize) &&
      bytes[format::kMagicOffset] != format::kMagicV2) {
    return fail(ErrorCode::INVALID_RECORD, "only magic 2 record batches are accepted");
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

  if (Status k = storage::CheckKeysForCompaction(cfg, view->bytes()); !k.ok()) {
    return fail(version >= 8 ? ErrorCode::INVALID_RECORD : ErrorCode::CORRUPT_MESSAGE, k.message());
  }

  std::lock_guard<std::mutex> lock(state->produce_mu);
  bool idempotent = h.producer_id >= 0 && h.base_sequence >= 0;
  if (idempotent) {
    ProducerBatch original;
    switch (state->producers.Check(h.producer_id, h.producer_epoch, h.base_sequence,
                                   h.last_sequence(), &original)) {
      case SequenceCheck::kDuplicate:
        // A retry of a batch already in the log: answer as the first time, append nothing.
        out.base_offset = original.base_offset;
        out.log_append_time = original.append_time;
        out.log_start_offset = log->log_start_offset().value();
        return out;
      case SequenceCheck::kOutOfOrder:
        return fail(ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER,
                    "sequence " + std::to_string(h.base_sequence) + " out of order for producer " +
                        std::to_string(h.producer_id));
      case SequenceCheck::kFenced:
        return fail(ErrorCode::INVALID_PRODUCER_EPOCH,
                    "producer epoch " + std::to_string(h.producer_epoch) + " is stale");
      case SequenceCheck::kAppend:
        break;
    }
  }
  // The batch is appended where it was received: the request owns its frame, and nothing
  // reads these bytes after the append patches baseOffset into them.
  auto appended = log->Append(req.mutable_bytes(view->bytes()), view->bytes().size(), 0);
  if (!appended.ok()) {
    LogError("append to " + topic + "-" + std::to_string(partition) + ": " +
             appended.status().ToString());
    return fail(protocol::ErrorCodeFromStatus(appended.status()), appended.status().message());
  }
  if (idempotent) {
    ProducerBatch pb;
    pb.first_seq = h.base_sequence;
    pb.last_seq = h.last_sequence();
    pb.base_offset = appended->base_offset.value();
    pb.last_offset = appended->last_offset.value();
    pb.append_time = appended->log_append_time;
    state->producers.Record(h.producer_id, h.producer_epoch, pb);
  }
  out.base_offset = appended->base_offset.value();
  out.log_append_time = appended->log_append_time;
  out.log_start_offset = log->log_start_offset().value();
  return out;
}

}  // namespace

Status HandleProduce(Broker& b, std::shared_ptr<Request> req, Respond respond) {
  protocol::ProduceRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  protocol::ProduceResponse resp;
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
        // acks=all waits for the in-sync replicas; on a single node that is this append.
        o = ProducePartition(b, *req, td.name, pd.index, pd.records, req->api_version);
      }
      pr.error_code = Wire(o.error);
      pr.base_offset = o.base_offset;
      pr.log_append_time_ms = o.log_append_time;
      pr.log_start_offset = o.log_start_offset;
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
  respond(EncodeBody(resp, req->api_version));
  return Status::OK();
}

}  // namespace silt::broker
