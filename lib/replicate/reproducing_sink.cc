#include "replicate/reproducing_sink.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/coding.h"
#include "client/admin.h"
#include "client/cluster.h"
#include "format/batch_header.h"
#include "format/record_batch.h"
#include "protocol/errors.h"
#include "protocol/messages.h"
#include "replicate/groups.h"
#include "replicate/offset_map.h"

namespace silt::replicate {

namespace {

using client::Cluster;
using client::Connection;
using protocol::ErrorCode;

constexpr int kMaxInFlight = 5;
constexpr size_t kMaxHeldBytes = 64 << 20;
constexpr int8_t kCheckpointVersion = 1;
constexpr int kDeliveryTimeoutMs = 120000;
// A partition's map is stored whole (and its chunks deleted) after this many chunks.
constexpr size_t kChunksPerSnapshot = 64;
constexpr size_t kMaxInternalBatch = 512 << 10;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool Is(int16_t code, ErrorCode e) { return code == static_cast<int16_t>(e); }

std::string MapKey(const std::string& topic, int32_t partition, int64_t from) {
  std::string k = "m";
  k.push_back('\0');
  k += topic;
  k.push_back('\0');
  k += std::to_string(partition);
  k.push_back('\0');
  k += std::to_string(from);
  return k;
}

std::string SnapshotKey(const std::string& topic, int32_t partition) {
  std::string k = "s";
  k.push_back('\0');
  k += topic;
  k.push_back('\0');
  k += std::to_string(partition);
  return k;
}

std::string CheckpointKey(const std::string& source_id) {
  std::string k = "c";
  k.push_back('\0');
  k += source_id;
  return k;
}

// checkpoint = version:int8 count:varint (topic_len:varint topic partition:varint next:varlong)*
std::string EncodeCheckpoint(const std::vector<CheckpointEntry>& entries) {
  std::string out;
  ByteWriter w(&out);
  w.I8(kCheckpointVersion);
  w.Varint(static_cast<int32_t>(entries.size()));
  for (const CheckpointEntry& e : entries) {
    w.Varint(static_cast<int32_t>(e.topic.size()));
    w.Raw(e.topic);
    w.Varint(e.partition);
    w.Varlong(e.source_next.value());
  }
  return out;
}

Result<std::vector<CheckpointEntry>> DecodeCheckpoint(std::string_view bytes) {
  ByteReader r(bytes);
  int8_t version;
  int32_t n;
  if (!r.I8(&version) || version != kCheckpointVersion || !r.Varint(&n) || n < 0 ||
      static_cast<size_t>(n) > r.remaining()) {
    return Status::Corruption("replicate checkpoint: bad header");
  }
  std::vector<CheckpointEntry> out;
  for (int32_t i = 0; i < n; ++i) {
    int32_t len, partition;
    int64_t next;
    std::string_view topic;
    if (!r.Varint(&len) || len < 0 || !r.Bytes(static_cast<size_t>(len), &topic) ||
        !r.Varint(&partition) || !r.Varlong(&next)) {
      return Status::Corruption("replicate checkpoint: truncated entry");
    }
    out.push_back({std::string(topic), partition, Offset(next)});
  }
  if (!r.empty()) return Status::Corruption("replicate checkpoint: trailing bytes");
  return out;
}

bool SameRecord(const format::Record& a, const format::Record& b) {
  if (a.timestamp != b.timestamp || a.key != b.key || a.value != b.value) return false;
  if (a.headers.size() != b.headers.size()) return false;
  for (size_t i = 0; i < a.headers.size(); ++i) {
    if (a.headers[i].key != b.headers[i].key || a.headers[i].value != b.headers[i].value)
      return false;
  }
  return true;
}

class ReproducingSink final : public Sink {
 public:
  ReproducingSink(std::unique_ptr<Cluster> cluster, OpenOptions options)
      : cluster_(std::move(cluster)), options_(std::move(options)) {}

  Status Open();

  Placement placement() const override { return Placement::kReproduces; }
  Result<std::vector<TopicDesc>> ListTopics() override;
  Status EnsureTopic(const TopicDesc& topic, bool copy_configs) override;
  Result<Offset> LogEnd(const std::string& topic, int32_t partition) override;
  Result<std::string> ReadBack(const std::string& topic, int32_t partition, Offset from,
                               int64_t max_bytes) override;
  Result<AppendOutcome> Append(const std::string& topic, int32_t partition, Offset expected,
                               std::string_view batches) override;
  Status Flush() override;
  Result<std::vector<CheckpointEntry>> LoadCheckpoint(const std::string& source_id) override;
  Status StoreCheckpoint(const std::string& source_id,
                         const std::vector<CheckpointEntry>& entries) override;
  Result<Offset> TranslateOffset(const std::string& topic, int32_t partition,
                                 Offset source) override;
  Result<bool> GroupActive(const std::string& group) override {
    return GroupHasMembers(cluster_.get(), group);
  }
  Status CommitGroupOffsets(const GroupOffsets& offsets) override {
    return CommitTranslatedOffsets(
        cluster_.get(), offsets,
        [this](const std::string& t, int32_t p, Offset s) { return TranslateOffset(t, p, s); });
  }
  Status Promote(const std::string&) override { return Status::OK(); }  // always writable

