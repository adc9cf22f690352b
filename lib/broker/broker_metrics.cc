// The broker's metrics (see broker_metrics.h).
#include "broker/broker_metrics.h"

#include <string>

#include "broker/dispatch.h"
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
  connections_ = &r.GetGauge("silt_connections", "Client connections open now");
  connections_total_ =
      &r.GetCounter("silt_connections_accepted_total", "Client connections accepted");
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
  metrics::Default()
      .GetCounter("silt_request_errors_total", "Kafka error codes answered, by API and error",
                  {{"api", protocol::ApiName(api_key)},
                   {"error", protocol::ErrorName(static_cast<protocol::ErrorCode>(code))}})
      .Inc();
}

int AddBrokerCollector(PartitionManager* partitions, MetadataStore* metadata, NodeId local) {
  return metrics::Default().AddCollector([partitions, metadata,
                                          local](std::vector<metrics::Sample>* out) {
    auto gauge = [out](const char* name, const char* help, double v, metrics::Labels l = {}) {
      out->push_back({name, help, false, std::move(l), v});
    };
    auto opened = partitions->Opened();
    gauge("silt_partitions_open", "Partitions this node has open (leads or hosts)",
          static_cast<double>(opened.size()));
    for (const auto& p : opened) {
      metrics::Labels l = {{"topic", p->topic()},
                           {"partition", std::to_string(p->partition().value())}};
      gauge("silt_partition_log_start_offset", "First offset of each open partition",
            static_cast<double>(p->log_start_offset().value()), l);
      gauge("silt_partition_log_end_offset", "Next offset to be written, per open partition",
            static_cast<double>(p->log_end_offset().value()), l);
      gauge("silt_partition_high_watermark",
            "Offset below which every record is on every in-sync replica, per open partition",
            static_cast<double>(p->high_watermark().value()), l);
    }
    // From the metadata: partitions this node leads, and those of them whose ISR is smaller
    // than their replica set (Kafka's UnderReplicatedPartitions).
    int64_t led = 0, under = 0, all = 0;
    for (const TopicMetadata& t : metadata->ListTopics()) {
      for (const PartitionAssignment& a : t.partitions) {
        ++all;
        if (a.leader != local) continue;
        ++led;
        if (a.replicas.size() > a.isr.size()) ++under;
      }
    }
    gauge("silt_partitions", "Partitions in the cluster's metadata", static_cast<double>(all));
    gauge("silt_partitions_led", "Partitions this node leads", static_cast<double>(led));
    gauge("silt_under_replicated_partitions",
          "Partitions this node leads whose ISR is smaller than their replicas",
          static_cast<double>(under));
    if (std::optional<QuorumState> q = metadata->Quorum()) {
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
