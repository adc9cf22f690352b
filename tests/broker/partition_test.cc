// The Partition seam: the high watermark bounds what consumers see, delayed operations wait for
// it, and producer state follows truncation. A second in-sync replica is simulated through the
// partition's replication seam (SetIsr, RecordFollowerLogEnd), as a follower's fetches will.
#include <algorithm>
#include <thread>

#include "broker/partition.h"
#include "broker/partition_manager.h"
#include "broker_test_util.h"
#include "storage/fault_util.h"
#include "storage/test_util.h"

using namespace silt;
using namespace silt::broker;
using namespace silt::broker::testing;

namespace {

constexpr NodeId kFollower{2};

std::shared_ptr<Partition> Served(TestBroker& b, const std::string& topic, int32_t p = 0) {
  auto r = b.server->broker().partitions().Get(topic, PartitionId(p));
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  return *r;
}

// A partition whose ISR is {this node, a follower that has nothing yet}.
std::shared_ptr<Partition> WithFollower(TestBroker& b, const std::string& topic) {
  auto part = Served(b, topic);
  part->SetIsr({NodeId(b.config.node_id), kFollower});
  return part;
}

const protocol::ProduceResponse::PartitionResponse& Only(const protocol::ProduceResponse& r) {
  REQUIRE(r.responses.size() == 1);
  REQUIRE(r.responses[0].partition_responses.size() == 1);
  return r.responses[0].partition_responses[0];
}

// Produces one batch (acks=1) and returns (error code, base offset).
std::pair<int16_t, int64_t> ProduceTo(Client& c, const std::string& topic,
                                      const std::string& batch) {
  protocol::ProduceResponse r;
  c.Call(MakeProduce(topic, 0, batch, 1), 8, &r);
  return {Only(r).error_code, Only(r).base_offset};
}

int64_t ProduceAcks1(Client& c, const std::string& topic, const std::string& batch) {
  auto [error, base] = ProduceTo(c, topic, batch);
  REQUIRE(error == 0);
  return base;
}

int64_t Latest(Client& c, const std::string& topic) {
  protocol::ListOffsetsRequest req;
  req.replica_id = -1;
  protocol::ListOffsetsRequest::Topic t;
  t.name = topic;
  protocol::ListOffsetsRequest::Partition p;
  p.partition_index = 0;
  p.timestamp = -1;
  t.partitions.push_back(p);
  req.topics.push_back(t);
  protocol::ListOffsetsResponse resp;
  c.Call(req, 5, &resp);
  REQUIRE(resp.topics.size() == 1);
  REQUIRE(resp.topics[0].partitions[0].error_code == 0);
  return resp.topics[0].partitions[0].offset;
}

}  // namespace

TEST_CASE("on one node the high watermark follows the log end at every append") {
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "solo");
  auto part = Served(b, "solo");
  CHECK(part->high_watermark() == Offset(0));
  ProduceAcks1(c, "solo", MakeBatch(5));
  CHECK(part->log_end_offset() == Offset(5));
  CHECK(part->high_watermark() == Offset(5));
  CHECK(Latest(c, "solo") == 5);
}

TEST_CASE("consumers see only records below the high watermark, and ListOffsets latest is it") {
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "hw");
  auto part = WithFollower(b, "hw");
  CHECK(ProduceAcks1(c, "hw", MakeBatch(4)) == 0);
  CHECK(ProduceAcks1(c, "hw", MakeBatch(3)) == 4);
  CHECK(part->log_end_offset() == Offset(7));
  CHECK(part->high_watermark() == Offset(0));

  protocol::FetchResponse f;
  c.Call(MakeFetch("hw", 0, 0), 11, &f);
  const auto& p0 = f.responses[0].partitions[0];
  CHECK(p0.error_code == 0);  // between the high watermark and the log end: empty, no error
  CHECK(p0.high_watermark == 0);
  CHECK(p0.last_stable_offset == 0);
  CHECK(Values(p0.records.bytes.value_or("")).empty());
  CHECK(Latest(c, "hw") == 0);

  // The follower has the first batch: that much is committed.
  part->RecordFollowerLogEnd(kFollower, Offset(4));
  CHECK(part->high_watermark() == Offset(4));
  c.Call(MakeFetch("hw", 0, 0), 11, &f);
  CHECK(f.responses[0].partitions[0].high_watermark == 4);
  CHECK(Values(f.responses[0].partitions[0].records.bytes.value_or("")).size() == 4);
  CHECK(Latest(c, "hw") == 4);
  // A fetch past the log end is still out of range.
  c.Call(MakeFetch("hw", 0, 8), 11, &f);
  CHECK(f.responses[0].partitions[0].error_code == 1);  // OFFSET_OUT_OF_RANGE

  // The high watermark never moves back, even if a follower reports less.
  part->RecordFollowerLogEnd(kFollower, Offset(2));
  CHECK(part->high_watermark() == Offset(4));
  part->RecordFollowerLogEnd(kFollower, Offset(7));
  CHECK(part->high_watermark() == Offset(7));
  CHECK(Latest(c, "hw") == 7);
}

