// /metrics on an in-process broker: scraped over HTTP before and after a produce, the request,
// byte, record, connection and partition series move; anything but GET /metrics is 404.
#include <httplib.h>

#include <regex>

#include "broker_test_util.h"

using namespace silt;
using namespace silt::broker;
using namespace silt::broker::testing;

namespace {

// The value of the sample line `series` (name with labels, exactly as rendered), or -1.
double Sample(const std::string& text, const std::string& series) {
  size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 2));
}

}  // namespace

TEST_CASE("metrics move after a produce and are served only at GET /metrics") {
  BrokerConfig c;
  c.metrics_host = "127.0.0.1";
  c.metrics_port = 0;
  TestBroker b(c);
  const int port = b.server->metrics_port();
  REQUIRE(port > 0);
  httplib::Client http("127.0.0.1", port);
  auto before = http.Get("/metrics");
  REQUIRE_MESSAGE(before, httplib::to_string(before.error()));
  CHECK(before->status == 200);
  CHECK(before->get_header_value("Content-Type").find("version=0.0.4") != std::string::npos);
  const std::string& t0 = before->body;
  const double produce0 = Sample(t0, "silt_requests_total{api=\"Produce\",version=\"8\"}");
  const double in0 = Sample(t0, "silt_network_received_bytes_total");
  const double records0 = Sample(t0, "silt_produce_records_total");
  CHECK(produce0 >= 0);
  CHECK(in0 >= 0);

  {
    Client k(b.port);
    CreateTopic(k, "scraped");
    protocol::ProduceResponse r;
    k.Call(MakeProduce("scraped", 0, MakeBatch(5)), 8, &r);
    REQUIRE(r.responses[0].partition_responses[0].error_code == 0);
    k.Call(MakeProduce("scraped", 0, MakeBatch(2)), 8, &r);
    // An error, counted by code.
    k.Call(MakeProduce("scraped", 9, MakeBatch(1)), 8, &r);
    REQUIRE(r.responses[0].partition_responses[0].error_code != 0);
    auto during = http.Get("/metrics");
    REQUIRE_MESSAGE(during, httplib::to_string(during.error()));
    CHECK(Sample(during->body, "silt_connections") >= 1);
  }

  auto after = http.Get("/metrics");
  REQUIRE(after);
  const std::string& t1 = after->body;
  CHECK(Sample(t1, "silt_requests_total{api=\"Produce\",version=\"8\"}") == produce0 + 3);
  CHECK(Sample(t1, "silt_network_received_bytes_total") > in0);
  CHECK(Sample(t1, "silt_network_sent_bytes_total") > 0);
  CHECK(Sample(t1, "silt_produce_records_total") == records0 + 7);
  CHECK(Sample(t1,
               "silt_request_errors_total{api=\"Produce\",error=\"UNKNOWN_TOPIC_OR_PARTITION\"}") >=
        1);
  CHECK(Sample(t1, "silt_partition_log_end_offset{partition=\"0\",topic=\"scraped\"}") == 7);
  CHECK(Sample(t1, "silt_partition_high_watermark{partition=\"0\",topic=\"scraped\"}") == 7);
  CHECK(Sample(t1, "silt_partitions_led") >= 1);
  CHECK(Sample(t1, "silt_under_replicated_partitions") == 0);
  CHECK(Sample(t1, "silt_request_duration_seconds_count{api=\"Produce\"}") >=
        Sample(t0, "silt_request_duration_seconds_count{api=\"Produce\"}") + 3);
  CHECK(std::regex_search(t1, std::regex("\nsilt_request_duration_seconds_bucket\\{api=\"Produce\","
                                         "le=\"\\+Inf\"\\} [1-9]")));
  CHECK(t1.find("silt_raft_term") == std::string::npos);  // no quorum on a single node

  auto root = http.Get("/");
  REQUIRE(root);
  CHECK(root->status == 404);
  auto other = http.Get("/metrics/x");
  REQUIRE(other);
  CHECK(other->status == 404);
  auto post = http.Post("/metrics", "x", "text/plain");
  REQUIRE(post);
  CHECK(post->status == 404);
}
