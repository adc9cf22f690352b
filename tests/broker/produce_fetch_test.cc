// Produce, Fetch, ListOffsets and idempotent producers against an in-process broker.
#include <thread>

#include "broker_test_util.h"

using namespace silt;
using namespace silt::broker;
using namespace silt::broker::testing;

namespace {

const protocol::ProduceResponse::PartitionResponse& Only(const protocol::ProduceResponse& r) {
  REQUIRE(r.responses.size() == 1);
  REQUIRE(r.responses[0].partition_responses.size() == 1);
  return r.responses[0].partition_responses[0];
}

std::vector<std::string> FetchValues(Client& c, const std::string& topic, int64_t offset,
                                     int16_t version = 11) {
  protocol::FetchResponse f;
  c.Call(MakeFetch(topic, 0, offset), version, &f);
  REQUIRE(f.responses.size() == 1);
  const auto& p = f.responses[0].partitions[0];
  REQUIRE(p.error_code == 0);
  return Values(p.records.bytes.value_or(""));
}

int64_t Produce(Client& c, const std::string& topic, const std::string& batch,
                int16_t* error = nullptr, int16_t version = 8) {
  protocol::ProduceResponse r;
  c.Call(MakeProduce(topic, 0, batch), version, &r);
  if (error) *error = Only(r).error_code;
  else REQUIRE(Only(r).error_code == 0);
  return Only(r).base_offset;
}

}  // namespace

TEST_CASE("records produced with every codec come back from fetch with their offsets") {
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "round");
  int64_t expected = 0;
  for (auto codec : {format::Compression::kNone, format::Compression::kGzip,
                     format::Compression::kSnappy, format::Compression::kLz4,
                     format::Compression::kZstd}) {
    CAPTURE(static_cast<int>(codec));
    CHECK(Produce(c, "round", MakeBatch(4, codec)) == expected);
    expected += 4;
  }
  std::vector<std::string> all;
  int64_t at = 0;
  while (at < expected) {
    auto v = FetchValues(c, "round", at);
    REQUIRE(!v.empty());
    all.insert(all.end(), v.begin(), v.end());
    at += static_cast<int64_t>(v.size());
  }
  REQUIRE(all.size() == 20);
  CHECK(all[0] == "value-0");
  CHECK(all[19] == "value-3");
  // Fetch v4 (the oldest served) sees the same data.
  CHECK(FetchValues(c, "round", 16, 4).size() == 4);

  protocol::FetchResponse f;
  c.Call(MakeFetch("round", 0, expected + 5), 11, &f);
  CHECK(f.responses[0].partitions[0].error_code == 1);  // OFFSET_OUT_OF_RANGE
  c.Call(MakeFetch("round", 0, 0), 11, &f);
  CHECK(f.responses[0].partitions[0].high_watermark == expected);
  CHECK(f.responses[0].partitions[0].last_stable_offset == expected);
  CHECK(f.responses[0].partitions[0].log_start_offset == 0);
}

TEST_CASE("a produced batch is stored as sent, with only baseOffset and leader epoch assigned") {
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "asis");
  std::string first = MakeBatch(3);
  std::string second = MakeBatch(5, format::Compression::kNone, -1, -1, -1, "other-");
  CHECK(Produce(c, "asis", first) == 0);
  CHECK(Produce(c, "asis", second) == 3);
  protocol::FetchResponse f;
  c.Call(MakeFetch("asis", 0, 0), 11, &f);
  std::string stored(f.responses[0].partitions[0].records.bytes.value_or(""));
  REQUIRE(stored.size() == first.size() + second.size());
  // baseOffset and partitionLeaderEpoch are the broker's; every other byte, batchLength and
  // the CRC included, is the producer's.
  auto check_batch = [](std::string_view got, std::string_view sent, int64_t base) {
    CHECK(static_cast<int64_t>(DecodeBE64(got.data())) == base);
    CHECK(got.substr(format::kBatchLengthOffset, 4) == sent.substr(format::kBatchLengthOffset, 4));
    CHECK(static_cast<int32_t>(DecodeBE32(got.data() + format::kPartitionLeaderEpochOffset)) == 0);
    CHECK(got.substr(format::kMagicOffset) == sent.substr(format::kMagicOffset));
  };
  check_batch(std::string_view(stored).substr(0, first.size()), first, 0);
  check_batch(std::string_view(stored).substr(first.size()), second, 3);
  CHECK(Values(stored).size() == 8);
}

