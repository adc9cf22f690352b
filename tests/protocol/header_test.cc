// Headers, framing, the API table and error codes.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "protocol/api_table.h"
#include "protocol/errors.h"
#include "protocol/header.h"
#include "protocol/messages.h"

using namespace silt;
using namespace silt::protocol;

namespace {
std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}
}  // namespace

TEST_CASE("request headers v0, v1 and v2 lay out as Kafka's, client_id staying an int16 string") {
  RequestHeader h{18, 3, 0x01020304, "cli"};
  std::string v0, v1, v2;
  ByteWriter w0(&v0), w1(&v1), w2(&v2);
  h.Encode(w0, 0);
  h.Encode(w1, 1);
  h.Encode(w2, 2);
  CHECK(v0 == Bytes({0, 18, 0, 3, 1, 2, 3, 4}));
  CHECK(v1 == v0 + Bytes({0, 3, 'c', 'l', 'i'}));
  CHECK(v2 == v1 + Bytes({0}));
  for (auto [bytes, version] : {std::pair{v1, 1}, std::pair{v2, 2}}) {
    RequestHeader back;
    ByteReader r(bytes);
    REQUIRE(back.Decode(r, static_cast<int16_t>(version)).ok());
    CHECK(back == h);
    CHECK(r.empty());
  }
  RequestHeader null_client{3, 1, 7, std::nullopt};
  std::string n;
  ByteWriter wn(&n);
  null_client.Encode(wn, 1);
  CHECK(n.substr(8) == Bytes({0xff, 0xff}));
}

TEST_CASE("response header v1 adds a tagged-field section to the correlation id") {
  std::string v0, v1;
  ByteWriter w0(&v0), w1(&v1);
  ResponseHeader{9}.Encode(w0, 0);
  ResponseHeader{9}.Encode(w1, 1);
  CHECK(v0 == Bytes({0, 0, 0, 9}));
  CHECK(v1 == Bytes({0, 0, 0, 9, 0}));
  ResponseHeader back;
  ByteReader r(v1);
  REQUIRE(back.Decode(r, 1).ok());
  CHECK(back.correlation_id == 9);
}

TEST_CASE("the API table drives supported versions, flexibility and header versions") {
  std::set<int16_t> keys;
  for (const ApiInfo& a : SupportedApis()) {
    INFO(a.name);
    CHECK(keys.insert(static_cast<int16_t>(a.key)).second);
    CHECK(a.min_version <= a.max_version);
    CHECK(FindApi(a.key) == &a);
    CHECK(IsVersionSupported(static_cast<int16_t>(a.key), a.max_version));
    CHECK_FALSE(IsVersionSupported(static_cast<int16_t>(a.key), a.max_version + 1));
  }
  CHECK(keys.size() == 33);  // Kafka's 32 and silt's own SiltAppendBatches
  CHECK(FindApi(int16_t{99}) == nullptr);
  CHECK(std::string(ApiName(1)) == "Fetch");

  const int16_t kAV = static_cast<int16_t>(ApiKey::kApiVersions);
  const int16_t kMeta = static_cast<int16_t>(ApiKey::kMetadata);
  CHECK_FALSE(IsFlexibleVersion(kAV, 2));
  CHECK(IsFlexibleVersion(kAV, 3));
  CHECK(IsFlexibleVersion(kAV, 4));  // unsupported, but its header is still v2
  CHECK(RequestHeaderVersion(kAV, 2) == 1);
  CHECK(RequestHeaderVersion(kAV, 3) == 2);
  // ApiVersions responses always use response header v0.
  CHECK(ResponseHeaderVersion(kAV, 3) == 0);
  CHECK(ResponseHeaderVersion(kMeta, 8) == 0);
  CHECK(ResponseHeaderVersion(kMeta, 9) == 1);
  CHECK(RequestHeaderVersion(kMeta, 9) == 2);
  CHECK(ResponseHeaderVersion(static_cast<int16_t>(ApiKey::kFetch), 12) == 1);
  // IncrementalAlterConfigs is served in its first flexible version.
  const int16_t kIAC = static_cast<int16_t>(ApiKey::kIncrementalAlterConfigs);
  CHECK(RequestHeaderVersion(kIAC, 0) == 1);
  CHECK(RequestHeaderVersion(kIAC, 1) == 2);
  CHECK(ResponseHeaderVersion(kIAC, 1) == 1);
  // DescribeQuorum is flexible from its first version: header v2 / v1 throughout.
  const int16_t kDQ = static_cast<int16_t>(ApiKey::kDescribeQuorum);
  CHECK(RequestHeaderVersion(kDQ, 0) == 2);
  CHECK(ResponseHeaderVersion(kDQ, 0) == 1);
  // The reassignment APIs too; ElectLeaders from v2.
  const int16_t kAPR = static_cast<int16_t>(ApiKey::kAlterPartitionReassignments);
  CHECK(RequestHeaderVersion(kAPR, 0) == 2);
  CHECK(ResponseHeaderVersion(kAPR, 0) == 1);
  const int16_t kEL = static_cast<int16_t>(ApiKey::kElectLeaders);
  CHECK(RequestHeaderVersion(kEL, 1) == 1);
  CHECK(RequestHeaderVersion(kEL, 2) == 2);

  ApiVersionsResponse av = MakeApiVersionsResponse();
  REQUIRE(av.api_keys.size() == SupportedApis().size());
  for (size_t i = 0; i < av.api_keys.size(); ++i) {
    CHECK(av.api_keys[i].api_key == static_cast<int16_t>(SupportedApis()[i].key));
    CHECK(av.api_keys[i].max_version == SupportedApis()[i].max_version);
  }
}

