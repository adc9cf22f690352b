#include <doctest/doctest.h>

#include "replicate/configs.h"
#include "replicate/dir_sink.h"
#include "replicate/endpoint.h"

using namespace silt;
using namespace silt::replicate;

TEST_CASE("a SOURCE or DEST without a scheme is a data dir path") {
  auto e = ParseEndpoint("./backup/silt-data");
  REQUIRE(e.ok());
  CHECK(e->kind == EndpointSpec::Kind::kDataDir);
  CHECK(e->dir == "./backup/silt-data");
  CHECK(e->text == "./backup/silt-data");
  auto colon = ParseEndpoint("/data/host:9092");  // a path may hold a colon
  REQUIRE(colon.ok());
  CHECK(colon->kind == EndpointSpec::Kind::kDataDir);
}

TEST_CASE("kafka:// names a cluster by its brokers, the port defaulting to 9092") {
  auto e = ParseEndpoint("kafka://a.example:19092,b.example,[::1]:9093");
  REQUIRE(e.ok());
  CHECK(e->kind == EndpointSpec::Kind::kCluster);
  CHECK(e->bootstrap == std::vector<std::string>{"a.example:19092", "b.example:9092", "[::1]:9093"});
  auto slash = ParseEndpoint("kafka://localhost:9092/");
  REQUIRE(slash.ok());
  CHECK(slash->bootstrap == std::vector<std::string>{"localhost:9092"});
}

TEST_CASE("kafka:// without a broker, another scheme, or nothing at all is refused") {
  CHECK(ParseEndpoint("kafka://").status().code() == Status::Code::kInvalidArgument);
  CHECK(ParseEndpoint("kafka://,").status().code() == Status::Code::kInvalidArgument);
  auto other = ParseEndpoint("s3://bucket/x");
  CHECK(other.status().code() == Status::Code::kInvalidArgument);
  CHECK(other.status().message().find("s3://") != std::string::npos);
  CHECK(ParseEndpoint("").status().code() == Status::Code::kInvalidArgument);
  CHECK_FALSE(ParseEndpoint("kafka://host:notaport").ok());
}

TEST_CASE("configs that describe the destination cluster are not copied") {
  std::map<std::string, std::string> in = {
      {"cleanup.policy", "compact"},
      {"retention.ms", "1000"},
      {"max.message.bytes", "2000000"},
      {"min.insync.replicas", "2"},
      {"unclean.leader.election.enable", "true"},
      {"leader.replication.throttled.replicas", "*"},
      {"follower.replication.throttled.replicas", "*"},
      {"message.timestamp.type", "LogAppendTime"},
      {"message.timestamp.difference.max.ms", "10"},
      {"message.format.version", "2.8"},
      {"confluent.placement.constraints", "{}"},
      {"silt.mirror", "true"},
  };
  auto out = ConfigsToCopy(in);
  CHECK(out == std::map<std::string, std::string>{{"cleanup.policy", "compact"},
                                                  {"max.message.bytes", "2000000"},
                                                  {"retention.ms", "1000"}});
}

TEST_CASE("a checkpoint file name keeps safe characters and escapes the rest") {
  CHECK(CheckpointFileName("dir:/tmp/a b") == "dir%3A%2Ftmp%2Fa%20b.checkpoint");
  CHECK(CheckpointFileName("kafka:h-1.x_y:9092") == "kafka%3Ah-1.x_y%3A9092.checkpoint");
}
