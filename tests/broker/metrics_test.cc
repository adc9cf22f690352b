// /metrics on an in-process broker: scraped over HTTP (cpp-httplib's client, and raw bytes for
// what a client library will not send) before and after a produce, the request, byte, record,
// connection and partition series move; any other path is 404, any other method 405. Error
// codes are counted from every API's responses; partitions, groups, delayed operations, storage
// flushes and rolls, and a leader's view of its followers show up as series. The registry is
// the process's, shared by every broker of the test binary, so counters are compared before
// and after.
#include <httplib.h>

#include <chrono>
#include <regex>
#include <thread>

#include "broker/local_metadata_store.h"
#include "broker/partition.h"
#include "broker/partition_manager.h"
#include "broker_test_util.h"
#include "hand_cluster.h"

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

// The same, with a series not yet rendered counting as 0 (a counter before its first event).
double Count(const std::string& text, const std::string& series) {
  return std::max(0.0, Sample(text, series));
}

std::string Scrape(int port) {
  httplib::Client http("127.0.0.1", port);
  auto r = http.Get("/metrics");
  REQUIRE_MESSAGE(r, httplib::to_string(r.error()));
  REQUIRE(r->status == 200);
  return r->body;
}

std::string Errors(const std::string& api, const std::string& error) {
  return "silt_request_errors_total{api=\"" + api + "\",error=\"" + error + "\"}";
}

std::string PartitionSeries(const std::string& name, const std::string& topic, int p = 0) {
  return name + "{partition=\"" + std::to_string(p) + "\",topic=\"" + topic + "\"}";
}

BrokerConfig WithMetrics(BrokerConfig c = {}) {
  c.metrics_host = "127.0.0.1";
  c.metrics_port = 0;
  return c;
}

