// Golden bytes written by real Kafka brokers and clients (../shared/fixtures, see its README).
// Every case prints a visible MESSAGE and skips when the fixtures folder is absent.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "base/coding.h"
#include "format/legacy.h"
#include "format/record_batch.h"
#include "format_test_util.h"

using namespace silt;
using namespace silt::format;
using silt::format::testing::Hex;
using silt::format::testing::ReadFixture;
using silt::format::testing::Unhex;

namespace {

struct LogSummary {
  std::vector<int64_t> positions;
  std::vector<BatchHeader> headers;
  std::vector<Record> records;
};

// Walks a whole .log file batch by batch, validating each.
LogSummary ReadLog(const std::string& data) {
  LogSummary s;
  size_t pos = 0;
  while (pos < data.size()) {
    auto v = RecordBatchView::Parse(std::string_view(data).substr(pos));
    REQUIRE_MESSAGE(v.ok(), "position " << pos << ": " << v.status().ToString());
    ValidateLimits strict;
    strict.contiguous_offsets = true;
    Status st = v->Validate(strict);
    REQUIRE_MESSAGE(st.ok(), "position " << pos << ": " << st.ToString());
    auto recs = v->Records();
    REQUIRE(recs.ok());
    s.positions.push_back(static_cast<int64_t>(pos));
    s.headers.push_back(v->header());
    for (auto& r : *recs) s.records.push_back(std::move(r));
    pos += v->bytes().size();
  }
  return s;
}

// The records field of the single partition in a FetchResponse v10 frame:
//   size:int32, correlation_id:int32, throttle_time_ms:int32, error_code:int16, session_id:int32,
//   [topic:string, [partition:int32, error_code:int16, high_watermark:int64,
//    last_stable_offset:int64, log_start_offset:int64, [aborted: producer_id:int64,
//    first_offset:int64], records:bytes]]
struct FetchPartition {
  std::string topic;
  int64_t high_watermark = -1;
  std::string_view records;
};
FetchPartition DecodeFetchV10(std::string_view frame) {
  ByteReader r(frame);
  int32_t size = 0, corr = 0, throttle = 0, session = 0, topics = 0, partitions = 0, part = 0,
          aborted = 0, rec_len = 0;
  int16_t err = 0, topic_len = 0;
  int64_t hw = 0, lso = 0, lstart = 0;
  REQUIRE(r.I32(&size));
  REQUIRE(static_cast<size_t>(size) == r.remaining());
  REQUIRE((r.I32(&corr) && r.I32(&throttle) && r.I16(&err) && r.I32(&session)));
  REQUIRE((r.I32(&topics) && topics == 1));
  REQUIRE(r.I16(&topic_len));
  std::string_view topic;
  REQUIRE(r.Bytes(static_cast<size_t>(topic_len), &topic));
  REQUIRE((r.I32(&partitions) && partitions == 1));
  REQUIRE((r.I32(&part) && r.I16(&err) && r.I64(&hw) && r.I64(&lso) && r.I64(&lstart)));
  REQUIRE(err == 0);
  REQUIRE(r.I32(&aborted));
  if (aborted > 0) REQUIRE(r.Skip(static_cast<size_t>(aborted) * 16));
  REQUIRE(r.I32(&rec_len));
  FetchPartition p;
  p.topic = std::string(topic);
  p.high_watermark = hw;
  REQUIRE(r.Bytes(static_cast<size_t>(rec_len), &p.records));
  return p;
}

}  // namespace

TEST_CASE("every sarama record batch parses and validates, and the lz4 one holds key 01020304") {
  const char* names[] = {"control_batch", "empty_record", "gzipped_record", "lz4_compressed_record",
                         "snappy_compressed_record", "uncompressed_record"};
  for (const char* name : names) {
    CAPTURE(std::string(name));
    auto bytes = ReadFixture(std::string("protocol/sarama/record__") + name + ".encoded.bin");
    if (!bytes) return;
    auto v = RecordBatchView::Parse(*bytes);
    REQUIRE_MESSAGE(v.ok(), v.status().ToString());
    CHECK(v->bytes().size() == bytes->size());
    Status s = v->Validate();
    CHECK_MESSAGE(s.ok(), s.ToString());
    auto recs = v->Records();
    REQUIRE(recs.ok());
    std::string n = name;
    if (n == "control_batch") {
      CHECK(v->header().control());
      CHECK(recs->empty());
    } else if (n == "empty_record") {
      CHECK(recs->empty());
    } else {
      REQUIRE(recs->size() == 1);
      const Record& r = (*recs)[0];
      CHECK(Hex(r.key.value_or("")) == "01020304");
      CHECK(Hex(r.value.value_or("")) == "050607");
      CHECK(v->header().base_timestamp == 1479847795000);
      if (n == "lz4_compressed_record") CHECK(v->header().compression() == Compression::kLz4);
      if (n == "gzipped_record") CHECK(v->header().compression() == Compression::kGzip);
      if (n == "snappy_compressed_record") CHECK(v->header().compression() == Compression::kSnappy);
      REQUIRE(r.headers.size() == 1);
      CHECK(Hex(r.headers[0].key) == "08090a");
      CHECK(Hex(r.headers[0].value.value_or("")) == "0b0c");
    }
  }
}

