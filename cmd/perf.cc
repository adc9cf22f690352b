// `silt perf produce|consume`: load generation and measurement, as Kafka's
// kafka-producer-perf-test and kafka-consumer-perf-test do, against a data dir or (-b) a cluster.
// Records go through client::Producer / client::Consumer like every other command, so what is
// measured is what `silt produce` and `silt consume` do.
//
// Producer latency is taken per record, from Send() to its acknowledgement (a data dir: its
// append to the log). The producer reports deliveries as a running count; records complete in
// the order they were sent within a partition, and unkeyed records fill one partition's batch
// at a time (the sticky partitioner), so the k-th completion is taken to be the k-th record sent.
#include <CLI/CLI.hpp>

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "client/cluster.h"
#include "client/local_consumer.h"
#include "client/local_producer.h"
#include "client/net_consumer.h"
#include "client/net_producer.h"
#include "client/offset_spec.h"
#include "cmd/cli_util.h"
#include "cmd/command.h"
#include "cmd/net_util.h"
#include "cmd/usage.h"
#include "format/record_batch.h"
#include "storage/data_dir.h"

namespace silt::cmd {
namespace {

using Clock = std::chrono::steady_clock;

int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now().time_since_epoch())
      .count();
}

// Latencies in microseconds, in log-linear buckets: exact below 128 us, then 64 buckets per
// power of two (within 1.6% of the true value). The maximum is kept exactly.
class Histogram {
 public:
  void Add(int64_t us) {
    if (us < 0) us = 0;
    ++buckets_[Index(us)];
    ++count_;
    sum_ += us;
    max_ = std::max(max_, us);
  }
  void Merge(const Histogram& o) {
    for (size_t i = 0; i < kBuckets; ++i) buckets_[i] += o.buckets_[i];
    count_ += o.count_;
    sum_ += o.sum_;
    max_ = std::max(max_, o.max_);
  }
  int64_t count() const { return count_; }
  int64_t max() const { return max_; }
  double mean() const { return count_ ? static_cast<double>(sum_) / count_ : 0; }
  // The smallest bucket value v such that at least q of the samples are <= v (the maximum for
  // the top bucket); 0 when empty.
  int64_t Quantile(double q) const {
    if (count_ == 0) return 0;
    const int64_t rank = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(q * count_)));
    int64_t seen = 0;
    for (size_t i = 0; i < kBuckets; ++i) {
      seen += buckets_[i];
      if (seen >= rank) return std::min(Upper(i), max_);
    }
    return max_;
  }

 private:
  static constexpr int kSub = 64;
  static constexpr size_t kBuckets = 2 * kSub + 58 * kSub;
  static size_t Index(int64_t v) {
    if (v < 2 * kSub) return static_cast<size_t>(v);
    int shift = 63 - __builtin_clzll(static_cast<uint64_t>(v)) - 6;  // v >> shift in [64, 128)
    size_t i = 2 * kSub + static_cast<size_t>(shift - 1) * kSub +
               static_cast<size_t>((v >> shift) - kSub);
    return std::min(i, kBuckets - 1);
  }
  static int64_t Upper(size_t i) {
    if (i < 2 * kSub) return static_cast<int64_t>(i);
    size_t shift = (i - 2 * kSub) / kSub + 1;
    int64_t mantissa = static_cast<int64_t>((i - 2 * kSub) % kSub) + kSub;
    return ((mantissa + 1) << shift) - 1;
  }
  int64_t buckets_[kBuckets] = {};
  int64_t count_ = 0;
  int64_t sum_ = 0;
  int64_t max_ = 0;
};

struct Report {
  bool json = false;
  std::string kind;  // "produce" or "consume"
};

