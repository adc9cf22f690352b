// Process-wide metrics in the Prometheus text exposition format (version 0.0.4).
//
// Three kinds, each a family of series told apart by labels:
//   Counter    only goes up (`_total` names by convention);
//   Gauge      goes up and down, or is Set;
//   Histogram  counts observations into fixed, cumulative buckets (`le`), with _sum and _count.
// Updates are relaxed atomics: no lock, no allocation, safe on any thread, so the broker's io
// threads update them on every request. Registration takes the registry's mutex and is meant to
// happen once per series, at start-up or on first use; the reference it returns stays valid for
// the life of the process (series are never removed).
//
// Registering a metric is one line (see lib/broker/README.md):
//
//   static metrics::Counter& shrinks = metrics::Default().GetCounter(
//       "silt_isr_shrinks_total", "ISR shrinks on this node's partitions");
//   shrinks.Inc();
//
// Values that are cheaper to read than to keep up to date (log end offsets of every partition)
// come from a Collector, run on the scraping thread each time the text is rendered.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace silt::metrics {

// Label name -> value, e.g. {{"api", "Produce"}}. Order does not matter (kept sorted).
using Labels = std::map<std::string, std::string>;

class Counter {
 public:
  void Inc(uint64_t n = 1) { v_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

class Gauge {
 public:
  void Set(int64_t v) { v_.store(v, std::memory_order_relaxed); }
  void Add(int64_t d) { v_.fetch_add(d, std::memory_order_relaxed); }
  int64_t value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> v_{0};
};

class Histogram {
 public:
  // `bounds`: the buckets' upper bounds, ascending (+Inf is implied).
  explicit Histogram(std::vector<double> bounds);
  void Observe(double v);
  const std::vector<double>& bounds() const { return bounds_; }
  // Non-cumulative count of bucket i (i == bounds().size() is +Inf).
  uint64_t bucket(size_t i) const { return counts_[i].load(std::memory_order_relaxed); }
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  double sum() const;

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_bits_{0};  // a double, added to with compare-exchange
};

// Latency buckets in seconds, 100 µs to 10 s.
const std::vector<double>& LatencyBuckets();

// One sample a Collector reports: a gauge or counter value with its labels.
struct Sample {
  std::string name;
  std::string help;
  bool counter = false;  // else a gauge
  Labels labels;
  double value = 0;
};
using Collector = std::function<void(std::vector<Sample>* out)>;

class Registry {
 public:
  // The series `name{labels}`, created on first call. Every series of a name must be of one
  // kind (and a histogram's of one set of bounds); the help text of the first call is kept.
  Counter& GetCounter(const std::string& name, const std::string& help, const Labels& labels = {});
  Gauge& GetGauge(const std::string& name, const std::string& help, const Labels& labels = {});
  Histogram& GetHistogram(const std::string& name, const std::string& help,
                          const std::vector<double>& bounds, const Labels& labels = {});

  // Adds a collector run by every Render; returns an id for RemoveCollector. Collectors run
  // without the registry's series lock (a slow one never holds up a GetCounter), one scrape
  // at a time; a collector may register series but must not add or remove collectors.
  int AddCollector(Collector c);
  // Once it returns, the collector is not running and never runs again.
  void RemoveCollector(int id);

  // Every series, families sorted by name, in the text format 0.0.4 (HELP, TYPE, samples).
  std::string Render() const;

 private:
  enum class Kind { kCounter, kGauge, kHistogram };
  struct Family {
    Kind kind;
    std::string help;
    std::map<Labels, Counter*> counters;
    std::map<Labels, Gauge*> gauges;
    std::map<Labels, Histogram*> histograms;
  };
  Family& FamilyFor(const std::string& name, const std::string& help, Kind kind);

  // collect_mu_ (collectors, and the one scrape running them) is taken before mu_ (series).
  mutable std::mutex collect_mu_;
  mutable std::mutex mu_;
  std::map<std::string, Family> families_;
  std::deque<Counter> counter_store_;
  std::deque<Gauge> gauge_store_;
  std::deque<std::unique_ptr<Histogram>> histogram_store_;
  std::map<int, Collector> collectors_;
  int next_collector_ = 1;
};

// The process's registry, which /metrics serves.
Registry& Default();

// `v` as a label value in the text format: backslash, double quote and newline escaped.
std::string EscapeLabelValue(const std::string& v);

}  // namespace silt::metrics
