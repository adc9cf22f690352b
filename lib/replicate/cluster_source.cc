#include "replicate/cluster_source.h"

#include <algorithm>

#include "base/clock.h"
#include "client/admin.h"
#include "client/cluster.h"
#include "format/batch_header.h"
#include "format/layout.h"
#include "protocol/errors.h"
#include "protocol/messages.h"

namespace silt::replicate {
namespace {

using protocol::ErrorCode;

bool Is(int16_t code, ErrorCode c) { return code == static_cast<int16_t>(c); }

std::string Where(const std::string& topic, int32_t partition) {
  return topic + "/" + std::to_string(partition);
}

class ClusterSource final : public Source {
 public:
  explicit ClusterSource(std::unique_ptr<client::Cluster> cluster)
      : cluster_(std::move(cluster)) {}

  Result<std::vector<TopicDesc>> ListTopics() override {
    SILT_ASSIGN_OR_RETURN(auto meta, cluster_->FetchMetadata(std::nullopt, false));
    std::vector<TopicDesc> out;
    for (const auto& t : meta.topics) {
      if (t.is_internal || t.name.rfind("__", 0) == 0 || t.error_code != 0) continue;
      TopicDesc d;
      d.name = t.name;
      d.partitions = static_cast<int32_t>(t.partitions.size());
      auto configs = client::DescribeTopicConfigs(cluster_.get(), t.name);
      if (configs.ok()) {
        for (const auto& c : *configs)
          if (!c.is_default && !c.read_only && !c.sensitive && c.value) d.configs[c.name] = *c.value;
      }
      out.push_back(std::move(d));
    }
    std::sort(out.begin(), out.end(),
              [](const TopicDesc& a, const TopicDesc& b) { return a.name < b.name; });
    return out;
  }

  Result<Bounds> GetBounds(const std::string& topic, int32_t partition) override {
    SILT_ASSIGN_OR_RETURN(auto first, client::ListOffsets(cluster_.get(), topic, {{partition, -2}}));
    SILT_ASSIGN_OR_RETURN(auto last, client::ListOffsets(cluster_.get(), topic, {{partition, -1}}));
    Bounds b{Offset(first[partition]), Offset(last[partition])};
    if (b.end < b.log_start) b.end = b.log_start;
    return b;
  }

  Result<Chunk> Read(const std::string& topic, int32_t partition, Offset from, int64_t max_bytes,
                     int max_wait_ms) override {
    const std::string where = Where(topic, partition);
    const int64_t deadline = MonotonicMs() + cluster_->options().retry_timeout_ms;
    for (;;) {
      const client::TopicMeta* meta = cluster_->Cached(topic);
      if (meta == nullptr || refresh_) {
        SILT_ASSIGN_OR_RETURN(auto m, cluster_->Topic(topic, false));
        (void)m;
        meta = cluster_->Cached(topic);
        refresh_ = false;
      }
      auto pm = std::find_if(meta->partitions.begin(), meta->partitions.end(),
                             [&](const client::PartitionMeta& m) { return m.partition == partition; });
      if (pm == meta->partitions.end()) {
        refresh_ = true;
        if (MonotonicMs() > deadline)
          return Status::NotFound("topic '" + topic + "' has no partition " +
                                  std::to_string(partition));
        continue;
      }
      auto conn = cluster_->Node(pm->leader);
      Status st = conn.status();
      protocol::FetchResponse resp;
      std::string body;
      if (st.ok()) {
        auto version = (*conn)->RequireVersion(protocol::ApiKey::kFetch);
        if (!version.ok()) return version.status();
        protocol::FetchRequest req;
        req.max_wait_ms = max_wait_ms;
        req.min_bytes = max_wait_ms > 0 ? 1 : 0;
        req.max_bytes = static_cast<int32_t>(std::min<int64_t>(max_bytes, INT32_MAX));
        req.isolation_level = 0;
        protocol::FetchRequest::Partition fp;
        fp.partition = partition;
        fp.fetch_offset = from.value();
        fp.partition_max_bytes = req.max_bytes;
        req.topics.emplace_back().topic = topic;
        req.topics.back().partitions = {fp};
        auto id = (*conn)->Send(req, *version);
        st = id.status();
        if (st.ok()) {
          int32_t got = 0;
          st = (*conn)->Receive(&got, &body, (*conn)->timeout_ms() + max_wait_ms);
          if (st.ok()) {
            ByteReader r(body);
            st = resp.Decode(r, *version);
          }
        }
        if (!st.ok()) cluster_->Drop(*conn);
      }
      if (!st.ok()) {
        refresh_ = true;
        if (MonotonicMs() > deadline) return st.WithContext("fetching " + where);
        SleepMs(cluster_->options().retry_backoff_ms);
        continue;
      }
      const protocol::FetchResponse::Partition* part = nullptr;
      for (const auto& t : resp.responses)
        for (const auto& p : t.partitions)
          if (p.partition_index == partition) part = &p;
      int16_t code = part ? part->error_code : resp.error_code;
      if (part == nullptr && code == 0) code = static_cast<int16_t>(ErrorCode::UNKNOWN_SERVER_ERROR);
      if (Is(code, ErrorCode::OFFSET_OUT_OF_RANGE)) {
        return Status::OutOfRange(where + ": offset " + std::to_string(from.value()) +
                                  " is out of the source's range");
      }
      if (code != 0) {
        if (client::IsRetriableError(code) && MonotonicMs() <= deadline) {
          refresh_ = true;
          SleepMs(cluster_->options().retry_backoff_ms);
          continue;
        }
        return client::ErrorStatus(code, "fetching " + where);
      }
      Chunk c;
      c.bounds.end = Offset(part->high_watermark);
      c.bounds.log_start = Offset(part->log_start_offset >= 0 ? part->log_start_offset : 0);
      c.next_offset = from;
      std::string_view data = part->records.bytes ? *part->records.bytes : std::string_view();
      size_t keep = 0;
      while (data.size() - keep >= static_cast<size_t>(format::kBatchHeaderSize)) {
        std::string_view rest = data.substr(keep);
        format::BatchHeader h = format::DecodeBatchHeader(rest);
        if (h.magic != format::kMagicV2)
          return Status::Unsupported(where + ": the batch at offset " +
                                     std::to_string(h.base_offset) +
                                     " is an old message format (magic " +
                                     std::to_string(h.magic) +
                                     "), which cannot be copied byte for byte");
        if (h.size() < format::kBatchHeaderSize ||
            static_cast<int64_t>(rest.size()) < h.size())
          break;
        if (h.base() >= c.bounds.end) break;
        keep += static_cast<size_t>(h.size());
        c.next_offset = h.next();
      }
      c.batches.assign(data.data(), keep);
      return c;
    }
  }