TEST_CASE("produce answers per-partition errors for unknown partitions, bad batches and size") {
  BrokerConfig cfg;
  cfg.message_max_bytes = 64 * 1024;
  cfg.log_defaults.max_message_bytes = 64 * 1024;
  TestBroker b(cfg);
  Client c(b.port);
  CreateTopic(c, "strict");
  int16_t err = 0;

  Produce(c, "nope", MakeBatch(1), &err);
  CHECK(err == 3);  // UNKNOWN_TOPIC_OR_PARTITION

  std::string corrupt = MakeBatch(3);
  corrupt[corrupt.size() - 2] ^= 0x55;  // inside the records: the CRC no longer matches
  Produce(c, "strict", corrupt, &err);
  CHECK(err == 2);  // CORRUPT_MESSAGE

  format::RecordBatchBuilder big({});
  std::string v(100 * 1024, 'b');
  big.Add(std::string_view("k"), std::string_view(v));
  Produce(c, "strict", big.Finish().value(), &err);
  CHECK(err == 10);  // MESSAGE_TOO_LARGE

  // A compressed batch that is small on the wire but inflates past max.message.bytes.
  format::RecordBatchBuilder::Options o;
  o.compression = format::Compression::kZstd;
  format::RecordBatchBuilder bomb(o);
  std::string zeros(512 * 1024, '\0');
  bomb.Add(std::string_view("k"), std::string_view(zeros));
  std::string bomb_batch = bomb.Finish().value();
  REQUIRE(bomb_batch.size() < 64 * 1024);
  Produce(c, "strict", bomb_batch, &err);
  CHECK(err == 10);

  std::string legacy = MakeBatch(1);
  legacy[format::kMagicOffset] = 1;
  Produce(c, "strict", legacy, &err);
  CHECK(err == 87);  // INVALID_RECORD

  // None of that reached the log; a good batch still lands at offset 0.
  CHECK(Produce(c, "strict", MakeBatch(2)) == 0);
}

TEST_CASE("fetch answers whole batches within partition_max_bytes and max_bytes, at least one") {
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "sized", 2);
  // Five batches of ten records on each partition, all of one size.
  std::string one = MakeBatch(10);
  const int64_t batch = static_cast<int64_t>(one.size());
  for (int32_t p = 0; p < 2; ++p) {
    for (int i = 0; i < 5; ++i) {
      protocol::ProduceResponse r;
      c.Call(MakeProduce("sized", p, one), 8, &r);
      REQUIRE(Only(r).error_code == 0);
    }
  }
  auto fetch = [&](int32_t max_bytes, int32_t partition_max_bytes, int partitions) {
    protocol::FetchRequest f = MakeFetch("sized", 0, 0);
    f.max_bytes = max_bytes;
    f.topics[0].partitions[0].partition_max_bytes = partition_max_bytes;
    if (partitions == 2) {
      auto second = f.topics[0].partitions[0];
      second.partition = 1;
      f.topics[0].partitions.push_back(second);
    }
    protocol::FetchResponse resp;
    c.Call(f, 11, &resp);
    std::vector<int64_t> sizes;
    for (const auto& p : resp.responses[0].partitions) {
      REQUIRE(p.error_code == 0);
      sizes.push_back(static_cast<int64_t>(p.records.bytes.value_or("").size()));
    }
    return sizes;
  };
  // Two and a half batches' worth: two whole batches, never a cut one.
  CHECK(fetch(50 << 20, static_cast<int32_t>(batch * 5 / 2), 1) == std::vector<int64_t>{2 * batch});
  // Less than one batch: one whole batch anyway, so the consumer makes progress (KIP-74).
  CHECK(fetch(50 << 20, 10, 1) == std::vector<int64_t>{batch});
  // Everything fits: all five batches in one response.
  CHECK(fetch(50 << 20, 1 << 20, 1) == std::vector<int64_t>{5 * batch});
  // max_bytes spans partitions: the first partition takes what fits (at least one batch), the
  // next gets only what is left of the budget.
  CHECK(fetch(static_cast<int32_t>(batch * 3 / 2), 1 << 20, 2) == std::vector<int64_t>{batch, 0});
  CHECK(fetch(static_cast<int32_t>(batch * 3), 1 << 20, 2) ==
        std::vector<int64_t>{3 * batch, 0});
  CHECK(fetch(static_cast<int32_t>(batch * 7), 1 << 20, 2) ==
        std::vector<int64_t>{5 * batch, 2 * batch});
}

