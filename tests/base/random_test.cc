#include "base/random.h"

#include <doctest/doctest.h>

#include <set>

#include "base/topic_name.h"
#include "base/uuid.h"

using namespace silt;

TEST_CASE("a uuid prints as 22 base64url characters and parses back") {
  Uuid::Bytes b{};
  b[15] = 1;
  CHECK(Uuid(b).ToString() == "AAAAAAAAAAAAAAAAAAAAAQ");  // Kafka's METADATA_TOPIC_ID
  CHECK(Uuid().ToString() == "AAAAAAAAAAAAAAAAAAAAAA");   // Kafka's ZERO_UUID
  CHECK(Uuid(b).is_reserved());
  CHECK(Uuid().is_reserved());
  for (int i = 0; i < 16; ++i) b[i] = static_cast<uint8_t>(0xf0 + i);
  std::string text = Uuid(b).ToString();
  CHECK(text == "8PHy8_T19vf4-fr7_P3-_w");
  auto back = Uuid::Parse(text);
  REQUIRE(back.ok());
  CHECK(*back == Uuid(b));
}

TEST_CASE("parsing a uuid refuses wrong lengths, characters outside base64url and stray bits") {
  CHECK(!Uuid::Parse("").ok());
  CHECK(!Uuid::Parse("AAAAAAAAAAAAAAAAAAAAA").ok());
  CHECK(!Uuid::Parse("AAAAAAAAAAAAAAAAAAAAAAA").ok());
  CHECK(!Uuid::Parse("AAAAAAAAAAAAAAAAAAAAA+").ok());   // '+' is standard base64, not url-safe
  CHECK(!Uuid::Parse("AAAAAAAAAAAAAAAAAAAAAE").ok());   // the last four bits must be zero
  CHECK(Uuid::Parse("AAAAAAAAAAAAAAAAAAAAAQ").ok());
}

TEST_CASE("random uuids are version 4, distinct, never reserved and never start with '-'") {
  std::set<std::string> seen;
  for (int i = 0; i < 2000; ++i) {
    Uuid u = RandomUuid();
    CHECK((u.bytes()[6] >> 4) == 4);
    CHECK((u.bytes()[8] >> 6) == 2);
    CHECK(!u.is_reserved());
    std::string s = u.ToString();
    CHECK(s.size() == 22);
    CHECK(s[0] != '-');
    CHECK(Uuid::Parse(s).value() == u);
    seen.insert(s);
  }
  CHECK(seen.size() == 2000);
  CHECK(NewClusterId().size() == 22);
  CHECK(NewTopicId() != NewTopicId());
}

TEST_CASE("topic names follow Kafka's rules") {
  CHECK(ValidateTopicName("orders.v1-x_y").ok());
  CHECK(ValidateTopicName(std::string(249, 'a')).ok());
  CHECK(!ValidateTopicName(std::string(250, 'a')).ok());
  CHECK(!ValidateTopicName("").ok());
  CHECK(!ValidateTopicName(".").ok());
  CHECK(!ValidateTopicName("..").ok());
  CHECK(!ValidateTopicName("a b").ok());
  CHECK(!ValidateTopicName("a/b").ok());
  CHECK(TopicCollisionKey("a.b") == TopicCollisionKey("a_b"));
  CHECK(TopicCollisionKey("a.b") != TopicCollisionKey("a-b"));
}
