// Fetch (long polling, zero-copy record data; v0-3 down-converted to legacy messages) and
// ListOffsets.
#include <algorithm>
#include <deque>
#include <map>
#include <mutex>

#include "base/clock.h"
#include "base/uuid.h"
#include "broker/delayed_operation.h"
#include "broker/handlers.h"
#include "broker/leader_hint.h"
#include "broker/logging.h"
#include "format/legacy_convert.h"
#include "protocol/messages.h"

namespace silt::broker {

using protocol::ErrorCode;

namespace {

// Down-converted record data is built in memory: a Fetch v0-3 response holds at most this many
// bytes of it (Kafka's fetch.max.bytes default, which bounds these versions in Kafka too).
constexpr int64_t kDownConvertMaxBytes = 55LL * 1024 * 1024;

// Fetch v0-3: the read's batches as the legacy messages these versions carry (magic 0 for v0-1,
// magic 1 for v2-3), at most `limit` bytes of whole messages from `fetch_offset` on. Memory is
// the read (at most one batch above `limit`) plus one batch's records. v3 (KIP-74) sends the
// first message of the response whole whatever its size; v0-2 send a partial first message
// instead, from which an old consumer learns to ask for more.
ErrorCode DownConvertRead(const FileSlice& slice, int16_t version, int64_t fetch_offset,
                          int64_t limit, bool first_of_response, std::string* out) {
  std::string data;
  Status s = slice.file->PRead(slice.position, static_cast<size_t>(slice.length), &data);
  if (!s.ok()) {
    LogError("fetch read for down-conversion: " + s.ToString());
    return ErrorCode::KAFKA_STORAGE_ERROR;
  }
  format::DownConvertOptions o;
  o.magic = version <= 1 ? format::kMagicV0 : format::kMagicV1;
  o.first_offset = fetch_offset;
  o.max_bytes = limit;
  o.min_one_message = version == 3 && first_of_response;
  o.allow_partial = version <= 2;
  format::DownConverted dc;
  s = format::DownConvert(data, o, &dc);
  // Unsupported (zstd, which magic 0/1 cannot carry) is UNSUPPORTED_COMPRESSION_TYPE.
  if (!s.ok()) {
    if (s.code() != Status::Code::kUnsupported) LogError("fetch down-conversion: " + s.ToString());
    return protocol::ErrorCodeFromStatus(s);
  }
  *out = std::move(dc.data);
  return ErrorCode::NONE;
}

// Fetch v13+ names topics by id (KIP-516). Ids are never reused, so a name found once stays
// right for as long as the topic of that name still has that id (a topic deleted and created
// again gets a new one); a miss lists the topics. nullopt: no topic has this id.
std::optional<std::string> TopicNameForId(MetadataStore& metadata, const Uuid& id) {
  static std::mutex mu;
  static std::map<Uuid, std::string> known;  // shared by the brokers of a process: checked
  if (id.is_zero()) return std::nullopt;
  const std::string text = id.ToString();
  std::optional<std::string> name;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = known.find(id); it != known.end()) name = it->second;
  }
  if (name) {
    auto t = metadata.GetTopic(*name);
    if (t.ok() && t->topic_id == text) return name;
  }
  name.reset();
  std::map<Uuid, std::string> listed;
  for (TopicMetadata& t : metadata.ListTopics()) {
    if (auto u = Uuid::Parse(t.topic_id); u.ok()) {
      if (*u == id) name = t.name;
      listed.emplace(*u, std::move(t.name));
    }
  }
  std::lock_guard<std::mutex> lock(mu);
  if (known.size() > 100000) known.clear();
  for (auto& [u, n] : listed) known.insert_or_assign(u, std::move(n));
  return name;
}

// One Fetch request waiting for min_bytes of records or max_wait_ms. Lives on its
// connection's strand. A consumer's fetch reads committed records and is re-evaluated at each
// move of its partitions' high watermarks; a follower's (replica_id >= 0, on that replica's
// peer connection) reads up to the log end, records where the follower is, and is
// re-evaluated at each append, so that an acks=all produce waits one round trip, not
// replica.fetch.wait.max.ms.
class DelayedFetch : public DelayedOperation {
 public:
  DelayedFetch(BrokerContext& ctx, std::shared_ptr<Request> req, protocol::FetchRequest request,
               Respond respond)
      : DelayedOperation(req->executor, &ctx.stopping),
        req_(std::move(req)),
        request_(std::move(request)),
        respond_(std::move(respond)),
        replica_(request_.replica_id >= 0 ? NodeId(request_.replica_id) : NodeId(-1)) {}