TEST_CASE("sarama's legacy messages decode from their CRC, and the magic-2 one is rejected") {
  struct Case {
    const char* name;
    int magic;
    Compression codec;
  };
  const Case cases[] = {
      {"emptyMessage", 0, Compression::kNone},        {"emptyV1Message", 1, Compression::kNone},
      {"emptyGzipMessage", 0, Compression::kGzip},    {"emptyBulkGzipMessage", 0, Compression::kGzip},
      {"emptyLZ4Message", 1, Compression::kLz4},      {"emptyBulkLZ4Message", 1, Compression::kLz4},
      {"emptyBulkSnappyMessage", 0, Compression::kSnappy},
      {"emptyZSTDMessage", 1, Compression::kZstd},    {"emptyBulkZSTDMessage", 1, Compression::kZstd},
  };
  for (const Case& c : cases) {
    CAPTURE(std::string(c.name));
    auto bytes = ReadFixture(std::string("protocol/sarama/message__") + c.name + ".bin");
    if (!bytes) return;
    LegacyOptions o;
    o.include_wrappers = true;
    o.allow_zstd = true;
    std::vector<LegacyMessageInfo> infos;
    std::vector<bool> null_values;
    Status s = ForEachInLegacyMessage(*bytes, 10, o, [&](const LegacyMessage& m) {
      infos.push_back(m.info);
      null_values.push_back(m.value_null);
      return true;
    });
    REQUIRE_MESSAGE(s.ok(), s.ToString());
    REQUIRE(!infos.empty());
    CHECK(infos[0].magic == c.magic);
    CHECK(infos[0].codec == c.codec);
    for (const auto& i : infos) CHECK(i.crc_valid);
    std::string n = c.name;
    if (c.codec == Compression::kNone) {
      CHECK(infos.size() == 1);
      CHECK(null_values[0]);
    }
    if (n.find("Bulk") != std::string::npos) {
      // A wrapper with inner messages. Magic 1: relative inner offsets end at the wrapper's
      // offset. Magic 0: inner offsets are absolute, as stored.
      REQUIRE(infos.size() >= 3);
      CHECK(infos.back().inner);
      if (c.magic == 1) CHECK(infos.back().offset == 10);
      for (size_t i = 2; i < infos.size(); ++i) CHECK(infos[i].offset == infos[i - 1].offset + 1);
    } else if (c.codec != Compression::kNone) {
      CHECK(infos.size() == 1);  // a wrapper around an empty message set
    }
    if (c.codec == Compression::kZstd) {
      LegacyOptions strict;
      CHECK(ForEachInLegacyMessage(*bytes, 0, strict, [](const LegacyMessage&) { return true; })
                .IsCorruption());
    }
  }
  auto v2 = ReadFixture("protocol/sarama/message__emptyV2Message.bin");
  if (!v2) return;
  int visited = 0;
  Status s = ForEachInLegacyMessage(*v2, 0, {}, [&](const LegacyMessage&) { return ++visited; });
  CHECK(s.IsCorruption());
  CHECK(visited == 0);
}

TEST_CASE("Kafka 3.7's TestTopicPatient log holds 3 batches at 0, 1901 and 2877") {
  auto data = ReadFixture("kafka-data/kafka-3.7-kraft/TestTopicPatient-0/00000000000000000000.log");
  if (!data) return;
  CHECK(data->size() == 3271);
  LogSummary s = ReadLog(*data);
  CHECK(s.positions == std::vector<int64_t>{0, 1901, 2877});
  REQUIRE(s.records.size() == 3);
  const size_t value_sizes[] = {1831, 906, 324};
  for (int i = 0; i < 3; ++i) {
    CAPTURE(i);
    const BatchHeader& h = s.headers[i];
    CHECK(h.base_offset == i);
    CHECK(h.records_count == 1);
    CHECK(h.partition_leader_epoch == 0);
    CHECK(h.producer_id == i + 1);
    CHECK(h.producer_epoch == 0);
    CHECK(h.base_sequence == 0);
    CHECK(h.compression() == Compression::kNone);
    CHECK(s.records[i].offset == i);
    CHECK_FALSE(s.records[i].key.has_value());
    REQUIRE(s.records[i].value.has_value());
    CHECK(s.records[i].value->size() == value_sizes[i]);
    CHECK(s.records[i].value->front() == '{');
  }
}

TEST_CASE("Kafka 3.7's cluster metadata log has 4814 batches and 4929 contiguous records") {
  auto data = ReadFixture("kafka-data/kafka-3.7-kraft/__cluster_metadata-0/00000000000000000000.log");
  if (!data) return;
  LogSummary s = ReadLog(*data);
  CHECK(s.headers.size() == 4814);
  REQUIRE(s.records.size() == 4929);
  for (size_t i = 0; i < s.records.size(); ++i) {
    if (s.records[i].offset != static_cast<int64_t>(i)) {
      FAIL_CHECK("record " << i << " has offset " << s.records[i].offset);
      break;
    }
  }
  bool multi = false;
  for (const auto& h : s.headers) {
    CHECK(h.partition_leader_epoch == 1);
    multi |= h.records_count > 1;
  }
  CHECK(multi);
  CHECK(s.headers[0].control());
  CHECK(ParseControlType(s.records[0].key.value_or("")) == ControlType::kLeaderChange);
}