// One line: an interval's or the whole run's figures. `extra` is appended inside the JSON
// object (",\"failed\":0") or to the text line.
void PrintLine(const Report& r, bool total, double secs, int64_t records, int64_t bytes,
               const Histogram& h, const std::string& extra_json, const std::string& extra_text) {
  const double rps = secs > 0 ? records / secs : 0;
  const double mbps = secs > 0 ? bytes / secs / (1024.0 * 1024.0) : 0;
  auto ms = [](int64_t us) { return us / 1000.0; };
  if (r.json) {
    std::printf(
        "{\"type\":\"%s\",\"command\":\"%s\",\"elapsed_s\":%.3f,\"records\":%" PRId64
        ",\"bytes\":%" PRId64 ",\"records_per_sec\":%.1f,\"mb_per_sec\":%.3f,"
        "\"latency_ms\":{\"avg\":%.3f,\"p50\":%.3f,\"p99\":%.3f,\"p999\":%.3f,\"max\":%.3f}%s}\n",
        total ? "total" : "interval", r.kind.c_str(), secs, records, bytes, rps, mbps,
        ms(static_cast<int64_t>(h.mean())), ms(h.Quantile(0.5)), ms(h.Quantile(0.99)),
        ms(h.Quantile(0.999)), ms(h.max()), extra_json.c_str());
  } else {
    std::printf("%s%" PRId64 " records in %.2f s: %.1f records/s, %.2f MB/s; latency ms avg %.2f "
                "p50 %.2f p99 %.2f p99.9 %.2f max %.2f%s\n",
                total ? "total: " : "", records, secs, rps, mbps,
                ms(static_cast<int64_t>(h.mean())), ms(h.Quantile(0.5)), ms(h.Quantile(0.99)),
                ms(h.Quantile(0.999)), ms(h.max()), extra_text.c_str());
  }
  std::fflush(stdout);
}

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }
void CatchSignals() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

// ---- produce --------------------------------------------------------------------------------

struct ProduceArgs {
  std::string topic;
  int64_t num_records = -1;
  int64_t record_size = 100;
  double throughput = -1;
  std::string acks = "all";
  std::string compression = "none";
  int64_t batch_size = 256 << 10;
  int64_t linger_ms = 5;
  int32_t partition = -1;
  bool no_idempotence = false;
  int64_t interval_ms = 5000;
  std::string format = "text";
};

Result<format::Compression> ParseCompression(const std::string& s) {
  if (s == "none") return format::Compression::kNone;
  if (s == "gzip") return format::Compression::kGzip;
  if (s == "snappy") return format::Compression::kSnappy;
  if (s == "lz4") return format::Compression::kLz4;
  if (s == "zstd") return format::Compression::kZstd;
  return Status::InvalidArgument("unknown compression '" + s + "'");
}

struct Sink {
  std::unique_ptr<storage::DataDir> dir;
  std::unique_ptr<client::Cluster> cluster;
  std::unique_ptr<client::Producer> producer;
};

Result<Sink> OpenSink(const GlobalOptions& g, const ProduceArgs& a, format::Compression c) {
  Sink s;
  if (NetworkMode(g)) {
    client::NetProducerOptions po;
    po.compression = c;
    po.batch_bytes = static_cast<size_t>(a.batch_size);
    po.linger_ms = a.linger_ms;
    po.acks = a.acks == "0" ? 0 : a.acks == "1" ? 1 : -1;
    po.idempotent = !a.no_idempotence && po.acks == -1;
    po.partition = a.partition;
    SILT_ASSIGN_OR_RETURN(s.cluster, ConnectCluster(g));
    SILT_ASSIGN_OR_RETURN(s.producer, client::NetProducer::Open(s.cluster.get(), a.topic, po));
    return s;
  }
  if (Status st = CheckCanCreateDataDir(g.data_dir); !st.ok()) return st;
  SILT_ASSIGN_OR_RETURN(s.dir, OpenDataDir(g, true));
  client::ProducerOptions po;
  po.compression = c;
  po.batch_bytes = static_cast<size_t>(a.batch_size);
  po.partition = a.partition;
  po.background = true;
  SILT_ASSIGN_OR_RETURN(s.producer, client::LocalProducer::Open(s.dir.get(), a.topic, po));
  return s;
}