  void Start(BrokerContext& ctx) {
    ctx_ = &ctx;
    metadata_ = &ctx.metadata;
    std::vector<std::shared_ptr<Partition>> parts;
    for (const auto& t : request_.topics) {
      // v13+: by topic id; an id no topic has is UNKNOWN_TOPIC_ID for each of its partitions.
      std::optional<std::string> name = t.topic;
      if (req_->api_version >= 13) name = TopicNameForId(ctx.metadata, t.topic_id);
      names_.push_back(name.value_or(""));
      for (const auto& p : t.partitions) {
        if (!name) {
          parts.push_back(nullptr);
          missing_.push_back(ErrorCode::UNKNOWN_TOPIC_ID);
          continue;
        }
        auto s = ctx.partitions.Get(*name, PartitionId(p.partition));
        parts.push_back(s.ok() ? *s : nullptr);
        // A partition another node leads (cluster mode) is NOT_LEADER_OR_FOLLOWER.
        missing_.push_back(!s.ok() && s.status().code() == Status::Code::kNotLeader
                               ? ErrorCode::NOT_LEADER_OR_FOLLOWER
                               : ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
      }
    }
    partitions_ = parts;
    CountWhileWaiting(RequestMetrics::Get().delayed_fetches(follower()));
    DelayedOperation::Start(std::move(parts),
                            follower() ? WatchOffset::kLogEnd : WatchOffset::kHighWatermark,
                            request_.max_wait_ms);
  }

 protected:
  bool TryComplete(bool final) override {
    protocol::FetchResponse resp;
    std::vector<FileSlice> held;  // one per file-backed record set, in wire order
    const int16_t version = req_->api_version;
    std::deque<std::string> converted;  // down-converted record sets (Fetch v0-3)
    int64_t total = 0;
    int64_t budget = request_.max_bytes > 0 ? request_.max_bytes : 0;
    if (version < 4) budget = std::min(budget, kDownConvertMaxBytes);
    bool error = false;
    size_t k = 0;
    std::vector<std::pair<std::string, int64_t>> throttled;  // throttled reads: topic, bytes
    for (size_t ti = 0; ti < request_.topics.size(); ++ti) {
      const auto& t = request_.topics[ti];
      const std::string& topic = names_[ti];
      protocol::FetchResponse::TopicResponse tr;
      tr.topic = topic;
      tr.topic_id = t.topic_id;  // on the wire from v13, in place of the name
      for (const auto& p : t.partitions) {
        const std::shared_ptr<Partition>& part = partitions_[k++];
        protocol::FetchResponse::Partition pr;
        pr.partition_index = p.partition;
        pr.aborted_transactions.emplace();
        pr.records.bytes = std::string_view();
        if (!part) {
          pr.error_code = Wire(missing_[k - 1]);
          pr.high_watermark = -1;
          error = true;
          AddLeaderHint(resp, topic, pr, nullptr);
          tr.partitions.push_back(std::move(pr));
          continue;
        }
        // KIP-320 fencing (CurrentLeaderEpoch, v9+), then the role: only the leader serves.
        const int32_t current_epoch = version >= 9 ? p.current_leader_epoch : -1;
        ErrorCode check = part->CheckLeaderEpoch(current_epoch, /*leader_only=*/true);
        if (check == ErrorCode::NONE && follower() && !IsReplica(*part)) {
          // Kafka's answer to a fetch from a node that is not (yet) a replica: retry later
          // with the epoch it names, refresh metadata without one.
          check = current_epoch >= 0 ? ErrorCode::UNKNOWN_LEADER_EPOCH
                                     : ErrorCode::NOT_LEADER_OR_FOLLOWER;
          LogDebug("fetch from node " + std::to_string(replica_.value()) + " for " +
                   part->name() + ", of which it is not a replica");
        }
        if (check != ErrorCode::NONE) {
          pr.error_code = Wire(check);
          pr.high_watermark = -1;
          error = true;
          AddLeaderHint(resp, topic, pr, part.get());
          tr.partitions.push_back(std::move(pr));
          continue;
        }
        int64_t limit = std::min<int64_t>(p.partition_max_bytes, budget - total);
        bool room = budget - total > 0 || total == 0;
        // The reassignment throttle: an adding replica's catch-up reads at most what the
        // topic's budget has left (nothing once it is spent; the follower fetches again).
        const int64_t allowance =
            follower() ? metadata_->ReplicaFetchAllowance(topic, PartitionId(p.partition),
                                                          replica_)
                       : -1;
        if (allowance == 0) room = false;
        if (allowance > 0) limit = std::min(limit, allowance);
        // The first partition with data returns at least one whole batch, however large, so a
        // consumer always makes progress (KIP-74). A down-conversion (v0-3) reads at least one
        // batch for every partition: what must fit is its converted messages, not the batch.
        bool read_one = room && (total == 0 || (version < 4 && limit > 0));
        PartitionRead r = part->Read(Offset(p.fetch_offset), room ? std::max<int64_t>(limit, 0) : 0,
                                     /*min_one=*/read_one,
                                     follower() ? ReadIsolation::kLogEnd : ReadIsolation::kCommitted);
        if (follower() && r.error == ErrorCode::NONE) {
          // The fetch offset is the follower's log end; the high watermark it may have moved
          // goes back in this answer.
          part->RecordFollowerFetch(replica_, Offset(p.fetch_offset),
                                    Offset(version >= 5 ? p.log_start_offset : -1), MonotonicMs());
          r.high_watermark = std::min(part->high_watermark(), r.log_end_offset);
        }
        pr.error_code = Wire(r.error);
        pr.high_watermark = r.high_watermark.value();
        AddLeaderHint(resp, topic, pr, part.get());
        // No transactions: the last stable offset is the high watermark.
        pr.last_stable_offset = r.high_watermark.value();
        pr.log_start_offset = r.log_start_offset.value();
        if (r.error != ErrorCode::NONE) {
          error = true;
          if (r.error == ErrorCode::UNKNOWN_TOPIC_OR_PARTITION) pr.high_watermark = -1;
        } else if (r.records && version < 4) {
          std::string& out = converted.emplace_back();
          ErrorCode c = DownConvertRead(*r.records, version, p.fetch_offset,
                                        std::max<int64_t>(limit, 0), total == 0, &out);
          if (c != ErrorCode::NONE) {
            pr.error_code = Wire(c);
            error = true;
          } else {
            pr.records.bytes = std::string_view(out);
            total += static_cast<int64_t>(out.size());
          }
        } else if (r.records) {
          pr.records.bytes.reset();
          pr.records.file = protocol::FileSlice{r.records->file->fd(), r.records->position,
                                                static_cast<int32_t>(r.records->length)};
          held.push_back(*r.records);
          total += r.records->length;
          if (allowance >= 0) throttled.emplace_back(topic, r.records->length);
        }
        tr.partitions.push_back(std::move(pr));
      }
      resp.responses.push_back(std::move(tr));
    }
    if (!final && !error && total < std::max<int32_t>(request_.min_bytes, 1)) return false;
    for (const auto& [topic, bytes] : throttled) metadata_->ChargeReplicaFetch(topic, bytes);

    std::string buf;
    ByteWriter w(&buf);
    std::vector<protocol::Piece> pieces;
    RequestMetrics::Get().OnResponseMessage(resp);
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
    return true;
  }

  void OnCompleted() override { partitions_.clear(); }

 private:
  bool follower() const { return replica_.value() >= 0; }
  // KIP-951: a partition turned away names its leader (v12+), and the response lists that
  // leader's endpoint (v16+).
  void AddLeaderHint(protocol::FetchResponse& resp, const std::string& topic,
                     protocol::FetchResponse::Partition& pr, const Partition* part) const {
    if (req_->api_version < 12 || !WantsLeaderHint(pr.error_code)) return;
    LeaderHint h = CurrentLeader(*ctx_, topic, pr.partition_index, part);
    pr.current_leader.leader_id = h.leader_id;
    pr.current_leader.leader_epoch = h.leader_epoch;
    if (req_->api_version >= 16) AddNodeEndpoint(*ctx_, h.leader_id, &resp.node_endpoints);
  }
  bool IsReplica(const Partition& part) const {
    const std::vector<NodeId> rs = part.replicas();
    return std::find(rs.begin(), rs.end(), replica_) != rs.end();
  }

  std::shared_ptr<Request> req_;
  protocol::FetchRequest request_;
  Respond respond_;
  std::vector<std::shared_ptr<Partition>> partitions_;  // per requested partition, in order
  std::vector<ErrorCode> missing_;  // likewise: the answer when there is no partition
  std::vector<std::string> names_;  // per requested topic: its name ("" for an unknown id)
  BrokerContext* ctx_ = nullptr;
  MetadataStore* metadata_ = nullptr;  // the reassignment throttle's
  const NodeId replica_;  // the fetching follower, or -1 for a consumer
};

// The answer to a fetch that claims a replica id it may not use: every partition gets
// TOPIC_AUTHORIZATION_FAILED, Kafka's answer to a follower fetch without ClusterAction.
Response RefuseReplicaFetch(const protocol::FetchRequest& request, int16_t version) {
  protocol::FetchResponse resp;
  for (const auto& t : request.topics) {
    protocol::FetchResponse::TopicResponse tr;
    tr.topic = t.topic;
    tr.topic_id = t.topic_id;
    for (const auto& p : t.partitions) {
      protocol::FetchResponse::Partition pr;
      pr.partition_index = p.partition;
      pr.error_code = Wire(ErrorCode::TOPIC_AUTHORIZATION_FAILED);
      pr.high_watermark = -1;
      pr.aborted_transactions.emplace();
      pr.records.bytes = std::string_view();
      tr.partitions.push_back(std::move(pr));
    }
    resp.responses.push_back(std::move(tr));
  }
  return EncodeBody(resp, version);
}

}  // namespace

