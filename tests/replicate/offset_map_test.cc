#include "replicate/offset_map.h"

#include <doctest/doctest.h>

#include <string>

using namespace silt;
using namespace silt::replicate;

namespace {

int64_t T(const PartitionOffsetMap& m, int64_t source) {
  auto r = m.Translate(Offset(source));
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  return r->value();
}

// A source of 0..19 where 3..4 were compacted away, 10 is a control batch and 15..16 an aborted
// transaction, copied into a destination that already held 100 records.
PartitionOffsetMap HoleyMap() {
  PartitionOffsetMap m;
  REQUIRE(m.AddCopied(Offset(0), Offset(100), 3).ok());   // 0..2 -> 100..102
  REQUIRE(m.AddCopied(Offset(5), Offset(103), 5).ok());   // 5..9 -> 103..107
  REQUIRE(m.AddCopied(Offset(11), Offset(108), 4).ok());  // 11..14 -> 108..111
  REQUIRE(m.AddCopied(Offset(17), Offset(112), 3).ok());  // 17..19 -> 112..114
  return m;
}

}  // namespace

TEST_CASE("records copied at the same delta extend one run and a changed delta starts another") {
  PartitionOffsetMap m;
  REQUIRE(m.AddCopied(Offset(0), Offset(0), 2).ok());
  REQUIRE(m.AddCopied(Offset(2), Offset(2), 3).ok());
  CHECK(m.runs().size() == 1);
  CHECK(m.runs()[0] == OffsetRun{0, 0, 5});
  REQUIRE(m.AddCopied(Offset(7), Offset(5), 1).ok());  // two records skipped at the source
  REQUIRE(m.runs().size() == 2);
  CHECK(m.runs()[1] == OffsetRun{7, 5, 1});
  CHECK(m.source_end() == Offset(8));
  CHECK(m.dest_end() == Offset(6));
}

TEST_CASE("every copied offset translates exactly, also at the edges of each run") {
  PartitionOffsetMap m = HoleyMap();
  CHECK(m.runs().size() == 4);
  CHECK(T(m, 0) == 100);
  CHECK(T(m, 2) == 102);
  CHECK(T(m, 5) == 103);
  CHECK(T(m, 9) == 107);
  CHECK(T(m, 11) == 108);
  CHECK(T(m, 14) == 111);
  CHECK(T(m, 17) == 112);
  CHECK(T(m, 19) == 114);
}

TEST_CASE("an offset in a hole translates to the next copied record and the end to the dest end") {
  PartitionOffsetMap m = HoleyMap();
  CHECK(T(m, 3) == 103);   // compacted away
  CHECK(T(m, 4) == 103);
  CHECK(T(m, 10) == 108);  // a control batch
  CHECK(T(m, 15) == 112);  // aborted
  CHECK(T(m, 16) == 112);
  CHECK(T(m, 20) == 115);  // source_end: the next record to be copied
  CHECK(m.Translate(Offset(21)).status().code() == Status::Code::kNotFound);
}

TEST_CASE("holes at the end count once the source has been looked at past them") {
  PartitionOffsetMap m = HoleyMap();
  m.Advance(Offset(25));  // 20..24 were control records
  CHECK(m.source_end() == Offset(25));
  CHECK(T(m, 22) == 115);
  CHECK(T(m, 25) == 115);
  REQUIRE(m.AddCopied(Offset(25), Offset(115)).ok());
  CHECK(m.runs().size() == 5);  // the delta changed at the hole
  CHECK(T(m, 24) == 115);
  CHECK(T(m, 26) == 116);
  m.Advance(Offset(3));  // never backwards
  CHECK(m.source_end() == Offset(26));
}

TEST_CASE("a copy that began part-way translates earlier offsets to its first record") {
  PartitionOffsetMap m;
  m.Advance(Offset(1000));
  CHECK(m.source_begin() == Offset(1000));
  CHECK(T(m, 1000) == 0);
  REQUIRE(m.AddCopied(Offset(1000), Offset(0), 10).ok());
  CHECK(T(m, 5) == 0);
  CHECK(T(m, 1009) == 9);
  CHECK(m.Translate(Offset(1011)).status().code() == Status::Code::kNotFound);
  CHECK(PartitionOffsetMap().Translate(Offset(0)).status().code() == Status::Code::kNotFound);
}

