// latency_bench: produce latency at a steady rate, through librdkafka's C API.
//
// Produces fixed-size records to one partition at a steady --rate for --seconds (after a short
// warm-up that is not measured) and records, for every record, the time from just before
// rd_kafka_producev() to its delivery report: what an application sees as produce latency.
// Prints the achieved rate and the p50/p99/p99.9/max latency in milliseconds.
//
// Pacing: the schedule is in ticks of --tick-us microseconds; each tick enqueues the records that
// are due by then and sleeps to the next tick (absolute clock, so the rate does not drift). A
// separate thread serves the delivery reports (rd_kafka_poll blocks until one arrives), so
// the producing thread's sleeps never delay a report and the generator does not spin a core.
//
// Producer settings: acks=1, linger.ms=0, enable.idempotence=false unless overridden with -X.
//
// Usage: latency_bench -b HOST:PORT -t TOPIC [-p PARTITION] [--rate N] [--seconds S]
//                      [--size BYTES] [--tick-us US] [--warmup-seconds S] [-X key=value]...
#include <librdkafka/rdkafka.h>
#include <sys/prctl.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void SleepUntilNs(int64_t t) {
  timespec ts;
  ts.tv_sec = t / 1000000000;
  ts.tv_nsec = t % 1000000000;
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
  }
}

// Per-record enqueue and delivery times; index = the record's sequence number (its opaque).
struct Samples {
  std::vector<int64_t> enqueued;
  std::vector<int64_t> delivered;  // 0 until acknowledged
  std::atomic<int64_t> acked{0};
  std::atomic<int64_t> failed{0};
};

void OnDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* s = static_cast<Samples*>(opaque);
  auto seq = reinterpret_cast<intptr_t>(m->_private);
  if (m->err) {
    s->failed.fetch_add(1);
    return;
  }
  if (seq >= 0 && static_cast<size_t>(seq) < s->delivered.size()) {
    s->delivered[static_cast<size_t>(seq)] = NowNs();
    s->acked.fetch_add(1);
  }
}

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr,
               "latency_bench: %s\nusage: latency_bench -b HOST:PORT -t TOPIC [-p PARTITION] "
               "[--rate N] [--seconds S] [--size BYTES] [--tick-us US] [--warmup-seconds S] "
               "[-X key=value]...\n",
               why);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  std::string brokers, topic;
  int32_t partition = 0;
  double rate = 50000, seconds = 4, warmup = 1;
  int64_t size = 100, tick_us = 100;
  std::vector<std::pair<std::string, std::string>> overrides;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) Usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "-b") brokers = next();
    else if (a == "-t") topic = next();
    else if (a == "-p") partition = std::atoi(next());
    else if (a == "--rate") rate = std::atof(next());
    else if (a == "--seconds") seconds = std::atof(next());
    else if (a == "--warmup-seconds") warmup = std::atof(next());
    else if (a == "--size") size = std::atoll(next());
    else if (a == "--tick-us") tick_us = std::atoll(next());
    else if (a == "-X") {
      std::string kv = next();
      auto eq = kv.find('=');
      if (eq == std::string::npos) Usage("-X wants key=value");
      overrides.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    } else {
      Usage(("unknown argument " + a).c_str());
    }
  }
  if (brokers.empty() || topic.empty()) Usage("-b and -t are required");
  if (rate <= 0 || seconds <= 0 || size < 0 || tick_us <= 0) Usage("bad --rate/--seconds/--size/--tick-us");
  // Sleeps of a tick must not be stretched by the default 50 us timer slack.
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);

  const int64_t warm_n = static_cast<int64_t>(rate * warmup);
  const int64_t total = warm_n + static_cast<int64_t>(rate * seconds);
  Samples samples;
  samples.enqueued.assign(static_cast<size_t>(total), 0);
  samples.delivered.assign(static_cast<size_t>(total), 0);

  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  std::vector<std::pair<std::string, std::string>> settings = {
      {"bootstrap.servers", brokers}, {"acks", "1"}, {"linger.ms", "0"},
      {"enable.idempotence", "false"}};
  settings.insert(settings.end(), overrides.begin(), overrides.end());
  for (const auto& [k, v] : settings) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof(err)) != RD_KAFKA_CONF_OK) {
      std::fprintf(stderr, "latency_bench: %s\n", err);
      return 2;
    }
  }
  rd_kafka_conf_set_dr_msg_cb(conf, OnDelivery);
  rd_kafka_conf_set_opaque(conf, &samples);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  if (rk == nullptr) {
    std::fprintf(stderr, "latency_bench: %s\n", err);
    return 2;
  }

  std::atomic<bool> stop{false};
  std::thread poller([&] {
    while (!stop.load()) rd_kafka_poll(rk, 50);
  });

  std::string value(static_cast<size_t>(size), 'x');
  auto produce = [&](int64_t seq) {
    for (;;) {
      samples.enqueued[static_cast<size_t>(seq)] = NowNs();
      rd_kafka_resp_err_t e = rd_kafka_producev(
          rk, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition),
          RD_KAFKA_V_VALUE(value.data(), value.size()), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
          RD_KAFKA_V_OPAQUE(reinterpret_cast<void*>(static_cast<intptr_t>(seq))), RD_KAFKA_V_END);
      if (e == RD_KAFKA_RESP_ERR_NO_ERROR) return;
      if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        std::fprintf(stderr, "latency_bench: produce: %s\n", rd_kafka_err2str(e));
        std::exit(1);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  };

  // Warm-up: connection, metadata and the first requests are not the steady state. One record
  // first (waiting for its report), then the warm-up share at the target rate.
  produce(0);
  for (int i = 0; i < 1000 && samples.acked.load() + samples.failed.load() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (samples.acked.load() == 0) {
    std::fprintf(stderr, "latency_bench: the first record was not delivered\n");
    return 1;
  }

  const int64_t tick_ns = tick_us * 1000;
  int64_t n = 1;
  int64_t start = NowNs();
  int64_t measured_start = start;
  for (int64_t tick = 1; n < total; ++tick) {
    int64_t t = start + tick * tick_ns;
    SleepUntilNs(t);
    int64_t due = std::min<int64_t>(total, 1 + static_cast<int64_t>((t - start) * 1e-9 * rate));
    if (n <= warm_n && due > warm_n) measured_start = NowNs();
    for (; n < due; ++n) produce(n);
  }
  int64_t end = NowNs();
  rd_kafka_flush(rk, 10000);
  stop.store(true);
  poller.join();

  std::vector<int64_t> lat;
  lat.reserve(static_cast<size_t>(total - warm_n));
  for (int64_t i = std::max<int64_t>(warm_n, 1); i < total; ++i) {
    int64_t d = samples.delivered[static_cast<size_t>(i)];
    if (d != 0) lat.push_back(d - samples.enqueued[static_cast<size_t>(i)]);
  }
  int64_t sent = total - std::max<int64_t>(warm_n, 1);
  if (lat.empty()) {
    std::fprintf(stderr, "latency_bench: nothing was acknowledged\n");
    return 1;
  }
  std::sort(lat.begin(), lat.end());
  auto pct = [&](double q) {
    size_t i = std::min(lat.size() - 1, static_cast<size_t>(q * static_cast<double>(lat.size())));
    return static_cast<double>(lat[i]) / 1e6;
  };
  double achieved = static_cast<double>(sent) / (static_cast<double>(end - measured_start) / 1e9);
  std::printf("%lld sent at %.0f/s, acked %zu, failed %lld; latency ms p50 %.3f p99 %.3f "
              "p999 %.3f max %.3f\n",
              static_cast<long long>(sent), achieved, lat.size(),
              static_cast<long long>(samples.failed.load()), pct(0.5), pct(0.99), pct(0.999),
              static_cast<double>(lat.back()) / 1e6);
  rd_kafka_destroy(rk);
  return samples.failed.load() == 0 && static_cast<int64_t>(lat.size()) == sent ? 0 : 1;
}