 private:
  // A source batch taken but not produced yet: it waits for a transaction's outcome.
  struct Held {
    std::string bytes;
    format::BatchHeader header;
    int64_t min_offset = 0;  // records below were copied before (or lie before the copy's start)
    int outcome = 0;         // transactional data: 0 unknown, 1 committed, -1 aborted
  };
  // A source batch given its place at the destination, in source order: a hole, records found
  // already at the destination (matched), or a batch to produce.
  struct Out {
    int64_t source_next = 0;     // the map advances to here once this is applied
    std::vector<OffsetRun> runs;  // matched: absolute dest; produced: dest relative to the base
    bool produce = false;
    std::string bytes;
    int32_t records = 0;
    bool in_flight = false;
    bool acked = false;
    int64_t dest_base = -1;
    int64_t first_sent_ms = -1;
  };
  struct Part {
    std::string topic;
    int32_t partition = 0;
    PartitionOffsetMap map;
    PartitionOffsetMap::Mark stored;
    bool tail_loaded = false;
    std::deque<format::Record> tail;  // destination records the map does not name yet
    int64_t tail_dest = 0;            // dest offset of tail.front()
    int64_t accepted_end = -1;        // source offset after the last batch taken; -1: none yet
    std::deque<Held> held;
    size_t held_bytes = 0;
    std::deque<std::unique_ptr<Out>> out;
    int in_flight = 0;
    bool resend = false;
    int32_t next_sequence = 0;
    std::vector<std::string> chunk_keys;  // map chunks stored since the last snapshot
  };
  struct Sent {
    int32_t correlation_id;
    int16_t version;
    Part* part;
    Out* out;
  };

  Result<Part*> GetPart(const std::string& topic, int32_t partition);
  Status LoadState();
  Status LoadTail(Part& p);
  Status Take(Part& p, std::string_view batch, const format::BatchHeader& h);
  Status Emit(Part& p, std::string_view batch, const format::BatchHeader& h, int64_t min_offset,
              bool hole);
  Status Drain(Part& p);
  void ApplyDone(Part& p);
  // Sends what may be sent and reads answers: until nothing is in flight when `all`, else only
  // while some partition has more than kMaxInFlight batches waiting to go.
  Status Pump(bool all);
  Status SendOne(Part& p, Out& o);
  Status ReadOne(Connection* c);
  void LoseConnection(Connection* c);
  // Produces records (key, value or a tombstone) to the offsets topic, acks=all.
  Status ProduceInternal(
      const std::vector<std::pair<std::string, std::optional<std::string>>>& records);
  Result<int64_t> ProduceSync(const std::string& topic, int32_t partition, std::string batch,
                              int32_t records, int32_t* sequence);
  Result<std::vector<format::Record>> FetchRecords(const std::string& topic, int32_t partition,
                                                   int64_t from, int64_t to);
  Result<Connection*> Leader(const std::string& topic, int32_t partition);
  // Leader(), once every produce answer outstanding on its connection has been read, so that a
  // request and its answer can be exchanged on it alone.
  Result<Connection*> QuietLeader(const std::string& topic, int32_t partition);
  Status InitProducerId();