TEST_CASE("the frame size is checked against the limit before anything is allocated") {
  CHECK(*ParseFrameSize(Bytes({0, 0, 0, 8})) == 8);
  CHECK(ParseFrameSize(Bytes({0xff, 0xff, 0xff, 0xfe})).status().IsCorruption());
  CHECK(ParseFrameSize(Bytes({0, 0, 0, 3})).status().IsCorruption());
  CHECK(ParseFrameSize(Bytes({0x7f, 0xff, 0xff, 0xff})).status().IsTooLarge());
  CHECK(ParseFrameSize(Bytes({0, 0, 4, 1}), 1024).status().IsTooLarge());
  CHECK(*ParseFrameSize(Bytes({0, 0, 4, 0}), 1024) == 1024);
  CHECK(ParseFrameSize(Bytes({0, 0, 4})).status().code() == Status::Code::kInvalidArgument);
}

TEST_CASE("a request frame splits into header and body, flexible or not") {
  MetadataRequest body;
  body.topics = std::vector<MetadataRequest::Topic>{{.name = "alpha"}};
  std::string frame;
  AppendRequestFrame(RequestHeader{3, 8, 77, "cli"}, body, &frame);
  REQUIRE(*ParseFrameSize(std::string_view(frame).substr(0, 4)) == static_cast<int32_t>(frame.size() - 4));
  auto parsed = ParseRequestFrame(std::string_view(frame).substr(4));
  REQUIRE(parsed.ok());
  CHECK(parsed->supported);
  CHECK(parsed->header_version == 1);
  CHECK(parsed->header.correlation_id == 77);
  CHECK(parsed->header.client_id == "cli");
  MetadataRequest back;
  ByteReader r(parsed->body);
  REQUIRE(back.Decode(r, 8).ok());
  CHECK(back == body);

  ApiVersionsRequest av{"silt", "0.1"};
  std::string flex;
  AppendRequestFrame(RequestHeader{18, 3, 5, "cli"}, av, &flex);
  auto pf = ParseRequestFrame(std::string_view(flex).substr(4));
  REQUIRE(pf.ok());
  CHECK(pf->header_version == 2);
  ApiVersionsRequest avb;
  ByteReader ra(pf->body);
  REQUIRE(avb.Decode(ra, 3).ok());
  CHECK(avb == av);
}

