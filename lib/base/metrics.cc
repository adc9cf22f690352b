// The metrics registry and its text rendering (see metrics.h).
#include "base/metrics.h"

#include <cmath>
#include <cstdio>
#include <cstring>

namespace silt::metrics {

namespace {

double FromBits(uint64_t b) {
  double d;
  std::memcpy(&d, &b, sizeof d);
  return d;
}

uint64_t ToBits(double d) {
  uint64_t b;
  std::memcpy(&b, &d, sizeof b);
  return b;
}

// A sample value as Prometheus reads it: integers without a fraction, +Inf/-Inf/NaN spelled out.
std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.9g", v);
  }
  return buf;
}

// `{a="1",b="2"}`, with `extra` (e.g. le) last; "" for no labels.
std::string FormatLabels(const Labels& labels, const char* extra_name = nullptr,
                         const std::string& extra_value = "") {
  if (labels.empty() && extra_name == nullptr) return "";
  std::string s = "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) s += ",";
    first = false;
    s += k + "=\"" + EscapeLabelValue(v) + "\"";
  }
  if (extra_name != nullptr) {
    if (!first) s += ",";
    s += std::string(extra_name) + "=\"" + extra_value + "\"";
  }
  return s + "}";
}

// HELP text escaping: backslash and newline.
std::string EscapeHelp(const std::string& h) {
  std::string out;
  for (char c : h) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string EscapeLabelValue(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  // A double has no atomic add: retry the sum until no other thread changed it meanwhile.
  uint64_t old = sum_bits_.load(std::memory_order_relaxed);
  uint64_t next;
  do {
    next = ToBits(FromBits(old) + v);
  } while (!sum_bits_.compare_exchange_weak(old, next, std::memory_order_relaxed));
}

double Histogram::sum() const { return FromBits(sum_bits_.load(std::memory_order_relaxed)); }

const std::vector<double>& LatencyBuckets() {
  static const std::vector<double> b = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                        0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
  return b;
}

Registry::Family& Registry::FamilyFor(const std::string& name, const std::string& help, Kind kind) {
  auto [it, inserted] = families_.try_emplace(name);
  if (inserted) {
    it->second.kind = kind;
    it->second.help = help;
  }
  return it->second;
}

Counter& Registry::GetCounter(const std::string& name, const std::string& help,
                              const Labels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  Family& f = FamilyFor(name, help, Kind::kCounter);
  auto it = f.counters.find(labels);
  if (it != f.counters.end()) return *it->second;
  Counter* c = &counter_store_.emplace_back();
  f.counters.emplace(labels, c);
  return *c;
}

Gauge& Registry::GetGauge(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  Family& f = FamilyFor(name, help, Kind::kGauge);
  auto it = f.gauges.find(labels);
  if (it != f.gauges.end()) return *it->second;
  Gauge* g = &gauge_store_.emplace_back();
  f.gauges.emplace(labels, g);
  return *g;
}

Histogram& Registry::GetHistogram(const std::string& name, const std::string& help,
                                  const std::vector<double>& bounds, const Labels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  Family& f = FamilyFor(name, help, Kind::kHistogram);
  auto it = f.histograms.find(labels);
  if (it != f.histograms.end()) return *it->second;
  Histogram* h = histogram_store_.emplace_back(std::make_unique<Histogram>(bounds)).get();
  f.histograms.emplace(labels, h);
  return *h;
}

int Registry::AddCollector(Collector c) {
  std::lock_guard<std::mutex> lock(collect_mu_);
  int id = next_collector_++;
  collectors_.emplace(id, std::move(c));
  return id;
}

void Registry::RemoveCollector(int id) {
  std::lock_guard<std::mutex> lock(collect_mu_);
  collectors_.erase(id);
}

std::string Registry::Render() const {
  std::lock_guard<std::mutex> collecting(collect_mu_);
  // Collected samples, grouped by name so each family gets one HELP/TYPE.
  std::vector<Sample> samples;
  for (const auto& [id, c] : collectors_) c(&samples);
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::vector<const Sample*>> collected;
  for (const Sample& s : samples) collected[s.name].push_back(&s);

  std::string out;
  auto header = [&out](const std::string& name, const std::string& help, const char* type) {
    out += "# HELP " + name + " " + EscapeHelp(help) + "\n# TYPE " + name + " " + type + "\n";
  };
  auto c_it = collected.begin();
  auto emit_collected_before = [&](const std::string* name) {
    for (; c_it != collected.end() && (name == nullptr || c_it->first < *name); ++c_it) {
      const Sample& first = *c_it->second.front();
      header(c_it->first, first.help, first.counter ? "counter" : "gauge");
      for (const Sample* s : c_it->second)
        out += c_it->first + FormatLabels(s->labels) + " " + FormatValue(s->value) + "\n";
    }
  };
  for (const auto& [name, f] : families_) {
    emit_collected_before(&name);
    if (c_it != collected.end() && c_it->first == name) ++c_it;  // registered wins
    switch (f.kind) {
      case Kind::kCounter:
        header(name, f.help, "counter");
        for (const auto& [l, c] : f.counters)
          out += name + FormatLabels(l) + " " + FormatValue(static_cast<double>(c->value())) + "\n";
        break;
      case Kind::kGauge:
        header(name, f.help, "gauge");
        for (const auto& [l, g] : f.gauges)
          out += name + FormatLabels(l) + " " + FormatValue(static_cast<double>(g->value())) + "\n";
        break;
      case Kind::kHistogram:
        header(name, f.help, "histogram");
        for (const auto& [l, h] : f.histograms) {
          uint64_t cumulative = 0;
          for (size_t i = 0; i <= h->bounds().size(); ++i) {
            cumulative += h->bucket(i);
            std::string le = i < h->bounds().size() ? FormatValue(h->bounds()[i]) : "+Inf";
            out += name + "_bucket" + FormatLabels(l, "le", le) + " " +
                   FormatValue(static_cast<double>(cumulative)) + "\n";
          }
          out += name + "_sum" + FormatLabels(l) + " " + FormatValue(h->sum()) + "\n";
          out += name + "_count" + FormatLabels(l) + " " +
                 FormatValue(static_cast<double>(h->count())) + "\n";
        }
        break;
    }
  }
  emit_collected_before(nullptr);
  return out;
}

Registry& Default() {
  static Registry* r = new Registry;  // never destroyed: threads may update it at exit
  return *r;
}

}  // namespace silt::metrics
