// Data directories written by real Kafka brokers (../shared/fixtures), opened read-only.
#include <doctest/doctest.h>

#include "base/file.h"
#include "storage/data_dir.h"
#include "storage/segment.h"
#include "storage/test_util.h"
#include "fixture_skip.h"

using namespace silt;
using namespace silt::storage;
using namespace silt::storage::testing;

namespace {

std::string FixtureDir(const std::string& name) {
  return JoinPath(JoinPath(SILT_FIXTURES_DIR, "kafka-data"), name);
}

bool HaveFixture(const std::string& dir) {
  if (IsDirectory(dir)) return true;
  SILT_SKIP_MISSING_FIXTURE("Kafka fixture directory " << dir
                                                        << " is absent; these checks did not run");
  return false;
}

struct Summary {
  size_t batches = 0;
  int64_t first = -1;
  int64_t last = -1;
  bool contiguous = true;
};

Summary ReadPartition(DataDir* dd, const std::string& topic, int32_t p) {
  auto log = dd->Partition(topic, p);
  REQUIRE_MESSAGE(log.ok(), log.status().ToString());
  auto r = (*log)->Read((*log)->log_start_offset(), INT64_MAX, Offset(INT64_MAX));
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  auto bytes = r->ReadAll();
  REQUIRE(bytes.ok());
  Summary s;
  for (const Span& sp : BatchSpans(bytes.value())) {
    if (s.batches > 0 && sp.base != s.last + 1) s.contiguous = false;
    if (s.batches == 0) s.first = sp.base;
    s.last = sp.last;
    ++s.batches;
  }
  CHECK(r->next_offset == (*log)->log_end_offset());
  return s;
}

}  // namespace

TEST_CASE("a Kafka 3.7 KRaft data dir opens read-only and every record reads back") {
  std::string path = FixtureDir("kafka-3.7-kraft");
  if (!HaveFixture(path)) return;
  DataDir::Options o;
  o.read_only = true;
  auto dd = DataDir::Open(path, o);
  REQUIRE_MESSAGE(dd.ok(), dd.status().ToString());
  std::vector<std::string> names;
  for (const TopicInfo& t : (*dd)->ListTopics()) names.push_back(t.name);
  CHECK(names == std::vector<std::string>{"Retry.TestTopicPatient", "TestTopicPatient",
                                          "__cluster_metadata", "__consumer_offsets"});
  auto co = (*dd)->GetTopic("__consumer_offsets");
  REQUIRE(co.ok());
  CHECK(co->partition_ids == std::vector<int32_t>{6});
  CHECK(co->topic_id == "gSnfpEbtQfSDpxM2lhEn9A");
  CHECK((*dd)->GetTopic("__cluster_metadata")->topic_id == "AAAAAAAAAAAAAAAAAAAAAQ");

  auto patient = ReadPartition(dd->get(), "TestTopicPatient", 0);
  CHECK(patient.batches == 3);
  CHECK(patient.first == 0);
  CHECK(patient.last == 2);
  auto plog = (*dd)->Partition("TestTopicPatient", 0);
  CHECK((*plog)->log_end_offset() == Offset(3));
  // Offsets 1 and 2 are found at the positions the fixture's README gives.
  auto r = (*plog)->Read(Offset(1), 1, Offset(INT64_MAX));
  CHECK(r->slices[0].position == 1901);
  r = (*plog)->Read(Offset(2), 1, Offset(INT64_MAX));
  CHECK(r->slices[0].position == 2877);

  auto retry = (*dd)->Partition("Retry.TestTopicPatient", 0);
  REQUIRE(retry.ok());
  CHECK((*retry)->log_end_offset() == Offset(0));
  CHECK((*retry)->Segments().empty());

  auto offsets = ReadPartition(dd->get(), "__consumer_offsets", 6);
  CHECK(offsets.batches == 13);
  CHECK(offsets.first == 0);
  CHECK(offsets.last == 12);
  auto olog = (*dd)->Partition("__consumer_offsets", 6);
  CHECK((*olog)->log_end_offset() == Offset(13));
  r = (*olog)->Read(Offset(7), 1, Offset(INT64_MAX));
  CHECK(r->slices[0].position == 9571);
  CHECK((*olog)->OffsetForTimestamp(1769792518093).value() <= Offset(7));

  auto meta = ReadPartition(dd->get(), "__cluster_metadata", 0);
  CHECK(meta.batches == 4814);
  CHECK(meta.first == 0);
  CHECK(meta.last == 4928);
  CHECK(meta.contiguous);
  REQUIRE((*dd)->Close().ok());
}

TEST_CASE("the index Kafka wrote is the index silt rebuilds, and silt uses it as is") {
  std::string dir = JoinPath(FixtureDir("kafka-3.7-kraft"), "__consumer_offsets-6");
  if (!HaveFixture(dir)) return;
  for (auto mode : {Segment::LoadMode::kTrusted, Segment::LoadMode::kFullScan}) {
    auto seg = Segment::Open(dir, Offset(0), /*read_only=*/true);
    REQUIRE(seg.ok());
    Segment::LoadReport report;
    REQUIRE((*seg)->Load(mode, true, 4096, &report).ok());
    CHECK(!report.index_rebuilt);
    auto idx = (*seg)->IndexEntries();
    REQUIRE(idx.size() == 2);
    CHECK(idx[0].offset == 3);
    CHECK(idx[0].position == 4730);
    CHECK(idx[1].offset == 7);
    CHECK(idx[1].position == 9571);
    CHECK((*seg)->next_offset() == Offset(13));
    CHECK((*seg)->max_timestamp() == 1769793578176);
    if (mode == Segment::LoadMode::kFullScan) {
      auto t = (*seg)->TimeIndexEntries();
      REQUIRE(t.size() >= 2);
      CHECK(t[0].timestamp == 1769791783399);
      CHECK(t[0].offset == 3);
      CHECK(t[1].timestamp == 1769792518093);
      CHECK(t[1].offset == 7);
      REQUIRE((*seg)->OnBecomeInactive().ok());
      t = (*seg)->TimeIndexEntries();
      CHECK(t.back().timestamp == 1769793578176);
      CHECK(t.back().offset == 12);
    }
  }
}

TEST_CASE("a Kafka 3.4 ZooKeeper-mode data dir opens read-only and every record reads back") {
  std::string path = FixtureDir("kafka-3.4-zk");
  if (!HaveFixture(path)) return;
  DataDir::Options o;
  o.read_only = true;
  auto dd = DataDir::Open(path, o);
  REQUIRE(dd.ok());
  CHECK((*dd)->ListTopics().size() == 2);
  auto t = ReadPartition(dd->get(), "test", 0);
  CHECK(t.batches == 28);
  CHECK(t.first == 0);
  CHECK(t.last == 96);
  CHECK(t.contiguous);
  auto co = ReadPartition(dd->get(), "__consumer_offsets", 36);
  CHECK(co.batches == 1);
}