  std::unique_ptr<Cluster> cluster_;
  OpenOptions options_;
  int64_t producer_id_ = -1;
  int16_t producer_epoch_ = -1;
  int32_t offsets_sequence_ = 0;  // the offsets topic's partition 0
  std::map<std::pair<std::string, int32_t>, std::unique_ptr<Part>> parts_;
  std::map<std::string, std::vector<CheckpointEntry>> checkpoints_;
  std::map<Connection*, std::deque<Sent>> sent_;
  Connection* lost_ = nullptr;  // the connection LoseConnection() dropped last
  Status broken_;  // sticky: the offset map could not take what the destination answered
};

Status ReproducingSink::InitProducerId() {
  const int64_t deadline = NowMs() + cluster_->options().retry_timeout_ms;
  for (;;) {
    SILT_ASSIGN_OR_RETURN(Connection * conn, cluster_->Any());
    SILT_ASSIGN_OR_RETURN(int16_t v, conn->RequireVersion(protocol::ApiKey::kInitProducerId));
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
    bool retry = st.ok() ? client::IsRetriableError(resp.error_code)
                         : st.code() == Status::Code::kIOError;
    if (!retry || NowMs() >= deadline)
      return st.ok() ? client::ErrorStatus(resp.error_code, "InitProducerId") : st;
    std::this_thread::sleep_for(std::chrono::milliseconds(cluster_->options().retry_backoff_ms));
  }
}

Status ReproducingSink::Open() {
  SILT_TRY(InitProducerId());
  client::TopicSpec spec;
  spec.name = kOffsetsTopic;
  spec.partitions = 1;
  spec.configs["cleanup.policy"] = "compact";
  Status st = client::CreateTopic(cluster_.get(), spec);
  if (!st.ok() && st.code() != Status::Code::kAlreadyExists) {
    return st.WithContext("creating " + std::string(kOffsetsTopic));
  }
  return LoadState();
}

Result<Connection*> ReproducingSink::Leader(const std::string& topic, int32_t partition) {
  const client::TopicMeta* cached = cluster_->Cached(topic);
  client::TopicMeta fresh;
  if (cached == nullptr || cached->error_code != 0) {
    SILT_ASSIGN_OR_RETURN(fresh, cluster_->Topic(topic, false));
    cached = &fresh;
  }
  for (const client::PartitionMeta& pm : cached->partitions) {
    if (pm.partition == partition) {
      if (pm.leader < 0) {
        return Status::IOError(topic + "/" + std::to_string(partition) + " has no leader");
      }
      return cluster_->Node(pm.leader);
    }
  }
  return Status::NotFound("topic '" + topic + "' has no partition " + std::to_string(partition));
}

Result<Connection*> ReproducingSink::QuietLeader(const std::string& topic, int32_t partition) {
  for (int attempt = 0;; ++attempt) {
    SILT_ASSIGN_OR_RETURN(Connection * conn, Leader(topic, partition));
    lost_ = nullptr;
    for (auto it = sent_.find(conn); it != sent_.end() && !it->second.empty() && lost_ != conn;
         it = sent_.find(conn)) {
      SILT_TRY(ReadOne(conn));
    }
    if (lost_ != conn) return conn;
    if (attempt >= 3) return Status::IOError("lost the connection to " + topic + "'s leader");
  }
}

Result<std::vector<format::Record>> ReproducingSink::FetchRecords(const std::string& topic,
                                                                  int32_t partition, int64_t from,
                                                                  int64_t to) {
  std::vector<format::Record> out;
  int64_t at = from;
  const int64_t deadline = NowMs() + cluster_->options().retry_timeout_ms;
  while (at < to) {
    Result<Connection*> conn = QuietLeader(topic, partition);
    Status st = conn.status();
    protocol::FetchResponse resp;
    int16_t version = -1;
    std::string body;
    if (st.ok()) {
      version = (*conn)->Version(protocol::ApiKey::kFetch);
      if (version < 0) return Status::Unsupported("the destination serves no Fetch version");
      protocol::FetchRequest req;
      req.max_wait_ms = 0;
      req.max_bytes = 8 << 20;
      req.topics.push_back({topic, {}});
      protocol::FetchRequest::Partition fp;
      fp.partition = partition;
      fp.fetch_offset = at;
      fp.partition_max_bytes = 8 << 20;
      req.topics[0].partitions.push_back(fp);
      auto id = (*conn)->Send(req, version);
      st = id.status();
      int32_t got = 0;
      if (st.ok()) st = (*conn)->Receive(&got, &body, (*conn)->timeout_ms());
      if (st.ok()) {
        ByteReader r(body);
        st = resp.Decode(r, version);
      }
      if (!st.ok()) cluster_->Drop(*conn);
    }
    int16_t code = 0;
    std::string_view records;
    if (st.ok()) {
      code = resp.error_code;
      for (const auto& t : resp.responses) {
        for (const auto& fp : t.partitions) {
          if (t.topic != topic || fp.partition_index != partition) continue;
          if (code == 0) code = fp.error_code;
          if (fp.records.bytes) records = *fp.records.bytes;
        }
      }
    }
    if (!st.ok() || (code != 0 && client::IsRetriableError(code))) {
      if (NowMs() >= deadline) return st.ok() ? client::ErrorStatus(code, "fetching " + topic) : st;
      std::this_thread::sleep_for(std::chrono::milliseconds(cluster_->options().retry_backoff_ms));
      (void)cluster_->FetchMetadata(std::vector<std::string>{topic}, false);
      continue;
    }
    if (code != 0) return client::ErrorStatus(code, "fetching " + topic);
    bool progressed = false;
    while (records.size() >= static_cast<size_t>(format::kBatchHeaderSize)) {
      auto view = format::RecordBatchView::Parse(records);
      if (!view.ok()) {
        if (view.status().code() == Status::Code::kTruncated) break;  // cut at max_bytes
        return view.status().WithContext("reading back " + topic);
      }
      records.remove_prefix(view->bytes().size());
      if (view->header().next().value() <= at) continue;
      progressed = true;
      if (!view->header().control()) {
        Status rs = view->ForEachRecord([&](const format::RecordView& rv) {
          if (rv.offset >= at && rv.offset < to) out.push_back(rv.ToRecord());
          return true;
        });
        SILT_TRY(rs);
      }
      at = view->header().next().value();
    }
    if (!progressed) {
      return Status::Internal("reading back " + topic + ": no batch at offset " +
                              std::to_string(at));
    }
  }
  return out;
}

Status ReproducingSink::LoadState() {
  SILT_ASSIGN_OR_RETURN(auto ends, client::ListOffsets(cluster_.get(), kOffsetsTopic, {{0, -1}}));
  const int64_t end = ends[0];
  if (end <= 0) return Status::OK();
  SILT_ASSIGN_OR_RETURN(auto starts,
                        client::ListOffsets(cluster_.get(), kOffsetsTopic, {{0, -2}}));
  SILT_ASSIGN_OR_RETURN(std::vector<format::Record> records,
                        FetchRecords(kOffsetsTopic, 0, starts[0], end));
  for (const format::Record& r : records) {
    if (!r.key || r.key->size() < 2 || (*r.key)[1] != '\0') continue;
    const std::string& key = *r.key;
    if (key[0] == 'c') {
      std::string id = key.substr(2);
      if (!r.value) {
        checkpoints_.erase(id);
        continue;
      }
      SILT_ASSIGN_OR_RETURN(checkpoints_[id], DecodeCheckpoint(*r.value));
    } else if (key[0] == 'm' || key[0] == 's') {
      // m NUL topic NUL partition NUL from (a chunk) or s NUL topic NUL partition (a snapshot).
      size_t a = key.find('\0', 2);
      if (a == std::string::npos) return Status::Corruption("offset map key without partition");
      size_t b = key.find('\0', a + 1);
      std::string topic = key.substr(2, a - 2);
      std::string digits = key.substr(a + 1, b == std::string::npos ? b : b - a - 1);
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos)
        return Status::Corruption("offset map key with a bad partition");
      int32_t partition = std::stoi(digits);
      auto& slot = parts_[{topic, partition}];
      if (!slot) {
        slot = std::make_unique<Part>();
        slot->topic = topic;
        slot->partition = partition;
      }
      Part& p = *slot;
      if (key[0] == 's') {
        if (!r.value) continue;
        p.map = PartitionOffsetMap();
        p.chunk_keys.clear();
      } else if (!r.value) {
        std::erase(p.chunk_keys, key);  // removed at the last snapshot
        continue;
      } else {
        p.chunk_keys.push_back(key);
      }
      Status st = p.map.ApplyChunk(*r.value);
      if (!st.ok()) return st.WithContext(topic + "/" + std::to_string(partition));
    }
  }
  for (auto& [k, p] : parts_) p->stored = p->map.mark();
  return Status::OK();
}

Result<ReproducingSink::Part*> ReproducingSink::GetPart(const std::string& topic,
                                                        int32_t partition) {
  auto& slot = parts_[{topic, partition}];
  if (!slot) {
    slot = std::make_unique<Part>();
    slot->topic = topic;
    slot->partition = partition;
    slot->stored = slot->map.mark();
  }
  return slot.get();
}

Result<std::vector<TopicDesc>> ReproducingSink::ListTopics() {
  SILT_ASSIGN_OR_RETURN(protocol::MetadataResponse md, cluster_->FetchMetadata(std::nullopt, false));
  std::vector<TopicDesc> out;
  for (const auto& t : md.topics) {
    if (t.name.empty() || t.error_code != 0 || t.is_internal || t.name.rfind("__", 0) == 0)
      continue;
    TopicDesc d;
    d.name = t.name;
    d.partitions = static_cast<int32_t>(t.partitions.size());
    out.push_back(std::move(d));
  }
  std::sort(out.begin(), out.end(),
            [](const TopicDesc& a, const TopicDesc& b) { return a.name < b.name; });
  return out;
}

Status ReproducingSink::EnsureTopic(const TopicDesc& topic, bool copy_configs) {
  Result<client::TopicMeta> meta = cluster_->Topic(topic.name, false);
  if (meta.ok()) {
    int32_t have = static_cast<int32_t>(meta->partitions.size());
    if (have >= topic.partitions) return Status::OK();
    return client::CreatePartitions(cluster_.get(), topic.name, topic.partitions);
  }
  if (meta.status().code() != Status::Code::kNotFound) return meta.status();
  client::TopicSpec spec;
  spec.name = topic.name;
  spec.partitions = topic.partitions;
  if (copy_configs) {
    for (const auto& [k, v] : topic.configs) {
      // Re-produced records keep their own timestamps only under CreateTime.
      if (IsClusterSpecificConfig(k) || k == "message.timestamp.type") continue;
      spec.configs[k] = v;
    }
  }
  Status st = client::CreateTopic(cluster_.get(), spec);
  if (st.code() == Status::Code::kAlreadyExists) return Status::OK();
  return st;
}

Result<Offset> ReproducingSink::LogEnd(const std::string& topic, int32_t partition) {
  SILT_ASSIGN_OR_RETURN(auto ends, client::ListOffsets(cluster_.get(), topic, {{partition, -1}}));
  return Offset(ends[partition]);
}

Result<std::string> ReproducingSink::ReadBack(const std::string& topic, int32_t partition,
                                              Offset from, int64_t max_bytes) {
  SILT_ASSIGN_OR_RETURN(Connection * conn, QuietLeader(topic, partition));
  SILT_ASSIGN_OR_RETURN(int16_t version, conn->RequireVersion(protocol::ApiKey::kFetch));
  protocol::FetchRequest req;
  req.max_bytes = static_cast<int32_t>(std::min<int64_t>(max_bytes, INT32_MAX));
  req.topics.push_back({topic, {}});
  protocol::FetchRequest::Partition fp;
  fp.partition = partition;
  fp.fetch_offset = from.value();
  fp.partition_max_bytes = req.max_bytes;
  req.topics[0].partitions.push_back(fp);
  // Not Call(): the response's record sets are views into `body`, which must outlive them.
  protocol::FetchResponse resp;
  std::string body;
  auto id = conn->Send(req, version);
  Status st = id.status();
  int32_t got = 0;
  if (st.ok()) st = conn->Receive(&got, &body, conn->timeout_ms());
  if (st.ok()) {
    ByteReader r(body);
    st = resp.Decode(r, version);
  }
  if (!st.ok()) {
    cluster_->Drop(conn);
    return st;
  }
  for (const auto& t : resp.responses) {
    for (const auto& p : t.partitions) {
      if (p.partition_index != partition) continue;
      if (p.error_code != 0) return client::ErrorStatus(p.error_code, "reading back " + topic);
      std::string out;
      std::string_view rest = p.records.bytes.value_or(std::string_view());
      while (rest.size() >= static_cast<size_t>(format::kLogOverhead)) {
        format::BatchHeader h;
        if (!format::CheckBatchFraming(rest, {}, &h).ok()) break;  // a partial batch at the end
        out.append(rest.substr(0, static_cast<size_t>(h.size())));
        rest.remove_prefix(static_cast<size_t>(h.size()));
      }
      return out;
    }
  }
  return std::string();
}

Status ReproducingSink::LoadTail(Part& p) {
  p.tail_loaded = true;
  SILT_ASSIGN_OR_RETURN(Offset end, LogEnd(p.topic, p.partition));
  int64_t from = p.map.dest_end().value();
  if (p.map.runs().empty()) {
    SILT_ASSIGN_OR_RETURN(auto starts,
                          client::ListOffsets(cluster_.get(), p.topic, {{p.partition, -2}}));
    from = starts[p.partition];
  }
  if (end.value() < from) {
    return Status::OutOfRange(p.topic + "/" + std::to_string(p.partition) +
                              ": the destination ends at " + std::to_string(end.value()) +
                              " but the offset map has copied up to " + std::to_string(from) +
                              " (records were deleted at the destination)");
  }
  if (end.value() == from) return Status::OK();
  SILT_ASSIGN_OR_RETURN(std::vector<format::Record> tail,
                        FetchRecords(p.topic, p.partition, from, end.value()));
  p.tail.assign(tail.begin(), tail.end());
  p.tail_dest = p.tail.empty() ? end.value() : p.tail.front().offset;
  return Status::OK();
}

Result<AppendOutcome> ReproducingSink::Append(const std::string& topic, int32_t partition,
                                              Offset expected, std::string_view batches) {
  SILT_TRY(broken_);
  SILT_ASSIGN_OR_RETURN(Part * p, GetPart(topic, partition));
  if (!p->tail_loaded) {
    // Reading the tail uses the partition leader's connection, on which other partitions'
    // produce requests may be in flight: their answers must be read first, in order.
    SILT_TRY(Pump(true));
    SILT_TRY(broken_);
    SILT_TRY(LoadTail(*p));
  }
  if (p->accepted_end < 0) {
    // Where this run starts: after what the map holds, or at `expected` for a new partition.
    p->accepted_end = p->map.empty() ? expected.value() : p->map.source_end().value();
    if (p->map.empty()) p->map.Advance(expected);
  }
  std::string_view rest = batches;
  while (!rest.empty()) {
    format::BatchHeader h;
    Status st = format::CheckBatchFraming(rest, {}, &h);
    if (!st.ok()) return st.WithContext("a source batch of " + topic);
    std::string_view batch = rest.substr(0, static_cast<size_t>(h.size()));
    rest.remove_prefix(batch.size());
    if (h.next().value() <= p->accepted_end) continue;  // copied before
    SILT_TRY(Take(*p, batch, h));
  }
  SILT_TRY(Pump(false));
  SILT_TRY(broken_);
  AppendOutcome out;
  out.appended = true;
  out.log_end = Offset(p->accepted_end);
  return out;
}

Status ReproducingSink::Take(Part& p, std::string_view batch, const format::BatchHeader& h) {
  const int64_t min_offset = p.accepted_end;
  p.accepted_end = h.next().value();
  if (h.control()) {
    // The marker decides the held batches of its producer.
    auto view = format::RecordBatchView::Parse(batch);
    if (!view.ok()) return view.status();
    format::ControlType type = format::ControlType::kUnknown;
    SILT_TRY(view->ForEachRecord([&](const format::RecordView& r) {
      type = format::ParseControlType(r.key);
      return false;
    }));
    int outcome = type == format::ControlType::kCommit ? 1
                  : type == format::ControlType::kAbort ? -1
                                                         : 0;
    if (outcome != 0) {
      for (Held& held : p.held) {
        if (held.outcome == 0 && held.header.transactional() && !held.header.control() &&
            held.header.producer_id == h.producer_id) {
          held.outcome = outcome;
        }
      }
    }
  }
  const bool wait = !p.held.empty() || (h.transactional() && !h.control());
  if (!wait) return Emit(p, batch, h, min_offset, h.control());
  if (p.held_bytes + batch.size() > kMaxHeldBytes) {
    return Status::TooLarge(p.topic + "/" + std::to_string(p.partition) +
                            ": an open transaction at source offset " +
                            std::to_string(p.held.front().header.base_offset) + " holds back more than " +
                            std::to_string(kMaxHeldBytes >> 20) + " MiB");
  }
  Held held;
  held.bytes.assign(batch);
  held.header = h;
  held.min_offset = min_offset;
  held.outcome = (h.transactional() && !h.control()) ? 0 : 1;
  p.held_bytes += batch.size();
  p.held.push_back(std::move(held));
  return Drain(p);
}

Status ReproducingSink::Drain(Part& p) {
  while (!p.held.empty() && p.held.front().outcome != 0) {
    Held held = std::move(p.held.front());
    p.held.pop_front();
    p.held_bytes -= held.bytes.size();
    SILT_TRY(Emit(p, held.bytes, held.header, held.min_offset,
                  held.header.control() || held.outcome < 0));
  }
  return Status::OK();
}

Status ReproducingSink::Emit(Part& p, std::string_view batch, const format::BatchHeader& h,
                             int64_t min_offset, bool hole) {
  if (hole || h.records_count == 0) {
    auto o = std::make_unique<Out>();
    o->source_next = h.next().value();
    p.out.push_back(std::move(o));
    ApplyDone(p);
    return Status::OK();
  }
  const bool whole = p.tail.empty() && min_offset <= h.base_offset &&
                     h.records_count == h.last_offset_delta + 1 && !h.log_append_time() &&
                     !h.has_delete_horizon();
  if (whole) {
    auto o = std::make_unique<Out>();
    o->source_next = h.next().value();
    o->runs.push_back({h.base_offset, 0, h.records_count});
    o->produce = true;
    o->records = h.records_count;
    o->bytes.assign(batch);
    format::BatchHeader nh = h;
    nh.base_offset = 0;
    nh.partition_leader_epoch = -1;
    nh.attributes = static_cast<int16_t>(h.attributes & ~format::kTransactionalBit);
    nh.producer_id = producer_id_;
    nh.producer_epoch = producer_epoch_;
    nh.base_sequence = p.next_sequence;
    format::ResealBatch(nh, o->bytes.data(), o->bytes.size());
    p.next_sequence += h.records_count;
    p.out.push_back(std::move(o));
    return Status::OK();
  }

  // Record by record: first against the destination's unmapped tail, then rebuilt.
  auto view = format::RecordBatchView::Parse(batch);
  if (!view.ok()) return view.status();
  SILT_ASSIGN_OR_RETURN(std::vector<format::Record> records, view->Records());
  size_t i = 0;
  while (i < records.size() && records[i].offset < min_offset) ++i;
  if (!p.tail.empty() && i < records.size()) {
    auto matched = std::make_unique<Out>();
    for (; i < records.size() && !p.tail.empty(); ++i) {
      const format::Record& dest = p.tail.front();
      if (!SameRecord(records[i], dest)) {
        return Status::InvalidArgument(
            p.topic + "/" + std::to_string(p.partition) + ": the destination diverged: record " +
            std::to_string(dest.offset) + " there is not source record " +
            std::to_string(records[i].offset) + " (something else wrote to the destination)");
      }
      if (!matched->runs.empty() &&
          matched->runs.back().source_next() == records[i].offset &&
          matched->runs.back().dest_next() == dest.offset) {
        ++matched->runs.back().count;
      } else {
        matched->runs.push_back({records[i].offset, dest.offset, 1});
      }
      matched->source_next = records[i].offset + 1;
      p.tail.pop_front();
    }
    if (i == records.size()) matched->source_next = h.next().value();
    p.out.push_back(std::move(matched));
    ApplyDone(p);
  }
  if (i == records.size()) {
    if (p.out.empty() || p.out.back()->source_next < h.next().value()) {
      auto o = std::make_unique<Out>();
      o->source_next = h.next().value();
      p.out.push_back(std::move(o));
      ApplyDone(p);
    }
    return Status::OK();
  }
  format::RecordBatchBuilder::Options bo;
  bo.compression = h.compression();
  bo.producer_id = producer_id_;
  bo.producer_epoch = producer_epoch_;
  bo.base_sequence = p.next_sequence;
  format::RecordBatchBuilder b(bo);
  auto o = std::make_unique<Out>();
  o->source_next = h.next().value();
  o->produce = true;
  int64_t rel = 0;
  for (; i < records.size(); ++i, ++rel) {
    const format::Record& r = records[i];
    std::vector<std::pair<std::string_view, std::optional<std::string_view>>> headers;
    for (const format::Header& hd : r.headers) {
      headers.emplace_back(hd.key, hd.value ? std::optional<std::string_view>(*hd.value)
                                            : std::nullopt);
    }
    std::optional<std::string_view> key, value;
    if (r.key) key = *r.key;
    if (r.value) value = *r.value;
    b.Add(key, value, r.timestamp, headers);
    if (!o->runs.empty() && o->runs.back().source_next() == r.offset) {
      ++o->runs.back().count;
    } else {
      o->runs.push_back({r.offset, rel, 1});
    }
  }
  o->records = b.record_count();
  SILT_ASSIGN_OR_RETURN(o->bytes, b.Finish());
  p.next_sequence += o->records;
  p.out.push_back(std::move(o));
  return Status::OK();
}

void ReproducingSink::ApplyDone(Part& p) {
  while (!p.out.empty()) {
    Out& o = *p.out.front();
    if (o.produce && !o.acked) break;
    for (const OffsetRun& r : o.runs) {
      int64_t dest = o.produce ? o.dest_base + r.dest_start : r.dest_start;
      // The offsets only go forward here (source order, acknowledged in order); a broker that
      // placed a batch below an earlier one breaks the map, and the copy stops.
      Status st = p.map.AddCopied(Offset(r.source_start), Offset(dest), r.count);
      if (!st.ok() && broken_.ok()) {
        broken_ = st.WithContext(p.topic + "/" + std::to_string(p.partition) +
                                 ": the destination acknowledged batches out of order");
      }
    }
    p.map.Advance(Offset(o.source_next));
    p.out.pop_front();
  }
}

Status ReproducingSink::SendOne(Part& p, Out& o) {
  SILT_ASSIGN_OR_RETURN(Connection * conn, Leader(p.topic, p.partition));
  SILT_ASSIGN_OR_RETURN(int16_t version, conn->RequireVersion(protocol::ApiKey::kProduce));
  protocol::ProduceRequest req;
  req.acks = -1;
  req.timeout_ms = options_.request_timeout_ms;
  protocol::ProduceRequest::TopicData td;
  td.name = p.topic;
  protocol::ProduceRequest::PartitionData pd;
  pd.index = p.partition;
  pd.records.bytes = std::string_view(o.bytes);
  td.partition_data.push_back(pd);
  req.topic_data.push_back(std::move(td));
  auto id = conn->Send(req, version);
  if (!id.ok()) {
    LoseConnection(conn);
    return id.status();
  }
  o.in_flight = true;
  if (o.first_sent_ms < 0) o.first_sent_ms = NowMs();
  ++p.in_flight;
  sent_[conn].push_back({*id, version, &p, &o});
  return Status::OK();
}

void ReproducingSink::LoseConnection(Connection* c) {
  lost_ = c;
  auto it = sent_.find(c);
  if (it != sent_.end()) {
    for (Sent& s : it->second) {
      s.out->in_flight = false;
      --s.part->in_flight;
      s.part->resend = true;
    }
    sent_.erase(it);
  }
  cluster_->Drop(c);
}

Status ReproducingSink::ReadOne(Connection* c) {
  std::deque<Sent>& q = sent_[c];
  Sent s = q.front();
  std::string body;
  int32_t got = 0;
  Status st = c->Receive(&got, &body, c->timeout_ms() + options_.request_timeout_ms);
  if (st.ok() && got != s.correlation_id)
    st = Status::IOError("an answer with correlation id " + std::to_string(got) + " where " +
                         std::to_string(s.correlation_id) + " was due");
  protocol::ProduceResponse resp;
  if (st.ok()) {
    ByteReader r(body);
    st = resp.Decode(r, s.version);
  }
  if (!st.ok()) {
    LoseConnection(c);
    return Status::OK();  // sent again after a metadata refresh
  }
  q.pop_front();
  Part& p = *s.part;
  Out& o = *s.out;
  o.in_flight = false;
  --p.in_flight;
  int16_t code = static_cast<int16_t>(ErrorCode::UNKNOWN_SERVER_ERROR);
  int64_t base = -1;
  std::optional<std::string> message;
  for (const auto& t : resp.responses) {
    for (const auto& pr : t.partition_responses) {
      if (t.name == p.topic && pr.index == p.partition) {
        code = pr.error_code;
        base = pr.base_offset;
        message = pr.error_message;
      }
    }
  }
  if (code == 0 || (Is(code, ErrorCode::DUPLICATE_SEQUENCE_NUMBER) && base >= 0)) {
    o.acked = true;
    o.dest_base = base;
    ApplyDone(p);
    return Status::OK();
  }
  const bool late = NowMs() - o.first_sent_ms > kDeliveryTimeoutMs;
  if (!late && (client::IsRetriableError(code) ||
                (p.resend && Is(code, ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER)))) {
    p.resend = true;
    return Status::OK();
  }
  return client::ErrorStatus(code,
                             "producing to " + p.topic + "/" + std::to_string(p.partition), message);
}

Status ReproducingSink::Pump(bool all) {
  const int64_t deadline = NowMs() + kDeliveryTimeoutMs;
  for (;;) {
    bool waiting = false;   // a partition has a batch it may not send yet
    bool resending = false;
    for (auto& [k, pp] : parts_) {
      Part& p = *pp;
      if (p.resend) {
        if (p.in_flight > 0) continue;  // the rest of its answers come first
        resending = true;
        p.resend = false;
        (void)cluster_->FetchMetadata(std::vector<std::string>{p.topic}, false);
        std::this_thread::sleep_for(
            std::chrono::milliseconds(cluster_->options().retry_backoff_ms));
      }
      for (auto& o : p.out) {
        if (!o->produce || o->acked || o->in_flight) continue;
        if (p.in_flight >= kMaxInFlight) {
          waiting = true;
          break;
        }
        Status st = SendOne(p, *o);
        if (!st.ok()) {
          if (NowMs() > deadline) return st;
          p.resend = true;
          break;
        }
      }
    }
    bool any = false;
    for (auto& [c, q] : sent_) any = any || !q.empty();
    if (!any) {
      bool pending = false;
      for (auto& [k, pp] : parts_) pending = pending || pp->resend;
      if (!pending) return Status::OK();
      if (NowMs() > deadline) return Status::IOError("the destination took no batch in time");
      continue;
    }
    if (!all && !waiting && !resending) return Status::OK();
    for (auto it = sent_.begin(); it != sent_.end();) {
      if (it->second.empty()) {
        it = sent_.erase(it);
        continue;
      }
      Connection* c = it->first;
      ++it;
      SILT_TRY(ReadOne(c));
      break;
    }
  }
}

Result<int64_t> ReproducingSink::ProduceSync(const std::string& topic, int32_t partition,
                                             std::string batch, int32_t records,
                                             int32_t* sequence) {
  const int64_t deadline = NowMs() + kDeliveryTimeoutMs;
  for (;;) {
    Result<Connection*> conn = QuietLeader(topic, partition);
    Status st = conn.status();
    int16_t code = 0;
    int64_t base = -1;
    std::optional<std::string> message;
    if (st.ok()) {
      protocol::ProduceRequest req;
      req.acks = -1;
      req.timeout_ms = options_.request_timeout_ms;
      protocol::ProduceRequest::TopicData td;
      td.name = topic;
      protocol::ProduceRequest::PartitionData pd;
      pd.index = partition;
      pd.records.bytes = std::string_view(batch);
      td.partition_data.push_back(pd);
      req.topic_data.push_back(std::move(td));
      protocol::ProduceResponse resp;
      st = (*conn)->Call(req, &resp);
      if (!st.ok()) {
        cluster_->Drop(*conn);
      } else {
        code = static_cast<int16_t>(ErrorCode::UNKNOWN_SERVER_ERROR);
        for (const auto& t : resp.responses) {
          for (const auto& pr : t.partition_responses) {
            if (pr.index == partition) {
              code = pr.error_code;
              base = pr.base_offset;
              message = pr.error_message;
            }
          }
        }
      }
    }
    if (st.ok() && (code == 0 || (Is(code, ErrorCode::DUPLICATE_SEQUENCE_NUMBER) && base >= 0))) {
      *sequence += records;
      return base;
    }
    // NotFound: a topic just created that the broker does not show yet.
    bool retry = st.ok() ? client::IsRetriableError(code)
                         : st.code() == Status::Code::kIOError ||
                               st.code() == Status::Code::kNotFound;
    if (!retry || NowMs() > deadline) {
      return st.ok() ? client::ErrorStatus(code, "producing to " + topic, message) : st;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(cluster_->options().retry_backoff_ms));
    (void)cluster_->FetchMetadata(std::vector<std::string>{topic}, false);
  }
}

Status ReproducingSink::ProduceInternal(
    const std::vector<std::pair<std::string, std::optional<std::string>>>& records) {
  size_t i = 0;
  while (i < records.size()) {
    format::RecordBatchBuilder::Options bo;
    bo.producer_id = producer_id_;
    bo.producer_epoch = producer_epoch_;
    bo.base_sequence = offsets_sequence_;
    format::RecordBatchBuilder b(bo);
    // Batches of about kMaxInternalBatch bytes, well below any broker's message size limit.
    for (; i < records.size() && (b.empty() || b.uncompressed_size() < kMaxInternalBatch); ++i) {
      std::optional<std::string_view> value;
      if (records[i].second) value = *records[i].second;
      b.Add(std::string_view(records[i].first), value);
    }
    int32_t n = b.record_count();
    SILT_ASSIGN_OR_RETURN(std::string batch, b.Finish());
    SILT_TRY(ProduceSync(kOffsetsTopic, 0, std::move(batch), n, &offsets_sequence_).status());
  }
  return Status::OK();
}

Status ReproducingSink::Flush() {
  SILT_TRY(Pump(true));
  SILT_TRY(broken_);
  std::vector<std::pair<std::string, std::optional<std::string>>> records;
  struct Done {
    Part* part;
    PartitionOffsetMap::Mark mark;
    std::vector<std::string> chunk_keys;
  };
  std::vector<Done> done;
  for (auto& [k, p] : parts_) {
    std::string chunk = p->map.EncodeChunk(p->stored);
    if (chunk.empty()) continue;
    int64_t from = p->stored.started ? p->stored.source_end : p->map.source_begin().value();
    Done d{p.get(), p->map.mark(), p->chunk_keys};
    d.chunk_keys.push_back(MapKey(p->topic, p->partition, from));
    records.emplace_back(d.chunk_keys.back(), std::move(chunk));
    if (d.chunk_keys.size() >= kChunksPerSnapshot) {
      // The whole map under one key, and the chunks it replaces deleted, so that compaction
      // keeps the topic small however long the copy runs.
      std::string snapshot = p->map.EncodeChunk(PartitionOffsetMap::Mark{});
      if (snapshot.size() <= kMaxInternalBatch) {
        records.emplace_back(SnapshotKey(p->topic, p->partition), std::move(snapshot));
        for (const std::string& ck : d.chunk_keys) records.emplace_back(ck, std::nullopt);
        d.chunk_keys.clear();
      }
    }
    done.push_back(std::move(d));
  }
  if (records.empty()) return Status::OK();
  SILT_TRY(ProduceInternal(records));
  for (Done& d : done) {
    d.part->stored = d.mark;
    d.part->chunk_keys = std::move(d.chunk_keys);
  }
  return Status::OK();
}

Result<std::vector<CheckpointEntry>> ReproducingSink::LoadCheckpoint(const std::string& source_id) {
  auto it = checkpoints_.find(source_id);
  if (it == checkpoints_.end()) return std::vector<CheckpointEntry>{};
  return it->second;
}

Status ReproducingSink::StoreCheckpoint(const std::string& source_id,
                                        const std::vector<CheckpointEntry>& entries) {
  std::vector<CheckpointEntry> clamped = entries;
  for (CheckpointEntry& e : clamped) {
    auto it = parts_.find({e.topic, e.partition});
    if (it == parts_.end()) continue;
    const Part& p = *it->second;
    // Never past a batch still waiting for its transaction, nor past what the stored map holds:
    // a restart reads those again and the map skips what did land.
    if (!p.held.empty() && e.source_next.value() > p.held.front().header.base_offset) {
      e.source_next = Offset(std::max(p.held.front().min_offset, p.held.front().header.base_offset));
    }
    if (p.stored.started && e.source_next.value() > p.stored.source_end) {
      e.source_next = Offset(p.stored.source_end);
    }
  }
  SILT_TRY(ProduceInternal({{CheckpointKey(source_id), EncodeCheckpoint(clamped)}}));
  checkpoints_[source_id] = std::move(clamped);
  return Status::OK();
}

Result<Offset> ReproducingSink::TranslateOffset(const std::string& topic, int32_t partition,
                                                Offset source) {
  auto it = parts_.find({topic, partition});
  if (it == parts_.end()) {
    return Status::NotFound(topic + "/" + std::to_string(partition) + " has not been copied");
  }
  Result<Offset> r = it->second->map.Translate(source);
  if (!r.ok()) return r.status().WithContext(topic + "/" + std::to_string(partition));
  return r;
}

}  // namespace

Result<std::unique_ptr<Sink>> MakeReproducingSink(const EndpointSpec& spec,
                                                  const OpenOptions& options) {
  if (spec.kind != EndpointSpec::Kind::kCluster) {
    return Status::InvalidArgument("a reproducing sink needs a cluster, not '" + spec.text + "'");
  }
  client::ClusterOptions co;
  for (const std::string& b : spec.bootstrap) {
    SILT_ASSIGN_OR_RETURN(std::vector<net::HostPort> hps, net::ParseBootstrap(b));
    co.bootstrap.insert(co.bootstrap.end(), hps.begin(), hps.end());
  }
  co.client_id = options.client_id;
  co.request_timeout_ms = options.request_timeout_ms;
  SILT_ASSIGN_OR_RETURN(std::unique_ptr<client::Cluster> cluster, client::Cluster::Connect(co));
  auto sink = std::make_unique<ReproducingSink>(std::move(cluster), options);
  SILT_TRY(sink->Open());
  return std::unique_ptr<Sink>(std::move(sink));
}

}  // namespace silt::replicate
