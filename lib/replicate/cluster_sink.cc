// ClusterSink: the offset-preserving Sink into a silt cluster. See cluster_sink.h.
#include "replicate/cluster_sink.h"

#include <algorithm>
#include <chrono>
#include <sstream>
#include <thread>

#include "client/admin.h"
#include "client/cluster.h"
#include "client/mirror_append.h"
#include "format/batch_header.h"
#include "format/record_batch.h"
#include "protocol/errors.h"
#include "protocol/messages.h"
#include "replicate/configs.h"
#include "replicate/reproducing_sink.h"
#include "storage/log_config.h"

namespace silt::replicate {

namespace {

using protocol::ErrorCode;

constexpr const char* kCheckpointHeader = "silt-replicate-checkpoint 1";

// What a Fetch of one partition brought back.
struct Fetched {
  std::string batches;  // whole batches only (a trailing partial one is cut)
  int64_t high_watermark = -1;
  int64_t log_start = -1;
};

// Whole batches of `records` (a fetch may end inside one).
std::string WholeBatches(std::string_view records) {
  size_t whole = 0;
  while (records.size() - whole >= static_cast<size_t>(format::kBatchHeaderSize)) {
    format::BatchHeader h = format::DecodeBatchHeader(records.substr(whole));
    if (h.size() < format::kBatchHeaderSize ||
        static_cast<size_t>(h.size()) > records.size() - whole)
      break;
    whole += static_cast<size_t>(h.size());
  }
  return std::string(records.substr(0, whole));
}

class ClusterSink : public Sink {
 public:
  ClusterSink(std::unique_ptr<client::Cluster> cluster, OpenOptions options)
      : cluster_(std::move(cluster)), options_(std::move(options)) {}

  Placement placement() const override { return Placement::kPreservesOffsets; }

  Result<std::vector<TopicDesc>> ListTopics() override {
    SILT_ASSIGN_OR_RETURN(client::ClusterDescription d, client::DescribeCluster(c(), std::nullopt));
    std::vector<TopicDesc> out;
    for (const client::TopicInfo& t : d.topics) {
      if (t.internal || t.name.rfind("__", 0) == 0 || t.error_code != 0) continue;
      TopicDesc td;
      td.name = t.name;
      td.partitions = static_cast<int32_t>(t.partitions.size());
      SILT_ASSIGN_OR_RETURN(td.configs, Overrides(t.name));
      out.push_back(std::move(td));
    }
    std::sort(out.begin(), out.end(),
              [](const TopicDesc& a, const TopicDesc& b) { return a.name < b.name; });
    return out;
  }

  Status EnsureTopic(const TopicDesc& topic, bool copy_configs) override {
    std::map<std::string, std::string> configs;
    if (copy_configs) configs = ConfigsToCopy(topic.configs);
    auto meta = c()->Topic(topic.name, false);
    if (meta.status().IsNotFound()) {
      client::TopicSpec spec;
      spec.name = topic.name;
      spec.partitions = topic.partitions;
      spec.configs = configs;
      spec.configs[storage::LogConfig::kMirrorKey] = "true";
      Status st = client::CreateTopic(c(), spec);
      // Another replicator (or a retry after a lost answer) may have just created it.
      if (!st.ok() && st.code() != Status::Code::kAlreadyExists) return st;
      if (st.ok()) return Status::OK();
      meta = c()->Topic(topic.name, false);
    }
    if (!meta.ok()) return meta.status();
    SILT_ASSIGN_OR_RETURN(auto overrides, Overrides(topic.name));
    auto mirror = overrides.find(storage::LogConfig::kMirrorKey);
    if (mirror == overrides.end() || mirror->second != "true") {
      return Status::InvalidArgument("destination topic '" + topic.name +
                                     "' exists and is not a mirror topic (silt.mirror=true): "
                                     "its offsets are the destination's own");
    }
    const int32_t have = static_cast<int32_t>(meta->partitions.size());
    if (have < topic.partitions) {
      SILT_TRY(client::CreatePartitions(c(), topic.name, topic.partitions));
    }
    if (copy_configs) {
      std::map<std::string, std::string> set;
      for (const auto& [k, v] : configs) {
        auto it = overrides.find(k);
        if (it == overrides.end() || it->second != v) set[k] = v;
      }
      if (!set.empty()) SILT_TRY(client::AlterTopicConfigs(c(), topic.name, set, {}));
    }
    return Status::OK();
  }

