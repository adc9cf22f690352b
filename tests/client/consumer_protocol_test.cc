#include <doctest/doctest.h>

#include <string>

#include "net/connection.h"
#include "client/consumer_protocol.h"

using namespace silt;
using namespace silt::client;

namespace {
std::string Bytes(std::initializer_list<int> v) {
  std::string s;
  for (int b : v) s.push_back(static_cast<char>(b));
  return s;
}
}  // namespace

TEST_CASE("a v0 subscription is laid out as Kafka's ConsumerProtocolSubscription") {
  Subscription s;
  s.version = 0;
  s.topics = {"t", "ab"};
  // version, topics [2: "t", "ab"], user_data null
  std::string want = Bytes({0, 0, 0, 0, 0, 2, 0, 1, 't', 0, 2, 'a', 'b', 0xff, 0xff, 0xff, 0xff});
  CHECK(s.Encode() == want);
  auto d = Subscription::Decode(want);
  REQUIRE(d.ok());
  CHECK(d->version == 0);
  CHECK(d->topics == std::vector<std::string>{"t", "ab"});
  CHECK_FALSE(d->user_data.has_value());
}

TEST_CASE("a v1 subscription adds owned partitions and round-trips") {
  Subscription s;
  s.version = 1;
  s.topics = {"t"};
  s.owned_partitions["t"] = {0, 2};
  std::string want = Bytes({0, 1, 0, 0, 0, 1, 0, 1, 't', 0xff, 0xff, 0xff, 0xff,  // v0 part
                            0, 0, 0, 1, 0, 1, 't', 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2});
  CHECK(s.Encode() == want);
  auto d = Subscription::Decode(want);
  REQUIRE(d.ok());
  CHECK(d->owned_partitions == s.owned_partitions);
}

TEST_CASE("a subscription of a newer version is read for the fields this side knows") {
  Subscription s;
  s.version = 3;
  s.topics = {"orders"};
  s.user_data = std::string("ud");
  s.generation_id = 7;
  s.rack_id = std::string("r1");
  std::string bytes = s.Encode();
  // A future v4 with a trailing field: ignored, like Kafka's ConsumerProtocol does.
  bytes[1] = 4;
  bytes += Bytes({0, 0, 0, 9});
  auto d = Subscription::Decode(bytes);
  REQUIRE(d.ok());
  CHECK(d->version == 4);
  CHECK(d->topics == std::vector<std::string>{"orders"});
  CHECK(d->user_data == std::optional<std::string>("ud"));
  CHECK(d->generation_id == 7);
  CHECK(d->rack_id == std::optional<std::string>("r1"));
}

TEST_CASE("an assignment is laid out as Kafka's ConsumerProtocolAssignment") {
  Assignment a;
  a.partitions["t"] = {0, 1};
  std::string want = Bytes({0, 0, 0, 0, 0, 1, 0, 1, 't', 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1,
                            0xff, 0xff, 0xff, 0xff});
  CHECK(a.Encode() == want);
  auto d = Assignment::Decode(want);
  REQUIRE(d.ok());
  CHECK(d->partitions == a.partitions);
  // An empty assignment (a member that got nothing) decodes to no partitions.
  auto empty = Assignment::Decode("");
  REQUIRE(empty.ok());
  CHECK(empty->partitions.empty());
}

TEST_CASE("consumer protocol bytes that end early or lie about counts are rejected") {
  Assignment a;
  a.partitions["topic"] = {0, 1, 2};
  std::string bytes = a.Encode();
  for (size_t n = 1; n < bytes.size() - 4; ++n)
    CHECK_FALSE(Assignment::Decode(bytes.substr(0, n)).ok());
  // A partition count far beyond the bytes present fails before allocating.
  std::string lie = Bytes({0, 0, 0, 0, 0, 1, 0, 1, 't', 0x7f, 0xff, 0xff, 0xff});
  auto d = Assignment::Decode(lie);
  REQUIRE_FALSE(d.ok());
  CHECK(d.status().IsCorruption());
  Subscription s;
  s.topics = {"t"};
  std::string sb = s.Encode();
  for (size_t n = 1; n < sb.size(); ++n) CHECK_FALSE(Subscription::Decode(sb.substr(0, n)).ok());
}

TEST_CASE("the range assignor gives each member n/m partitions and the first n%m one more") {
  std::map<std::string, std::vector<std::string>> subs = {
      {"m-c", {"t"}}, {"m-a", {"t"}}, {"m-b", {"t"}}};
  auto r = RangeAssign(subs, {{"t", 7}});
  // Members sorted by id: m-a, m-b, m-c get 3, 2, 2.
  CHECK(r["m-a"]["t"] == std::vector<int32_t>{0, 1, 2});
  CHECK(r["m-b"]["t"] == std::vector<int32_t>{3, 4});
  CHECK(r["m-c"]["t"] == std::vector<int32_t>{5, 6});

  auto two = RangeAssign({{"x", {"t"}}, {"y", {"t"}}}, {{"t", 4}});
  CHECK(two["x"]["t"] == std::vector<int32_t>{0, 1});
  CHECK(two["y"]["t"] == std::vector<int32_t>{2, 3});
}

TEST_CASE("the range assignor assigns per topic and leaves surplus members empty") {
  std::map<std::string, std::vector<std::string>> subs = {
      {"a", {"t1", "t2"}}, {"b", {"t2"}}, {"c", {"t2"}}};
  auto r = RangeAssign(subs, {{"t1", 2}, {"t2", 2}});
  CHECK(r["a"]["t1"] == std::vector<int32_t>{0, 1});
  CHECK(r["a"]["t2"] == std::vector<int32_t>{0});
  CHECK(r["b"]["t2"] == std::vector<int32_t>{1});
  REQUIRE(r.count("c") == 1);
  CHECK(r["c"].empty());
  // A topic without known partitions assigns nothing.
  auto none = RangeAssign({{"a", {"gone"}}}, {});
  CHECK(none["a"].empty());
}

TEST_CASE("bootstrap lists parse hosts, ports, IPv6 literals and the default port") {
  auto r = net::ParseBootstrap("localhost:9093, 10.0.0.1:19092,[::1]:9000,kafka");
  REQUIRE(r.ok());
  REQUIRE(r->size() == 4);
  CHECK((*r)[0].host == "localhost");
  CHECK((*r)[0].port == 9093);
  CHECK((*r)[1].host == "10.0.0.1");
  CHECK((*r)[2].host == "::1");
  CHECK((*r)[2].port == 9000);
  CHECK((*r)[3].port == 9092);
  CHECK_FALSE(net::ParseBootstrap("host:").ok());
  CHECK_FALSE(net::ParseBootstrap("host:99999").ok());
  CHECK_FALSE(net::ParseBootstrap("host:12a").ok());
  CHECK_FALSE(net::ParseBootstrap("").ok());
}