TEST_CASE("a waiting fetch is woken when the high watermark moves, not by the append") {
  TestBroker b;
  Client c(b.port);
  Client producer(b.port);
  CreateTopic(c, "wake");
  auto part = WithFollower(b, "wake");
  c.Send(MakeFetch("wake", 0, 0, /*max_wait_ms=*/8000), 11, 77);
  ProduceAcks1(producer, "wake", MakeBatch(2));
  // Appended but not committed: the fetch keeps waiting.
  protocol::FetchResponse f;
  CHECK(c.Receive(&f, 11, /*timeout_ms=*/300) == -1);
  auto t0 = std::chrono::steady_clock::now();
  part->RecordFollowerLogEnd(kFollower, Offset(2));
  REQUIRE(c.Receive(&f, 11, 3000) == 77);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
  CHECK(Values(f.responses[0].partitions[0].records.bytes.value_or("")).size() == 2);
}

TEST_CASE("acks=all answers once the in-sync replicas have the batch, REQUEST_TIMED_OUT if never") {
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "all");
  auto part = WithFollower(b, "all");

  // Nobody copies the batch: the request times out (the batch stays in the leader's log).
  const std::string first = MakeBatch(3), second = MakeBatch(2);
  protocol::ProduceRequest slow = MakeProduce("all", 0, first, /*acks=*/-1);
  slow.timeout_ms = 200;
  protocol::ProduceResponse r;
  c.Call(slow, 8, &r);
  CHECK(Only(r).error_code == 7);  // REQUEST_TIMED_OUT
  CHECK(part->log_end_offset() == Offset(3));

  // The follower catches up while the second request waits: it is answered then, with its
  // offset.
  protocol::ProduceRequest waits = MakeProduce("all", 0, second, /*acks=*/-1);
  waits.timeout_ms = 8000;
  c.Send(waits, 8, 42);
  CHECK(c.Receive(&r, 8, 300) == -1);
  part->RecordFollowerLogEnd(kFollower, Offset(3));  // not far enough for the second batch
  CHECK(c.Receive(&r, 8, 300) == -1);
  part->RecordFollowerLogEnd(kFollower, Offset(5));
  REQUIRE(c.Receive(&r, 8, 3000) == 42);
  CHECK(Only(r).error_code == 0);
  CHECK(Only(r).base_offset == 3);

  // acks=1 does not wait.
  CHECK(ProduceAcks1(c, "all", MakeBatch(1)) == 5);
}

TEST_CASE("DeleteRecords cannot pass the high watermark; -1 means the high watermark") {
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "trim");
  auto part = WithFollower(b, "trim");
  ProduceAcks1(c, "trim", MakeBatch(6));
  part->RecordFollowerLogEnd(kFollower, Offset(0));
  auto trim = [&](int64_t offset, int64_t* low) {
    protocol::DeleteRecordsRequest req;
    protocol::DeleteRecordsRequest::Topic t;
    t.name = "trim";
    t.partitions.push_back({0, offset});
    req.topics.push_back(t);
    req.timeout_ms = 1000;
    protocol::DeleteRecordsResponse resp;
    c.Call(req, 1, &resp);
    *low = resp.topics[0].partitions[0].low_watermark;
    return resp.topics[0].partitions[0].error_code;
  };
  int64_t low = 0;
  CHECK(trim(3, &low) == 1);  // OFFSET_OUT_OF_RANGE: offset 3 is not committed
  CHECK(part->log_start_offset() == Offset(0));
  CHECK(trim(-1, &low) == 0);  // up to the high watermark, 0: nothing moves
  CHECK(low == 0);
  part->RecordFollowerLogEnd(kFollower, Offset(6));
  CHECK(trim(-1, &low) == 0);
  CHECK(low == 6);
}