  Result<Offset> LogEnd(const std::string& topic, int32_t partition) override {
    // An empty SiltAppendBatches answers the leader's log end (ListOffsets would give the high
    // watermark, which may lag it).
    SILT_ASSIGN_OR_RETURN(client::MirrorAppendResult r,
                          client::MirrorAppend(c(), topic, partition, 0, {}, 0));
    if (r.error_code != 0) {
      return client::ErrorStatus(
          r.error_code, "log end of " + topic + "-" + std::to_string(partition), r.error_message);
    }
    return Offset(r.log_end_offset);
  }

  Result<Offset> LogStart(const std::string& topic, int32_t partition) override {
    SILT_ASSIGN_OR_RETURN(auto first, client::ListOffsets(c(), topic, {{partition, -2}}));
    return Offset(first[partition]);
  }

  Result<std::string> ReadBack(const std::string& topic, int32_t partition, Offset from,
                               int64_t max_bytes) override {
    SILT_ASSIGN_OR_RETURN(Fetched f, Fetch(topic, partition, from.value(), max_bytes));
    return std::move(f.batches);
  }

  Result<AppendOutcome> Append(const std::string& topic, int32_t partition, Offset expected,
                               std::string_view batches) override {
    SILT_ASSIGN_OR_RETURN(client::MirrorAppendResult r,
                          client::MirrorAppend(c(), topic, partition, expected.value(), batches,
                                               options_.request_timeout_ms));
    AppendOutcome out;
    out.log_end = Offset(r.log_end_offset);
    if (r.error_code == 0) {
      out.appended = true;
      return out;
    }
    if (r.error_code == protocol::ToWire(ErrorCode::SILT_OFFSET_MISMATCH)) {
      // An earlier attempt whose answer was lost may have appended these very batches.
      if (r.retried_after_unknown) {
        SILT_ASSIGN_OR_RETURN(bool ours,
                              AlreadyThere(topic, partition, expected, batches, r.log_end_offset));
        out.appended = ours;
      }
      return out;
    }
    return client::ErrorStatus(
        r.error_code, "appending to " + topic + "-" + std::to_string(partition), r.error_message);
  }

  // Every Append was answered after the high watermark passed it.
  Status Flush() override { return Status::OK(); }

  Result<std::vector<CheckpointEntry>> LoadCheckpoint(const std::string& source_id) override {
    auto meta = c()->Topic(kCheckpointTopic, false);
    if (meta.status().IsNotFound()) return std::vector<CheckpointEntry>{};
    if (!meta.ok()) return meta.status();
    std::optional<std::string> value;
    int64_t offset = 0;
    for (;;) {
      SILT_ASSIGN_OR_RETURN(Fetched f, Fetch(kCheckpointTopic, 0, offset, 1 << 20));
      if (offset >= f.high_watermark) break;
      if (f.batches.empty()) {
        if (offset < f.log_start) {
          offset = f.log_start;
          continue;
        }
        return Status::IOError(std::string("reading ") + kCheckpointTopic +
                               ": no progress at offset " + std::to_string(offset));
      }
      std::string_view rest = f.batches;
      while (!rest.empty()) {
        SILT_ASSIGN_OR_RETURN(format::RecordBatchView v, format::RecordBatchView::Parse(rest));
        rest.remove_prefix(v.bytes().size());
        offset = std::max(offset, v.header().next().value());
        if (v.header().control()) continue;
        Status st = v.ForEachRecord([&](const auto& rec) {
          if (!rec.key_null && rec.key == source_id) {
            if (!rec.value_null) {
              value = std::string(rec.value);
            } else {
              value.reset();  // a tombstone
            }
          }
          return true;
        });
        SILT_TRY(st);
      }
    }
    if (!value) return std::vector<CheckpointEntry>{};
    return ParseCheckpoint(*value);
  }