TEST_CASE("a long-polling fetch is woken by an append, not by its timeout") {
  TestBroker b;
  Client setup(b.port);
  CreateTopic(setup, "wake");
  Client consumer(b.port);
  auto start = std::chrono::steady_clock::now();
  consumer.Send(MakeFetch("wake", 0, 0, /*max_wait_ms=*/20000), 11, 9);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  Produce(setup, "wake", MakeBatch(2));
  protocol::FetchResponse f;
  REQUIRE(consumer.Receive(&f, 11, 5000) == 9);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  auto values = Values(f.responses[0].partitions[0].records.bytes.value_or(""));
  CHECK(values == std::vector<std::string>{"value-0", "value-1"});
}

TEST_CASE("a fetch with nothing new waits max_wait_ms and answers empty") {
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "idle");
  auto start = std::chrono::steady_clock::now();
  protocol::FetchResponse f;
  c.Call(MakeFetch("idle", 0, 0, /*max_wait_ms=*/300), 11, &f);
  auto took = std::chrono::steady_clock::now() - start;
  CHECK(took >= std::chrono::milliseconds(280));
  CHECK(took < std::chrono::seconds(3));
  CHECK(f.responses[0].partitions[0].error_code == 0);
  CHECK(f.responses[0].partitions[0].records.size() == 0);
}

TEST_CASE("idempotent producer: retried duplicates get the original offset, gaps are refused") {
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "idem");
  protocol::InitProducerIdRequest ip;
  protocol::InitProducerIdResponse ir;
  c.Call(ip, 1, &ir);
  REQUIRE(ir.error_code == 0);
  int64_t pid = ir.producer_id;
  c.Call(ip, 0, &ir);
  CHECK(ir.producer_id != pid);

  CHECK(Produce(c, "idem", MakeBatch(3, format::Compression::kNone, pid, 0, 0)) == 0);
  CHECK(Produce(c, "idem", MakeBatch(2, format::Compression::kNone, pid, 0, 3)) == 3);
  // The first batch again (a retry after a lost response): no error, its original offset.
  int16_t err = -2;
  CHECK(Produce(c, "idem", MakeBatch(3, format::Compression::kNone, pid, 0, 0), &err) == 0);
  CHECK(err == 0);
  // A gap: sequence 7 when 5 is next.
  Produce(c, "idem", MakeBatch(1, format::Compression::kNone, pid, 0, 7), &err);
  CHECK(err == 45);  // OUT_OF_ORDER_SEQUENCE_NUMBER
  // The refused batch did not advance anything: 5 is still next.
  CHECK(Produce(c, "idem", MakeBatch(1, format::Compression::kNone, pid, 0, 5)) == 5);
  // An older epoch is fenced once a newer one has written.
  CHECK(Produce(c, "idem", MakeBatch(1, format::Compression::kNone, pid, 1, 0)) == 6);
  Produce(c, "idem", MakeBatch(1, format::Compression::kNone, pid, 0, 6), &err);
  CHECK(err == 47);  // INVALID_PRODUCER_EPOCH
  CHECK(FetchValues(c, "idem", 0).size() == 7);
}

