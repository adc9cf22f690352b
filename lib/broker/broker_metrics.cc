// The broker's metrics (see broker_metrics.h).
#include "broker/broker_metrics.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "base/clock.h"
#include "broker/dispatch.h"
#include "broker/group_coordinator.h"
#include "broker/metadata_store.h"
#include "broker/partition.h"
#include "broker/partition_manager.h"
#include "protocol/api_table.h"
#include "protocol/errors.h"

namespace silt::broker {

RequestMetrics& RequestMetrics::Get() {
  static RequestMetrics* m = new RequestMetrics;  // never destroyed: io threads may outlive main
  return *m;
}

RequestMetrics::RequestMetrics() {
  metrics::Registry& r = metrics::Default();
  for (const ApiRow& row : ApiRows()) {
    if (row.api_key < 0 || row.api_key >= kMaxApiKey) continue;
    for (int v = row.min_version; v <= row.max_version && v < kMaxVersion; ++v)
      requests_[row.api_key][v] =
          &r.GetCounter("silt_requests_total", "Requests received, by API and version",
                        {{"api", row.name}, {"version", std::to_string(v)}});
    latency_[row.api_key] = &r.GetHistogram(
        "silt_request_duration_seconds",
        "Time from a request's arrival to its response being handed to the connection",
        metrics::LatencyBuckets(), {{"api", row.name}});
  }
  unknown_requests_ = &r.GetCounter("silt_requests_total", "Requests received, by API and version",
                                    {{"api", "other"}, {"version", "other"}});
  bytes_in_ = &r.GetCounter("silt_network_received_bytes_total",
                            "Request bytes read from clients (size prefixes included)");
  bytes_out_ = &r.GetCounter("silt_network_sent_bytes_total",
                             "Response body bytes sent to clients (record data included)");
  produced_records_ =
      &r.GetCounter("silt_produce_records_total", "Records appended by Produce requests");
  connections_ = &r.GetGauge("silt_connections",
                             "Connections open now (clients', and peers' replica fetches)");
  connections_total_ =
      &r.GetCounter("silt_connections_accepted_total", "Client connections accepted");
  const char* fetch_help =
      "Fetches waiting now for data (a consumer's long poll, or a follower's fetch at the log end)";
  delayed_consumer_fetches_ = &r.GetGauge("silt_delayed_fetches", fetch_help, {{"kind", "consumer"}});
  delayed_follower_fetches_ = &r.GetGauge("silt_delayed_fetches", fetch_help, {{"kind", "follower"}});
  // Series that other layers update from their first event on, present (at 0) from the first
  // scrape; the help texts are theirs.
  (void)r.GetCounter("silt_isr_shrinks_total", "ISR shrinks of partitions this node leads");
  (void)r.GetCounter("silt_isr_expands_total", "ISR expansions of partitions this node leads");
  (void)r.GetCounter("silt_log_segment_rolls_total",
                     "New active segments started after a full or old one");
  (void)r.GetHistogram("silt_log_flush_duration_seconds",
                       "Time of each log flush: the fsyncs of segments, indexes and the directory",
                       metrics::LatencyBuckets());
  delayed_produces_ = &r.GetGauge("silt_delayed_produces",
                                  "acks=all produces waiting now for the high watermark");
  fetch_sessions_ =
      &r.GetGauge("silt_fetch_sessions", "Incremental fetch sessions (KIP-227) held now");
  fetch_session_evictions_ =
      &r.GetCounter("silt_fetch_session_evictions_total",
                    "Incremental fetch sessions evicted to make room for new ones");
}

void RequestMetrics::OnRequest(int16_t api_key, int16_t version, int64_t bytes) {
  bytes_in_->Inc(static_cast<uint64_t>(bytes));
  metrics::Counter* c = nullptr;
  if (api_key >= 0 && api_key < kMaxApiKey && version >= 0 && version < kMaxVersion)
    c = requests_[api_key][version];
  (c ? c : unknown_requests_)->Inc();
}

void RequestMetrics::OnResponse(int16_t api_key, double seconds, int64_t bytes) {
  if (bytes > 0) bytes_out_->Inc(static_cast<uint64_t>(bytes));
  if (api_key >= 0 && api_key < kMaxApiKey && latency_[api_key])
    latency_[api_key]->Observe(seconds);
}

void RequestMetrics::OnError(int16_t api_key, int16_t code) {
  if (code == 0) return;
  const bool known_api = api_key >= 0 && api_key < kMaxApiKey;
  const bool known_code = code >= -1 && code < kMaxErrorCode;
  std::atomic<metrics::Counter*>* slot =
      known_api && known_code ? &errors_[api_key][code + 1] : nullptr;
  metrics::Counter* c = slot ? slot->load(std::memory_order_acquire) : nullptr;
  if (c == nullptr) {
    // The registry returns the same series to every thread that races here.
    c = &metrics::Default().GetCounter(
        "silt_request_errors_total",
        "Kafka error codes in responses (top level and per partition), by API and error",
        {{"api", known_api ? protocol::ApiName(api_key) : "other"},
         {"error", known_code ? protocol::ErrorName(code) : "other"}});
    if (slot) slot->store(c, std::memory_order_release);
  }
  c->Inc();
}

namespace {

// What the scrape reads of one open partition, copied so that no lock is held while the
// samples are built.
struct PartitionSnapshot {
  std::string topic;
  int32_t partition = 0;
  int64_t log_start = 0, log_end = 0, high_watermark = 0, size = 0;
  bool leader = false;
  size_t isr = 0;
  int32_t min_isr = 1;
  std::vector<Partition::FollowerState> followers;
};

}  // namespace

int AddBrokerCollector(PartitionManager* partitions, MetadataStore* metadata,
                       GroupCoordinator* groups, NodeId local) {
  return metrics::Default().AddCollector([partitions, metadata, groups,
                                          local](std::vector<metrics::Sample>* out) {
    auto gauge = [out](const char* name, const char* help, double v, metrics::Labels l = {}) {
      out->push_back({name, help, false, std::move(l), v});
    };
    const int64_t now = MonotonicMs();

    // ---- open partitions: one short lock of each at a time, never one across them all ----
    std::vector<PartitionSnapshot> snaps;
    for (const auto& p : partitions->Opened()) {
      if (!p->alive()) continue;
      PartitionSnapshot s;
      s.topic = p->topic();
      s.partition = p->partition().value();
      s.log_start = p->log_start_offset().value();
      s.log_end = p->log_end_offset().value();
      s.high_watermark = p->high_watermark().value();
      s.size = p->size_bytes();
      s.leader = p->is_leader();
      if (s.leader) {
        s.isr = p->isr().size();
        s.min_isr = p->EffectiveMinIsr(p->config());
        s.followers = p->Followers();
      }
      snaps.push_back(std::move(s));
    }
    std::sort(snaps.begin(), snaps.end(), [](const auto& a, const auto& b) {
      return std::tie(a.topic, a.partition) < std::tie(b.topic, b.partition);
    });
    gauge("silt_partitions_open", "Partitions this node has open (leads or hosts)",
          static_cast<double>(snaps.size()));
    int64_t under_min_isr = 0;
    size_t omitted = 0;
    for (size_t i = 0; i < snaps.size(); ++i) {
      const PartitionSnapshot& s = snaps[i];
      if (s.leader && static_cast<int32_t>(s.isr) < s.min_isr) ++under_min_isr;
      if (i >= kMaxPartitionSeries) {
        ++omitted;
        continue;
      }
      metrics::Labels l = {{"topic", s.topic}, {"partition", std::to_string(s.partition)}};
      gauge("silt_partition_log_start_offset", "First offset of each open partition",
            static_cast<double>(s.log_start), l);
      gauge("silt_partition_log_end_offset", "Next offset to be written, per open partition",
            static_cast<double>(s.log_end), l);
      gauge("silt_partition_high_watermark",
            "Offset below which every record is on every in-sync replica, per open partition",
            static_cast<double>(s.high_watermark), l);
      gauge("silt_partition_size_bytes", "Bytes in the segment files of each open partition",
            static_cast<double>(s.size), l);
      for (const Partition::FollowerState& f : s.followers) {
        metrics::Labels fl = l;
        fl["follower"] = std::to_string(f.id.value());
        // A follower that has not fetched since this node took the lead has an unknown log
        // end: counted as lagging by everything above the log start.
        const int64_t their_end = f.log_end.value() < 0 ? s.log_start : f.log_end.value();
        gauge("silt_follower_lag_records",
              "Leader side: records the follower's log end is behind the leader's, per follower",
              static_cast<double>(std::max<int64_t>(0, s.log_end - their_end)), fl);
        gauge("silt_follower_lag_ms",
              "Leader side: milliseconds since the follower last had everything the leader had "
              "(-1: not since this node became leader)",
              f.last_caught_up_ms > 0 ? static_cast<double>(std::max<int64_t>(0, now - f.last_caught_up_ms))
                                      : -1.0,
              fl);
      }
    }
    gauge("silt_under_min_isr_partitions",
          "Partitions this node leads whose ISR is smaller than their effective min.insync.replicas",
          static_cast<double>(under_min_isr));

    // ---- groups: committed offset against the high watermark, for partitions led here ----
    if (groups != nullptr) {
      std::map<std::pair<std::string, int32_t>, int64_t> hw;
      for (const PartitionSnapshot& s : snaps)
        if (s.leader) hw[{s.topic, s.partition}] = s.high_watermark;
      std::map<std::string, int64_t> by_state = {{"Empty", 0},
                                                 {"PreparingRebalance", 0},
                                                 {"CompletingRebalance", 0},
                                                 {"Stable", 0}};
      size_t lag_series = 0;
      for (const GroupCoordinator::GroupSummary& g : groups->Summaries()) {
        ++by_state[g.state];
        gauge("silt_group_members", "Members of each consumer group this node coordinates",
              static_cast<double>(g.members), {{"group", g.group}});
        for (const auto& c : g.offsets) {
          auto it = hw.find({c.topic, c.partition});
          if (it == hw.end() || c.offset < 0) continue;
          if (lag_series >= kMaxPartitionSeries) {
            ++omitted;
            continue;
          }
          ++lag_series;
          gauge("silt_group_lag",
                "Records between a group's committed offset and the high watermark, per "
                "partition this node leads",
                static_cast<double>(std::max<int64_t>(0, it->second - c.offset)),
                {{"group", g.group}, {"topic", c.topic}, {"partition", std::to_string(c.partition)}});
        }
      }
      for (const auto& [state, n] : by_state)
        gauge("silt_groups", "Consumer groups this node coordinates, by state",
              static_cast<double>(n), {{"state", state}});
    }
    gauge("silt_metrics_series_omitted",
          "Per-partition series left out of this scrape past the limit of 10000 (partitions, "
          "and group lags)",
          static_cast<double>(omitted));

    // ---- from the metadata: leadership, under-replicated and offline partitions ----
    std::optional<QuorumState> q = metadata->Quorum();
    // Offline partitions are the controller's to report (Kafka's OfflinePartitionsCount), so
    // that a sum over the cluster counts each once; a single node is its own controller.
    const bool controller = !q || q->is_ready_leader;
    int64_t led = 0, under = 0, all = 0, offline = 0;
    for (const TopicMetadata& t : metadata->ListTopics()) {
      for (const PartitionAssignment& a : t.partitions) {
        ++all;
        if (a.leader.value() < 0) ++offline;
        if (a.leader != local) continue;
        ++led;
        if (a.replicas.size() > a.isr.size()) ++under;
      }
    }
    gauge("silt_partitions", "Partitions in the cluster's metadata", static_cast<double>(all));
    gauge("silt_partitions_led", "Partitions this node leads (Kafka's LeaderCount)",
          static_cast<double>(led));
    gauge("silt_under_replicated_partitions",
          "Partitions this node leads whose ISR is smaller than their replicas",
          static_cast<double>(under));
    gauge("silt_offline_partitions",
          "Partitions without a leader (reported by the controller; 0 on other nodes)",
          controller ? static_cast<double>(offline) : 0.0);
    if (partitions != nullptr)
      gauge("silt_offline_replicas",
            "Replicas on this node that are offline until a restart (damaged files, a failed "
            "write or fsync)",
            static_cast<double>(partitions->Offline().size()));
    if (q) {
      gauge("silt_raft_term", "Current Raft term of the metadata quorum",
            static_cast<double>(q->term));
      gauge("silt_raft_commit_index", "Highest Raft index known to be committed",
            static_cast<double>(q->commit_index));
      gauge("silt_raft_applied_index", "Highest Raft index applied to this node's metadata image",
            static_cast<double>(q->applied_index));
      gauge("silt_raft_is_controller", "1 while this node is the ready Raft leader (controller)",
            q->is_ready_leader ? 1 : 0);
      gauge("silt_raft_leader", "Node id of the Raft leader as this node knows it (-1: none)",
            q->leader ? q->leader->value() : -1);
      gauge("silt_fenced_brokers", "Registered brokers fenced now",
            static_cast<double>(q->fenced_brokers.size()));
    }
  });
}

}  // namespace silt::broker
