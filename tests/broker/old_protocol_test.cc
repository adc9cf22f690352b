// Old clients against an in-process broker: Produce v0-2 with legacy message sets (stored as
// RecordBatch v2) and Fetch v0-3 (served as magic 0/1 messages).
#include <zlib.h>

#include "base/clock.h"
#include "broker_test_util.h"
#include "format/compression.h"
#include "format/legacy.h"
#include "../format/legacy_builders.h"

using namespace silt;
using namespace silt::broker;
using namespace silt::broker::testing;

namespace {

using Bytes = format::testing::LegacyBytes;

std::string Message(int64_t offset, int8_t magic, int8_t attributes, int64_t timestamp,
                    const Bytes& key, const Bytes& value) {
  return format::testing::LegacyEntry(offset, magic, attributes, timestamp, key, value);
}

// `n` messages "old-<i>" with keys "k<i>", uncompressed or in one wrapper of `codec`.
std::string MessageSet(int8_t magic, int n, format::Compression codec = format::Compression::kNone,
                       int64_t ts = 1000) {
  std::string set;
  for (int i = 0; i < n; ++i) {
    // Producers write offsets 0..n-1 (magic 1 wrappers: relative); the broker ignores them.
    set += Message(i, magic, 0, ts + i, "k" + std::to_string(i), "old-" + std::to_string(i));
  }
  if (codec == format::Compression::kNone) return set;
  auto packed = format::Compress(codec, set);
  REQUIRE(packed.ok());
  return Message(n - 1, magic, static_cast<int8_t>(codec), ts + n - 1, std::nullopt, *packed);
}

struct Legacy {
  int64_t offset;
  int64_t timestamp;
  int8_t magic;
  std::string key, value;
  format::Compression codec;
};

// The messages of a Fetch v0-3 record set, and how the walk ended.
std::vector<Legacy> ReadLegacy(std::string_view records, Status* end = nullptr) {
  std::vector<Legacy> out;
  Status s = format::ForEachLegacyMessage(records, format::LegacyOptions{},
                                          [&](const format::LegacyMessage& m) {
    out.push_back(Legacy{m.info.offset, m.info.timestamp, m.info.magic, std::string(m.key),
                         std::string(m.value), m.info.inner ? m.info.wrapper_codec : m.info.codec});
    return true;
  });
  if (end) *end = s;
  else REQUIRE_MESSAGE(s.ok(), s.ToString());
  return out;
}

const protocol::ProduceResponse::PartitionResponse& Only(const protocol::ProduceResponse& r) {
  REQUIRE(r.responses.size() == 1);
  REQUIRE(r.responses[0].partition_responses.size() == 1);
  return r.responses[0].partition_responses[0];
}

protocol::ProduceResponse::PartitionResponse Produce(Client& c, const std::string& topic,
                                                     const std::string& set, int16_t version) {
  protocol::ProduceResponse r;
  c.Call(MakeProduce(topic, 0, set), version, &r);
  return Only(r);
}

protocol::FetchResponse::Partition Fetch(Client& c, const std::string& topic, int64_t offset,
                                         int16_t version, int32_t partition_max_bytes = 1 << 20,
                                         int32_t max_bytes = 50 << 20) {
  protocol::FetchRequest req = MakeFetch(topic, 0, offset);
  req.topics[0].partitions[0].partition_max_bytes = partition_max_bytes;
  req.max_bytes = max_bytes;
  protocol::FetchResponse f;
  c.Call(req, version, &f);
  REQUIRE(f.responses.size() == 1);
  REQUIRE(f.responses[0].partitions.size() == 1);
  return f.responses[0].partitions[0];
}

std::string Records(const protocol::FetchResponse::Partition& p) {
  return std::string(p.records.bytes.value_or(""));
}

}  // namespace