Status HandleFetch(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond) {
  protocol::FetchRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  // v15+ (KIP-903): a follower names itself in the tagged ReplicaState; consumers leave it -1.
  if (req->api_version >= 15) request.replica_id = request.replica_state.replica_id;
  // Incremental fetch sessions (KIP-227, v7+) are declined: every answer carries session id 0,
  // Kafka's "no session created", so clients keep sending full fetches (epoch 0 or -1), and
  // then any forgotten topics, by name or by id, name nothing to forget. A request naming a
  // session epoch is for a session this broker never created: Kafka's answer to an unknown
  // session, FETCH_SESSION_ID_NOT_FOUND, after which a client starts again with a full fetch.
  if (req->api_version >= 7 && request.session_epoch != 0 && request.session_epoch != -1) {
    protocol::FetchResponse resp;
    resp.error_code = Wire(ErrorCode::FETCH_SESSION_ID_NOT_FOUND);
    respond(EncodeBody(resp, req->api_version));
    return Status::OK();
  }
  // isolation_level is accepted either way: with no transactions, read_committed and
  // read_uncommitted see the same records.
  if (request.replica_id >= 0 && request.replica_id != req->peer_node) {
    // Only a cluster peer's own connection may fetch as a replica: anyone else claiming a
    // replica id would move the high watermark (and so commit records) at will.
    LogWarn("fetch from " + req->peer + " as replica " + std::to_string(request.replica_id) +
            (req->peer_node >= 0 ? " on the peer connection of node " + std::to_string(req->peer_node)
                                 : std::string(" on a client connection")) +
            " refused");
    respond(RefuseReplicaFetch(request, req->api_version));
    return Status::OK();
  }
  auto pending = std::make_shared<DelayedFetch>(ctx, req, std::move(request), std::move(respond));
  pending->Start(ctx);
  return Status::OK();
}

