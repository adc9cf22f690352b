// Codecs the client side adds: DeleteGroups (v0-1) and IncrementalAlterConfigs (v0).
#include <doctest/doctest.h>

#include <string>

#include "protocol/messages.h"

using namespace silt;
using namespace silt::protocol;

namespace {
std::string Bytes(std::initializer_list<int> v) {
  std::string s;
  for (int b : v) s.push_back(static_cast<char>(b));
  return s;
}

template <class M>
std::string Encode(const M& m, int16_t v) {
  std::string out;
  ByteWriter w(&out);
  m.Encode(w, v);
  return out;
}

template <class M>
void CheckRoundTripAndTruncation(const M& m, int16_t v) {
  std::string bytes = Encode(m, v);
  M back;
  ByteReader r(bytes);
  REQUIRE(back.Decode(r, v).ok());
  CHECK(back == m);
  CHECK(r.remaining() == 0);
  for (size_t n = 0; n < bytes.size(); ++n) {
    M cut;
    ByteReader rc(std::string_view(bytes).substr(0, n));
    CHECK_FALSE(cut.Decode(rc, v).ok());
  }
}
}  // namespace

TEST_CASE("DeleteGroups request and response follow Kafka's schema for v0 and v1") {
  DeleteGroupsRequest req;
  req.groups_names = {"g1"};
  CHECK(Encode(req, 0) == Bytes({0, 0, 0, 1, 0, 2, 'g', '1'}));
  DeleteGroupsResponse resp;
  resp.throttle_time_ms = 5;
  resp.results.push_back({"g1", 69});
  CHECK(Encode(resp, 1) == Bytes({0, 0, 0, 5, 0, 0, 0, 1, 0, 2, 'g', '1', 0, 69}));
  for (int16_t v : {0, 1}) {
    CheckRoundTripAndTruncation(req, v);
    CheckRoundTripAndTruncation(resp, v);
  }
}

TEST_CASE("IncrementalAlterConfigs v0 writes resources, operations and nullable values") {
  IncrementalAlterConfigsRequest req;
  IncrementalAlterConfigsRequest::Resource res;
  res.resource_type = 2;
  res.resource_name = "t";
  res.configs.push_back({"a", 0, std::string("1")});
  res.configs.push_back({"b", 1, std::nullopt});
  req.resources.push_back(res);
  CHECK(Encode(req, 0) == Bytes({0, 0, 0, 1,             // resources
                                 2, 0, 1, 't',           // type, name
                                 0, 0, 0, 2,             // configs
                                 0, 1, 'a', 0, 0, 1, '1',  // SET a=1
                                 0, 1, 'b', 1, 0xff, 0xff,  // DELETE b
                                 0}));                     // validate_only
  IncrementalAlterConfigsResponse resp;
  resp.responses.push_back({40, std::string("bad"), 2, "t"});
  CheckRoundTripAndTruncation(req, 0);
  CheckRoundTripAndTruncation(resp, 0);
}