TEST_CASE("Produce v0, v1 and v2 store legacy message sets as v2 batches at the log's offsets") {
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "old");
  int64_t expected = 0;
  for (int16_t version : {0, 1, 2}) {
    for (int8_t magic : {0, 1}) {
      for (auto codec : {format::Compression::kNone, format::Compression::kGzip,
                         format::Compression::kSnappy, format::Compression::kLz4}) {
        CAPTURE(version);
        CAPTURE(static_cast<int>(magic));
        CAPTURE(static_cast<int>(codec));
        auto r = Produce(c, "old", MessageSet(magic, 3, codec), version);
        REQUIRE(r.error_code == 0);
        CHECK(r.base_offset == expected);
        CHECK(r.log_append_time_ms == -1);
        expected += 3;
      }
    }
  }
  // Stored as v2: a v11 fetch reads batches with every record, in order, at its offset.
  std::vector<format::Record> all;
  int64_t at = 0;
  while (at < expected) {
    auto p = Fetch(c, "old", at, 11);
    std::string_view data = p.records.bytes.value_or("");
    REQUIRE(!data.empty());
    while (!data.empty()) {
      auto v = format::RecordBatchView::Parse(data);
      REQUIRE(v.ok());
      CHECK(v->header().magic == 2);
      auto recs = v->Records();
      REQUIRE(recs.ok());
      for (auto& rec : *recs) all.push_back(rec);
      data.remove_prefix(v->bytes().size());
    }
    at = all.back().offset + 1;
  }
  REQUIRE(static_cast<int64_t>(all.size()) == expected);
  for (int64_t i = 0; i < expected; ++i) CHECK(all[i].offset == i);
  CHECK(*all[0].value == "old-0");
  CHECK(all[0].timestamp == -1);    // magic 0 carries no timestamp
  CHECK(all[3].timestamp == -1);
  CHECK(all[12].timestamp == 1000);  // magic 1 keeps the producer's
  CHECK(all[14].timestamp == 1002);
}

TEST_CASE("legacy produce errors: bad CRC, a partial message, magic 0/1 above Produce v2") {
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "bad");
  std::string set = MessageSet(1, 2);
  std::string bad = set;
  bad.back() ^= 1;
  CHECK(Produce(c, "bad", bad, 2).error_code == 2);                          // CORRUPT_MESSAGE
  CHECK(Produce(c, "bad", set.substr(0, set.size() - 3), 1).error_code == 2);  // partial message
  CHECK(Produce(c, "bad", set, 3).error_code == 87);                         // INVALID_RECORD
  // Produce v2 still takes a v2 batch, and nothing bad was stored.
  auto r = Produce(c, "bad", MakeBatch(2), 2);
  CHECK(r.error_code == 0);
  CHECK(r.base_offset == 0);
}

TEST_CASE("Produce v2 to a LogAppendTime topic answers the broker's append time") {
  TestBroker b;
  Client c(b.port);
  protocol::CreateTopicsRequest req;
  protocol::CreateTopicsRequest::Topic t;
  t.name = "lat";
  t.num_partitions = 1;
  t.replication_factor = 1;
  t.configs.push_back({"message.timestamp.type", std::string("LogAppendTime")});
  req.topics.push_back(t);
  protocol::CreateTopicsResponse resp;
  c.Call(req, 4, &resp);
  REQUIRE(resp.topics[0].error_code == 0);
  int64_t before = NowMs().value();
  auto r = Produce(c, "lat", MessageSet(1, 2, format::Compression::kGzip, 5), 2);
  REQUIRE(r.error_code == 0);
  CHECK(r.log_append_time_ms >= before);
  auto msgs = ReadLegacy(Records(Fetch(c, "lat", 0, 2)));
  REQUIRE(msgs.size() == 2);
  CHECK(msgs[0].timestamp == r.log_append_time_ms);
}