TEST_CASE("producer state and producer ids survive a restart") {
  TestBroker b;
  int64_t pid = 0;
  {
    Client c(b.port);
    CreateTopic(c, "durable");
    protocol::InitProducerIdResponse ir;
    c.Call(protocol::InitProducerIdRequest{}, 1, &ir);
    pid = ir.producer_id;
    CHECK(Produce(c, "durable", MakeBatch(2, format::Compression::kNone, pid, 0, 0)) == 0);
    CHECK(Produce(c, "durable", MakeBatch(2, format::Compression::kNone, pid, 0, 2)) == 2);
  }
  b.Restart();
  Client c(b.port);
  int16_t err = -2;
  CHECK(Produce(c, "durable", MakeBatch(2, format::Compression::kNone, pid, 0, 2), &err) == 2);
  CHECK(err == 0);
  Produce(c, "durable", MakeBatch(2, format::Compression::kNone, pid, 0, 9), &err);
  CHECK(err == 45);
  CHECK(Produce(c, "durable", MakeBatch(2, format::Compression::kNone, pid, 0, 4)) == 4);
  protocol::InitProducerIdResponse ir;
  c.Call(protocol::InitProducerIdRequest{}, 1, &ir);
  CHECK(ir.producer_id > pid);
}

TEST_CASE("ListOffsets answers earliest, latest and by timestamp") {
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "times");
  for (int i = 0; i < 3; ++i) {
    format::RecordBatchBuilder bb({});
    std::string v = "t" + std::to_string(i);
    bb.Add(std::nullopt, std::string_view(v), 1000 * (i + 1));
    Produce(c, "times", bb.Finish().value());
  }
  auto ask = [&](int64_t ts, int16_t version) {
    protocol::ListOffsetsRequest lo;
    lo.topics.push_back({"times", {{0, -1, ts, 1}}});
    protocol::ListOffsetsResponse lr;
    c.Call(lo, version, &lr);
    REQUIRE(lr.topics[0].partitions[0].error_code == 0);
    return lr.topics[0].partitions[0];
  };
  CHECK(ask(-2, 5).offset == 0);
  CHECK(ask(-1, 5).offset == 3);
  CHECK(ask(2000, 5).offset == 1);
  CHECK(ask(2000, 5).timestamp == 2000);
  CHECK(ask(1500, 1).offset == 1);
  CHECK(ask(9999, 5).offset == -1);
  CHECK(ask(-1, 0).old_style_offsets == std::vector<int64_t>{3});
}

TEST_CASE("Metadata names this broker and auto-creates topics when allowed") {
  BrokerConfig cfg;
  cfg.num_partitions = 3;
  cfg.node_id = 7;
  TestBroker b(cfg);
  Client c(b.port);
  protocol::MetadataRequest md;
  md.topics.emplace();
  md.topics->push_back({.name = "auto"});
  md.allow_auto_topic_creation = false;
  protocol::MetadataResponse resp;
  c.Call(md, 8, &resp);
  REQUIRE(resp.topics.size() == 1);
  CHECK(resp.topics[0].error_code == 3);
  md.allow_auto_topic_creation = true;
  c.Call(md, 8, &resp);
  CHECK(resp.topics[0].error_code == 0);
  CHECK(resp.topics[0].partitions.size() == 3);
  CHECK(resp.topics[0].partitions[0].leader_id == 7);
  REQUIRE(resp.brokers.size() == 1);
  CHECK(resp.brokers[0].node_id == 7);
  CHECK(resp.brokers[0].port == b.port);
  CHECK(resp.brokers[0].host == "127.0.0.1");
  CHECK(resp.controller_id == 7);
  CHECK(resp.cluster_id.has_value());
  for (int16_t v = 0; v <= 12; ++v) {
    protocol::MetadataRequest all;  // null topics (v1+) or empty (v0): every topic
    if (v == 0) all.topics.emplace();
    c.Call(all, v, &resp);
    CHECK(resp.topics.size() == 1);
  }
}