  Status StoreCheckpoint(const std::string& source_id,
                         const std::vector<CheckpointEntry>& entries) override {
    SILT_TRY(EnsureCheckpointTopic());
    std::string value = std::string(kCheckpointHeader) + "\n";
    for (const CheckpointEntry& e : entries) {
      value += e.topic + " " + std::to_string(e.partition) + " " +
               std::to_string(e.source_next.value()) + "\n";
    }
    format::RecordBatchBuilder::Options bo;
    format::RecordBatchBuilder b(bo);
    b.Add(std::string_view(source_id), std::string_view(value));
    SILT_ASSIGN_OR_RETURN(std::string batch, b.Finish());
    return ProduceOne(kCheckpointTopic, 0, batch);
  }

  Result<Offset> TranslateOffset(const std::string& topic, int32_t partition,
                                 Offset source) override {
    SILT_ASSIGN_OR_RETURN(Offset end, LogEnd(topic, partition));
    if (source > end) {
      return Status::NotFound("offset " + std::to_string(source.value()) + " of " + topic + "-" +
                              std::to_string(partition) + " is not copied yet");
    }
    return source;  // the same offsets on both sides
  }

  Result<bool> GroupActive(const std::string& group) override {
    SILT_ASSIGN_OR_RETURN(client::GroupDescription d, client::DescribeGroup(c(), group));
    return !d.members.empty() || (d.state != "Empty" && d.state != "Dead");
  }

  Status CommitGroupOffsets(const GroupOffsets& offsets) override {
    std::map<std::string, std::map<int32_t, int64_t>> m;
    for (const GroupOffsets::Entry& e : offsets.offsets) m[e.topic][e.partition] = e.offset.value();
    return client::CommitOffsetsStandalone(c(), offsets.group, m);
  }

  Status Promote(const std::string& topic) override {
    return client::AlterTopicConfigs(c(), topic, {}, {storage::LogConfig::kMirrorKey});
  }

 private:
  client::Cluster* c() { return cluster_.get(); }

  // A topic's overrides (DescribeConfigs entries that are not defaults).
  Result<std::map<std::string, std::string>> Overrides(const std::string& topic) {
    SILT_ASSIGN_OR_RETURN(auto entries, client::DescribeTopicConfigs(c(), topic));
    std::map<std::string, std::string> out;
    for (const client::ConfigEntry& e : entries) {
      if (!e.is_default && e.value) out[e.name] = *e.value;
    }
    return out;
  }

  // True when the destination holds exactly `batches` from `expected` on and ends where they
  // end (an earlier attempt appended them): same offsets, lengths and CRCs.
  Result<bool> AlreadyThere(const std::string& topic, int32_t partition, Offset expected,
                            std::string_view batches, int64_t log_end) {
    std::vector<format::BatchHeader> ours;
    for (size_t at = 0; at < batches.size();) {
      format::BatchHeader h = format::DecodeBatchHeader(batches.substr(at));
      if (h.size() < format::kBatchHeaderSize) return false;
      ours.push_back(h);
      at += static_cast<size_t>(h.size());
    }
    if (ours.empty() || ours.back().next().value() != log_end) return false;
    SILT_ASSIGN_OR_RETURN(
        Fetched f, Fetch(topic, partition, expected.value(), static_cast<int64_t>(batches.size())));
    std::string_view theirs = f.batches;
    for (const format::BatchHeader& h : ours) {
      if (theirs.size() < static_cast<size_t>(format::kBatchHeaderSize)) return false;
      format::BatchHeader t = format::DecodeBatchHeader(theirs);
      if (t.base_offset != h.base_offset || t.size() != h.size() || t.crc != h.crc) return false;
      theirs.remove_prefix(static_cast<size_t>(t.size()));
    }
    return true;
  }