TEST_CASE("Fetch v0-1 serve magic 0 and v2-3 magic 1, with each codec kept; v4 stays v2") {
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "down");
  int64_t n = 0;
  std::vector<format::Compression> codecs = {format::Compression::kNone, format::Compression::kGzip,
                                             format::Compression::kSnappy,
                                             format::Compression::kLz4};
  for (auto codec : codecs) {
    format::RecordBatchBuilder::Options o;
    o.compression = codec;
    format::RecordBatchBuilder bb(o);
    for (int i = 0; i < 3; ++i) {
      std::string v = "v" + std::to_string(n + i);
      // Headers have no place below magic 2: they are dropped.
      bb.Add(std::string_view("k"), std::string_view(v), 7000 + n + i, {{"h", std::string_view("x")}});
    }
    REQUIRE(Produce(c, "down", bb.Finish().value(), 8).error_code == 0);
    n += 3;
  }
  for (int16_t version : {0, 1, 2, 3}) {
    CAPTURE(version);
    auto p = Fetch(c, "down", 1, version);  // inside the first batch
    REQUIRE(p.error_code == 0);
    CHECK(p.high_watermark == n);
    auto msgs = ReadLegacy(Records(p));
    REQUIRE(static_cast<int64_t>(msgs.size()) == n - 1);
    for (size_t i = 0; i < msgs.size(); ++i) {
      CHECK(msgs[i].offset == static_cast<int64_t>(i) + 1);
      CHECK(msgs[i].magic == (version <= 1 ? 0 : 1));
      CHECK(msgs[i].value == "v" + std::to_string(i + 1));
      CHECK(msgs[i].codec == codecs[(i + 1) / 3]);
      if (version >= 2) CHECK(msgs[i].timestamp == 7000 + static_cast<int64_t>(i) + 1);
    }
  }
  // Fetch v4 is still the stored bytes: magic 2 batches.
  std::string v4 = Records(Fetch(c, "down", 0, 4));
  REQUIRE(v4.size() > static_cast<size_t>(format::kMagicOffset));
  CHECK(v4[format::kMagicOffset] == format::kMagicV2);
  CHECK(Values(v4).size() == static_cast<size_t>(n));
}

TEST_CASE("old fetches stay within partition_max_bytes in whole messages, partial first for v0-2") {
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "sized");
  // Ten records of 100-byte values in one batch: each magic 1 message takes 12 + 22 + 2 + 100.
  format::RecordBatchBuilder bb({});
  std::string value(100, 'x');
  for (int i = 0; i < 10; ++i) bb.Add(std::string_view("kk"), std::string_view(value), 1);
  REQUIRE(Produce(c, "sized", bb.Finish().value(), 8).error_code == 0);
  const int32_t one = 12 + 22 + 2 + 100;

  // Three whole messages fit, from a batch larger than the limit.
  std::string r = Records(Fetch(c, "sized", 0, 2, 3 * one + 10));
  CHECK(static_cast<int32_t>(r.size()) == 3 * one);
  CHECK(ReadLegacy(r).size() == 3);

  // Below one message: v2 sends a partial message (the old consumer's cue to ask for more),
  // v3 the first message whole (KIP-74).
  Status end;
  r = Records(Fetch(c, "sized", 4, 2, one - 1));
  CHECK(static_cast<int32_t>(r.size()) == one - 1);
  CHECK(ReadLegacy(r, &end).empty());
  CHECK(end.IsTruncated());
  r = Records(Fetch(c, "sized", 4, 3, one - 1));
  auto msgs = ReadLegacy(r);
  REQUIRE(msgs.size() == 1);
  CHECK(msgs[0].offset == 4);
  // v3's response-wide max_bytes bounds the total.
  r = Records(Fetch(c, "sized", 0, 3, 1 << 20, 2 * one + 1));
  CHECK(ReadLegacy(r).size() == 2);
}

TEST_CASE("zstd data cannot be fetched below v4: UNSUPPORTED_COMPRESSION_TYPE") {
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "z");
  REQUIRE(Produce(c, "z", MakeBatch(2, format::Compression::kZstd), 8).error_code == 0);
  CHECK(Fetch(c, "z", 0, 2).error_code == 76);
  CHECK(Fetch(c, "z", 0, 0).error_code == 76);
  CHECK(Fetch(c, "z", 0, 4).error_code == 0);
}