TEST_CASE("truncation rebuilds producer state: a retry of a cut batch is appended again") {
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "cut");
  auto part = Served(b, "cut");
  const int64_t pid = 900;
  auto produce = [&](const std::string& batch) { return ProduceAcks1(c, "cut", batch); };
  CHECK(produce(MakeBatch(3, format::Compression::kNone, pid, 0, 0)) == 0);
  CHECK(produce(MakeBatch(2, format::Compression::kNone, pid, 0, 3)) == 3);
  // A retry now is a duplicate: the original offset, nothing appended.
  CHECK(produce(MakeBatch(2, format::Compression::kNone, pid, 0, 3)) == 3);
  CHECK(part->log_end_offset() == Offset(5));

  REQUIRE(part->TruncateTo(Offset(3)).ok());
  CHECK(part->log_end_offset() == Offset(3));
  CHECK(part->high_watermark() == Offset(3));
  // The second batch is gone from the log, so it is gone from producer state too: the same
  // batch is appended afresh, at the new log end, instead of being answered as a duplicate.
  CHECK(produce(MakeBatch(2, format::Compression::kNone, pid, 0, 3)) == 3);
  CHECK(part->log_end_offset() == Offset(5));
}

TEST_CASE("deleting a topic wakes the fetches waiting on it") {
  TestBroker b;
  Client c(b.port);
  Client admin(b.port);
  CreateTopic(c, "gone");
  Served(b, "gone");
  c.Send(MakeFetch("gone", 0, 0, /*max_wait_ms=*/8000), 11, 5);
  protocol::FetchResponse f;
  CHECK(c.Receive(&f, 11, 200) == -1);
  auto t0 = std::chrono::steady_clock::now();
  REQUIRE(b.server->broker().metadata().DeleteTopic("gone").ok());
  REQUIRE(c.Receive(&f, 11, 3000) == 5);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
}

// ---- producer state and storage faults ---------------------------------------------------

namespace {

}  // namespace

TEST_CASE("a first batch whose write the disk fails is not appended; after a restart it lands once") {
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "epochfail");
  auto part = Served(b, "epochfail");
  const std::string batch = MakeBatch(3, format::Compression::kNone, 77, 0, 0);
  {
    // The partition's first append (of epoch 0, which the log records only once it is in).
    storage::testing::FailOp fail(FileOp::kWrite, ".log", EIO, 0, 1);
    auto [err, base] = ProduceTo(c, "epochfail", batch);
    CHECK(fail.hits() == 1);
    CHECK(err == 56);  // KAFKA_STORAGE_ERROR
  }
  CHECK(part->log_end_offset() == Offset(0));
  // A disk that failed a write (EIO, not a full disk) is not trusted again until a restart.
  CHECK(part->offline());
  CHECK(ProduceTo(c, "epochfail", batch).first == 56);
  part.reset();
  b.Restart(/*clean=*/false);
  Client c2(b.port);
  auto [err, base] = ProduceTo(c2, "epochfail", batch);
  CHECK(err == 0);
  CHECK(base == 0);
  // The producer's retry is a duplicate now, and the log holds the batch exactly once.
  CHECK(ProduceTo(c2, "epochfail", batch) == std::pair<int16_t, int64_t>{0, 0});
  CHECK(Served(b, "epochfail")->log_end_offset() == Offset(3));
}

TEST_CASE("a full disk fails the produce cleanly and the partition serves again once space is back") {
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "full");
  auto part = Served(b, "full");
  CHECK(ProduceTo(c, "full", MakeBatch(2)).first == 0);
  const std::string batch = MakeBatch(3, format::Compression::kNone, 90, 0, 0);
  {
    storage::testing::FailOp fail(FileOp::kWrite, ".log", ENOSPC, 0, 1);
    CHECK(ProduceTo(c, "full", batch).first == 56);
    CHECK(fail.hits() == 1);
  }
  CHECK(!part->offline());
  CHECK(part->log_end_offset() == Offset(2));
  CHECK(ProduceTo(c, "full", batch) == std::pair<int16_t, int64_t>{0, 2});
  CHECK(part->log_end_offset() == Offset(5));
}

TEST_CASE("a failed fsync takes the partition offline; after a restart the retry is a duplicate") {
  TestBroker b;
  Client c(b.port);
  CreateTopicWithConfigs(c, "syncfail", {{"flush.messages", "1"}});
  auto part = Served(b, "syncfail");
  const std::string batch = MakeBatch(3, format::Compression::kNone, 78, 0, 0);
  {
    storage::testing::FailOp fail(FileOp::kSync, ".log", EIO);
    CHECK(ProduceTo(c, "syncfail", batch).first == 56);  // KAFKA_STORAGE_ERROR
    CHECK(fail.hits() >= 1);
  }
  CHECK(part->offline());
  // Offline until a restart: nothing more is written or read.
  CHECK(ProduceTo(c, "syncfail", MakeBatch(1)).first == 56);
  protocol::FetchResponse f;
  c.Call(MakeFetch("syncfail", 0, 0), 11, &f);
  CHECK(f.responses[0].partitions[0].error_code == 56);
  part.reset();

  b.Restart(/*clean=*/false);
  Client c2(b.port);
  // The batch did reach the log; producer state knows it, so the retry is not appended again.
  CHECK(ProduceTo(c2, "syncfail", batch) == std::pair<int16_t, int64_t>{0, 0});
  CHECK(Served(b, "syncfail")->log_end_offset() == Offset(3));
}

