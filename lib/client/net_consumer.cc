// Network consumer: offsets, long-polling Fetch, batch decoding, consumer-group membership.
#include "client/net_consumer.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "base/clock.h"
#include "client/admin.h"
#include "client/consumer_protocol.h"
#include "format/legacy.h"
#include "format/record_batch.h"
#include "protocol/errors.h"
#include "protocol/messages.h"

namespace silt::client {

using protocol::ErrorCode;

namespace {

constexpr int64_t kEarliest = -2;
constexpr int64_t kLatest = -1;

bool Is(int16_t code, ErrorCode c) { return code == static_cast<int16_t>(c); }

bool NeedsRejoin(int16_t code) {
  return Is(code, ErrorCode::REBALANCE_IN_PROGRESS) || Is(code, ErrorCode::ILLEGAL_GENERATION) ||
         Is(code, ErrorCode::UNKNOWN_MEMBER_ID) || Is(code, ErrorCode::NOT_COORDINATOR) ||
         Is(code, ErrorCode::COORDINATOR_NOT_AVAILABLE) || Is(code, ErrorCode::FENCED_INSTANCE_ID);
}

}  // namespace

struct NetConsumer::Part {
  int32_t id = 0;
  int64_t position = 0;
  int64_t end = -1;  // the log end when reading started (exit point without follow)
  bool done = false;
  int64_t retry_at_ms = 0;
  int64_t committed = -1;
};

struct NetConsumer::Group {
  std::string id;
  std::mutex mu;
  std::string member_id;
  int32_t generation = -1;
  bool joined = false;
  std::atomic<bool> rejoin{false};
  std::atomic<bool> stop_heartbeat{false};
  std::condition_variable cv;
  std::thread heartbeat;
  HostPort coordinator;

