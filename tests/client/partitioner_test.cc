#include <doctest/doctest.h>

#include <set>

#include "client/partitioner.h"

using namespace silt;
using namespace silt::client;

namespace {
// Kafka's Utils.murmur2 of these keys (as published with its implementation's test vectors).
int32_t Expected(int32_t murmur2, int32_t n) {
  return static_cast<int32_t>((static_cast<uint32_t>(murmur2) & 0x7fffffffu) % static_cast<uint32_t>(n));
}
}  // namespace

TEST_CASE("keyed records go where Kafka's Java client puts them") {
  for (int32_t n : {1, 3, 7, 12, 100}) {
    CHECK(Partitioner::ForKey("1", n) == Expected(-1993445489, n));
    CHECK(Partitioner::ForKey("12", n) == Expected(126087238, n));
    CHECK(Partitioner::ForKey("123", n) == Expected(-267702483, n));
    CHECK(Partitioner::ForKey("1234", n) == Expected(-1614185708, n));
    CHECK(Partitioner::ForKey("12345", n) == Expected(-1188365604, n));
  }
  Partitioner p(Partitioner::Kind::kDefault, 7, 1);
  CHECK(p.Choose(std::string_view("12345")) == Expected(-1188365604, 7));
}

TEST_CASE("unkeyed records stick to one partition until its batch is sent, then move") {
  Partitioner p(Partitioner::Kind::kDefault, 4, 42);
  int32_t first = p.Choose(std::nullopt);
  for (int i = 0; i < 100; ++i) CHECK(p.Choose(std::nullopt) == first);
  p.OnBatchSent((first + 1) % 4);  // another partition's batch: no change
  CHECK(p.Choose(std::nullopt) == first);
  p.OnBatchSent(first);
  int32_t second = p.Choose(std::nullopt);
  CHECK(second != first);
  CHECK(second >= 0);
  CHECK(second < 4);
}

TEST_CASE("round-robin cycles through every partition and random stays in range") {
  Partitioner rr(Partitioner::Kind::kRoundRobin, 3, 1);
  std::vector<int32_t> seen;
  for (int i = 0; i < 6; ++i) seen.push_back(rr.Choose(std::string_view("same-key")));
  CHECK(seen == std::vector<int32_t>{0, 1, 2, 0, 1, 2});
  Partitioner rnd(Partitioner::Kind::kRandom, 5, 9);
  std::set<int32_t> hit;
  for (int i = 0; i < 500; ++i) {
    int32_t q = rnd.Choose(std::nullopt);
    REQUIRE(q >= 0);
    REQUIRE(q < 5);
    hit.insert(q);
  }
  CHECK(hit.size() == 5);
}

TEST_CASE("partitioner names parse, others are refused") {
  CHECK(*Partitioner::ParseKind("murmur2") == Partitioner::Kind::kMurmur2);
  CHECK(*Partitioner::ParseKind("round-robin") == Partitioner::Kind::kRoundRobin);
  CHECK(*Partitioner::ParseKind("random") == Partitioner::Kind::kRandom);
  CHECK_FALSE(Partitioner::ParseKind("sticky-ish").ok());
}