  // One Fetch at the partition leader (retried on leader moves), bounded by the high watermark.
  Result<Fetched> Fetch(const std::string& topic, int32_t partition, int64_t offset,
                        int64_t max_bytes) {
    Status last;
    for (int attempt = 0; attempt < 20; ++attempt) {
      // The cached metadata on the first attempt, when it knows the partition.
      const client::TopicMeta* cached = c()->Cached(topic);
      const bool use_cache =
          attempt == 0 && cached != nullptr &&
          std::any_of(cached->partitions.begin(), cached->partitions.end(),
                      [&](const client::PartitionMeta& m) { return m.partition == partition; });
      auto meta = use_cache ? Result<client::TopicMeta>(*cached) : c()->Topic(topic, false);
      if (!meta.ok()) return meta.status();
      auto it =
          std::find_if(meta->partitions.begin(), meta->partitions.end(),
                       [&](const client::PartitionMeta& m) { return m.partition == partition; });
      if (it == meta->partitions.end()) {
        return Status::NotFound("topic '" + topic + "' has no partition " +
                                std::to_string(partition));
      }
      auto conn = c()->Node(it->leader);
      if (!conn.ok()) {
        last = conn.status();
        Backoff(attempt);
        continue;
      }
      SILT_ASSIGN_OR_RETURN(int16_t version, (*conn)->RequireVersion(protocol::ApiKey::kFetch));
      protocol::FetchRequest req;
      req.max_wait_ms = 0;
      req.min_bytes = 0;
      req.max_bytes =
          static_cast<int32_t>(std::min<int64_t>(std::max<int64_t>(max_bytes, 1), INT32_MAX));
      protocol::FetchRequest::Partition p;
      p.partition = partition;
      p.fetch_offset = offset;
      p.partition_max_bytes = req.max_bytes;
      req.topics.emplace_back().topic = topic;
      req.topics.back().partitions = {p};
      // The response's record set is a view into `body`: it must outlive `resp` (Call() would
      // decode into a buffer of its own that is gone when it returns).
      std::string body;
      protocol::FetchResponse resp;
      Status st = FetchInto(*conn, req, version, &body, &resp);
      if (!st.ok()) {
        if (st.code() != Status::Code::kIOError) return st;
        c()->Drop(*conn);
        last = st;
        Backoff(attempt);
        continue;
      }
      if (resp.error_code != 0) return client::ErrorStatus(resp.error_code, "Fetch");
      for (const auto& t : resp.responses) {
        for (const auto& rp : t.partitions) {
          if (rp.partition_index != partition) continue;
          if (rp.error_code != 0) {
            if (client::IsRetriableError(rp.error_code)) {
              last = client::ErrorStatus(rp.error_code, "Fetch of " + topic);
              goto retry;
            }
            return client::ErrorStatus(rp.error_code,
                                       "Fetch of " + topic + "-" + std::to_string(partition));
          }
          Fetched f;
          f.high_watermark = rp.high_watermark;
          f.log_start = rp.log_start_offset;
          f.batches = WholeBatches(rp.records.bytes.value_or(std::string_view()));
          return f;
        }
      }
      return Status::IOError("Fetch: no answer for " + topic + "-" + std::to_string(partition));
    retry:
      Backoff(attempt);
    }
    return last;
  }

  static Status FetchInto(net::Connection* conn, const protocol::FetchRequest& req, int16_t version,
                          std::string* body, protocol::FetchResponse* resp) {
    SILT_ASSIGN_OR_RETURN(int32_t id, conn->Send(req, version));
    int32_t got = -1;
    while (got != id) SILT_TRY(conn->Receive(&got, body, conn->timeout_ms()));
    ByteReader r(*body);
    return resp->Decode(r, version);
  }

  void Backoff(int attempt) {
    int ms = std::min(cluster_->options().retry_backoff_ms << std::min(attempt, 4), 1000);
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  }

  Status EnsureCheckpointTopic() {
    if (checkpoint_topic_ready_) return Status::OK();
    auto meta = c()->Topic(kCheckpointTopic, false);
    if (meta.status().IsNotFound()) {
      client::TopicSpec spec;
      spec.name = kCheckpointTopic;
      spec.partitions = 1;
      spec.configs["cleanup.policy"] = "compact";
      Status st = client::CreateTopic(c(), spec);
      if (!st.ok() && st.code() != Status::Code::kAlreadyExists) return st;
    } else if (!meta.ok()) {
      return meta.status();
    }
    checkpoint_topic_ready_ = true;
    return Status::OK();
  }

