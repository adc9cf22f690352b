// Fetch (long polling, zero-copy record data; v0-3 down-converted to legacy messages) and
// ListOffsets.
#include <algorithm>
#include <deque>
#include <map>
#include <mutex>

#include "base/clock.h"
#include "base/uuid.h"
#include "broker/delayed_operation.h"
#include "broker/fetch_session.h"
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

// A requested partition as a session keeps it (what the client heard of it still unknown).
SessionPartition SessionPartitionOf(const std::string& topic, const Uuid& topic_id,
                                    const protocol::FetchRequest::Partition& p) {
  SessionPartition sp;
  sp.topic = topic;
  sp.topic_id = topic_id;
  sp.partition = p.partition;
  sp.fetch_offset = p.fetch_offset;
  sp.partition_max_bytes = p.partition_max_bytes;
  sp.current_leader_epoch = p.current_leader_epoch;
  sp.last_fetched_epoch = p.last_fetched_epoch;
  sp.log_start_offset = p.log_start_offset;
  return sp;
}

// One Fetch request waiting for min_bytes of records or max_wait_ms. Lives on its
// connection's strand. A consumer's fetch reads committed records and is re-evaluated at each
// move of its partitions' high watermarks; a follower's (replica_id >= 0, on that replica's
// peer connection) reads up to the log end, records where the follower is, and is
// re-evaluated at each append, so that an acks=all produce waits one round trip, not
// replica.fetch.wait.max.ms.
//
// With an incremental fetch session (fetch_session.h) the request's partitions are the
// session's, and the answer leaves out those with nothing new for the client; a full fetch
// with session epoch 0 makes a session of its partitions when it answers.
class DelayedFetch : public DelayedOperation {
 public:
  enum class SessionMode { kNone, kNew, kIncremental };

  DelayedFetch(BrokerContext& ctx, std::shared_ptr<Request> req, protocol::FetchRequest request,
               Respond respond)
      : DelayedOperation(req->executor, &ctx.stopping),
        req_(std::move(req)),
        request_(std::move(request)),
        respond_(std::move(respond)),
        replica_(request_.replica_id >= 0 ? NodeId(request_.replica_id) : NodeId(-1)) {}

  // An incremental fetch of `session`, whose request carried `epoch`; or (kNew) a full fetch
  // that makes a session in `cache` when it answers.
  void SetSession(SessionMode mode, FetchSessionCache* cache,
                  std::shared_ptr<FetchSession> session, int32_t epoch) {
    session_mode_ = mode;
    session_cache_ = cache;
    session_ = std::move(session);
    session_epoch_ = epoch;
  }

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
        // A partition another node leads (cluster mode) is NOT_LEADER_OR_FOLLOWER; one whose
        // log is damaged or on a failed disk, KAFKA_STORAGE_ERROR.
        ErrorCode why = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION;
        if (!s.ok() && s.status().code() == Status::Code::kNotLeader)
          why = ErrorCode::NOT_LEADER_OR_FOLLOWER;
        if (!s.ok() && s.status().code() == Status::Code::kIOError)
          why = ErrorCode::KAFKA_STORAGE_ERROR;
        missing_.push_back(why);
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
    if (session_mode_ == SessionMode::kIncremental) {
      if (!UpdateSession(&resp)) held.clear();
    } else if (session_mode_ == SessionMode::kNew) {
      MakeSession(&resp);
    }

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

  void OnCompleted() override {
    partitions_.clear();
    session_.reset();
  }

 private:
  bool follower() const { return replica_.value() >= 0; }

  // An incremental answer: only the partitions with records, an error, or a high watermark,
  // last stable offset or log start the client has not heard yet; the session remembers what it
  // now has, and moves on to its next epoch. False (the answer is then only
  // INVALID_FETCH_SESSION_EPOCH) when another fetch of the same epoch answered first.
  bool UpdateSession(protocol::FetchResponse* resp) {
    std::lock_guard<std::mutex> lock(session_->mu());
    if (session_->epoch() != session_epoch_) {
      *resp = protocol::FetchResponse();
      resp->error_code = Wire(ErrorCode::INVALID_FETCH_SESSION_EPOCH);
      return false;
    }
    std::vector<protocol::FetchResponse::TopicResponse> kept;
    for (size_t ti = 0; ti < resp->responses.size(); ++ti) {
      protocol::FetchResponse::TopicResponse& tr = resp->responses[ti];
      std::vector<protocol::FetchResponse::Partition> parts;
      for (protocol::FetchResponse::Partition& pr : tr.partitions) {
        const FetchSession::Key key =
            session_->KeyOf(names_[ti], request_.topics[ti].topic_id, pr.partition_index);
        const bool records = pr.records.size() > 0;
        bool news = records || pr.error_code != 0;
        if (SessionPartition* sp = session_->Find(key)) {
          news = news || pr.high_watermark != sp->high_watermark ||
                 pr.last_stable_offset != sp->last_stable_offset ||
                 pr.log_start_offset != sp->answered_log_start_offset;
          sp->high_watermark = pr.high_watermark;
          sp->last_stable_offset = pr.last_stable_offset;
          sp->answered_log_start_offset = pr.log_start_offset;
        }
        if (records) session_->MoveToEnd(key);
        if (news) parts.push_back(std::move(pr));
      }
      if (!parts.empty()) {
        tr.partitions = std::move(parts);
        kept.push_back(std::move(tr));
      }
    }
    resp->responses = std::move(kept);
    resp->session_id = session_->id();
    session_->set_epoch(FetchSessionCache::NextEpoch(session_epoch_));
    return true;
  }

