// consume_bench: how fast a librdkafka consumer reads one partition, without printing it.
//
// kcat -C spends much of its time formatting and writing every record; this reads the same
// partition through the same library (the simple consumer API that kcat -C uses) and only
// counts records and bytes, so the figure is the broker's and the library's, not kcat's output
// path. Reads from the beginning until the partition's end (enable.partition.eof) or until -c
// records, then prints records/s and MiB/s measured from the consumer's creation to the last
// record, and how long the first record took (start-up: connection, metadata, ListOffsets).
// Reaching the end costs one more fetch that the broker holds for fetch.wait.max.ms, as Kafka
// does; that wait comes after the last record and is not counted.
//
// Usage: consume_bench -b HOST:PORT -t TOPIC [-p PARTITION] [-c COUNT] [-X key=value]...
#include <librdkafka/rdkafka.h>
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace {

double NowSec() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Counts {
  int64_t limit = -1;
  int64_t records = 0;
  int64_t bytes = 0;
  bool done = false;
  bool failed = false;
};

void OnMessage(rd_kafka_message_t* m, void* opaque) {
  auto* c = static_cast<Counts*>(opaque);
  if (c->done) return;
  if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
    c->done = true;
  } else if (m->err) {
    std::fprintf(stderr, "consume_bench: %s\n", rd_kafka_message_errstr(m));
    c->failed = true;
    c->done = true;
  } else {
    ++c->records;
    c->bytes += static_cast<int64_t>(m->len + m->key_len);
    if (c->records == c->limit) c->done = true;
  }
}

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr,
               "consume_bench: %s\nusage: consume_bench -b HOST:PORT -t TOPIC [-p PARTITION] "
               "[-c COUNT] [-X key=value]...\n",
               why);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  std::string brokers, topic;
  int32_t partition = 0;
  int64_t limit = -1;
  std::vector<std::pair<std::string, std::string>> settings;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) Usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "-b") brokers = next();
    else if (a == "-t") topic = next();
    else if (a == "-p") partition = std::atoi(next());
    else if (a == "-c") limit = std::atoll(next());
    else if (a == "-X") {
      std::string kv = next();
      auto eq = kv.find('=');
      if (eq == std::string::npos) Usage("-X wants key=value");
      settings.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    } else {
      Usage(("unknown argument " + a).c_str());
    }
  }
  if (brokers.empty() || topic.empty()) Usage("-b and -t are required");

  double t0 = NowSec();
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  settings.insert(settings.begin(), {{"bootstrap.servers", brokers},
                                     {"enable.partition.eof", "true"},
                                     {"enable.auto.commit", "false"},
                                     {"enable.auto.offset.store", "false"}});
  for (const auto& [k, v] : settings) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof(err)) != RD_KAFKA_CONF_OK) {
      std::fprintf(stderr, "consume_bench: %s\n", err);
      return 2;
    }
  }
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
  if (rk == nullptr) {
    std::fprintf(stderr, "consume_bench: %s\n", err);
    return 2;
  }
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
  // Start at the log start offset asked for explicitly. With RD_KAFKA_OFFSET_BEGINNING,
  // librdkafka 2.0 often looks the offset up before it has mapped the partition to its leader
  // and then retries only after a fixed 500 ms, which would dwarf the read itself.
  int64_t low = 0, high = 0;
  rd_kafka_resp_err_t qe =
      rd_kafka_query_watermark_offsets(rk, topic.c_str(), partition, &low, &high, 10000);
  if (qe != RD_KAFKA_RESP_ERR_NO_ERROR) {
    std::fprintf(stderr, "consume_bench: watermarks: %s\n", rd_kafka_err2str(qe));
    return 1;
  }
  if (rd_kafka_consume_start(rkt, partition, low) != 0) {
    std::fprintf(stderr, "consume_bench: consume_start: %s\n",
                 rd_kafka_err2str(rd_kafka_last_error()));
    return 1;
  }

  // rd_kafka_consume_callback serves whatever has arrived and returns (rd_kafka_consume_batch
  // would wait out its whole timeout for a last, partial batch).
  Counts counts;
  counts.limit = limit;
  double last = t0, first = 0;
  while (!counts.done) {
    int64_t before = counts.records;
    int n = rd_kafka_consume_callback(rkt, partition, 100, OnMessage, &counts);
    if (n < 0) {
      std::fprintf(stderr, "consume_bench: %s\n", rd_kafka_err2str(rd_kafka_last_error()));
      counts.failed = true;
      break;
    }
    if (counts.records > before) {
      last = NowSec();
      if (before == 0) first = last;
    }
  }
  int64_t records = counts.records, bytes = counts.bytes;
  int exit_code = counts.failed ? 1 : 0;
  double secs = last - t0;
  rd_kafka_consume_stop(rkt, partition);
  rd_kafka_topic_destroy(rkt);
  rd_kafka_destroy(rk);
  if (secs <= 0) secs = 1e-9;
  std::printf("%lld records, %lld bytes in %.3f s: %.0f records/s, %.1f MiB/s "
              "(first record after %.3f s)\n",
              static_cast<long long>(records), static_cast<long long>(bytes), secs,
              static_cast<double>(records) / secs, static_cast<double>(bytes) / secs / 1048576.0,
              records > 0 ? first - t0 : 0.0);
  return exit_code;
}