  // Produce (acks=all) of one batch to a partition leader, retried on leader moves.
  Status ProduceOne(const std::string& topic, int32_t partition, const std::string& batch) {
    Status last;
    for (int attempt = 0; attempt < 20; ++attempt) {
      auto meta = c()->Topic(topic, false);
      if (!meta.ok()) return meta.status();
      auto it =
          std::find_if(meta->partitions.begin(), meta->partitions.end(),
                       [&](const client::PartitionMeta& m) { return m.partition == partition; });
      if (it == meta->partitions.end()) return Status::NotFound(topic + " has no partition 0");
      auto conn = c()->Node(it->leader);
      if (!conn.ok()) {
        last = conn.status();
        Backoff(attempt);
        continue;
      }
      SILT_ASSIGN_OR_RETURN(int16_t version, (*conn)->RequireVersion(protocol::ApiKey::kProduce));
      protocol::ProduceRequest req;
      req.acks = -1;
      req.timeout_ms = options_.request_timeout_ms;
      protocol::ProduceRequest::PartitionData pd;
      pd.index = partition;
      pd.records.bytes = batch;
      req.topic_data.push_back({topic, {pd}});
      protocol::ProduceResponse resp;
      Status st = (*conn)->Call(req, &resp, version);
      if (!st.ok()) {
        if (st.code() != Status::Code::kIOError) return st;
        c()->Drop(*conn);
        last = st;
        Backoff(attempt);
        continue;
      }
      int16_t code = -1;
      std::optional<std::string> message;
      for (const auto& t : resp.responses) {
        for (const auto& p : t.partition_responses) {
          code = p.error_code;
          message = p.error_message;
        }
      }
      if (code == 0) return Status::OK();
      last = client::ErrorStatus(code, "writing the checkpoint to " + topic, message);
      if (code < 0 || !client::IsRetriableError(code)) return last;
      Backoff(attempt);
    }
    return last;
  }

  static Result<std::vector<CheckpointEntry>> ParseCheckpoint(const std::string& value) {
    std::istringstream in(value);
    std::string line;
    if (!std::getline(in, line) || line != kCheckpointHeader) {
      return Status::Corruption(std::string("checkpoint record in ") + kCheckpointTopic +
                                " does not start with '" + kCheckpointHeader + "'");
    }
    std::vector<CheckpointEntry> out;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      std::istringstream ls(line);
      CheckpointEntry e;
      int64_t next = -1;
      if (!(ls >> e.topic >> e.partition >> next) || next < 0) {
        return Status::Corruption(std::string("bad checkpoint line in ") + kCheckpointTopic + ": " +
                                  line);
      }
      e.source_next = Offset(next);
      out.push_back(std::move(e));
    }
    return out;
  }

  std::unique_ptr<client::Cluster> cluster_;
  OpenOptions options_;
  bool checkpoint_topic_ready_ = false;
};

}  // namespace

Result<std::unique_ptr<Sink>> MakeClusterSink(const EndpointSpec& spec,
                                              const OpenOptions& options) {
  if (spec.kind != EndpointSpec::Kind::kCluster) {
    return Status::InvalidArgument("'" + spec.text + "' is not a cluster (kafka://HOST:PORT)");
  }
  client::ClusterOptions co;
  for (const std::string& b : spec.bootstrap) {
    SILT_ASSIGN_OR_RETURN(auto hps, client::ParseBootstrap(b));
    co.bootstrap.insert(co.bootstrap.end(), hps.begin(), hps.end());
  }
  co.client_id = options.client_id;
  co.request_timeout_ms = options.request_timeout_ms;
  SILT_ASSIGN_OR_RETURN(std::unique_ptr<client::Cluster> cluster, client::Cluster::Connect(co));
  SILT_ASSIGN_OR_RETURN(bool offset_preserving, client::SupportsMirrorAppend(cluster.get()));
  if (options.force_reproduce || !offset_preserving) {
    cluster.reset();
    return MakeReproducingSink(spec, options);
  }
  return std::unique_ptr<Sink>(new ClusterSink(std::move(cluster), options));
}

}  // namespace silt::replicate