TEST_CASE("Metadata v10+ carries the topic id of partition.metadata and finds topics by id") {
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "ids", 2);
  // The id the data dir stored (partition.metadata: "version: 0\ntopic_id: <base64>").
  std::string pm = *ReadFile(JoinPath(b.data_dir, "ids-0/partition.metadata"));
  std::string stored = pm.substr(pm.find("topic_id: ") + 10, 22);
  protocol::MetadataRequest md;
  md.topics.emplace();
  md.topics->push_back({.name = "ids"});
  protocol::MetadataResponse resp;
  c.Call(md, 12, &resp);
  REQUIRE(resp.topics.size() == 1);
  CHECK(resp.topics[0].topic_id.ToString() == stored);
  c.Call(md, 9, &resp);  // flexible, but before topic ids
  CHECK(resp.topics[0].topic_id.is_zero());

  // By id alone (v10+: the name is null).
  protocol::MetadataRequest by_id;
  by_id.topics.emplace();
  by_id.topics->push_back({.topic_id = *Uuid::Parse(stored)});
  c.Call(by_id, 12, &resp);
  REQUIRE(resp.topics.size() == 1);
  CHECK(resp.topics[0].error_code == 0);
  CHECK(resp.topics[0].name == "ids");
  CHECK(resp.topics[0].partitions.size() == 2);
  by_id.topics->at(0).topic_id = Uuid(Uuid::Bytes{7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7});
  c.Call(by_id, 12, &resp);
  CHECK(resp.topics[0].error_code == 100);  // UNKNOWN_TOPIC_ID
  CHECK(resp.topics[0].name.empty());
}

TEST_CASE("CreateTopics with replication factor -1 takes default.replication.factor") {
  BrokerConfig config;
  config.default_replication_factor = 2;
  TestBroker b(config);
  Client c(b.port);
  protocol::CreateTopicsRequest ct;
  protocol::CreateTopicsRequest::Topic t;
  t.name = "defaults";
  t.num_partitions = 1;
  t.replication_factor = -1;
  ct.topics.push_back(t);
  protocol::CreateTopicsResponse cr;
  c.Call(ct, 4, &cr);
  REQUIRE(cr.topics.size() == 1);
  // Two replicas on a single broker: refused as Kafka refuses it.
  CHECK(cr.topics[0].error_code == 38);  // INVALID_REPLICATION_FACTOR
  REQUIRE(cr.topics[0].error_message.has_value());
  CHECK(cr.topics[0].error_message->find("default.replication.factor") != std::string::npos);

  // DescribeConfigs shows the replication factors in use.
  protocol::DescribeConfigsRequest dc;
  dc.resources.push_back(
      {4, "0",
       std::vector<std::string>{"default.replication.factor", "offsets.topic.replication.factor"}});
  protocol::DescribeConfigsResponse dr;
  c.Call(dc, 3, &dr);
  REQUIRE(dr.results.size() == 1);
  std::map<std::string, std::string> got;
  for (const auto& cfg : dr.results[0].configs) got[cfg.name] = cfg.value.value_or("");
  CHECK(got["default.replication.factor"] == "2");
  CHECK(got["offsets.topic.replication.factor"] == "1");  // one node: min(3, 1)
}