int RunProduce(const GlobalOptions& g, const ProduceArgs& a) {
  if (a.num_records < 1) return Fail("--num-records must be at least 1");
  if (a.record_size < 0) return Fail("--record-size must not be negative");
  if (a.throughput == 0 || (a.throughput < 0 && a.throughput != -1))
    return Fail("--throughput must be positive, or -1 for no limit");
  if (a.interval_ms < 1) return Fail("--interval-ms must be positive");
  if (a.batch_size < 1) return Fail("--batch-size must be positive");
  if (a.linger_ms < 0) return Fail("--linger-ms must not be negative");
  auto compression = ParseCompression(a.compression);
  if (!compression.ok()) return Fail(compression.status());
  auto sink = OpenSink(g, a, *compression);
  if (!sink.ok()) return Fail(sink.status());
  client::Producer& p = *sink->producer;
  if (a.record_size > p.max_message_bytes())
    return Fail("--record-size " + std::to_string(a.record_size) + " is over the topic's " +
                "max.message.bytes (" + std::to_string(p.max_message_bytes()) + ")");

  // Values are windows of one block of random capital letters (as Kafka's tool uses), each at
  // its own start, so that no two neighbouring records are equal and compression sees text.
  const size_t size = static_cast<size_t>(a.record_size);
  constexpr size_t kPool = 1 << 16;
  std::string pool(kPool + size, 'A');
  std::mt19937_64 rng(0x5111);
  for (char& c : pool) c = static_cast<char>('A' + rng() % 26);

  CatchSignals();
  const Report rep{a.format == "json", "produce"};
  const bool net = NetworkMode(g);
  std::deque<int64_t> sent_at;  // send time (us) of each record not yet complete, in send order
  int64_t completed = 0;
  Histogram total, window;
  const int64_t start = NowUs();
  int64_t window_start = start, window_done = 0;
  bool reported = false;  // an interval line was printed
  const int64_t interval_us = a.interval_ms * 1000;

  // Takes in what the producer completed since the last look.
  auto collect = [&] {
    const int64_t done = p.records_delivered() + p.records_failed();
    if (done == completed) return;
    const int64_t now = NowUs();
    for (; completed < done && !sent_at.empty(); ++completed) {
      window.Add(now - sent_at.front());
      sent_at.pop_front();
    }
  };
  auto maybe_report = [&](bool force) {
    const int64_t now = NowUs();
    if (!force && now - window_start < interval_us) return;
    const int64_t n = completed - window_done;
    PrintLine(rep, false, (now - window_start) / 1e6, n, n * a.record_size, window, "", "");
    total.Merge(window);
    window = Histogram();
    window_start = now;
    window_done = completed;
    reported = true;
  };
  // While there is nothing to send: let the producer send what lingered and read answers.
  auto idle = [&]() -> Status {
    if (net) {
      SILT_TRY(p.SendPending());
    } else if (!sent_at.empty() && NowUs() - sent_at.front() >= a.linger_ms * 1000) {
      // A data dir's producer has no linger of its own: append a batch that waited long enough.
      SILT_TRY(p.SendPending());
    }
    collect();
    return Status::OK();
  };

  Status failed;
  int64_t sent = 0;
  for (; sent < a.num_records && !g_stop.load(std::memory_order_relaxed); ++sent) {
    if (a.throughput > 0) {
      // Kafka's throttle: record i goes no earlier than start + i / throughput.
      const int64_t due = start + static_cast<int64_t>(sent * 1e6 / a.throughput);
      while (NowUs() < due && failed.ok() && !g_stop.load()) {
        failed = idle();
        const int64_t left = due - NowUs();
        if (left > 0) std::this_thread::sleep_for(std::chrono::microseconds(std::min<int64_t>(left, 200)));
        maybe_report(false);
      }
      if (!failed.ok() || g_stop.load()) break;
    }
    std::string_view value(pool.data() + (static_cast<size_t>(sent) * 7919) % kPool, size);
    sent_at.push_back(NowUs());
    failed = p.Send(std::nullopt, value, {});
    if (!failed.ok()) {
      sent_at.pop_back();
      break;
    }
    collect();
    maybe_report(false);
  }
  // The tail: let lingering batches go and wait for their answers here, so that each record's
  // latency is taken when it completes rather than when everything has.
  // With acks=0 the network producer counts records as delivered only when Flush() writes them.
  const bool wait_tail = !(net && (a.acks == "0"));
  if (failed.ok() && wait_tail) {
    if (!net) failed = p.SendPending();
    int64_t last_progress = NowUs(), last_seen = completed;
    while (failed.ok() && !sent_at.empty() && !g_stop.load()) {
      failed = idle();
      if (completed != last_seen) {
        last_seen = completed;
        last_progress = NowUs();
      } else if (NowUs() - last_progress > 130 * 1000000LL) {
        break;  // past the delivery timeout: Flush() says what became of them
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      maybe_report(false);
    }
  }
  Status flushed = p.Flush();
  collect();
  const int64_t end = NowUs();
  // The last stretch, unless the whole run fits in one interval (the total says it all).
  if (reported && completed > window_done) maybe_report(true);
  total.Merge(window);
  const int64_t failed_records = p.records_failed();
  const int64_t delivered = p.records_delivered();
  std::string extra_json = ",\"sent\":" + std::to_string(sent) + ",\"failed\":" +
                           std::to_string(failed_records);
  std::string extra_text =
      failed_records ? "; " + std::to_string(failed_records) + " failed" : std::string();
  PrintLine(rep, true, (end - start) / 1e6, delivered, delivered * a.record_size, total,
            extra_json, extra_text);
  Status closed = sink->dir ? sink->dir->Close() : Status::OK();
  if (!failed.ok()) return Fail(failed);
  if (!flushed.ok()) return Fail(flushed);
  if (!closed.ok()) return Fail(closed);
  if (g_stop.load()) return Fail("interrupted after " + std::to_string(sent) + " records");
  if (failed_records > 0)
    return Fail(std::to_string(failed_records) + " record(s) were not acknowledged; first error: " +
                p.first_error());
  return kExitOk;
}

// ---- consume --------------------------------------------------------------------------------

struct ConsumeArgs {
  std::string topic;
  int64_t num_records = -1;
  std::vector<int32_t> partitions;
  std::string offset = "beginning";
  int64_t timeout_ms = 10000;
  int64_t interval_ms = 5000;
  std::string format = "text";
};

struct Source {
  std::unique_ptr<storage::DataDir> dir;
  std::unique_ptr<client::Cluster> cluster;
  std::unique_ptr<client::Consumer> consumer;
};

Result<Source> OpenSource(const GlobalOptions& g, const ConsumeArgs& a,
                          const client::OffsetSpec& start) {
  Source s;
  // With a count, wait for records still to come; without one, read to the end.
  const bool follow = a.num_records > 0;
  if (NetworkMode(g)) {
    SILT_ASSIGN_OR_RETURN(s.cluster, ConnectCluster(g));
    client::NetConsumerOptions co;
    co.partitions = a.partitions;
    co.start = start;
    co.follow = follow;
    SILT_ASSIGN_OR_RETURN(s.consumer, client::NetConsumer::Open(s.cluster.get(), a.topic, co));
    return s;
  }
  SILT_ASSIGN_OR_RETURN(s.dir, OpenDataDir(g, false));
  client::ConsumerOptions co;
  co.partitions = a.partitions;
  co.start = start;
  co.follow = follow;
  co.idle_check_ms = 200;
  SILT_ASSIGN_OR_RETURN(s.consumer, client::LocalConsumer::Open(s.dir.get(), a.topic, co));
  return s;
}

int RunConsume(const GlobalOptions& g, const ConsumeArgs& a) {
  if (a.num_records == 0 || a.num_records < -1)
    return Fail("--num-records must be at least 1 (or left out: read to the end)");
  if (a.interval_ms < 1) return Fail("--interval-ms must be positive");
  if (a.timeout_ms < 1) return Fail("--timeout-ms must be positive");
  auto start = client::ParseOffsetSpec(a.offset);
  if (!start.ok()) return Fail(start.status());
  auto source = OpenSource(g, a, *start);
  if (!source.ok()) return Fail(source.status());
  client::Consumer& c = *source->consumer;

  CatchSignals();
  const Report rep{a.format == "json", "consume"};
  Histogram total, window;
  int64_t records = 0, bytes = 0, window_records = 0, window_bytes = 0;
  const int64_t t0 = NowUs();
  int64_t window_start = t0;
  bool reported = false;
  std::atomic<int64_t> last_record_us{t0};
  const int64_t interval_us = a.interval_ms * 1000;
  auto flush_window = [&](int64_t now) {
    PrintLine(rep, false, (now - window_start) / 1e6, window_records, window_bytes, window, "",
              "");
    total.Merge(window);
    window = Histogram();
    window_start = now;
    window_records = window_bytes = 0;
    reported = true;
  };
  auto fn = [&](int32_t, const format::RecordView& r) {
    const int64_t now = NowUs();
    // The record's age on delivery: end-to-end latency when reading as records are produced.
    if (r.timestamp >= 0) {
      const int64_t wall_us = std::chrono::duration_cast<std::chrono::microseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count();
      window.Add(wall_us - r.timestamp * 1000);
    }
    ++records;
    ++window_records;
    const int64_t b = static_cast<int64_t>(r.key.size() + r.value.size());
    bytes += b;
    window_bytes += b;
    last_record_us.store(now, std::memory_order_relaxed);
    if (now - window_start >= interval_us) flush_window(now);
    return a.num_records < 0 || records < a.num_records;
  };
  // With a count, give up after --timeout-ms without a new record.
  std::atomic<bool> quit{false};
  std::atomic<bool> timed_out{false};
  std::thread watchdog;
  if (a.num_records > 0) {
    watchdog = std::thread([&] {
      while (!quit.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (g_stop.load()) break;
        if (NowUs() - last_record_us.load() > a.timeout_ms * 1000) {
          timed_out.store(true);
          g_stop.store(true);
          break;
        }
      }
    });
  }
  Status st = c.Run(fn, [] { return Status::OK(); }, &g_stop);
  quit.store(true);
  if (watchdog.joinable()) watchdog.join();
  // A run that gave up waiting is measured up to its last record.
  const int64_t end = timed_out.load() ? last_record_us.load() : NowUs();
  if (reported && window_records > 0) flush_window(end);
  total.Merge(window);
  PrintLine(rep, true, (end - t0) / 1e6, records, bytes, total, "", "");
  Status closed = c.Close(false);
  if (!st.ok()) return Fail(st);
  if (!closed.ok()) return Fail(closed);
  if (timed_out.load())
    return Fail("only " + std::to_string(records) + " of " + std::to_string(a.num_records) +
                " records arrived (none for " + std::to_string(a.timeout_ms) + " ms)");
  if (g_stop.load()) return Fail("interrupted after " + std::to_string(records) + " records");
  return kExitOk;
}

}  // namespace