TEST_CASE("offsets that go backwards are refused") {
  PartitionOffsetMap m = HoleyMap();
  CHECK(m.AddCopied(Offset(19), Offset(200)).code() == Status::Code::kInvalidArgument);
  CHECK(m.AddCopied(Offset(30), Offset(114)).code() == Status::Code::kInvalidArgument);
  CHECK(m.AddCopied(Offset(30), Offset(200), 0).code() == Status::Code::kInvalidArgument);
}

TEST_CASE("chunks stored at each flush rebuild the same map, a grown last run included") {
  PartitionOffsetMap m;
  PartitionOffsetMap copy;
  std::vector<std::string> chunks;
  auto flush = [&](PartitionOffsetMap::Mark* mark) {
    std::string c = m.EncodeChunk(*mark);
    if (!c.empty()) chunks.push_back(c);
    *mark = m.mark();
  };
  PartitionOffsetMap::Mark mark = m.mark();
  m.Advance(Offset(40));
  flush(&mark);  // only the start
  REQUIRE(m.AddCopied(Offset(40), Offset(7), 5).ok());
  flush(&mark);
  REQUIRE(m.AddCopied(Offset(45), Offset(12), 5).ok());  // grows the stored run
  REQUIRE(m.AddCopied(Offset(52), Offset(17), 1).ok());
  m.Advance(Offset(60));
  flush(&mark);
  flush(&mark);  // nothing changed: nothing stored
  CHECK(chunks.size() == 3);
  for (const std::string& c : chunks) REQUIRE(copy.ApplyChunk(c).ok());
  CHECK(copy == m);
  CHECK(copy.runs().size() == 2);
  CHECK(copy.source_begin() == Offset(40));
  CHECK(copy.source_end() == Offset(60));

  SUBCASE("a chunk stored twice is applied once") {
    REQUIRE(copy.ApplyChunk(chunks[1]).ok());
    CHECK(copy == m);
  }
  SUBCASE("a missing chunk is corruption, and so is a damaged one") {
    PartitionOffsetMap other;
    REQUIRE(other.ApplyChunk(chunks[0]).ok());
    CHECK(other.ApplyChunk(chunks[2]).code() == Status::Code::kCorruption);
    std::string cut = chunks[1].substr(0, chunks[1].size() - 1);
    CHECK(other.ApplyChunk(cut).code() == Status::Code::kCorruption);
    CHECK(other.ApplyChunk(chunks[1] + "x").code() == Status::Code::kCorruption);
    std::string bad = chunks[1];
    bad[0] = 9;
    CHECK(other.ApplyChunk(bad).code() == Status::Code::kCorruption);
    REQUIRE(other.ApplyChunk(chunks[1]).ok());  // nothing was applied by the failures
    REQUIRE(other.ApplyChunk(chunks[2]).ok());
    CHECK(other == m);
  }
}

TEST_CASE("a long copy with a hole now and then stores a few bytes per run") {
  PartitionOffsetMap m;
  int64_t dest = 0;
  for (int64_t s = 0; s < 1000000; s += 1000) {
    REQUIRE(m.AddCopied(Offset(s), Offset(dest), 990).ok());  // 10 compacted at each step
    dest += 990;
  }
  CHECK(m.runs().size() == 1000);
  std::string c = m.EncodeChunk(PartitionOffsetMap::Mark{});
  CHECK(c.size() < 8 * 1000);
  PartitionOffsetMap copy;
  REQUIRE(copy.ApplyChunk(c).ok());
  CHECK(copy == m);
  CHECK(T(copy, 999989) == 989999);
  CHECK(T(copy, 1995) == 1980);      // a hole: the next run's first record
  CHECK(T(copy, 999990) == 990000);  // the end: dest_end
}