TEST_CASE("an unsupported version or api still yields api key, version and correlation id") {
  // ApiVersions v9 from a future client, with a body silt cannot know.
  std::string frame = Bytes({0, 18, 0, 9, 0, 0, 1, 0, 0, 3, 'c', 'l', 'i', 0, 0x42});
  auto p = ParseRequestFrame(frame);
  REQUIRE(p.ok());
  CHECK_FALSE(p->supported);
  CHECK(p->header.request_api_key == 18);
  CHECK(p->header.request_api_version == 9);
  CHECK(p->header.correlation_id == 256);

  // An unknown api key whose header is garbage past the fixed part.
  auto q = ParseRequestFrame(Bytes({0x40, 0, 0, 1, 0, 0, 0, 5, 0x7f}));
  REQUIRE(q.ok());
  CHECK_FALSE(q->supported);
  CHECK(q->header.request_api_key == 0x4000);
  CHECK(q->header.correlation_id == 5);

  // A supported request with a broken client_id is corruption; a stub is truncation.
  CHECK_FALSE(ParseRequestFrame(Bytes({0, 3, 0, 1, 0, 0, 0, 5, 0, 9, 'x'})).ok());
  CHECK(ParseRequestFrame(Bytes({0, 3, 0, 1})).status().IsTruncated());

  // The answer: a v0 body with UNSUPPORTED_VERSION, in response header v0.
  std::string out;
  AppendResponseFrame(18, 0, p->header.correlation_id, MakeUnsupportedApiVersionsResponse(), &out);
  CHECK(out == Bytes({0, 0, 0, 16, 0, 0, 1, 0, 0, 35, 0, 0, 0, 1, 0, 18, 0, 0, 0, 4}));
}

TEST_CASE("ApiVersions v3 responses use response header v0 and a flexible body") {
  ApiVersionsResponse r;
  r.api_keys = {{18, 0, 3}};
  std::string out;
  AppendResponseFrame(18, 3, 1, r, &out);
  // size, correlation id (no tagged fields), error, compact array of 1, entry + tags,
  // throttle, tags.
  CHECK(out == Bytes({0, 0, 0, 19, 0, 0, 0, 1, 0, 0, 2, 0, 18, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0}));
}

TEST_CASE("a zero-copy Fetch frame sends the same bytes as a fully encoded one") {
  std::string file_bytes = "0123456789abcdefghij";  // stands in for segment file contents
  FetchResponse inline_resp;
  inline_resp.session_id = 3;
  FetchResponse::Partition p0;
  p0.partition_index = 0;
  p0.high_watermark = 20;
  p0.records.bytes = std::string_view(file_bytes).substr(5, 10);
  FetchResponse::Partition p1;
  p1.partition_index = 1;
  p1.records.bytes = std::string_view(file_bytes).substr(0, 4);
  FetchResponse::Partition p2;  // null records
  p2.partition_index = 2;
  inline_resp.responses.push_back({.topic = "alpha", .partitions = {p0, p1, p2}});

  FetchResponse file_resp = inline_resp;
  file_resp.responses[0].partitions[0].records = RecordSet{std::nullopt, FileSlice{3, 5, 10}};
  file_resp.responses[0].partitions[1].records = RecordSet{std::nullopt, FileSlice{3, 0, 4}};

  for (int16_t v : {4, 7, 11}) {
    INFO("version " << v);
    std::string expected;
    AppendResponseFrame(1, v, 42, inline_resp, &expected);

    ResponsePieces pieces;
    EncodeFetchResponseFrame(42, v, file_resp, &pieces);
    CHECK(pieces.wire_size() == static_cast<int64_t>(expected.size()));
    CHECK(pieces.buffer.size() == expected.size() - 14);  // the file bytes are not copied
    int files = 0;
    for (const Piece& piece : pieces.pieces) files += piece.file ? 1 : 0;
    CHECK(files == 2);
    std::string flat;
    Status s = pieces.Flatten(
        [&](const FileSlice& f, std::string* out) {
          CHECK(f.fd == 3);
          out->append(file_bytes, static_cast<size_t>(f.position), static_cast<size_t>(f.size));
          return Status::OK();
        },
        &flat);
    REQUIRE(s.ok());
    CHECK(flat == expected);
  }
}