RunFn RegisterPerf(CLI::App* sub, GlobalOptions* g) {
  sub->require_subcommand(1);
  AddDataDirOption(sub, g);
  AddBootstrapOption(sub, g);

  auto pa = std::make_shared<ProduceArgs>();
  CLI::App* prod = sub->add_subcommand("produce", "write generated records and measure the rate "
                                                  "and each record's latency");
  prod->add_option("-t,--topic", pa->topic, "topic to write to")->required()->type_name("TOPIC");
  prod->add_option("-n,--num-records", pa->num_records, "records to write")->required();
  prod->add_option("-s,--record-size", pa->record_size, "bytes in each value (default 100)")
      ->check(NonNegative());
  prod->add_option("--throughput", pa->throughput,
                   "at most N records/s (default -1: as fast as it goes)");
  prod->add_option("--acks", pa->acks,
                   "with -b: acknowledgements to wait for: 0, 1 or all (default all)")
      ->check(OneOf({"0", "1", "all", "-1"}));
  prod->add_flag("--no-idempotence", pa->no_idempotence,
                 "with -b: no producer id and sequence numbers");
  prod->add_option("-z,--compression", pa->compression, "none, gzip, snappy, lz4 or zstd")
      ->check(OneOf({"none", "gzip", "snappy", "lz4", "zstd"}));
  prod->add_option("-p,--partition", pa->partition, "write every record to partition N")
      ->check(NonNegative());
  prod->add_option("--batch-size", pa->batch_size, "close a batch at this many bytes (default 256 KiB)");
  prod->add_option("--linger-ms", pa->linger_ms, "send a batch once it waited MS (default 5)");
  prod->add_option("--interval-ms", pa->interval_ms, "report every MS (default 5000)");
  prod->add_option("--format", pa->format, "output format: text or json")
      ->check(OneOf({"text", "json"}));
  AddDataDirOption(prod, g);
  AddBootstrapOption(prod, g);

  auto ca = std::make_shared<ConsumeArgs>();
  CLI::App* cons = sub->add_subcommand("consume", "read a topic and measure the rate");
  cons->add_option("-t,--topic", ca->topic, "topic to read")->required()->type_name("TOPIC");
  cons->add_option("-n,--num-records", ca->num_records,
                   "stop after N records, waiting for them (default: read to the end)");
  cons->add_option("-p,--partition", ca->partitions, "read only partition N (repeatable)")
      ->allow_extra_args(false)
      ->check(NonNegative());
  cons->add_option("-o,--offset", ca->offset, "start at beginning, end, N, -N or @TIME (default "
                                              "beginning)");
  cons->add_option("--timeout-ms", ca->timeout_ms,
                   "with -n: give up after MS without a record (default 10000)");
  cons->add_option("--interval-ms", ca->interval_ms, "report every MS (default 5000)");
  cons->add_option("--format", ca->format, "output format: text or json")
      ->check(OneOf({"text", "json"}));
  AddDataDirOption(cons, g);
  AddBootstrapOption(cons, g);

  return [=]() {
    if (prod->parsed()) {
      if (!NetworkMode(*g)) {
        if (prod->count("--acks") > 0) return Fail("--acks needs -b: a data dir has no acks");
        if (pa->no_idempotence) return Fail("--no-idempotence needs -b");
      }
      return RunProduce(*g, *pa);
    }
    if (cons->parsed()) return RunConsume(*g, *ca);
    return Fail("perf: expected a subcommand: produce or consume");
  };
}

}  // namespace silt::cmd