TEST_CASE("a failed periodic flush takes the partition offline, and no later flush moves its recovery point") {
  TestBroker b;
  Client c(b.port);
  CreateTopicWithConfigs(c, "tickfail", {{"flush.ms", "200"}});
  auto part = Served(b, "tickfail");
  REQUIRE(ProduceTo(c, "tickfail", MakeBatch(2)).first == 0);
  auto flushed = [&](Offset at) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (part->recovery_point() != at && std::chrono::steady_clock::now() < deadline) {
      b.server->broker().partitions().Maintain(false);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return part->recovery_point() == at;
  };
  REQUIRE(flushed(Offset(2)));
  const Offset rp = part->recovery_point();
  REQUIRE(rp == Offset(2));
  {
    storage::testing::FailOp fail(FileOp::kSync, ".log", EIO, 0, 1);  // the kernel's one report
    // Within flush.ms of the flush above, the append itself does not flush.
    REQUIRE(ProduceTo(c, "tickfail", MakeBatch(3)).first == 0);
    // The periodic flush (the server's own tick, or this one) meets the failure.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (fail.hits() == 0 && std::chrono::steady_clock::now() < deadline) {
      b.server->broker().partitions().Maintain(false);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    CHECK(fail.hits() == 1);
  }
  CHECK(part->offline());
  // The next tick's fsync would succeed; it is not tried, and the recovery point stays.
  b.server->broker().partitions().Maintain(false);
  CHECK(part->recovery_point() == rp);
  CHECK(ProduceTo(c, "tickfail", MakeBatch(1)).first == 56);  // KAFKA_STORAGE_ERROR
  part.reset();
  b.Restart(/*clean=*/false);
  CHECK(Served(b, "tickfail")->log_end_offset() == Offset(5));  // recovery kept what is there
}

TEST_CASE("a partition damaged below its recovery point is offline; the others are served") {
  TestBroker b;
  {
    Client c(b.port);
    CreateTopic(c, "damaged");
    CreateTopic(c, "healthy");
    for (int i = 0; i < 3; ++i) REQUIRE(ProduceTo(c, "damaged", MakeBatch(2)).first == 0);
  }
  b.Restart();  // clean: every byte counts as fsynced
  b.server.reset();
  const std::string seg = b.data_dir + "/damaged-0/00000000000000000000.log";
  std::string data = storage::testing::Slurp(seg);
  data[data.size() - 5] ^= 0x40;
  storage::testing::WriteBytes(seg, data);
  b.Start();
  Client c(b.port);
  CHECK(ProduceTo(c, "damaged", MakeBatch(1)).first == 56);  // KAFKA_STORAGE_ERROR
  protocol::FetchResponse f;
  c.Call(MakeFetch("damaged", 0, 0), 11, &f);
  CHECK(f.responses[0].partitions[0].error_code == 56);
  CHECK(ProduceTo(c, "healthy", MakeBatch(1)).first == 0);
  CHECK(storage::testing::Slurp(seg) == data);  // not cut: fsynced bytes are not a torn write
}

TEST_CASE("producer snapshots are written at each roll and at a clean shutdown, and restore dedup") {
  TestBroker b;
  Client c(b.port);
  CreateTopicWithConfigs(c, "snap", {{"segment.bytes", "300"}});
  const int64_t pid = 79;
  int32_t seq = 0;
  std::string last;
  for (int i = 0; i < 6; ++i) {
    last = MakeBatch(2, format::Compression::kNone, pid, 0, seq);
    REQUIRE(ProduceTo(c, "snap", last).first == 0);
    seq += 2;
  }
  auto snapshots = [&] {
    std::vector<std::string> out;
    auto files = ListDir(JoinPath(b.data_dir, "snap-0"));
    REQUIRE(files.ok());
    for (const std::string& f : *files) {
      if (f.size() > 9 && f.substr(f.size() - 9) == ".snapshot") out.push_back(f);
    }
    return out;
  };
  // Each batch of ~100 bytes rolls a 300-byte segment every few batches.
  CHECK(snapshots().size() >= 1);
  b.Restart();
  // The clean shutdown left one at the log end (12).
  auto after = snapshots();
  CHECK(std::find(after.begin(), after.end(), "00000000000000000012.snapshot") != after.end());
  Client c2(b.port);
  // The last batch again: answered from the restored state with its original offset.
  CHECK(ProduceTo(c2, "snap", last) == std::pair<int16_t, int64_t>{0, 10});
  CHECK(Served(b, "snap")->log_end_offset() == Offset(12));
}
