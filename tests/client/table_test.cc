#include <doctest/doctest.h>

#include "client/table.h"

using namespace silt::client;

TEST_CASE("tables align under a header for people and are tab-separated for pipes") {
  Table t({"TOPIC", "PARTITIONS"});
  t.AddRow({"orders", "3"});
  t.AddRow({"a", "12"});
  CHECK(t.Render(false) == "orders\t3\na\t12\n");
  CHECK(t.Render(true) == "TOPIC   PARTITIONS\norders  3\na       12\n");
}

TEST_CASE("byte sizes read as binary units") {
  CHECK(HumanBytes(0) == "0 B");
  CHECK(HumanBytes(1023) == "1023 B");
  CHECK(HumanBytes(1536) == "1.5 KiB");
  CHECK(HumanBytes(5LL << 30) == "5.0 GiB");
}
