// The metrics registry: series kept apart by labels, cumulative histogram buckets, collectors,
// and the Prometheus text format 0.0.4 it renders.
#include "base/metrics.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

using namespace silt::metrics;

namespace {
bool Has(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}
}  // namespace

TEST_CASE("counters and gauges render with one HELP and TYPE per family and sorted labels") {
  Registry r;
  r.GetCounter("x_requests_total", "Requests", {{"b", "2"}, {"a", "1"}}).Inc(3);
  r.GetCounter("x_requests_total", "ignored", {{"a", "9"}}).Inc();
  r.GetGauge("x_open", "Open now").Set(-4);
  std::string t = r.Render();
  CHECK(Has(t, "# HELP x_requests_total Requests"));
  CHECK(Has(t, "# TYPE x_requests_total counter"));
  CHECK(Has(t, "x_requests_total{a=\"1\",b=\"2\"} 3"));
  CHECK(Has(t, "x_requests_total{a=\"9\"} 1"));
  CHECK(Has(t, "# TYPE x_open gauge"));
  CHECK(Has(t, "x_open -4"));
  CHECK(t.find("# HELP x_requests_total", t.find("# HELP x_requests_total") + 1) ==
        std::string::npos);
}

TEST_CASE("the same name and labels give the same series") {
  Registry r;
  Counter& a = r.GetCounter("c_total", "c", {{"k", "v"}});
  Counter& b = r.GetCounter("c_total", "c", {{"k", "v"}});
  CHECK(&a == &b);
  a.Inc();
  b.Inc();
  CHECK(a.value() == 2);
}

TEST_CASE("histogram buckets are cumulative with +Inf, sum and count") {
  Registry r;
  Histogram& h = r.GetHistogram("lat_seconds", "latency", {0.1, 1}, {{"api", "Produce"}});
  h.Observe(0.05);
  h.Observe(0.5);
  h.Observe(0.5);
  h.Observe(7);
  std::string t = r.Render();
  CHECK(Has(t, "# TYPE lat_seconds histogram"));
  CHECK(Has(t, "lat_seconds_bucket{api=\"Produce\",le=\"0.1\"} 1"));
  CHECK(Has(t, "lat_seconds_bucket{api=\"Produce\",le=\"1\"} 3"));
  CHECK(Has(t, "lat_seconds_bucket{api=\"Produce\",le=\"+Inf\"} 4"));
  CHECK(Has(t, "lat_seconds_sum{api=\"Produce\"} 8.05"));
  CHECK(Has(t, "lat_seconds_count{api=\"Produce\"} 4"));
}

TEST_CASE("label values are escaped and collectors add families at scrape time") {
  Registry r;
  r.GetGauge("g", "g", {{"topic", "a\"b\\c\nd"}}).Set(1);
  int calls = 0;
  int id = r.AddCollector([&calls](std::vector<Sample>* out) {
    ++calls;
    out->push_back({"a_collected", "from a collector", false, {{"p", "0"}}, 5});
    out->push_back({"a_collected", "from a collector", false, {{"p", "1"}}, 6});
  });
  std::string t = r.Render();
  CHECK(Has(t, "g{topic=\"a\\\"b\\\\c\\nd\"} 1"));
  CHECK(Has(t, "# TYPE a_collected gauge"));
  CHECK(Has(t, "a_collected{p=\"0\"} 5"));
  CHECK(Has(t, "a_collected{p=\"1\"} 6"));
  CHECK(t.find("a_collected") < t.find("# HELP g "));  // families in name order
  CHECK(calls == 1);
  r.RemoveCollector(id);
  CHECK(r.Render().find("a_collected") == std::string::npos);
}

TEST_CASE("increments from many threads are all counted") {
  Registry r;
  Counter& c = r.GetCounter("n_total", "n");
  Histogram& h = r.GetHistogram("h", "h", LatencyBuckets());
  std::vector<std::thread> ts;
  for (int i = 0; i < 4; ++i)
    ts.emplace_back([&] {
      for (int j = 0; j < 10000; ++j) {
        c.Inc();
        h.Observe(0.001);
      }
    });
  for (auto& t : ts) t.join();
  CHECK(c.value() == 40000);
  CHECK(h.count() == 40000);
  CHECK(h.sum() == doctest::Approx(40.0));
}

TEST_CASE("a running collector holds no lock that registering a series needs") {
  Registry r;
  bool registered_meanwhile = false;
  std::atomic<bool> done{false};
  std::thread t;
  r.AddCollector([&](std::vector<Sample>* out) {
    // Another thread (an io thread meeting its first error code) registers a series while a
    // slow scrape is collecting: it must not wait for the scrape.
    t = std::thread([&] {
      r.GetCounter("silt_test_late_total", "registered during a scrape").Inc();
      done = true;
    });
    for (int i = 0; i < 200 && !done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    registered_meanwhile = done;
    out->push_back({"silt_test_collected", "collected", false, {}, 1});
  });
  std::string text = r.Render();
  t.join();
  CHECK(registered_meanwhile);
  CHECK(Has(text, "silt_test_collected 1"));
  CHECK(r.GetCounter("silt_test_late_total", "").value() == 1);
}