  void StopHeartbeat() {
    if (!heartbeat.joinable()) return;
    {
      std::lock_guard<std::mutex> l(mu);
      stop_heartbeat = true;
    }
    cv.notify_all();
    heartbeat.join();
  }
};

NetConsumer::NetConsumer(Cluster* cluster, std::string topic, NetConsumerOptions options)
    : cluster_(cluster), topic_(std::move(topic)), options_(std::move(options)) {}

NetConsumer::~NetConsumer() {
  if (group_) group_->StopHeartbeat();
}

Result<std::unique_ptr<NetConsumer>> NetConsumer::Open(Cluster* cluster, const std::string& topic,
                                                       const NetConsumerOptions& options) {
  std::unique_ptr<NetConsumer> c(new NetConsumer(cluster, topic, options));
  SILT_ASSIGN_OR_RETURN(TopicMeta meta, cluster->Topic(topic, false));
  const int32_t n = static_cast<int32_t>(meta.partitions.size());
  if (!options.group.empty()) {
    c->group_ = std::make_unique<Group>();
    c->group_->id = options.group;
    return c;
  }
  std::vector<int32_t> parts = options.partitions;
  if (parts.empty())
    for (int32_t i = 0; i < n; ++i) parts.push_back(i);
  for (int32_t p : parts)
    if (p < 0 || p >= n)
      return Status::InvalidArgument("topic '" + topic + "' has " + std::to_string(n) +
                                     " partition(s); there is no partition " + std::to_string(p));
  SILT_TRY(c->Assign(parts, {}));
  return c;
}

Status NetConsumer::Assign(const std::vector<int32_t>& partitions,
                           const std::map<int32_t, int64_t>& committed) {
  parts_.clear();
  if (partitions.empty()) return Status::OK();
  std::map<int32_t, int64_t> earliest_q, latest_q;
  for (int32_t p : partitions) {
    earliest_q[p] = kEarliest;
    latest_q[p] = kLatest;
  }
  SILT_ASSIGN_OR_RETURN(auto starts, ListOffsets(cluster_, topic_, earliest_q));
  SILT_ASSIGN_OR_RETURN(auto ends, ListOffsets(cluster_, topic_, latest_q));
  for (int32_t id : partitions) {
    auto p = std::make_unique<Part>();
    p->id = id;
    const int64_t start = starts[id];
    const int64_t end = ends[id];
    auto c = committed.find(id);
    if (c != committed.end()) {
      p->position = c->second;
      p->committed = c->second;
    } else {
      auto for_ts = [&](int64_t ts) -> Result<int64_t> {
        SILT_ASSIGN_OR_RETURN(auto r, ListOffsets(cluster_, topic_, {{id, ts}}));
        if (r[id] < 0) return Status::NotFound("no record at or after that time");
        return r[id];
      };
      SILT_ASSIGN_OR_RETURN(p->position, ResolveOffset(options_.start, start, end, for_ts));
    }
    p->end = end;
    p->done = !options_.follow && p->position >= p->end;
    parts_[id] = std::move(p);
  }
  return Status::OK();
}

std::map<int32_t, int64_t> NetConsumer::Positions() const {
  std::map<int32_t, int64_t> out;
  for (const auto& [id, p] : parts_) out[id] = p->position;
  return out;
}

bool NetConsumer::AllDone() const {
  if (options_.follow) return false;
  for (const auto& [id, p] : parts_)
    if (!p->done) return false;
  return true;
}

Status NetConsumer::ResetOutOfRange(Part& p) {
  SILT_ASSIGN_OR_RETURN(auto starts, ListOffsets(cluster_, topic_, {{p.id, kEarliest}}));
  SILT_ASSIGN_OR_RETURN(auto ends, ListOffsets(cluster_, topic_, {{p.id, kLatest}}));
  p.position = p.position < starts[p.id] ? starts[p.id] : ends[p.id];
  return Status::OK();
}

Status NetConsumer::Deliver(Part& p, std::string_view records, const RecordFn& fn, bool* stopped,
                            bool* delivered) {
  format::LogEntryScanner scanner(records);
  format::LogEntry e;
  for (;;) {
    Status st = scanner.Next(&e);
    // The end of the data, or a batch cut at max_bytes: read the rest on the next fetch.
    if (st.IsNotFound() || st.IsTruncated()) return Status::OK();
    if (!st.ok()) return st.WithContext(topic_ + "/" + std::to_string(p.id));
    auto visit = [&](const format::RecordView& r) {
      if (r.offset < p.position) return true;
      *delivered = true;
      p.position = r.offset + 1;
      if (!fn(p.id, r)) {
        *stopped = true;
        return false;
      }
      return true;
    };
    if (e.magic == format::kMagicV2) {
      auto view = format::RecordBatchView::Parse(e.bytes);
      if (!view.ok()) {
        if (view.status().IsTruncated()) return Status::OK();
        return view.status().WithContext(topic_ + "/" + std::to_string(p.id));
      }
      const format::BatchHeader& h = view->header();
      const int64_t next = h.base_offset + h.last_offset_delta + 1;
      if (next <= p.position) continue;
      if (!h.control()) {
        SILT_TRY(view->ForEachRecord(visit));
        if (*stopped) return Status::OK();
      }
      p.position = std::max(p.position, next);
    } else {
      format::LogReadOptions lo;
      Status ls = format::ForEachLogRecord(e.bytes, lo, [&](const format::LogRecord& lr) {
        return visit(lr.record);
      });
      if (!ls.ok() && !ls.IsTruncated()) return ls.WithContext(topic_ + "/" + std::to_string(p.id));
      if (*stopped) return Status::OK();
      p.position = std::max(p.position, e.offset + 1);
    }
  }
}

Status NetConsumer::FetchOnce(const RecordFn& fn, const std::atomic<bool>* stop, bool* stopped,
                              bool* delivered) {
  if (need_metadata_) {
    need_metadata_ = false;
    auto meta = cluster_->Topic(topic_, false);
    if (!meta.ok()) {
      if (meta.status().IsNotFound()) return meta.status();
      need_metadata_ = true;
    }
  }
  const TopicMeta* meta = cluster_->Cached(topic_);
  const int64_t now = MonotonicMs();
  std::map<int32_t, std::vector<Part*>> by_leader;
  for (auto& [id, p] : parts_) {
    if (p->done || p->retry_at_ms > now) continue;
    int32_t leader = -1;
    if (meta != nullptr)
      for (const auto& pm : meta->partitions)
        if (pm.partition == id) leader = pm.leader;
    if (leader < 0) {
      need_metadata_ = true;
      p->retry_at_ms = now + cluster_->options().retry_backoff_ms;
      continue;
    }
    by_leader[leader].push_back(p.get());
  }
  if (by_leader.empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return Status::OK();
  }
  // Pipelined: one Fetch per leader, all sent before any answer is read.
  struct Sent {
    Connection* conn;
    int16_t version;
    int32_t id;
    std::vector<Part*> parts;
  };
  std::vector<Sent> sent;
  for (auto& [leader, parts] : by_leader) {
    auto conn = cluster_->Node(leader);
    if (!conn.ok()) {
      need_metadata_ = true;
      for (Part* p : parts) p->retry_at_ms = now + cluster_->options().retry_backoff_ms;
      continue;
    }
    SILT_ASSIGN_OR_RETURN(int16_t version, (*conn)->RequireVersion(protocol::ApiKey::kFetch));
    protocol::FetchRequest req;
    req.max_wait_ms = options_.max_wait_ms;
    req.min_bytes = options_.min_bytes;
    req.max_bytes = options_.max_bytes;
    req.topics.push_back({topic_, {}});
    for (Part* p : parts) {
      protocol::FetchRequest::Partition fp;
      fp.partition = p->id;
      fp.fetch_offset = p->position;
      fp.partition_max_bytes = options_.partition_max_bytes;
      req.topics[0].partitions.push_back(fp);
    }
    auto id = (*conn)->Send(req, version);
    if (!id.ok()) {
      cluster_->Drop(*conn);
      need_metadata_ = true;
      continue;
    }
    sent.push_back({*conn, version, *id, parts});
  }
  for (auto& s : sent) {
    std::string body;
    int32_t got = 0;
    Status st = s.conn->Receive(&got, &body, s.conn->timeout_ms() + options_.max_wait_ms);
    protocol::FetchResponse resp;
    if (st.ok()) {
      ByteReader r(body);
      st = resp.Decode(r, s.version);
    }
    if (!st.ok()) {
      cluster_->Drop(s.conn);
      need_metadata_ = true;
      for (Part* p : s.parts) p->retry_at_ms = MonotonicMs() + cluster_->options().retry_backoff_ms;
      continue;
    }
    if (resp.error_code != 0 && !IsRetriableError(resp.error_code))
      return ErrorStatus(resp.error_code, "fetching " + topic_);
    for (const auto& t : resp.responses) {
      if (t.topic != topic_) continue;
      for (const auto& fp : t.partitions) {
        auto it = parts_.find(fp.partition_index);
        if (it == parts_.end()) continue;
        Part& p = *it->second;
        if (fp.error_code != 0) {
          if (Is(fp.error_code, ErrorCode::OFFSET_OUT_OF_RANGE)) {
            SILT_TRY(ResetOutOfRange(p));
          } else if (IsRetriableError(fp.error_code)) {
            need_metadata_ = true;
            p.retry_at_ms = MonotonicMs() + cluster_->options().retry_backoff_ms;
          } else {
            return ErrorStatus(fp.error_code,
                               "fetching " + topic_ + "/" + std::to_string(p.id));
          }
          continue;
        }
        if (!*stopped && fp.records.bytes && !(stop && stop->load()))
          SILT_TRY(Deliver(p, *fp.records.bytes, fn, stopped, delivered));
        if (!options_.follow && p.position >= p.end) p.done = true;
      }
    }
  }
  return Status::OK();
}

Status NetConsumer::Run(const RecordFn& fn, const std::function<Status()>& after_batch,
                        const std::atomic<bool>* stop) {
  if (group_ && !group_->joined) SILT_TRY(JoinGroup());
  for (;;) {
    if (stop && stop->load()) break;
    if (group_ && group_->rejoin.load()) {
      group_->StopHeartbeat();
      // Eager rebalance: commit what was read, give every partition up, join again.
      SILT_TRY(Commit());
      parts_.clear();
      SILT_TRY(JoinGroup());
      continue;
    }
    if (AllDone()) break;
    bool stopped = false, delivered = false;
    SILT_TRY(FetchOnce(fn, stop, &stopped, &delivered));
    if (delivered || stopped) {
      if (after_batch) SILT_TRY(after_batch());
      SILT_TRY(Commit());
    }
    if (stopped) break;
  }
  return Status::OK();
}

Status NetConsumer::JoinGroup() {
  Group& g = *group_;
  const int64_t deadline = MonotonicMs() + cluster_->options().retry_timeout_ms +
                           options_.rebalance_timeout_ms;
  int backoff = cluster_->options().retry_backoff_ms;
  auto wait = [&]() -> Status {
    if (MonotonicMs() >= deadline)
      return Status::IOError("could not join consumer group '" + g.id + "' in time");
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff));
    backoff = std::min(backoff * 2, 1000);
    return Status::OK();
  };
  for (;;) {
    auto conn_r = cluster_->Coordinator(g.id);
    if (!conn_r.ok()) return conn_r.status();
    Connection* conn = *conn_r;
    g.coordinator = conn->address();
    SILT_ASSIGN_OR_RETURN(int16_t jv, conn->RequireVersion(protocol::ApiKey::kJoinGroup));
    SILT_ASSIGN_OR_RETURN(int16_t sv, conn->RequireVersion(protocol::ApiKey::kSyncGroup));

    protocol::JoinGroupRequest join;
    join.group_id = g.id;
    join.session_timeout_ms = options_.session_timeout_ms;
    join.rebalance_timeout_ms = options_.rebalance_timeout_ms;
    join.member_id = g.member_id;
    join.protocol_type = "consumer";
    Subscription sub;
    sub.version = 1;
    sub.topics = {topic_};
    join.protocols.push_back({"range", sub.Encode()});
    protocol::JoinGroupResponse jr;
    Status st = conn->Call(join, &jr, jv, options_.rebalance_timeout_ms + conn->timeout_ms());
    if (!st.ok()) {
      if (st.code() != Status::Code::kIOError) return st;
      cluster_->Drop(conn);
      cluster_->ForgetCoordinator(g.id);
      SILT_TRY(wait());
      continue;
    }
    if (Is(jr.error_code, ErrorCode::MEMBER_ID_REQUIRED)) {
      g.member_id = jr.member_id;
      continue;
    }
    if (Is(jr.error_code, ErrorCode::UNKNOWN_MEMBER_ID)) {
      g.member_id.clear();
      continue;
    }
    if (jr.error_code != 0) {
      if (Is(jr.error_code, ErrorCode::NOT_COORDINATOR)) cluster_->ForgetCoordinator(g.id);
      if (!IsRetriableError(jr.error_code) && !Is(jr.error_code, ErrorCode::REBALANCE_IN_PROGRESS))
        return ErrorStatus(jr.error_code, "joining consumer group '" + g.id + "'");
      SILT_TRY(wait());
      continue;
    }
    g.member_id = jr.member_id;
    const int32_t generation = jr.generation_id;

    protocol::SyncGroupRequest sync;
    sync.group_id = g.id;
    sync.generation_id = generation;
    sync.member_id = g.member_id;
    if (jr.leader == jr.member_id) {
      // The leader assigns for everyone, whatever client each member runs.
      std::map<std::string, std::vector<std::string>> subs;
      std::map<std::string, int32_t> counts;
      for (const auto& m : jr.members) {
        auto s = Subscription::Decode(m.metadata);
        if (!s.ok()) return s.status().WithContext("subscription of member " + m.member_id);
        subs[m.member_id] = s->topics;
        for (const auto& t : s->topics) {
          if (counts.count(t)) continue;
          auto meta = cluster_->Topic(t, false);
          if (meta.ok()) counts[t] = static_cast<int32_t>(meta->partitions.size());
        }
      }
      for (const auto& [member, tps] : RangeAssign(subs, counts)) {
        Assignment a;
        a.partitions = tps;
        sync.assignments.push_back({member, a.Encode()});
      }
    }
    protocol::SyncGroupResponse sr;
    st = conn->Call(sync, &sr, sv, options_.rebalance_timeout_ms + conn->timeout_ms());
    if (!st.ok()) {
      if (st.code() != Status::Code::kIOError) return st;
      cluster_->Drop(conn);
      cluster_->ForgetCoordinator(g.id);
      SILT_TRY(wait());
      continue;
    }
    if (sr.error_code != 0) {
      if (Is(sr.error_code, ErrorCode::UNKNOWN_MEMBER_ID)) g.member_id.clear();
      if (Is(sr.error_code, ErrorCode::NOT_COORDINATOR)) cluster_->ForgetCoordinator(g.id);
      if (!NeedsRejoin(sr.error_code) && !IsRetriableError(sr.error_code))
        return ErrorStatus(sr.error_code, "syncing consumer group '" + g.id + "'");
      continue;
    }
    SILT_ASSIGN_OR_RETURN(Assignment assignment, Assignment::Decode(sr.assignment));
    std::vector<int32_t> mine;
    auto it = assignment.partitions.find(topic_);
    if (it != assignment.partitions.end()) mine = it->second;
    std::sort(mine.begin(), mine.end());
    {
      std::lock_guard<std::mutex> l(g.mu);
      g.generation = generation;
      g.joined = true;
      g.rejoin = false;
      g.stop_heartbeat = false;
    }
    // Resume from the committed offsets; -o applies where nothing is committed.
    std::map<int32_t, int64_t> committed;
    if (!mine.empty()) {
      SILT_ASSIGN_OR_RETURN(auto all, FetchCommitted(cluster_, g.id, std::vector<std::string>{topic_}));
      committed = all[topic_];
    }
    SILT_TRY(Assign(mine, committed));

    // Heartbeats on their own connection, so a long Fetch never delays them.
    const HostPort coordinator = g.coordinator;
    const std::string client_id = cluster_->options().client_id;
    const int timeout = cluster_->options().request_timeout_ms;
    const int interval = options_.heartbeat_interval_ms;
    g.heartbeat = std::thread([&g, coordinator, client_id, timeout, interval] {
      std::unique_ptr<Connection> hc;
      for (;;) {
        std::unique_lock<std::mutex> l(g.mu);
        g.cv.wait_for(l, std::chrono::milliseconds(interval), [&] { return g.stop_heartbeat.load(); });
        if (g.stop_heartbeat) return;
        protocol::HeartbeatRequest hb;
        hb.group_id = g.id;
        hb.generation_id = g.generation;
        hb.member_id = g.member_id;
        l.unlock();
        if (!hc || hc->broken()) {
          auto c = Connection::Open(coordinator, client_id, timeout);
          if (!c.ok()) continue;  // the session timeout decides; the main loop sees the rest
          hc = std::move(*c);
        }
        protocol::HeartbeatResponse resp;
        Status st = hc->Call(hb, &resp);
        if (!st.ok()) continue;
        if (resp.error_code != 0 && NeedsRejoin(resp.error_code)) {
          g.rejoin = true;
          return;
        }
      }
    });
    return Status::OK();
  }
}