TEST_CASE("Kafka 3.7's consumer offsets log has 13 batches at the indexed positions") {
  auto data = ReadFixture("kafka-data/kafka-3.7-kraft/__consumer_offsets-6/00000000000000000000.log");
  if (!data) return;
  LogSummary s = ReadLog(*data);
  CHECK(s.headers.size() == 13);
  CHECK(s.records.size() == 13);
  std::map<int64_t, int64_t> position_of;
  for (size_t i = 0; i < s.headers.size(); ++i) position_of[s.headers[i].base_offset] = s.positions[i];
  CHECK(position_of[3] == 4730);
  CHECK(position_of[7] == 9571);
}

TEST_CASE("Kafka 3.4's test-0 log has 28 batches and 97 records starting with values \"\", \"\", \"f\"") {
  auto data = ReadFixture("kafka-data/kafka-3.4-zk/test-0/00000000000000000000.log");
  if (!data) return;
  LogSummary s = ReadLog(*data);
  CHECK(s.headers.size() == 28);
  REQUIRE(s.records.size() == 97);
  for (size_t i = 0; i < s.records.size(); ++i) CHECK(s.records[i].offset == static_cast<int64_t>(i));
  CHECK(s.records[0].value == std::string(""));
  CHECK(s.records[1].value == std::string(""));
  CHECK(s.records[2].value == std::string("f"));
  int null_keys = 0;
  for (const auto& r : s.records) null_keys += !r.key.has_value();
  CHECK(null_keys > 0);
  bool multi = false;
  for (const auto& h : s.headers) multi |= h.records_count > 1;
  CHECK(multi);

  auto offsets = ReadFixture("kafka-data/kafka-3.4-zk/__consumer_offsets-36/00000000000000000000.log");
  if (!offsets) return;
  LogSummary o = ReadLog(*offsets);
  CHECK(o.records.size() == 1);
}

TEST_CASE("Fetch v10 responses with mixed magic 1 and 2 entries decode to contiguous offsets") {
  const char* names[] = {"v1-v1", "v1-v1c-v2-v2c-v2b-v2b-v2b-v2bc-v1b-v1bc", "v1c-v1-v1c",
                         "v1c-v1c", "v2-v2", "v2b-v1", "v2bc-v1-v1c", "v2bc-v1", "v2bc-v1c",
                         "v2c-v2-v2c", "v2c-v2c"};
  for (const char* name : names) {
    CAPTURE(std::string(name));
    auto hex = ReadFixture(std::string("protocol/kafka-go-fetch-v10/") + name + ".hex");
    if (!hex) return;
    std::string frame = Unhex(*hex);
    FetchPartition p = DecodeFetchV10(frame);
    std::vector<int64_t> offsets;
    std::vector<std::string> keys;
    std::string kinds;
    int64_t last_entry = -1;
    Status s = ForEachLogRecord(p.records, {}, [&](const LogRecord& r) {
      offsets.push_back(r.record.offset);
      keys.emplace_back(r.record.key);
      if (r.entry_position != last_entry) {
        last_entry = r.entry_position;
        if (!kinds.empty()) kinds += "-";
        kinds += r.magic == 2 ? "v2" : "v1";
        if (r.codec != Compression::kNone) kinds += "c";
      }
      return true;
    });
    REQUIRE_MESSAGE(s.ok(), s.ToString());
    INFO(name << ": topic " << p.topic << ", hw " << p.high_watermark << ", entries " << kinds
                 << ", keys " << [&] {
                      std::string k;
                      for (auto& x : keys) k += x + ",";
                      return k;
                    }());
    // The kinds of entry (magic, compressed) appear in the order the file name lists them.
    auto first_appearance = [](std::string list, bool strip_b) {
      std::vector<std::string> order;
      size_t start = 0;
      list += "-";
      for (size_t dash; (dash = list.find('-', start)) != std::string::npos; start = dash + 1) {
        std::string t = list.substr(start, dash - start);
        if (strip_b && t.size() > 2 && t[2] == 'b') t.erase(2, 1);
        if (std::find(order.begin(), order.end(), t) == order.end()) order.push_back(t);
      }
      return order;
    };
    CHECK(first_appearance(kinds, false) == first_appearance(name, true));
    const std::vector<std::string> greek = {"alpha", "beta", "gamma", "delta", "epsilon",
                                            "zeta",  "eta",  "theta", "iota",  "kappa"};
    CHECK(keys.front() == "alpha");
    for (const auto& k : keys) CHECK(std::find(greek.begin(), greek.end(), k) != greek.end());
    REQUIRE(!offsets.empty());
    for (size_t i = 0; i < offsets.size(); ++i) CHECK(offsets[i] == static_cast<int64_t>(i));
    CHECK(static_cast<int64_t>(offsets.size()) == p.high_watermark);
  }
}
