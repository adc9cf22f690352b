// Fetch (long polling, zero-copy record data) and ListOffsets.
#include <chrono>

#include "broker/handlers.h"
#include "broker/io.h"
#include "broker/logging.h"
#include "format/record_batch.h"
#include "protocol/messages.h"

namespace silt::broker {

using protocol::ErrorCode;

namespace {

// Joins the leading slices that continue one another in the same file, so a partition's records
// go out as one sendfile(2) range. Later, non-adjacent slices are left for the next fetch.
storage::FileSlice LeadingRange(const std::vector<storage::FileSlice>& slices) {
  storage::FileSlice out = slices.front();
  for (size_t i = 1; i < slices.size(); ++i) {
    const storage::FileSlice& s = slices[i];
    if (s.file.get() != out.file.get() || s.position != out.position + out.length) break;
    out.length += s.length;
  }
  return out;
}

// One Fetch request waiting for min_bytes to arrive or max_wait_ms to pass. Lives on its
// connection's strand; appends to any of its partitions poke it.
class PendingFetch : public AppendWatcher, public std::enable_shared_from_this<PendingFetch> {
 public:
  PendingFetch(Broker& b, std::shared_ptr<Request> req, protocol::FetchRequest request,
               Respond respond)
      : b_(b),
        req_(std::move(req)),
        request_(std::move(request)),
        respond_(std::move(respond)),
        timer_(req_->executor->strand) {}

  // First evaluation, on the strand: answers at once when there is enough (or nothing to wait
  // for), otherwise arms the timer and waits for appends.
  void Start() {
    for (const auto& t : request_.topics) {
      for (const auto& p : t.partitions) {
        auto s = b_.Partition(t.topic, p.partition);
        states_.push_back(s.ok() ? *s : nullptr);
      }
    }
    if (Evaluate(request_.max_wait_ms <= 0 || b_.stopping())) return;
    auto self = shared_from_this();
    timer_.expires_after(std::chrono::milliseconds(request_.max_wait_ms));
    timer_.async_wait([self](const asio::error_code& ec) {
      if (ec == asio::error::operation_aborted) return;
      self->Evaluate(true);
    });
  }

  void OnAppend() override {
    if (poke_pending_.exchange(true)) return;
    auto self = shared_from_this();
    asio::post(req_->executor->strand, [self] {
      self->poke_pending_ = false;
      self->Evaluate(self->b_.stopping());
    });
  }

 private:
  // Builds the response; sends it and returns true when `final`, when min_bytes is reached or
  // when a partition has an error. Otherwise registers for appends and returns false.
  bool Evaluate(bool final) {
    if (done_) return true;
    if (!final) {
      // Register before reading, so an append racing with this evaluation still pokes us.
      std::weak_ptr<AppendWatcher> me = shared_from_this();
      for (auto& s : states_) {
        if (s) s->Watch(me);
      }
    }
    protocol::FetchResponse resp;
    std::vector<storage::FileSlice> held;  // one per file-backed record set, in wire order
    int64_t total = 0;
    int64_t budget = request_.max_bytes > 0 ? request_.max_bytes : 0;
    bool error = false;
    size_t k = 0;
    for (const auto& t : request_.topics) {
      protocol::FetchResponse::TopicResponse tr;
      tr.topic = t.topic;
      for (const auto& p : t.partitions) {
        std::shared_ptr<PartitionState>& state = states_[k++];
        protocol::FetchResponse::Partition pr;
        pr.partition_index = p.partition;
        pr.aborted_transactions.emplace();
        pr.records.bytes = std::string_view();
        auto log = state ? state->Log() : PartitionState::LogRef{};
        if (!log) {
          pr.error_code = Wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
          pr.high_watermark = -1;
          error = true;
          tr.partitions.push_back(std::move(pr));
          continue;
        }
        Offset start = log->log_start_offset();
        Offset end = log->log_end_offset();
        // One node: every appended record is committed, so high watermark = last stable
        // offset = log end.
        pr.high_watermark = end.value();
        pr.last_stable_offset = end.value();
        pr.log_start_offset = start.value();
        Offset at(p.fetch_offset);
        if (at < start || at > end) {
          pr.error_code = Wire(ErrorCode::OFFSET_OUT_OF_RANGE);
          error = true;
        } else if (at < end && (budget - total > 0 || total == 0)) {
          int64_t limit = std::min<int64_t>(p.partition_max_bytes, budget - total);
          if (limit < 0) limit = 0;
          // The first partition with data returns at least one whole batch, however large,
          // so a consumer always makes progress (KIP-74).
          auto r = log->Read(at, limit, end, /*min_one=*/total == 0);
          if (!r.ok()) {
            if (r.status().code() == Status::Code::kOutOfRange) {
              pr.error_code = Wire(ErrorCode::OFFSET_OUT_OF_RANGE);
            } else {
              LogError("fetch from " + t.topic + "-" + std::to_string(p.partition) + ": " +
                       r.status().ToString());
              pr.error_code = Wire(protocol::ErrorCodeFromStatus(r.status()));
            }
            error = true;
          } else if (!r->slices.empty()) {
            storage::FileSlice range = LeadingRange(r->slices);
            pr.records.bytes.reset();
            pr.records.file = protocol::FileSlice{range.file->fd(), range.position,
                                                  static_cast<int32_t>(range.length)};
            held.push_back(range);
            total += range.length;
          }
        }
        tr.partitions.push_back(std::move(pr));
      }
      resp.responses.push_back(std::move(tr));
    }
    if (!final && !error && total < std::max<int32_t>(request_.min_bytes, 1)) return false;

    done_ = true;
    timer_.cancel();
    std::string buf;
    ByteWriter w(&buf);
    std::vector<protocol::Piece> pieces;
    resp.EncodePieces(w, req_->api_version, &pieces);
    Response out;
    size_t h = 0;
    for (const protocol::Piece& piece : pieces) {
      if (piece.file) {
        out.AppendSlice(held[h++]);
      } else {
        out.Append(std::string_view(buf).substr(piece.begin, piece.end - piece.begin));
      }
    }
    Respond r = std::move(respond_);
    r(std::move(out));
    states_.clear();
    return true;
  }