Status NetConsumer::Commit() {
  if (!group_ || !group_->joined || parts_.empty()) return Status::OK();
  Group& g = *group_;
  protocol::OffsetCommitRequest req;
  req.group_id = g.id;
  {
    std::lock_guard<std::mutex> l(g.mu);
    req.generation_id_or_member_epoch = g.generation;
    req.member_id = g.member_id;
  }
  protocol::OffsetCommitRequest::Topic t;
  t.name = topic_;
  for (auto& [id, p] : parts_) {
    if (p->position == p->committed) continue;
    protocol::OffsetCommitRequest::Partition rp;
    rp.partition_index = id;
    rp.committed_offset = p->position;
    rp.committed_metadata = "";
    t.partitions.push_back(rp);
  }
  if (t.partitions.empty()) return Status::OK();
  req.topics.push_back(t);
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto conn = cluster_->Coordinator(g.id);
    if (!conn.ok()) return conn.status();
    protocol::OffsetCommitResponse resp;
    Status st = (*conn)->Call(req, &resp);
    if (!st.ok()) {
      if (st.code() != Status::Code::kIOError) return st;
      cluster_->Drop(*conn);
      cluster_->ForgetCoordinator(g.id);
      continue;
    }
    int16_t code = 0;
    for (const auto& rt : resp.topics)
      for (const auto& rp : rt.partitions)
        if (rp.error_code != 0) code = rp.error_code;
    if (code == 0) {
      for (auto& rp : req.topics[0].partitions) parts_[rp.partition_index]->committed = rp.committed_offset;
      return Status::OK();
    }
    if (NeedsRejoin(code)) {
      // The generation moved on: these records may be delivered again to the next owner.
      if (Is(code, ErrorCode::NOT_COORDINATOR)) cluster_->ForgetCoordinator(g.id);
      g.rejoin = true;
      return Status::OK();
    }
    if (!IsRetriableError(code))
      return ErrorStatus(code, "committing offsets of group '" + g.id + "'");
    std::this_thread::sleep_for(std::chrono::milliseconds(cluster_->options().retry_backoff_ms));
  }
  return Status::IOError("could not commit the offsets of group '" + g.id + "'");
}

Status NetConsumer::Close(bool commit) {
  if (!group_ || !group_->joined) return Status::OK();
  Group& g = *group_;
  g.StopHeartbeat();
  Status committed = commit ? Commit() : Status::OK();
  auto conn = cluster_->Coordinator(g.id);
  if (conn.ok()) {
    protocol::LeaveGroupRequest req;
    req.group_id = g.id;
    req.member_id = g.member_id;
    req.members.push_back({g.member_id, std::nullopt});
    protocol::LeaveGroupResponse resp;
    // Best effort: the session timeout removes the member otherwise.
    (void)(*conn)->Call(req, &resp);
  }
  g.joined = false;
  return committed;
}

}  // namespace silt::client