// Polls `cond` on fresh scrapes for up to 5 s; the last scrape stays in *text.
template <typename Cond>
bool ScrapeUntil(int port, std::string* text, Cond cond) {
  for (int i = 0; i < 100; ++i) {
    *text = Scrape(port);
    if (cond(*text)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
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
  CHECK(post->status == 405);
  CHECK(post->get_header_value("Allow") == "GET, HEAD");
  auto head = http.Head("/metrics");
  REQUIRE(head);
  CHECK(head->status == 200);
  CHECK(head->body.empty());
  CHECK(std::stoul(head->get_header_value("Content-Length")) > 0);
}

namespace {

// What the server sends on `c` until it closes the connection (or 5 s pass without a byte).
std::string ReadToClose(Client& c) {
  std::string out;
  CHECK(c.ReadUntilClosed(&out));
  return out;
}

int CountOf(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE(
    "the metrics server keeps a connection alive, answers pipelined requests in order, and "
    "closes on a bad or oversized request while it goes on serving") {
  TestBroker b(WithMetrics());
  const int port = b.server->metrics_port();
  {
    // Two pipelined requests on one connection, the second asking to close: two answers, in
    // order, then the close.
    Client c(port);
    REQUIRE(
        c.SendRaw("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
                  "HEAD /metrics?name=x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
    const std::string got = ReadToClose(c);
    CHECK(CountOf(got, "HTTP/1.1 200 OK\r\n") == 2);
    CHECK(got.find("Connection: keep-alive") < got.find("Connection: close"));
    CHECK(got.find("silt_connections") != std::string::npos);
  }
  {
    // HTTP/1.0 closes after one answer unless asked to keep alive.
    Client c(port);
    REQUIRE(c.SendRaw("GET /metrics HTTP/1.0\r\n\r\n"));
    CHECK(CountOf(ReadToClose(c), "HTTP/1.1 200 OK") == 1);
  }
  {
    Client c(port);
    REQUIRE(c.SendRaw("NONSENSE\r\n\r\n"));
    CHECK(ReadToClose(c).rfind("HTTP/1.1 400 ", 0) == 0);
  }
  {
    Client c(port);
    REQUIRE(c.SendRaw("GET /metrics HTTP/2.0\r\n\r\n"));
    CHECK(ReadToClose(c).rfind("HTTP/1.1 400 ", 0) == 0);
  }
  {
    // A head that never ends within the limit is answered 431 and closed.
    Client c(port);
    REQUIRE(c.SendRaw("GET /metrics HTTP/1.1\r\nX-Filler: " + std::string(20000, 'a')));
    CHECK(ReadToClose(c).rfind("HTTP/1.1 431 ", 0) == 0);
  }
  {
    // A request with a body is answered and the connection closed (the body is not read).
    Client c(port);
    REQUIRE(c.SendRaw("PUT /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"));
    const std::string got = ReadToClose(c);
    CHECK(got.rfind("HTTP/1.1 405 ", 0) == 0);
    CHECK(got.find("Connection: close") != std::string::npos);
  }
  // And the server still answers.
  CHECK(Scrape(port).find("silt_connections") != std::string::npos);
}

TEST_CASE("error codes are counted from every API's responses, top level and per partition") {
  BrokerConfig c = WithMetrics();
  c.auto_create_topics = false;
  TestBroker b(c);
  const int port = b.server->metrics_port();
  Client k(b.port);
  CreateTopic(k, "errs");
  const std::string t0 = Scrape(port);

  // Metadata: one error per unknown topic of the answer.
  protocol::MetadataRequest md;
  md.topics = std::vector<protocol::MetadataRequest::Topic>{};
  md.topics->push_back({});
  md.topics->back().name = "missing-a";
  md.topics->push_back({});
  md.topics->back().name = "missing-b";
  md.allow_auto_topic_creation = false;
  protocol::MetadataResponse mr;
  k.Call(md, 8, &mr);
  REQUIRE(mr.topics.size() == 2);
  REQUIRE(mr.topics[0].error_code != 0);
  // Fetch: a partition that does not exist beside one that does (no error for it).
  protocol::FetchRequest f = MakeFetch("errs", 0, 0);
  protocol::FetchRequest::Partition missing = f.topics[0].partitions[0];
  missing.partition = 7;
  f.topics[0].partitions.push_back(missing);
  protocol::FetchResponse fr;
  k.Call(f, 11, &fr);
  REQUIRE(fr.responses[0].partitions.size() == 2);
  // Produce: two partitions that do not exist in one request.
  std::string batch = MakeBatch(1);
  protocol::ProduceRequest p = MakeProduce("errs", 5, batch);
  p.topic_data[0].partition_data.push_back(p.topic_data[0].partition_data[0]);
  p.topic_data[0].partition_data[1].index = 6;
  protocol::ProduceResponse pr;
  k.Call(p, 8, &pr);
  // Heartbeat: a top-level error of a group API.
  protocol::HeartbeatRequest hb;
  hb.group_id = "nobody";
  hb.generation_id = 1;
  hb.member_id = "m";
  protocol::HeartbeatResponse hr;
  k.Call(hb, 3, &hr);
  REQUIRE(hr.error_code != 0);
  const std::string hb_error = protocol::ErrorName(hr.error_code);

  const std::string t1 = Scrape(port);
  const std::string unknown = "UNKNOWN_TOPIC_OR_PARTITION";
  CHECK(Count(t1, Errors("Metadata", unknown)) == Count(t0, Errors("Metadata", unknown)) + 2);
  CHECK(Count(t1, Errors("Fetch", unknown)) == Count(t0, Errors("Fetch", unknown)) + 1);
  CHECK(Count(t1, Errors("Produce", unknown)) == Count(t0, Errors("Produce", unknown)) + 2);
  CHECK(Count(t1, Errors("Heartbeat", hb_error)) == Count(t0, Errors("Heartbeat", hb_error)) + 1);
  CHECK(t1.find("error=\"NONE\"") == std::string::npos);
}

TEST_CASE("partition sizes, segment rolls, flush latency, groups and their lag are exported") {
  BrokerConfig c = WithMetrics();
  c.group_initial_rebalance_delay_ms = 0;
  TestBroker b(c);
  const int port = b.server->metrics_port();
  Client k(b.port);
  // Small segments and a flush after every message: each produce below rolls and flushes.
  CreateTopicWithConfigs(k, "sized", {{"segment.bytes", "100"}, {"flush.messages", "1"}});
  const std::string t0 = Scrape(port);
  protocol::ProduceResponse r;
  for (int i = 0; i < 4; ++i) {
    k.Call(MakeProduce("sized", 0, MakeBatch(2)), 8, &r);
    REQUIRE(r.responses[0].partition_responses[0].error_code == 0);
  }

  // A group with a committed offset and no members, and one with a member (no SyncGroup yet).
  protocol::OffsetCommitRequest oc;
  oc.group_id = "behind";
  oc.topics.push_back({"sized", {}});
  oc.topics[0].partitions.push_back({});
  oc.topics[0].partitions[0].committed_offset = 3;
  protocol::OffsetCommitResponse ocr;
  k.Call(oc, 2, &ocr);
  REQUIRE(ocr.topics[0].partitions[0].error_code == 0);
  protocol::JoinGroupRequest jg;
  jg.group_id = "joined";
  jg.session_timeout_ms = 10000;
  jg.rebalance_timeout_ms = 10000;
  jg.protocol_type = "consumer";
  jg.protocols.push_back({"range", "x"});
  protocol::JoinGroupResponse jr;
  k.Call(jg, 3, &jr);
  REQUIRE(jr.error_code == 0);

  const std::string t1 = Scrape(port);
  CHECK(Sample(t1, PartitionSeries("silt_partition_log_end_offset", "sized")) == 8);
  CHECK(Sample(t1, PartitionSeries("silt_partition_size_bytes", "sized")) > 4 * 61);
  CHECK(Count(t1, "silt_log_segment_rolls_total") >= Count(t0, "silt_log_segment_rolls_total") + 3);
  CHECK(Sample(t1, "silt_log_flush_duration_seconds_count") >=
        Sample(t0, "silt_log_flush_duration_seconds_count") + 4);
  CHECK(t1.find("# TYPE silt_log_flush_duration_seconds histogram") != std::string::npos);
  CHECK(Sample(t1, "silt_group_lag{group=\"behind\",partition=\"0\",topic=\"sized\"}") == 5);
  CHECK(Sample(t1, "silt_group_members{group=\"behind\"}") == 0);
  CHECK(Sample(t1, "silt_group_members{group=\"joined\"}") == 1);
  CHECK(Sample(t1, "silt_groups{state=\"Empty\"}") == 1);
  CHECK(Sample(t1, "silt_groups{state=\"CompletingRebalance\"}") == 1);
  CHECK(Sample(t1, "silt_groups{state=\"Stable\"}") == 0);
  CHECK(Sample(t1, "silt_metrics_series_omitted") == 0);
  CHECK(Sample(t1, "silt_offline_partitions") == 0);
}

TEST_CASE("a waiting consumer fetch is counted until data arrives") {
  TestBroker b(WithMetrics());
  const int port = b.server->metrics_port();
  Client k(b.port);
  CreateTopic(k, "waiting");
  Client consumer(b.port);
  consumer.Send(MakeFetch("waiting", 0, 0, /*max_wait_ms=*/10000), 11, 1);
  std::string t;
  CHECK(ScrapeUntil(port, &t, [](const std::string& x) {
    return Sample(x, "silt_delayed_fetches{kind=\"consumer\"}") == 1;
  }));
  protocol::ProduceResponse r;
  k.Call(MakeProduce("waiting", 0, MakeBatch(1)), 8, &r);
  protocol::FetchResponse fr;
  REQUIRE(consumer.Receive(&fr, 11) == 1);
  CHECK(ScrapeUntil(port, &t, [](const std::string& x) {
    return Sample(x, "silt_delayed_fetches{kind=\"consumer\"}") == 0;
  }));
}

TEST_CASE(
    "a leader exports its followers' lag, under-min-ISR partitions and waiting acks=all "
    "produces") {
  HandClusterBroker b(WithMetrics());
  const int port = b.server->metrics_port();
  Client k(b.port);
  CreateTopicWithConfigs(k, "led", {{"min.insync.replicas", "2"}});
  auto part = b.Get("led");
  constexpr NodeId kLocal{1}, kFollower{2};
  REQUIRE(part->BecomeLeader(LeaderEpoch(1), 0, {kLocal, kFollower}, {kLocal, kFollower}).ok());
  std::string t;
  Client producer(b.port);
  const std::string batch = MakeBatch(3);
  producer.Send(MakeProduce("led", 0, batch, /*acks=*/-1), 8, 1);
  const std::string lag = "{follower=\"2\",partition=\"0\",topic=\"led\"}";
  // The gauge is process-wide: waiting for this produce's append too keeps an operation of an
  // earlier test, still being torn down, from passing for it.
  CHECK(ScrapeUntil(port, &t, [](const std::string& x) {
    return Sample(x, "silt_delayed_produces") == 1 &&
           Sample(x, "silt_partition_log_end_offset{partition=\"0\",topic=\"led\"}") == 3;
  }));
  CHECK(Sample(t, "silt_under_min_isr_partitions") == 0);
  CHECK(Sample(t, "silt_follower_lag_records" + lag) == 3);  // it has not fetched yet
  CHECK(Sample(t, "silt_follower_lag_ms" + lag) >= 0);       // in the ISR: caught up at the start

  // The follower fetches everything: the produce is answered and the lag is gone. Its peer
  // connection counts as open until it closes.
  const double connections = Sample(Scrape(port), "silt_connections");
  auto peer = b.Peer(kFollower);
  CHECK(Sample(Scrape(port), "silt_connections") == connections + 1);
  protocol::FetchRequest f = MakeFetch("led", 0, 0);
  f.replica_id = kFollower.value();
  f.topics[0].partitions[0].log_start_offset = 0;
  protocol::FetchResponse fr;
  peer->Call(f, 11, &fr);
  f.topics[0].partitions[0].fetch_offset = 3;
  f.max_wait_ms = 10000;
  peer->Send(f, 11, 99);  // at the log end: waits
  protocol::ProduceResponse pr;
  REQUIRE(producer.Receive(&pr, 8) == 1);
  CHECK(pr.responses[0].partition_responses[0].error_code == 0);
  CHECK(ScrapeUntil(port, &t, [&](const std::string& x) {
    return Sample(x, "silt_delayed_produces") == 0 &&
           Sample(x, "silt_delayed_fetches{kind=\"follower\"}") == 1;
  }));
  CHECK(Sample(t, "silt_follower_lag_records" + lag) == 0);
  CHECK(Sample(t, "silt_follower_lag_ms" + lag) >= 0);
  CHECK(Sample(t, "silt_follower_lag_ms" + lag) < 5000);
  // One more record wakes the waiting follower fetch; then the follower goes away.
  k.Call(MakeProduce("led", 0, MakeBatch(1), /*acks=*/1), 8, &pr);
  REQUIRE(peer->Receive(&fr, 11) == 99);
  peer.reset();
  CHECK(ScrapeUntil(port, &t, [&](const std::string& x) {
    return Sample(x, "silt_connections") == connections;
  }));

  // The follower leaves the ISR: below min.insync.replicas=2.
  REQUIRE(part->BecomeLeader(LeaderEpoch(1), 1, {kLocal, kFollower}, {kLocal}).ok());
  t = Scrape(port);
  CHECK(Sample(t, "silt_under_min_isr_partitions") == 1);
}
