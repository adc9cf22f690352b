#include "cluster/voters.h"

#include <doctest/doctest.h>

using silt::NodeId;
using silt::cluster::FindVoter;
using silt::cluster::FormatVoters;
using silt::cluster::ParseVoters;

TEST_CASE("a static voter list parses into ids, hosts and ports in the order given") {
  auto v = ParseVoters("1@127.0.0.1:9093, 2@node-b.example:9094,3@[::1]:9095");
  REQUIRE(v.ok());
  REQUIRE(v->size() == 3);
  CHECK((*v)[0].id == NodeId(1));
  CHECK((*v)[0].host == "127.0.0.1");
  CHECK((*v)[0].port == 9093);
  CHECK((*v)[1].host == "node-b.example");
  CHECK((*v)[2].host == "::1");
  CHECK((*v)[2].address() == "[::1]:9095");
  CHECK(FormatVoters(*v) == "1@127.0.0.1:9093,2@node-b.example:9094,3@[::1]:9095");
  CHECK(FindVoter(*v, NodeId(2))->port == 9094);
  CHECK_FALSE(FindVoter(*v, NodeId(4)).has_value());
}

TEST_CASE("a formatted voter list parses back to the same voters") {
  auto v = ParseVoters("7@a:1,8@b:65535");
  REQUIRE(v.ok());
  auto again = ParseVoters(FormatVoters(*v));
  REQUIRE(again.ok());
  CHECK(*again == *v);
}

TEST_CASE("a malformed voter list is refused, naming the entry") {
  for (const char* bad :
       {"", " ", "1@h:1,", "1@h", "h:1", "x@h:1", "0@h:1", "-1@h:1", "1@:9093", "1@h:0",
        "1@h:65536", "1@h:12x", "1@::1:9093", "1@[::1]9093", "1@[::1:9093", "1@h:1,1@g:2",
        "1@h:1,2@h:1", "99999999999@h:1", "1@h h:1"}) {
    INFO("text: '" << bad << "'");
    auto v = ParseVoters(bad);
    REQUIRE_FALSE(v.ok());
    CHECK(v.status().code() == silt::Status::Code::kInvalidArgument);
  }
  auto dup = ParseVoters("1@h:1,1@g:2");
  CHECK(dup.status().message().find("'1@g:2'") != std::string::npos);
  CHECK(dup.status().message().find("twice") != std::string::npos);
}
