// NetProducer against an in-process broker: what reaches the log, batch by batch.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "base/file.h"
#include "broker_test_util.h"
#include "client/admin.h"
#include "client/cluster.h"
#include "client/net_producer.h"
#include "format/layout.h"
#include "format/record_batch.h"
#include "protocol/messages.h"

namespace silt::client {
namespace {

using broker::testing::TestBroker;

std::unique_ptr<Cluster> ConnectTo(const TestBroker& b) {
  ClusterOptions o;
  o.bootstrap.push_back({"127.0.0.1", b.port});
  auto c = Cluster::Connect(o);
  REQUIRE_MESSAGE(c.ok(), c.status().ToString());
  return std::move(c).value();
}

struct PartitionContents {
  int batches = 0;
  std::vector<std::string> values;
};

// Reads a partition's first segment as the broker wrote it (Kafka's format), batch by batch.
PartitionContents ReadPartition(const std::string& data_dir, const std::string& topic, int p) {
  auto data = ReadFile(data_dir + "/" + topic + "-" + std::to_string(p) +
                       "/00000000000000000000.log");
  REQUIRE_MESSAGE(data.ok(), data.status().ToString());
  PartitionContents out;
  std::string_view rest(*data);
  while (!rest.empty()) {
    auto view = format::RecordBatchView::Parse(rest);
    REQUIRE_MESSAGE(view.ok(), view.status().ToString());
    ++out.batches;
    REQUIRE(view->ForEachRecord([&](const format::RecordView& r) {
                   out.values.emplace_back(r.value);
                   return true;
                 })
                .ok());
    rest.remove_prefix(view->bytes().size());
  }
  return out;
}

}  // namespace

TEST_CASE("records for a partition that waits for an answer join its open batch, not a batch each") {
  // With linger.ms=0 every record may go at once, but a partition has one request in flight
  // at a time without idempotence: what arrives meanwhile must wait in one growing batch.
  TestBroker b;
  auto cluster = ConnectTo(b);
  REQUIRE(CreateTopic(cluster.get(), {"t", 4, -1, {}}).ok());
  NetProducerOptions o;
  o.acks = 1;
  o.linger_ms = 0;
  o.partitioner = Partitioner::Kind::kRoundRobin;
  auto p = NetProducer::Open(cluster.get(), "t", o);
  REQUIRE_MESSAGE(p.ok(), p.status().ToString());
  const int n = 40000;
  for (int i = 0; i < n; ++i) {
    std::string v = "value-" + std::to_string(i);
    REQUIRE((*p)->Send(std::nullopt, v, {}).ok());
  }
  REQUIRE((*p)->Flush().ok());
  CHECK((*p)->records_sent() == n);
  CHECK((*p)->records_failed() == 0);
  int batches = 0, records = 0;
  for (int part = 0; part < 4; ++part) {
    PartitionContents c = ReadPartition(b.data_dir, "t", part);
    batches += c.batches;
    records += static_cast<int>(c.values.size());
  }
  CHECK(records == n);
  // One batch per record before: every Poll() closed each partition's open batch. How many
  // records share a batch depends on how fast the broker answers (a sanitizer build answers
  // relatively sooner), so the bound is loose: several records a batch, far from one.
  CHECK_MESSAGE(batches <= n / 4, batches, " batches for ", n, " records");
}

TEST_CASE("keyed records over 64 partitions each arrive once, in the order sent per partition") {
  TestBroker b;
  auto cluster = ConnectTo(b);
  const int parts = 64;
  REQUIRE(CreateTopic(cluster.get(), {"wide", parts, -1, {}}).ok());
  for (bool idempotent : {false, true}) {
    CAPTURE(idempotent);
    NetProducerOptions o;
    o.acks = idempotent ? -1 : 1;
    o.idempotent = idempotent;
    o.batch_bytes = 4096;            // several batches per partition
    o.max_buffered_bytes = 1 << 20;  // and Send() has to wait for answers
    auto p = NetProducer::Open(cluster.get(), "wide", o);
    REQUIRE_MESSAGE(p.ok(), p.status().ToString());
    const int n = 60000;
    for (int i = 0; i < n; ++i) {
      std::string k = "key-" + std::to_string(i % 20000);
      std::string v = std::string(idempotent ? "i" : "a") + std::to_string(i);
      REQUIRE((*p)->Send(k, v, {}).ok());
    }
    REQUIRE((*p)->Flush().ok());
    CHECK((*p)->records_sent() == n);
    CHECK((*p)->records_failed() == 0);
  }
  // Per partition, the values of each round come in increasing i.
  int total = 0;
  for (int part = 0; part < parts; ++part) {
    PartitionContents c = ReadPartition(b.data_dir, "wide", part);
    total += static_cast<int>(c.values.size());
    long last_a = -1, last_i = -1;
    bool seen_i = false;
    for (const std::string& v : c.values) {
      long i = std::stol(v.substr(1));
      if (v[0] == 'a') {
        REQUIRE_FALSE(seen_i);  // the second producer started after the first flushed
        REQUIRE(i > last_a);
        last_a = i;
      } else {
        seen_i = true;
        REQUIRE(i > last_i);
        last_i = i;
      }
    }
  }
  CHECK(total == 2 * 60000);
}

TEST_CASE("Poll reads an answer that has arrived, without waiting for more records") {
  TestBroker b;
  auto cluster = ConnectTo(b);
  REQUIRE(CreateTopic(cluster.get(), {"p", 1, -1, {}}).ok());
  NetProducerOptions o;
  o.acks = 1;
  o.linger_ms = 0;
  auto p = NetProducer::Open(cluster.get(), "p", o);
  REQUIRE_MESSAGE(p.ok(), p.status().ToString());
  REQUIRE((*p)->Send(std::nullopt, std::string_view("one"), {}).ok());  // sent at once (linger 0)
  // Send() looks for answers only every so many records; Poll() looks whenever it is called
  // (fewer calls than the 8 after which it used to look).
  for (int i = 0; i < 7 && (*p)->records_delivered() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    REQUIRE((*p)->Poll().ok());
  }
  CHECK((*p)->records_delivered() == 1);
  REQUIRE((*p)->Flush().ok());
}

TEST_CASE("Produce answers are matched to their partitions in the request's order or any other") {
  using PR = protocol::ProduceResponse::PartitionResponse;
  std::vector<PR> prs(4);
  for (int i = 0; i < 4; ++i) {
    prs[i].index = 10 + i;
    prs[i].error_code = static_cast<int16_t>(i);
  }
  std::vector<const PR*> in_order = {&prs[0], &prs[1], &prs[2], &prs[3]};
  auto m = MatchProduceAnswers({10, 11, 12, 13}, in_order);
  REQUIRE(m.size() == 4);
  for (int i = 0; i < 4; ++i) CHECK(m[i] == &prs[i]);

  // Reversed, with one partition unanswered and one answer for a partition not asked.
  PR stray;
  stray.index = 99;
  std::vector<const PR*> shuffled = {&stray, &prs[3], &prs[1], &prs[0]};
  m = MatchProduceAnswers({10, 11, 12, 13}, shuffled);
  REQUIRE(m.size() == 4);
  CHECK(m[0] == &prs[0]);
  CHECK(m[1] == &prs[1]);
  CHECK(m[2] == nullptr);
  CHECK(m[3] == &prs[3]);

  CHECK(MatchProduceAnswers({10}, {}) == std::vector<const PR*>{nullptr});
}

TEST_CASE("a connection frames a small request correctly after a large one") {
  // The request buffer is kept between requests: what the first left in it must not leak into
  // the second.
  TestBroker b;
  auto cluster = ConnectTo(b);
  REQUIRE(CreateTopic(cluster.get(), {"frames", 2, -1, {}}).ok());
  auto conn = cluster->Node(0);
  REQUIRE_MESSAGE(conn.ok(), conn.status().ToString());
  auto version = (*conn)->RequireVersion(protocol::ApiKey::kProduce);
  REQUIRE(version.ok());
  auto batch_of = [](const std::string& value) {
    format::RecordBatchBuilder builder(format::RecordBatchBuilder::Options{});
    builder.Add(std::nullopt, value, -1, {});
    auto bytes = builder.Finish();
    REQUIRE(bytes.ok());
    return *bytes;
  };
  const std::string big = batch_of(std::string(300000, 'x'));
  const std::string small = batch_of("y");
  for (const std::string* batch : {&big, &small}) {
    protocol::ProduceRequest req;
    req.acks = 1;
    req.timeout_ms = 30000;
    req.topic_data.push_back({"frames", {}});
    protocol::ProduceRequest::PartitionData pd;
    pd.index = batch == &big ? 0 : 1;
    pd.records.bytes = std::string_view(*batch);
    req.topic_data[0].partition_data.push_back(pd);
    protocol::ProduceResponse resp;
    REQUIRE((*conn)->Call(req, &resp, *version).ok());
    REQUIRE(resp.responses.size() == 1);
    REQUIRE(resp.responses[0].partition_responses.size() == 1);
    CHECK(resp.responses[0].partition_responses[0].error_code == 0);
  }
  PartitionContents c0 = ReadPartition(b.data_dir, "frames", 0);
  PartitionContents c1 = ReadPartition(b.data_dir, "frames", 1);
  REQUIRE(c0.values.size() == 1);
  CHECK(c0.values[0] == std::string(300000, 'x'));
  REQUIRE(c1.values.size() == 1);
  CHECK(c1.values[0] == "y");
}

}  // namespace silt::client
