// What the broker exports on /metrics (every name is listed in man/silt-serve.1, METRICS):
// per-request counters and latency histograms updated on the io threads, and a collector that
// reads partitions, the metadata and the quorum when the endpoint is scraped.
#pragma once

#include <cstdint>

#include "base/ids.h"
#include "base/metrics.h"

namespace silt::broker {

class MetadataStore;
class PartitionManager;

// The request path's metrics, registered once for every API and version this broker serves so
// that the per-request updates are array lookups and relaxed atomic adds.
class RequestMetrics {
 public:
  static RequestMetrics& Get();

  // A request frame of `bytes` (size prefix included) was read and dispatched.
  void OnRequest(int16_t api_key, int16_t version, int64_t bytes);
  // Its response (of `bytes`, or none: acks=0) went to the connection after `seconds`.
  void OnResponse(int16_t api_key, double seconds, int64_t bytes);
  // A request answered with Kafka error `code` (the first error of a response, per partition
  // for Produce). Registers the series on first use (a mutex), so keep it off success paths.
  void OnError(int16_t api_key, int16_t code);
  // Records appended by Produce.
  void OnProduced(int64_t records) { produced_records_->Inc(static_cast<uint64_t>(records)); }
  void OnConnectionOpened() {
    connections_->Add(1);
    connections_total_->Inc();
  }
  void OnConnectionClosed() { connections_->Add(-1); }

 private:
  RequestMetrics();
  static constexpr int kMaxApiKey = 128;
  static constexpr int kMaxVersion = 32;
  metrics::Counter* requests_[kMaxApiKey][kMaxVersion] = {};
  metrics::Histogram* latency_[kMaxApiKey] = {};
  metrics::Counter* unknown_requests_;
  metrics::Counter* bytes_in_;
  metrics::Counter* bytes_out_;
  metrics::Counter* produced_records_;
  metrics::Gauge* connections_;
  metrics::Counter* connections_total_;
};

// Adds the scrape-time collector of `partitions` and `metadata` (partitions served, their log
// start, log end and high watermark, under-replicated partitions, and in cluster mode the Raft
// state) to the default registry; returns its id for metrics::Default().RemoveCollector. Both
// must outlive the collector.
int AddBrokerCollector(PartitionManager* partitions, MetadataStore* metadata, NodeId local);

}  // namespace silt::broker