// A manual replica assignment on one node: this broker alone is a valid assignment; a broker
// that is not registered, a broker named twice, a partition without replicas, or
// partition indexes that are not 0..N-1 are INVALID_REPLICA_ASSIGNMENT (39), as in Kafka.
TEST_CASE("CreateTopics with replica assignments is checked as Kafka checks them") {
  TestBroker b;
  Client c(b.port);
  const int32_t self = b.server->broker().node().node_id.value();
  using A = protocol::CreateTopicsRequest::Assignment;
  protocol::CreateTopicsRequest ct;
  auto add = [&ct](std::string name, std::vector<A> assignments) {
    protocol::CreateTopicsRequest::Topic t;
    t.name = std::move(name);
    t.num_partitions = -1;
    t.replication_factor = -1;
    t.assignments = std::move(assignments);
    ct.topics.push_back(t);
  };
  add("mine", {{0, {self}}, {1, {self}}});
  add("unknown", {{0, {self + 7}}});
  add("twice", {{0, {self, self}}});
  add("empty", {{0, {self}}, {1, {}}});
  add("gap", {{0, {self}}, {2, {self}}});
  protocol::CreateTopicsResponse cr;
  c.Call(ct, 4, &cr);
  REQUIRE(cr.topics.size() == 5);
  CHECK(cr.topics[0].error_code == 0);
  for (size_t i = 1; i < 5; ++i) {
    INFO(cr.topics[i].name);
    CHECK(cr.topics[i].error_code == 39);
    CHECK(!b.server->broker().metadata().GetTopic(cr.topics[i].name).ok());
  }
  REQUIRE(cr.topics[1].error_message.has_value());
  CHECK(cr.topics[1].error_message->find("broker " + std::to_string(self + 7)) !=
        std::string::npos);
  auto mine = b.server->broker().metadata().GetTopic("mine");
  REQUIRE(mine.ok());
  CHECK(mine->partition_count == 2);

  // CreatePartitions: the same checks, and the topic's replica count (one) for the new ones.
  using PA = protocol::CreatePartitionsRequest::Assignment;
  auto grow = [&](std::vector<int32_t> replicas) {
    protocol::CreatePartitionsRequest cp;
    cp.topics.push_back({"mine", 3, std::vector<PA>{PA{std::move(replicas)}}});
    protocol::CreatePartitionsResponse cpr;
    c.Call(cp, 1, &cpr);
    REQUIRE(cpr.results.size() == 1);
    return cpr.results[0].error_code;
  };
  CHECK(grow({self + 7}) == 39);
  CHECK(grow({self, self}) == 39);
  CHECK(b.server->broker().metadata().GetTopic("mine")->partition_count == 2);
  CHECK(grow({self}) == 0);
  CHECK(b.server->broker().metadata().GetTopic("mine")->partition_count == 3);
}

