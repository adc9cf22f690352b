#include "client/reassign.h"

#include <doctest/doctest.h>

#include <map>

using namespace silt;
using namespace silt::client;

TEST_CASE("a generated plan spreads replicas and preferred leaders round robin over the brokers") {
  std::map<std::string, std::map<int32_t, std::vector<int32_t>>> now = {
      {"a", {{0, {1, 2, 3}}, {1, {2, 3, 1}}, {2, {3, 1, 2}}, {3, {1, 2, 3}}}}};
  auto plan = GeneratePlan(now, {4, 3, 2, 1});
  REQUIRE(plan.ok());
  REQUIRE(plan->size() == 4);
  std::map<int32_t, int> replicas, leaders;
  for (const auto& m : *plan) {
    REQUIRE(m.replicas.has_value());
    CHECK(m.replicas->size() == 3);  // the replication factor is kept
    ++leaders[m.replicas->front()];
    for (int32_t r : *m.replicas) ++replicas[r];
  }
  for (int32_t b : {1, 2, 3, 4}) {
    CHECK(replicas[b] == 3);
    CHECK(leaders[b] == 1);
  }
  CHECK((*plan)[0].replicas == std::vector<int32_t>{1, 2, 3});
  CHECK((*plan)[3].replicas == std::vector<int32_t>{4, 1, 2});
}

TEST_CASE("a plan cannot place more replicas than brokers, nor list a broker twice") {
  std::map<std::string, std::map<int32_t, std::vector<int32_t>>> now = {{"a", {{0, {1, 2, 3}}}}};
  CHECK(GeneratePlan(now, {1, 2}).status().code() == Status::Code::kInvalidArgument);
  CHECK(GeneratePlan(now, {1, 2, 2, 3}).status().code() == Status::Code::kInvalidArgument);
  CHECK(GeneratePlan(now, {}).status().code() == Status::Code::kInvalidArgument);
}