TEST_CASE("Kafka error codes carry Kafka's numbers and names") {
  CHECK(ToWire(ErrorCode::UNKNOWN_SERVER_ERROR) == -1);
  CHECK(ToWire(ErrorCode::NONE) == 0);
  CHECK(ToWire(ErrorCode::NOT_LEADER_OR_FOLLOWER) == 6);
  CHECK(ToWire(ErrorCode::MESSAGE_TOO_LARGE) == 10);
  CHECK(ToWire(ErrorCode::INVALID_TOPIC_EXCEPTION) == 17);
  CHECK(ToWire(ErrorCode::RECORD_LIST_TOO_LARGE) == 18);
  CHECK(ToWire(ErrorCode::INVALID_REQUIRED_ACKS) == 21);
  CHECK(ToWire(ErrorCode::UNSUPPORTED_VERSION) == 35);
  CHECK(ToWire(ErrorCode::INVALID_CONFIG) == 40);
  CHECK(ToWire(ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER) == 45);
  CHECK(ToWire(ErrorCode::KAFKA_STORAGE_ERROR) == 56);
  CHECK(ToWire(ErrorCode::UNKNOWN_PRODUCER_ID) == 59);
  CHECK(ToWire(ErrorCode::NON_EMPTY_GROUP) == 68);
  CHECK(ToWire(ErrorCode::GROUP_ID_NOT_FOUND) == 69);
  CHECK(ToWire(ErrorCode::MEMBER_ID_REQUIRED) == 79);
  CHECK(ToWire(ErrorCode::INVALID_RECORD) == 87);
  CHECK(ToWire(ErrorCode::UNKNOWN_TOPIC_ID) == 100);
  CHECK(std::string(ErrorName(ErrorCode::REBALANCE_IN_PROGRESS)) == "REBALANCE_IN_PROGRESS");
  CHECK(std::string(ErrorName(int16_t{36})) == "TOPIC_ALREADY_EXISTS");
  CHECK(std::string(ErrorName(int16_t{99})) == "UNKNOWN_ERROR_CODE");
  CHECK(IsRetriable(ErrorCode::NOT_LEADER_OR_FOLLOWER));
  CHECK_FALSE(IsRetriable(ErrorCode::INVALID_REQUIRED_ACKS));
}

TEST_CASE("one function maps a Status to the error code a response carries") {
  CHECK(ErrorCodeFromStatus(Status::OK()) == ErrorCode::NONE);
  CHECK(ErrorCodeFromStatus(Status::Corruption("crc")) == ErrorCode::CORRUPT_MESSAGE);
  CHECK(ErrorCodeFromStatus(Status::Truncated("short")) == ErrorCode::CORRUPT_MESSAGE);
  CHECK(ErrorCodeFromStatus(Status::TooLarge("batch")) == ErrorCode::MESSAGE_TOO_LARGE);
  CHECK(ErrorCodeFromStatus(Status::TooLarge("set"), TooLargeSubject::kRecordSet) ==
        ErrorCode::RECORD_LIST_TOO_LARGE);
  CHECK(ErrorCodeFromStatus(Status::NotFound("t-0")) == ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
  CHECK(ErrorCodeFromStatus(Status::OutOfRange("5")) == ErrorCode::OFFSET_OUT_OF_RANGE);
  CHECK(ErrorCodeFromStatus(Status::NoSpace("disk")) == ErrorCode::KAFKA_STORAGE_ERROR);
  CHECK(ErrorCodeFromStatus(Status::IOError("eio")) == ErrorCode::KAFKA_STORAGE_ERROR);
  CHECK(ErrorCodeFromStatus(Status::AlreadyExists("t")) == ErrorCode::TOPIC_ALREADY_EXISTS);
  CHECK(ErrorCodeFromStatus(Status::InvalidArgument("x")) == ErrorCode::INVALID_REQUEST);
  CHECK(ErrorCodeFromStatus(Status::Internal("bug")) == ErrorCode::UNKNOWN_SERVER_ERROR);
}
