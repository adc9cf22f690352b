// What the broker exports on /metrics (every name is listed in man/silt-serve.1, METRICS):
// per-request counters and latency histograms updated on the io threads, and a collector that
// reads partitions, the metadata and the quorum when the endpoint is scraped.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

#include "base/ids.h"
#include "base/metrics.h"

namespace silt::broker {

class GroupCoordinator;
class MetadataStore;
class PartitionManager;

// Calls f(int16_t) with every error_code field of the response message `m`: its own and those
// of the entries of its nested arrays, whatever the API (Kafka's AbstractResponse.errorCounts).
// The arrays are found by the names Kafka's schemas give them (topics, partitions, responses,
// partition_responses, results, groups, members, coordinators), so a new response struct that
// follows the schema's names is covered without a line here.
template <typename T, typename F>
void ForEachErrorCode(const T& m, F& f);

namespace internal {
template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <typename T>
struct IsVector : std::false_type {};
template <typename T>
struct IsVector<std::vector<T>> : std::true_type {};

template <typename V, typename F>
void ErrorCodesOfArray(const V& v, F& f) {
  if constexpr (IsOptional<V>::value) {
    if (v) ErrorCodesOfArray(*v, f);
  } else if constexpr (IsVector<V>::value) {
    if constexpr (std::is_class_v<typename V::value_type>) {
      for (const auto& e : v) ForEachErrorCode(e, f);
    }
  }
}
}  // namespace internal

template <typename T, typename F>
void ForEachErrorCode(const T& m, F& f) {
  if constexpr (requires { m.error_code; }) {
    if constexpr (std::is_integral_v<std::remove_cvref_t<decltype(m.error_code)>>) f(m.error_code);
  }
  if constexpr (requires { m.topics; }) internal::ErrorCodesOfArray(m.topics, f);
  if constexpr (requires { m.partitions; }) internal::ErrorCodesOfArray(m.partitions, f);
  if constexpr (requires { m.responses; }) internal::ErrorCodesOfArray(m.responses, f);
  if constexpr (requires { m.partition_responses; })
    internal::ErrorCodesOfArray(m.partition_responses, f);
  if constexpr (requires { m.results; }) internal::ErrorCodesOfArray(m.results, f);
  if constexpr (requires { m.groups; }) internal::ErrorCodesOfArray(m.groups, f);
  if constexpr (requires { m.members; }) internal::ErrorCodesOfArray(m.members, f);
  if constexpr (requires { m.coordinators; }) internal::ErrorCodesOfArray(m.coordinators, f);
}

// The request path's metrics, registered once for every API and version this broker serves so
// that the per-request updates are array lookups and relaxed atomic adds.
class RequestMetrics {
 public:
  static RequestMetrics& Get();

  // A request frame of `bytes` (size prefix included) was read and dispatched.
  void OnRequest(int16_t api_key, int16_t version, int64_t bytes);
  // Its response (of `bytes`, or none: acks=0) went to the connection after `seconds`.
  void OnResponse(int16_t api_key, double seconds, int64_t bytes);
  // One Kafka error `code` (not NONE) in a response of `api_key`. The series is registered on
  // its first use (a mutex, once); after that an error costs an array lookup and an atomic add.
  void OnError(int16_t api_key, int16_t code);
  // Every error code of the response message `msg` (top level and per topic, partition, group
  // or resource), counted under Msg::kApiKey. Called wherever a response body is encoded.
  template <typename Msg>
  void OnResponseMessage(const Msg& msg) {
    constexpr int16_t api = static_cast<int16_t>(Msg::kApiKey);
    auto count = [this](int16_t code) {
      if (code != 0) OnError(api, code);
    };
    ForEachErrorCode(msg, count);
  }
  // Records appended by Produce.
  void OnProduced(int64_t records) { produced_records_->Inc(static_cast<uint64_t>(records)); }
  void OnConnectionOpened() {
    connections_->Add(1);
    connections_total_->Inc();
  }
  // A peer's connection handed over by cluster mode: open now, but not accepted here.
  void OnPeerConnectionAdopted() { connections_->Add(1); }
  void OnConnectionClosed() { connections_->Add(-1); }
  // Gauges of delayed operations waiting now: fetches (a follower's, or a consumer's long
  // poll) and acks=all produces.
  metrics::Gauge* delayed_fetches(bool follower) {
    return follower ? delayed_follower_fetches_ : delayed_consumer_fetches_;
  }
  metrics::Gauge* delayed_produces() { return delayed_produces_; }
  // Incremental fetch sessions held now, and those evicted to make room for new ones.
  metrics::Gauge* fetch_sessions() { return fetch_sessions_; }
  metrics::Counter* fetch_session_evictions() { return fetch_session_evictions_; }

 private:
  RequestMetrics();
  static constexpr int kMaxApiKey = 128;
  static constexpr int kMaxVersion = 32;
  static constexpr int kMaxErrorCode = 192;  // Kafka's codes are -1 .. ~120; others: "other"
  // errors_[api][code + 1], filled on first use.
  std::atomic<metrics::Counter*> errors_[kMaxApiKey][kMaxErrorCode + 1] = {};
  metrics::Counter* requests_[kMaxApiKey][kMaxVersion] = {};
  metrics::Histogram* latency_[kMaxApiKey] = {};
  metrics::Counter* unknown_requests_;
  metrics::Counter* bytes_in_;
  metrics::Counter* bytes_out_;
  metrics::Counter* produced_records_;
  metrics::Gauge* connections_;
  metrics::Counter* connections_total_;
  metrics::Gauge* delayed_consumer_fetches_;
  metrics::Gauge* delayed_follower_fetches_;
  metrics::Gauge* delayed_produces_;
  metrics::Gauge* fetch_sessions_;
  metrics::Counter* fetch_session_evictions_;
};

// Per-partition series (log offsets, size, follower lag; group lag) a scrape emits at most,
// in topic and partition order; the rest are counted in silt_metrics_series_omitted, while
// the node-wide gauges still count every partition. Bounds a scrape of a node with very many
// partitions to a few megabytes of text.
constexpr size_t kMaxPartitionSeries = 10000;

// Adds the scrape-time collector of `partitions`, `metadata` and `groups` (may be null) to
// the default registry: partitions served, their log start, log end, high watermark and size,
// followers' lag, under-replicated, under-min-ISR and offline partitions, groups by state,
// members and lag, and in cluster mode the Raft state. Returns its id for
// metrics::Default().RemoveCollector. Every argument must outlive the collector. A scrape
// copies what it reads under each object's own short lock, one at a time.
int AddBrokerCollector(PartitionManager* partitions, MetadataStore* metadata,
                       GroupCoordinator* groups, NodeId local);

}  // namespace silt::broker