TEST_CASE("admin APIs create, grow, trim, describe and delete topics with Kafka's errors") {
  TestBroker b;
  Client c(b.port);
  protocol::CreateTopicsRequest ct;
  auto add = [&ct](std::string name, int32_t parts, int16_t rf,
                   std::vector<protocol::CreateTopicsRequest::Config> configs = {}) {
    protocol::CreateTopicsRequest::Topic t;
    t.name = std::move(name);
    t.num_partitions = parts;
    t.replication_factor = rf;
    t.configs = std::move(configs);
    ct.topics.push_back(t);
  };
  add("good", 2, 1, {{"retention.ms", std::string("12345")}});
  add("bad name!", 1, 1);
  add("zero", 0, 1);
  add("replicated", 1, 3);
  add("badcfg", 1, 1, {{"no.such.config", std::string("1")}});
  add("defaults", -1, -1);
  protocol::CreateTopicsResponse cr;
  c.Call(ct, 4, &cr);
  REQUIRE(cr.topics.size() == 6);
  CHECK(cr.topics[0].error_code == 0);
  CHECK(cr.topics[1].error_code == 17);  // INVALID_TOPIC_EXCEPTION
  CHECK(cr.topics[2].error_code == 37);  // INVALID_PARTITIONS
  CHECK(cr.topics[3].error_code == 38);  // INVALID_REPLICATION_FACTOR
  CHECK(cr.topics[4].error_code == 40);  // INVALID_CONFIG
  CHECK(cr.topics[5].error_code == 0);
  c.Call(ct, 4, &cr);
  CHECK(cr.topics[0].error_code == 36);  // TOPIC_ALREADY_EXISTS

  protocol::CreateTopicsRequest only;
  only.validate_only = true;
  only.topics.push_back(ct.topics[0]);
  only.topics[0].name = "dry-run";
  c.Call(only, 1, &cr);
  CHECK(cr.topics[0].error_code == 0);
  CHECK(!b.server->broker().metadata().GetTopic("dry-run").ok());

  protocol::CreatePartitionsRequest cp;
  cp.topics.push_back({"good", 4, std::nullopt});
  cp.topics.push_back({"defaults", 1, std::nullopt});
  protocol::CreatePartitionsResponse cpr;
  c.Call(cp, 1, &cpr);
  CHECK(cpr.results[0].error_code == 0);
  CHECK(cpr.results[1].error_code == 37);
  CHECK(b.server->broker().metadata().GetTopic("good")->partition_count == 4);

  protocol::DescribeConfigsRequest dc;
  dc.resources.push_back({2, "good", std::nullopt});
  dc.resources.push_back({4, "0", std::vector<std::string>{"num.partitions"}});
  protocol::DescribeConfigsResponse dr;
  c.Call(dc, 3, &dr);
  REQUIRE(dr.results.size() == 2);
  bool found = false;
  for (const auto& cfg : dr.results[0].configs) {
    if (cfg.name == "retention.ms") {
      found = true;
      CHECK(cfg.value == "12345");
      CHECK(cfg.config_source == 1);
    }
  }
  CHECK(found);
  REQUIRE(dr.results[1].configs.size() == 1);
  CHECK(dr.results[1].configs[0].value == "1");

  CHECK(Produce(c, "defaults", MakeBatch(5)) == 0);
  protocol::DeleteRecordsRequest del;
  del.topics.push_back({"defaults", {{0, 3}}});
  protocol::DeleteRecordsResponse delr;
  c.Call(del, 1, &delr);
  CHECK(delr.topics[0].partitions[0].error_code == 0);
  CHECK(delr.topics[0].partitions[0].low_watermark == 3);
  del.topics[0].partitions[0].offset = 99;
  c.Call(del, 1, &delr);
  CHECK(delr.topics[0].partitions[0].error_code == 1);

  protocol::DeleteTopicsRequest dt;
  dt.topic_names = {"good", "missing"};
  protocol::DeleteTopicsResponse dtr;
  c.Call(dt, 3, &dtr);
  CHECK(dtr.responses[0].error_code == 0);
  CHECK(dtr.responses[1].error_code == 3);
  CHECK(!b.server->broker().metadata().GetTopic("good").ok());
}

TEST_CASE("the maintenance thread applies retention to closed segments") {
  BrokerConfig cfg;
  cfg.retention_check_interval_ms = 50;
  TestBroker b(cfg);
  Client c(b.port);
  protocol::CreateTopicsRequest ct;
  protocol::CreateTopicsRequest::Topic t;
  t.name = "short";
  t.num_partitions = 1;
  t.replication_factor = 1;
  // Tiny segments (one batch each) that expire as soon as they are closed.
  t.configs = {{"segment.bytes", std::string("200")}, {"retention.bytes", std::string("300")}};
  ct.topics.push_back(t);
  protocol::CreateTopicsResponse cr;
  c.Call(ct, 4, &cr);
  REQUIRE(cr.topics[0].error_code == 0);
  for (int i = 0; i < 6; ++i) Produce(c, "short", MakeBatch(3));
  int64_t earliest = 0;
  for (int i = 0; i < 100 && earliest == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    protocol::ListOffsetsRequest lo;
    lo.topics.push_back({"short", {{0, -1, -2, 1}}});
    protocol::ListOffsetsResponse lr;
    c.Call(lo, 5, &lr);
    earliest = lr.topics[0].partitions[0].offset;
  }
  CHECK(earliest > 0);
  CHECK(earliest % 3 == 0);  // whole batches (segments) went, nothing in between
  protocol::FetchResponse f;
  c.Call(MakeFetch("short", 0, 0), 11, &f);
  CHECK(f.responses[0].partitions[0].error_code == 1);  // below log start: OFFSET_OUT_OF_RANGE
  CHECK(f.responses[0].partitions[0].log_start_offset == earliest);
}