  // A full fetch with session epoch 0: a session of its partitions, with what this answer tells
  // the client, if the cache has room (else the answer's session id stays 0).
  void MakeSession(protocol::FetchResponse* resp) {
    std::vector<SessionPartition> parts;
    for (size_t ti = 0; ti < request_.topics.size(); ++ti) {
      const auto& t = request_.topics[ti];
      const auto& answered = resp->responses[ti].partitions;
      for (size_t pi = 0; pi < t.partitions.size(); ++pi) {
        const auto& p = t.partitions[pi];
        SessionPartition sp = SessionPartitionOf(names_[ti], t.topic_id, p);
        if (pi < answered.size()) {
          sp.high_watermark = answered[pi].high_watermark;
          sp.last_stable_offset = answered[pi].last_stable_offset;
          sp.answered_log_start_offset = answered[pi].log_start_offset;
        }
        parts.push_back(std::move(sp));
      }
    }
    auto session = session_cache_->Create(follower(), req_->api_version >= 13, parts, MonotonicMs());
    resp->session_id = session ? session->id() : 0;
  }
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
  SessionMode session_mode_ = SessionMode::kNone;
  FetchSessionCache* session_cache_ = nullptr;
  std::shared_ptr<FetchSession> session_;
  int32_t session_epoch_ = 0;  // the incremental request's
};

// An answer with only a top-level error (and no session).
Response FetchError(ErrorCode code, int16_t version) {
  protocol::FetchResponse resp;
  resp.error_code = Wire(code);
  RequestMetrics::Get().OnResponseMessage(resp);
  return EncodeBody(resp, version);
}

// An incremental fetch: the request's partitions and forgotten topics change its session, and
// the request becomes one for every partition the session holds, in its order (a topic's
// partitions next to each other come under one topic entry). Needs the session's lock.
void ApplyToSession(BrokerContext& ctx, FetchSession& session, int16_t version,
                    protocol::FetchRequest* request) {
  for (const auto& t : request->topics) {
    std::string name = t.topic;
    if (version >= 13) name = TopicNameForId(ctx.metadata, t.topic_id).value_or("");
    for (const auto& p : t.partitions) {
      session.Upsert(SessionPartitionOf(name, t.topic_id, p));
    }
  }
  for (const auto& f : request->forgotten_topics_data) {
    for (int32_t p : f.partitions) session.Forget(session.KeyOf(f.topic, f.topic_id, p));
  }
  request->topics.clear();
  request->forgotten_topics_data.clear();
  for (const SessionPartition& sp : session.partitions()) {
    const bool same = !request->topics.empty() &&
                      (session.uses_topic_ids() ? request->topics.back().topic_id == sp.topic_id
                                                : request->topics.back().topic == sp.topic);
    if (!same) {
      auto& t = request->topics.emplace_back();
      t.topic = sp.topic;
      t.topic_id = sp.topic_id;
    }
    auto& p = request->topics.back().partitions.emplace_back();
    p.partition = sp.partition;
    p.fetch_offset = sp.fetch_offset;
    p.partition_max_bytes = sp.partition_max_bytes;
    p.current_leader_epoch = sp.current_leader_epoch;
    p.last_fetched_epoch = sp.last_fetched_epoch;
    p.log_start_offset = sp.log_start_offset;
  }
}

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
  // Fetch sessions (KIP-227, v7+). Epoch -1: a full fetch without a session (closing the one
  // named, if any); epoch 0: a full fetch that asks for a new session (replacing the one
  // named); any other epoch: the next fetch of the session named. An unknown session is
  // FETCH_SESSION_ID_NOT_FOUND and a wrong epoch INVALID_FETCH_SESSION_EPOCH, after which a
  // client starts again with a full fetch; so is every incremental fetch when
  // max.incremental.fetch.session.cache.slots is 0 (no session is ever made).
  auto mode = DelayedFetch::SessionMode::kNone;
  FetchSessionCache* cache = ctx.fetch_sessions;
  std::shared_ptr<FetchSession> session;
  if (req->api_version >= 7) {
    const int32_t id = request.session_id;
    const int32_t epoch = request.session_epoch;
    const bool enabled = cache != nullptr && cache->enabled();
    if (epoch == 0 || epoch == -1) {
      if (id != 0 && cache != nullptr) cache->Remove(id);
      if (epoch == 0 && enabled) mode = DelayedFetch::SessionMode::kNew;
    } else {
      if (enabled) session = cache->Get(id, MonotonicMs());
      ErrorCode refused = ErrorCode::NONE;
      if (!session) {
        refused = ErrorCode::FETCH_SESSION_ID_NOT_FOUND;
      } else {
        std::lock_guard<std::mutex> lock(session->mu());
        if (session->epoch() != epoch) {
          refused = ErrorCode::INVALID_FETCH_SESSION_EPOCH;
        } else if (session->uses_topic_ids() != (req->api_version >= 13)) {
          // A session made by names cannot go on by topic ids, nor the other way round.
          refused = ErrorCode::FETCH_SESSION_TOPIC_ID_ERROR;
        } else {
          ApplyToSession(ctx, *session, req->api_version, &request);
          cache->Resized(session, session->size());
        }
      }
      if (refused != ErrorCode::NONE) {
        respond(FetchError(refused, req->api_version));
        return Status::OK();
      }
      mode = DelayedFetch::SessionMode::kIncremental;
    }
  }
  const int32_t epoch = request.session_epoch;
  auto pending = std::make_shared<DelayedFetch>(ctx, req, std::move(request), std::move(respond));
  pending->SetSession(mode, cache, std::move(session), epoch);
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
