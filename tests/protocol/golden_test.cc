// Golden bytes from real Kafka clients (../shared/fixtures/protocol): Sarama's encoded
// request/response bodies and Fetch v10 frames captured from a broker by kafka-go. Each body must
// decode, consume every byte, and (for versions silt encodes) re-encode to the identical bytes.
// Without the fixtures directory these cases print a MESSAGE and check nothing.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "format/legacy_convert.h"
#include "format/record_batch.h"
#include "protocol/errors.h"
#include "protocol/header.h"
#include "protocol/messages.h"
#include "fixture_skip.h"

using namespace silt;
using namespace silt::protocol;

namespace {

std::filesystem::path FixturesDir() { return std::filesystem::path(SILT_FIXTURES_DIR) / "protocol"; }

bool HaveFixtures() {
  if (std::filesystem::is_directory(FixturesDir())) return true;
  SILT_SKIP_MISSING_FIXTURE("fixtures not found at " << FixturesDir().string()
                                                      << " (golden protocol bytes not checked)");
  return false;
}

std::string ReadSarama(const std::string& name) {
  std::ifstream in(FixturesDir() / "sarama" / (name + ".bin"), std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "missing fixture " << name);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string ReadHex(const std::string& name) {
  std::ifstream in(FixturesDir() / "kafka-go-fetch-v10" / (name + ".hex"));
  REQUIRE_MESSAGE(in.good(), "missing fixture " << name);
  std::string hex, out;
  char c;
  while (in.get(c)) {
    if (std::isxdigit(static_cast<unsigned char>(c))) hex.push_back(c);
  }
  REQUIRE(hex.size() % 2 == 0);
  for (size_t i = 0; i < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

// Decodes `bytes` as T at `version`, requiring success and full consumption; when `reencode`,
// also requires that encoding the result gives back `bytes`.
template <typename T>
T DecodeGolden(const std::string& bytes, int16_t version, bool reencode = true) {
  T m;
  ByteReader r(bytes);
  Status s = m.Decode(r, version);
  REQUIRE_MESSAGE(s.ok(), s.ToString());
  CHECK(r.remaining() == 0);
  if (reencode) {
    std::string again;
    ByteWriter w(&again);
    m.Encode(w, version);
    CHECK(again == bytes);
  }
  return m;
}

}  // namespace

TEST_CASE("Sarama ApiVersions responses v0 to v3 decode and re-encode byte for byte") {
  if (!HaveFixtures()) return;
  auto v0 = DecodeGolden<ApiVersionsResponse>(ReadSarama("api_versions_response__apiVersionResponseV0"), 0);
  REQUIRE(v0.api_keys.size() == 4);
  CHECK(v0.api_keys[1].api_key == 1);
  CHECK(v0.api_keys[1].max_version == 3);

  std::string v12 = ReadSarama("api_versions_response__apiVersionResponseV1V2");
  for (int16_t v : {1, 2}) {
    auto m = DecodeGolden<ApiVersionsResponse>(v12, v);
    REQUIRE(m.api_keys.size() == 5);
    CHECK(m.api_keys[1].max_version == 11);
    CHECK(m.throttle_time_ms == 64);
  }

  auto v3 = DecodeGolden<ApiVersionsResponse>(ReadSarama("api_versions_response__apiVersionResponseV3"), 3);
  REQUIRE(v3.api_keys.size() == 6);
  CHECK(v3.api_keys[5].api_key == 5);
  CHECK(v3.throttle_time_ms == 128);

  // v3 with SupportedFeatures/FinalizedFeatures tagged fields: skipped on read, so no byte-exact
  // re-encoding.
  auto feat = DecodeGolden<ApiVersionsResponse>(
      ReadSarama("api_versions_response__apiVersionResponseV3Features"), 3, /*reencode=*/false);
  REQUIRE(feat.api_keys.size() == 1);
  CHECK(feat.api_keys[0].api_key == 18);
  CHECK(feat.api_keys[0].max_version == 3);
  CHECK(feat.throttle_time_ms == 128);
}

TEST_CASE("an UNSUPPORTED_VERSION ApiVersions answer is a v0 body whatever version was asked") {
  if (!HaveFixtures()) return;
  for (const char* name : {"api_versions_response__apiVersionsResponseUnsupportedVersionV3",
                           "api_versions_response__apiVersionsResponseUnsupportedVersionV4"}) {
    INFO(name);
    std::string bytes = ReadSarama(name);
    // The v0 body silt builds for this case is byte-identical to the client's vector.
    ApiVersionsResponse expected;
    expected.error_code = ToWire(ErrorCode::UNSUPPORTED_VERSION);
    expected.api_keys = {{18, 0, bytes.back() == 3 ? int16_t{3} : int16_t{4}}};
    std::string encoded;
    ByteWriter w(&encoded);
    expected.Encode(w, 0);
    CHECK(encoded == bytes);
    // A client that asked for v3 reads it with the v0 fallback.
    ApiVersionsResponse got;
    ByteReader r(bytes);
    REQUIRE(DecodeApiVersionsResponse(r, 3, &got).ok());
    CHECK(got == expected);
  }
}

TEST_CASE("Sarama Metadata responses v0 to v11 decode, and re-encode byte for byte") {
  if (!HaveFixtures()) return;
  auto empty = DecodeGolden<MetadataResponse>(ReadSarama("metadata_response__emptyMetadataResponseV0"), 0);
  CHECK(empty.brokers.empty());
  CHECK(empty.topics.empty());

  auto b0 = DecodeGolden<MetadataResponse>(ReadSarama("metadata_response__brokersNoTopicsMetadataResponseV0"), 0);
  REQUIRE(b0.brokers.size() == 2);
  CHECK(b0.brokers[0].node_id == 0xabff);
  CHECK(b0.brokers[0].host == "localhost");
  CHECK(b0.brokers[0].port == 51);
  CHECK(b0.brokers[1].node_id == 0x010203);
  CHECK(b0.brokers[1].host == "google.com");
  CHECK(b0.brokers[1].port == 273);

  auto b1 = DecodeGolden<MetadataResponse>(ReadSarama("metadata_response__brokersNoTopicsMetadataResponseV1"), 1);
  REQUIRE(b1.brokers.size() == 2);
  CHECK(b1.brokers[0].rack == "rack0");
  CHECK(b1.brokers[1].rack == "rack1");
  CHECK(b1.controller_id == 1);

  for (auto [name, v] : {std::pair{"metadata_response__topicsNoBrokersMetadataResponseV0", 0},
                         std::pair{"metadata_response__topicsNoBrokersMetadataResponseV1", 1}}) {
    auto t = DecodeGolden<MetadataResponse>(ReadSarama(name), static_cast<int16_t>(v));
    CHECK(t.brokers.empty());
    CHECK_FALSE(t.topics.empty());
  }

  auto v3 = DecodeGolden<MetadataResponse>(
      ReadSarama("metadata_response__noBrokersNoTopicsWithThrottleTimeAndClusterIDV3"), 3);
  CHECK(v3.throttle_time_ms == 16);
  CHECK(v3.cluster_id == "clusterId");
  CHECK(v3.controller_id == 1);

  auto v5 = DecodeGolden<MetadataResponse>(
      ReadSarama("metadata_response__noBrokersOneTopicWithOfflineReplicasV5"), 5);
  CHECK(v5.throttle_time_ms == 5);
  CHECK(v5.controller_id == 2);
  REQUIRE(v5.topics.size() == 1);
  CHECK(v5.topics[0].name == "foo");
  REQUIRE(v5.topics[0].partitions.size() == 1);
  const auto& p5 = v5.topics[0].partitions[0];
  CHECK(p5.partition_index == 1);
  CHECK(p5.leader_id == 7);
  CHECK(p5.replica_nodes == std::vector<int32_t>{1, 2, 3});
  CHECK(p5.isr_nodes == std::vector<int32_t>{1, 2});
  CHECK(p5.offline_replicas == std::vector<int32_t>{3});

  for (int16_t v : {6, 7, 8}) {
    INFO("OneTopicV" << v);
    auto m = DecodeGolden<MetadataResponse>(ReadSarama("metadata_response__OneTopicV" + std::to_string(v)), v);
    REQUIRE(m.brokers.size() == 1);
    CHECK(m.brokers[0].host == "host");
    CHECK(m.brokers[0].port == 9092);
    REQUIRE(m.topics.size() == 1);
    CHECK(m.topics[0].name == "tony");
    REQUIRE(m.topics[0].partitions.size() == 1);
    CHECK(m.topics[0].partitions[0].isr_nodes == std::vector<int32_t>{0, 1, 2});
    if (v >= 7) CHECK(m.topics[0].partitions[0].leader_epoch == 123);
    if (v == 8) {
      CHECK(m.topics[0].topic_authorized_operations == 345);
      CHECK(m.cluster_authorized_operations == 234);
    }
  }
  // v9 is the first flexible Metadata version; v10 adds topic ids, v11 drops the cluster's
  // authorized operations.
  auto v9 = DecodeGolden<MetadataResponse>(ReadSarama("metadata_response__OneTopicV9"), 9);
  REQUIRE(v9.topics.size() == 1);
  CHECK(v9.topics[0].name == "tony");
  CHECK(v9.cluster_id == "clusterId");
  const Uuid::Bytes tony{0x84, 0xcd, 0xa7, 0x55, 0x7e, 0x84, 0x4b, 0xf9,
                         0xb7, 0xdc, 0xfc, 0x11, 0x82, 0x07, 0x72, 0x4a};
  for (int16_t v : {10, 11}) {
    INFO("OneTopicV" << v);
    auto m = DecodeGolden<MetadataResponse>(ReadSarama("metadata_response__OneTopicV" + std::to_string(v)), v);
    REQUIRE(m.topics.size() == 1);
    CHECK(m.topics[0].name == "tony");
    CHECK(m.topics[0].topic_id == Uuid(tony));
    CHECK(m.topics[0].partitions.at(0).leader_epoch == 123);
    if (v == 10) CHECK(m.cluster_authorized_operations == 234);
  }
}

TEST_CASE("Sarama Produce requests v3 (and flexible v9) decode with record sets as views") {
  if (!HaveFixtures()) return;
  std::string bytes = ReadSarama("produce_request__produceRequestOneRecord");
  for (int16_t v = 3; v <= 8; ++v) {
    auto m = DecodeGolden<ProduceRequest>(bytes, v);
    CHECK_FALSE(m.transactional_id.has_value());
    CHECK(m.acks == 0x123);
    CHECK(m.timeout_ms == 0x444);
    REQUIRE(m.topic_data.size() == 1);
    CHECK(m.topic_data[0].name == "topic");
    REQUIRE(m.topic_data[0].partition_data.size() == 1);
    const auto& p = m.topic_data[0].partition_data[0];
    CHECK(p.index == 0xad);
    REQUIRE(p.records.bytes.has_value());
    CHECK(p.records.bytes->size() == 0x52);
    CHECK(p.records.bytes->data() == bytes.data() + (bytes.size() - 0x52));
    CHECK((*p.records.bytes)[16] == 2);  // RecordBatch magic at offset 8 + 4 + 4
  }
  auto v9 = DecodeGolden<ProduceRequest>(ReadSarama("produce_request__produceRequestOneRecordV9"), 9);
  REQUIRE(v9.topic_data.size() == 1);
  CHECK(v9.topic_data[0].partition_data[0].index == 0xad);
  CHECK(v9.topic_data[0].partition_data[0].records.bytes->size() == 0x52);
}

TEST_CASE("Sarama Produce requests v0-v2 decode, and their legacy message set up-converts") {
  if (!HaveFixtures()) return;
  for (int16_t v = 0; v <= 2; ++v) {
    INFO("version " << v);
    auto header = DecodeGolden<ProduceRequest>(ReadSarama("produce_request__produceRequestHeader"), v);
    CHECK(header.acks == 0x123);
    CHECK(header.timeout_ms == 0x444);
    CHECK(header.topic_data.empty());
    std::string bytes = ReadSarama("produce_request__produceRequestOneMessage");
    auto m = DecodeGolden<ProduceRequest>(bytes, v);
    REQUIRE(m.topic_data.size() == 1);
    CHECK(m.topic_data[0].name == "topic");
    const auto& p = m.topic_data[0].partition_data.at(0);
    CHECK(p.index == 0xad);
    REQUIRE(p.records.bytes.has_value());
    CHECK(p.records.bytes->size() == 0x1c);
    CHECK((*p.records.bytes)[16] == 0);  // a magic 0 message at offset 8 + 4 + 4
    auto up = format::UpConvertMessageSet(*p.records.bytes);
    REQUIRE_MESSAGE(up.ok(), up.status().ToString());
    auto batch = format::RecordBatchView::Parse(up->batch);
    REQUIRE(batch.ok());
    auto recs = batch->Records();
    REQUIRE(recs.ok());
    REQUIRE(recs->size() == 1);
    CHECK_FALSE((*recs)[0].key.has_value());
    CHECK((*recs)[0].value == std::string("\x00\xee", 2));
  }
}

TEST_CASE("Sarama Fetch responses v4 and v11 decode and re-encode byte for byte") {
  if (!HaveFixtures()) return;
  auto one = DecodeGolden<FetchResponse>(ReadSarama("fetch_response__oneMessageFetchResponseV4"), 4);
  REQUIRE(one.responses.size() == 1);
  CHECK(one.responses[0].topic == "topic");
  const auto& p = one.responses[0].partitions[0];
  CHECK(p.partition_index == 5);
  CHECK(p.error_code == 1);
  CHECK(p.high_watermark == 0x10101010);
  CHECK(p.last_stable_offset == 0x10101010);
  REQUIRE(p.aborted_transactions.has_value());
  CHECK(p.aborted_transactions->empty());
  CHECK(p.records.bytes->size() == 0x1c);

  auto rec = DecodeGolden<FetchResponse>(ReadSarama("fetch_response__oneRecordFetchResponse"), 4);
  CHECK(rec.responses[0].partitions[0].records.bytes->size() == 0x52);

  // The record set ends part-way through a batch (the broker cut it at max bytes): opaque here,
  // and the structure around it is whole.
  auto partial = DecodeGolden<FetchResponse>(ReadSarama("fetch_response__partialFetchResponse"), 4);
  CHECK(partial.responses[0].partitions[0].records.bytes->size() == 0x40);

  auto empty = DecodeGolden<FetchResponse>(ReadSarama("fetch_response__emptyRecordsFetchResponsev11"), 11);
  CHECK(empty.responses[0].partitions[0].preferred_read_replica == -1);

  auto pref = DecodeGolden<FetchResponse>(ReadSarama("fetch_response__preferredReplicaFetchResponseV11"), 11);
  CHECK(pref.throttle_time_ms == 0);
  CHECK(pref.error_code == 2);
  CHECK(pref.session_id == 0xac);
  REQUIRE(pref.responses[0].partitions[0].aborted_transactions.has_value());
  CHECK(pref.responses[0].partitions[0].aborted_transactions->empty());
  CHECK(pref.responses[0].partitions[0].preferred_read_replica == 3);
  CHECK(pref.responses[0].partitions[0].log_start_offset == 0x01010101);

  // v0 bodies are older than silt serves, but the version guards read them too.
  DecodeGolden<FetchResponse>(ReadSarama("fetch_response__oneMessageFetchResponse"), 0);
  DecodeGolden<FetchResponse>(ReadSarama("fetch_response__overflowMessageFetchResponse"), 0);
}

TEST_CASE("Sarama Fetch v12 responses (flexible) decode with unknown tagged fields skipped") {
  if (!HaveFixtures()) return;
  auto aborted = DecodeGolden<FetchResponse>(ReadSarama("fetch_response__abortedTxnFetchResponseV12"), 12,
                                             /*reencode=*/false);
  REQUIRE(aborted.responses.size() == 1);
  CHECK(aborted.responses[0].topic == "topic");
  const auto& ap = aborted.responses[0].partitions[0];
  CHECK(ap.high_watermark == 0x10101010);
  REQUIRE(ap.aborted_transactions.has_value());
  REQUIRE(ap.aborted_transactions->size() == 1);
  CHECK(ap.aborted_transactions->at(0).producer_id == 1000);
  CHECK(ap.aborted_transactions->at(0).first_offset == 66);

  auto pref = DecodeGolden<FetchResponse>(ReadSarama("fetch_response__preferredReplicaFetchResponseV12"), 12,
                                          /*reencode=*/false);
  CHECK(pref.session_id == 0xac);
  CHECK(pref.responses[0].partitions[0].preferred_read_replica == 3);
}

TEST_CASE("kafka-go Fetch v10 frames from a real broker decode: topic, partition, high watermark") {
  if (!HaveFixtures()) return;
  struct Case {
    const char* name;
    const char* topic;  // nullptr: not named in the fixtures README
    int64_t high_watermark;
  };
  const Case cases[] = {
      {"v1-v1", "test-edgy", 4},
      {"v1-v1c-v2-v2c-v2b-v2b-v2b-v2bc-v1b-v1bc", "test-88", 20},
      {"v1c-v1-v1c", nullptr, -1}, {"v1c-v1c", nullptr, -1}, {"v2-v2", nullptr, -1},
      {"v2b-v1", nullptr, -1},     {"v2bc-v1-v1c", nullptr, -1}, {"v2bc-v1", nullptr, -1},
      {"v2bc-v1c", nullptr, -1},   {"v2c-v2-v2c", nullptr, -1}, {"v2c-v2c", nullptr, -1},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    std::string frame = ReadHex(c.name);
    REQUIRE(frame.size() >= 8);
    Result<int32_t> size = ParseFrameSize(std::string_view(frame).substr(0, 4));
    REQUIRE(size.ok());
    CHECK(static_cast<size_t>(*size) == frame.size() - 4);
    ByteReader r(std::string_view(frame).substr(4));
    ResponseHeader h;
    REQUIRE(h.Decode(r, ResponseHeaderVersion(static_cast<int16_t>(ApiKey::kFetch), 10)).ok());
    CHECK(h.correlation_id == 10);
    std::string body(r.rest());
    auto m = DecodeGolden<FetchResponse>(body, 10);
    REQUIRE(m.responses.size() == 1);
    REQUIRE(m.responses[0].partitions.size() == 1);
    const auto& p = m.responses[0].partitions[0];
    CHECK(p.partition_index == 0);
    CHECK(p.error_code == 0);
    CHECK(p.high_watermark > 0);
    REQUIRE(p.records.bytes.has_value());
    CHECK(!p.records.bytes->empty());
    if (c.topic != nullptr) {
      CHECK(m.responses[0].topic == c.topic);
      CHECK(p.high_watermark == c.high_watermark);
    }
  }
}
