#include "base/properties.h"

#include <doctest/doctest.h>

using namespace silt;

TEST_CASE("properties parse key=value lines and skip comments, blanks and lines without '='") {
  Properties p = ParseProperties(
      "# a comment\n! another\n\n  cluster.id = abc\r\nnode.id=1\nnoequals\nempty=\n"
      "url=a=b\nnode.id=2");
  CHECK(p.size() == 4);
  CHECK(p["cluster.id"] == "abc");
  CHECK(p["node.id"] == "2");  // the last one wins
  CHECK(p["empty"] == "");
  CHECK(p["url"] == "a=b");  // only the first '=' separates
}

TEST_CASE("formatted properties read back as the same map, with the comment first") {
  Properties p{{"version", "1"}, {"cluster.id", "x-y_z"}, {"retention.ms", ""}};
  auto text = FormatProperties(p, "written by silt\nsecond line");
  REQUIRE(text.ok());
  CHECK(*text == "# written by silt\n# second line\ncluster.id=x-y_z\nretention.ms=\nversion=1\n");
  CHECK(ParseProperties(*text) == p);
}

TEST_CASE("formatting refuses entries that would not read back") {
  CHECK(!FormatProperties({{"", "v"}}).ok());
  CHECK(!FormatProperties({{"a=b", "v"}}).ok());
  CHECK(!FormatProperties({{"#k", "v"}}).ok());
  CHECK(!FormatProperties({{" k", "v"}}).ok());
  CHECK(!FormatProperties({{"k", "two\nlines"}}).ok());
  CHECK(!FormatProperties({{"k", " lead"}}).ok());
  CHECK(FormatProperties({{"k", "trail "}}).ok());
}