  Broker& b_;
  std::shared_ptr<Request> req_;
  protocol::FetchRequest request_;
  Respond respond_;
  asio::steady_timer timer_;
  std::vector<std::shared_ptr<PartitionState>> states_;  // per requested partition, in order
  bool done_ = false;
  std::atomic<bool> poke_pending_{false};
};

}  // namespace

Status HandleFetch(Broker& b, std::shared_ptr<Request> req, Respond respond) {
  protocol::FetchRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  // isolation_level is accepted either way: with no transactions, read_committed and
  // read_uncommitted see the same records.
  auto pending = std::make_shared<PendingFetch>(b, req, std::move(request), std::move(respond));
  pending->Start();
  return Status::OK();
}

// ---- ListOffsets ------------------------------------------------------------------------

namespace {

constexpr int64_t kLatestTimestamp = -1;
constexpr int64_t kEarliestTimestamp = -2;

// The first record at or after `ts`: (offset, timestamp), or (-1, -1) when there is none.
std::pair<int64_t, int64_t> LookupTimestamp(storage::PartitionLog* log, int64_t ts) {
  auto off = log->OffsetForTimestamp(ts);
  if (!off.ok()) return {-1, -1};
  Offset end = log->log_end_offset();
  // The index finds a batch; the exact record and its timestamp are inside it.
  auto r = log->Read(*off, 1, end, true);
  if (r.ok()) {
    auto bytes = r->ReadAll();
    if (bytes.ok()) {
      std::string_view rest = *bytes;
      while (!rest.empty()) {
        auto view = format::RecordBatchView::Parse(rest);
        if (!view.ok()) break;
        std::pair<int64_t, int64_t> found{-1, -1};
        const format::BatchHeader& h = view->header();
        if (h.log_append_time()) {
          if (h.max_timestamp >= ts && h.base_offset >= off->value()) {
            return {h.base_offset, h.max_timestamp};
          }
        } else {
          Status s = view->ForEachRecord([&](const format::RecordView& rec) {
            if (rec.offset >= off->value() && rec.timestamp >= ts) {
              found = {rec.offset, rec.timestamp};
              return false;
            }
            return true;
          });
          if (s.ok() && found.first >= 0) return found;
        }
        rest.remove_prefix(view->bytes().size());
      }
    }
  }
  return {off->value(), ts};
}

}  // namespace

Status HandleListOffsets(Broker& b, std::shared_ptr<Request> req, Respond respond) {
  protocol::ListOffsetsRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  protocol::ListOffsetsResponse resp;
  for (const auto& t : request.topics) {
    protocol::ListOffsetsResponse::Topic tr;
    tr.name = t.name;
    for (const auto& p : t.partitions) {
      protocol::ListOffsetsResponse::Partition pr;
      pr.partition_index = p.partition_index;
      auto state = b.Partition(t.name, p.partition_index);
      auto log = state.ok() ? (*state)->Log() : PartitionState::LogRef{};
      if (!log) {
        pr.error_code = Wire(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
        tr.partitions.push_back(std::move(pr));
        continue;
      }
      int64_t offset = -1;
      int64_t ts = -1;
      if (p.timestamp == kLatestTimestamp) {
        offset = log->log_end_offset().value();
      } else if (p.timestamp == kEarliestTimestamp) {
        offset = log->log_start_offset().value();
      } else if (p.timestamp < 0) {
        pr.error_code = Wire(ErrorCode::UNSUPPORTED_VERSION);
      } else {
        std::tie(offset, ts) = LookupTimestamp(log.log, p.timestamp);
      }
      if (req->api_version == 0) {
        if (offset >= 0 && p.max_num_offsets > 0) pr.old_style_offsets.push_back(offset);
      } else {
        pr.offset = offset;
        pr.timestamp = ts;
        pr.leader_epoch = offset >= 0 ? 0 : -1;
      }
      tr.partitions.push_back(std::move(pr));
    }
    resp.topics.push_back(std::move(tr));
  }
  respond(EncodeBody(resp, req->api_version));
  return Status::OK();
}

}  // namespace silt::broker
