// mock_broker: librdkafka's in-memory mock broker as a process of its own, with topics of any
// partition count.
//
// kcat's `-X test.mock.num.brokers=1` starts the same mock inside kcat, but its auto-created
// topics always have 4 partitions. This program starts a one-broker mock cluster, creates each
// --topic NAME:PARTITIONS, prints "bootstrap HOST:PORT" on stdout and serves until its stdin
// closes (or it is killed). A client pointed at it does everything it does against a real broker
// (TCP on loopback, Metadata, Produce) while the broker side costs next to nothing per
// partition: the pair shows what the client itself can do at a given partition count.
//
// Usage: mock_broker --topic NAME:PARTITIONS [--topic NAME:PARTITIONS]...
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  // The handle only hosts the mock cluster's thread; it never connects anywhere.
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  if (rk == nullptr) {
    std::fprintf(stderr, "mock_broker: %s\n", err);
    return 1;
  }
  rd_kafka_mock_cluster_t* mc = rd_kafka_mock_cluster_new(rk, 1);
  if (mc == nullptr) {
    std::fprintf(stderr, "mock_broker: could not start the mock cluster\n");
    return 1;
  }
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--topic") != 0 || i + 1 >= argc) {
      std::fprintf(stderr, "usage: mock_broker --topic NAME:PARTITIONS...\n");
      return 2;
    }
    std::string spec = argv[++i];
    size_t colon = spec.rfind(':');
    int parts = colon == std::string::npos ? 0 : std::atoi(spec.c_str() + colon + 1);
    if (parts < 1) {
      std::fprintf(stderr, "mock_broker: bad --topic '%s' (expected NAME:PARTITIONS)\n",
                   spec.c_str());
      return 2;
    }
    rd_kafka_resp_err_t e = rd_kafka_mock_topic_create(mc, spec.substr(0, colon).c_str(), parts, 1);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      std::fprintf(stderr, "mock_broker: topic %s: %s\n", spec.c_str(), rd_kafka_err2str(e));
      return 1;
    }
  }
  std::printf("bootstrap %s\n", rd_kafka_mock_cluster_bootstraps(mc));
  std::fflush(stdout);
  char buf[256];
  while (read(0, buf, sizeof(buf)) > 0) {
  }
  rd_kafka_mock_cluster_destroy(mc);
  rd_kafka_destroy(rk);
  return 0;
}