  Result<Offset> OffsetForTime(const std::string& topic, int32_t partition,
                               int64_t ts_ms) override {
    SILT_ASSIGN_OR_RETURN(auto at, client::ListOffsets(cluster_.get(), topic, {{partition, ts_ms}}));
    if (at[partition] >= 0) return Offset(at[partition]);
    SILT_ASSIGN_OR_RETURN(Bounds b, GetBounds(topic, partition));
    return b.end;
  }

  Result<std::vector<GroupOffsets>> ListGroupOffsets() override {
    SILT_ASSIGN_OR_RETURN(auto groups, client::ListGroups(cluster_.get()));
    std::vector<GroupOffsets> out;
    for (const auto& g : groups) {
      if (!g.protocol_type.empty() && g.protocol_type != "consumer") continue;
      SILT_ASSIGN_OR_RETURN(auto committed, client::FetchCommitted(cluster_.get(), g.group_id));
      GroupOffsets go;
      go.group = g.group_id;
      for (const auto& [topic, parts] : committed)
        for (const auto& [p, off] : parts) go.offsets.push_back({topic, p, Offset(off), ""});
      if (!go.offsets.empty()) out.push_back(std::move(go));
    }
    return out;
  }

 private:
  static void SleepMs(int ms) {
    struct timespec ts {ms / 1000, (ms % 1000) * 1000000L};
    ::nanosleep(&ts, nullptr);
  }

  std::unique_ptr<client::Cluster> cluster_;
  bool refresh_ = false;
};

}  // namespace

Result<std::unique_ptr<Source>> OpenClusterSource(const EndpointSpec& spec,
                                                  const OpenOptions& options) {
  client::ClusterOptions co;
  for (const auto& hp : spec.bootstrap) {
    SILT_ASSIGN_OR_RETURN(auto list, client::ParseBootstrap(hp));
    co.bootstrap.insert(co.bootstrap.end(), list.begin(), list.end());
  }
  co.client_id = options.client_id;
  co.request_timeout_ms = options.request_timeout_ms;
  auto cluster = client::Cluster::Connect(co);
  if (!cluster.ok()) return cluster.status().WithContext("source " + spec.text);
  return std::unique_ptr<Source>(new ClusterSource(std::move(cluster).value()));
}

}  // namespace silt::replicate