// ---- ListOffsets ------------------------------------------------------------------------

Status HandleListOffsets(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond) {
  protocol::ListOffsetsRequest request;
  SILT_TRY(DecodeBody(*req, &request));
  protocol::ListOffsetsResponse resp;
  for (const auto& t : request.topics) {
    protocol::ListOffsetsResponse::Topic tr;
    tr.name = t.name;
    for (const auto& p : t.partitions) {
      protocol::ListOffsetsResponse::Partition pr;
      pr.partition_index = p.partition_index;
      auto part = ctx.partitions.Get(t.name, PartitionId(p.partition_index));
      OffsetAnswer a;
      if (!part.ok()) {
        a.error = part.status().IsNotFound() ? ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
                                             : protocol::ErrorCodeFromStatus(part.status());
      } else {
        // KIP-320 (CurrentLeaderEpoch, v4+); only the leader answers, except a debugging
        // client's request (replica_id -2), as in Kafka.
        a.error = (*part)->CheckLeaderEpoch(req->api_version >= 4 ? p.current_leader_epoch : -1,
                                            /*leader_only=*/request.replica_id != -2);
        if (a.error == ErrorCode::NONE) a = (*part)->ListOffset(p.timestamp);
      }
      pr.error_code = Wire(a.error);
      if (req->api_version == 0) {
        if (a.offset.value() >= 0 && p.max_num_offsets > 0) {
          pr.old_style_offsets.push_back(a.offset.value());
        }
      } else {
        pr.offset = a.offset.value();
        pr.timestamp = a.timestamp;
        pr.leader_epoch = a.leader_epoch.value();
      }
      tr.partitions.push_back(std::move(pr));
    }
    resp.topics.push_back(std::move(tr));
  }
  respond(EncodeBody(resp, req->api_version));
  return Status::OK();
}

}  // namespace silt::broker
