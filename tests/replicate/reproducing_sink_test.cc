// The reproducing sink against an in-process broker that has no offset-preserving append: source
// batches produced anew, the exact offset map, resume without duplicates, group offsets.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "broker/broker_test_util.h"
#include "base/coding.h"
#include "client/admin.h"
#include "client/cluster.h"
#include "client/net_consumer.h"
#include "client/net_producer.h"
#include "format/record_batch.h"
#include "replicate/reproducing_sink.h"

using namespace silt;
using namespace silt::replicate;
using broker::testing::TestBroker;

namespace {

EndpointSpec SpecFor(const TestBroker& b) {
  EndpointSpec spec;
  spec.kind = EndpointSpec::Kind::kCluster;
  spec.bootstrap.push_back("127.0.0.1:" + std::to_string(b.port));
  spec.text = "kafka://" + spec.bootstrap[0];
  return spec;
}

std::unique_ptr<Sink> OpenSinkAt(const TestBroker& b) {
  auto s = MakeReproducingSink(SpecFor(b), OpenOptions{});
  REQUIRE_MESSAGE(s.ok(), s.status().ToString());
  return std::move(s).value();
}

std::unique_ptr<client::Cluster> ConnectTo(const TestBroker& b) {
  client::ClusterOptions o;
  o.bootstrap.push_back({"127.0.0.1", b.port});
  auto c = client::Cluster::Connect(o);
  REQUIRE_MESSAGE(c.ok(), c.status().ToString());
  return std::move(c).value();
}

// A source partition built batch by batch at chosen offsets, with the records a read_committed
// consumer of it sees (what the destination must end up with).
struct SourceLog {
  std::vector<std::string> batches;
  std::vector<format::Record> visible;

  std::string All(size_t from = 0, size_t to = SIZE_MAX) const {
    std::string out;
    for (size_t i = from; i < batches.size() && i < to; ++i) out += batches[i];
    return out;
  }
  void Add(std::string batch, bool visible_records) {
    if (visible_records) {
      auto view = format::RecordBatchView::Parse(batch);
      REQUIRE(view.ok());
      auto recs = view->Records();
      REQUIRE(recs.ok());
      for (auto& r : *recs) visible.push_back(r);
    }
    batches.push_back(std::move(batch));
  }
};

std::string Batch(format::RecordBatchBuilder::Options o, const std::vector<format::Record>& rs) {
  format::RecordBatchBuilder b(o);
  for (const auto& r : rs) b.Add(r);
  auto out = b.Finish();
  REQUIRE(out.ok());
  return *out;
}

format::Record Rec(std::optional<std::string> k, std::optional<std::string> v, int64_t ts,
                   std::vector<format::Header> h = {}) {
  format::Record r;
  r.key = std::move(k);
  r.value = std::move(v);
  r.timestamp = ts;
  r.headers = std::move(h);
  return r;
}

std::string ControlBatch(int64_t offset, int64_t pid, format::ControlType type) {
  format::RecordBatchBuilder::Options o;
  o.base_offset = offset;
  o.control = true;
  o.transactional = true;
  o.producer_id = pid;
  o.producer_epoch = 0;
  std::string key, value;
  ByteWriter kw(&key);
  kw.I16(0);
  kw.I16(static_cast<int16_t>(type));
  ByteWriter vw(&value);
  vw.I16(0);
  vw.I32(5);
  format::RecordBatchBuilder b(o);
  b.Add(std::string_view(key), std::string_view(value), 1700000009000);
  auto out = b.Finish();
  REQUIRE(out.ok());
  return *out;
}

// Offsets 0..40 of a partition with every codec, keys, headers, null values and tombstones, a
// compacted batch with holes, a LogAppendTime batch, a committed and an aborted transaction
// with their markers, and a gap where whole batches were compacted away.
SourceLog MixedSource() {
  SourceLog s;
  int64_t ts = 1700000000000;
  int64_t off = 0;
  const format::Compression codecs[] = {format::Compression::kNone, format::Compression::kGzip,
                                        format::Compression::kSnappy, format::Compression::kLz4,
                                        format::Compression::kZstd};
  for (format::Compression c : codecs) {
    format::RecordBatchBuilder::Options o;
    o.compression = c;
    o.base_offset = off;
    o.producer_id = 77;
    o.producer_epoch = 2;
    o.base_sequence = static_cast<int32_t>(off);
    std::vector<format::Record> rs = {
        Rec("k" + std::to_string(off), "value " + std::to_string(off), ts + off,
            {{"h1", std::string("x")}, {"h2", std::nullopt}}),
        Rec(std::nullopt, "no key", ts + off + 1),
        Rec("tomb", std::nullopt, ts + off + 2),
    };
    s.Add(Batch(o, rs), true);
    off += 3;
  }
  // 15..21: a compacted batch that kept deltas 0, 2 and 5 of 0..6.
  {
    format::RecordBatchBuilder::Options o;
    o.base_offset = off;
    o.compression = format::Compression::kGzip;
    o.last_offset_delta = 6;
    format::RecordBatchBuilder b(o);
    for (int32_t d : {0, 2, 5}) {
      format::RecordView rv;
      rv.offset = off + d;
      rv.timestamp = ts + 100 + d;
      rv.key_null = false;
      std::string kv = "compacted-" + std::to_string(d);
      rv.key = kv;
      rv.value_null = false;
      rv.value = kv;
      b.AddAt(d, rv);  // copies the bytes into the batch
      s.visible.push_back(rv.ToRecord());
    }
    auto out = b.Finish();
    REQUIRE(out.ok());
    s.batches.push_back(*out);
    off += 7;
  }
  // 22..23: LogAppendTime.
  {
    format::RecordBatchBuilder::Options o;
    o.base_offset = off;
    o.log_append_time = true;
    s.Add(Batch(o, {Rec("lat", "a", ts + 200), Rec("lat", "b", ts + 201)}), true);
    off += 2;
  }
  // 24..26 transactional (pid 900), 27..28 plain, 29 COMMIT of 900.
  {
    format::RecordBatchBuilder::Options o;
    o.base_offset = off;
    o.transactional = true;
    o.producer_id = 900;
    o.producer_epoch = 0;
    o.base_sequence = 0;
    s.Add(Batch(o, {Rec("t", "c1", ts + 300), Rec("t", "c2", ts + 301), Rec("t", "c3", ts + 302)}),
          false);
    off += 3;
    format::RecordBatchBuilder::Options p;
    p.base_offset = off;
    s.Add(Batch(p, {Rec("plain", "p1", ts + 303), Rec("plain", "p2", ts + 304)}), false);
    off += 2;
    s.batches.push_back(ControlBatch(off, 900, format::ControlType::kCommit));
    off += 1;
    // The consumer sees the committed records where the commit lands them; the sink keeps
    // source order, so the transaction's records come first.
    for (int i = 1; i <= 3; ++i) s.visible.push_back(Rec("t", "c" + std::to_string(i), ts + 299 + i));
    s.visible.push_back(Rec("plain", "p1", ts + 303));
    s.visible.push_back(Rec("plain", "p2", ts + 304));
    for (int i = 0; i < 5; ++i) s.visible[s.visible.size() - 5 + i].offset = 24 + i;
  }
  // 30..31 transactional (pid 901), ABORT at 32.
  {
    format::RecordBatchBuilder::Options o;
    o.base_offset = off;
    o.transactional = true;
    o.producer_id = 901;
    o.producer_epoch = 0;
    o.base_sequence = 0;
    s.Add(Batch(o, {Rec("t", "aborted1", ts + 400), Rec("t", "aborted2", ts + 401)}), false);
    off += 2;
    s.batches.push_back(ControlBatch(off, 901, format::ControlType::kAbort));
    off += 1;
  }
  // 33..35 compacted away entirely; 36..40 one batch.
  off = 36;
  {
    format::RecordBatchBuilder::Options o;
    o.base_offset = off;
    o.compression = format::Compression::kZstd;
    std::vector<format::Record> rs;
    for (int i = 0; i < 5; ++i) rs.push_back(Rec("last", "v" + std::to_string(i), ts + 500 + i));
    s.Add(Batch(o, rs), true);
  }
  return s;
}

// Every record at the destination partition, in order.
std::vector<format::Record> DestRecords(Sink& sink, const std::string& topic, int32_t partition) {
  std::vector<format::Record> out;
  int64_t at = 0;
  auto end = sink.LogEnd(topic, partition);
  REQUIRE(end.ok());
  while (at < end->value()) {
    auto bytes = sink.ReadBack(topic, partition, Offset(at), 1 << 20);
    REQUIRE_MESSAGE(bytes.ok(), bytes.status().ToString());
    std::string_view rest(*bytes);
    REQUIRE_FALSE(rest.empty());
    while (!rest.empty()) {
      auto view = format::RecordBatchView::Parse(rest);
      REQUIRE(view.ok());
      rest.remove_prefix(view->bytes().size());
      auto recs = view->Records();
      REQUIRE(recs.ok());
      for (auto& r : *recs) {
        if (r.offset >= at) out.push_back(r);
      }
      at = view->header().next().value();
    }
  }
  return out;
}

bool Same(const format::Record& a, const format::Record& b) {
  if (a.timestamp != b.timestamp || a.key != b.key || a.value != b.value ||
      a.headers.size() != b.headers.size())
    return false;
  for (size_t i = 0; i < a.headers.size(); ++i) {
    if (a.headers[i].key != b.headers[i].key || a.headers[i].value != b.headers[i].value)
      return false;
  }
  return true;
}

// Checks that the destination holds exactly `visible`, once each and in order, each at the
// offset the map translates its source offset to.
void CheckCopy(Sink& sink, const std::string& topic, const std::vector<format::Record>& visible) {
  std::vector<format::Record> dest = DestRecords(sink, topic, 0);
  REQUIRE(dest.size() == visible.size());
  for (size_t i = 0; i < visible.size(); ++i) {
    auto t = sink.TranslateOffset(topic, 0, Offset(visible[i].offset));
    REQUIRE_MESSAGE(t.ok(), t.status().ToString());
    CHECK(t->value() == dest[i].offset);
    CHECK_MESSAGE(Same(visible[i], dest[i]), "source offset " << visible[i].offset);
  }
}

}  // namespace

TEST_CASE("a re-produced copy holds every visible record once, at the offset the map gives") {
  TestBroker b;
  auto sink = OpenSinkAt(b);
  CHECK(sink->placement() == Placement::kReproduces);
  REQUIRE(sink->EnsureTopic({"mixed", 1, {}}, false).ok());
  SourceLog src = MixedSource();
  // In three chunks, split inside each transaction.
  auto a1 = sink->Append("mixed", 0, Offset(0), src.All(0, 8));
  REQUIRE_MESSAGE(a1.ok(), a1.status().ToString());
  CHECK(a1->appended);
  CHECK(a1->log_end == Offset(27));
  auto a2 = sink->Append("mixed", 0, Offset(27), src.All(8, 11));
  REQUIRE_MESSAGE(a2.ok(), a2.status().ToString());
  CHECK(a2->log_end == Offset(32));
  auto a3 = sink->Append("mixed", 0, Offset(32), src.All(11));
  REQUIRE_MESSAGE(a3.ok(), a3.status().ToString());
  CHECK(a3->log_end == Offset(41));
  REQUIRE(sink->Flush().ok());
  CheckCopy(*sink, "mixed", src.visible);

  // Holes translate to the next copied record.
  auto in_compacted_hole = sink->TranslateOffset("mixed", 0, Offset(16));
  REQUIRE(in_compacted_hole.ok());
  CHECK(in_compacted_hole->value() == 16);  // 15 landed at 15, and 17 (next) at 16
  auto at_commit = sink->TranslateOffset("mixed", 0, Offset(29));
  auto aborted = sink->TranslateOffset("mixed", 0, Offset(31));
  auto gap = sink->TranslateOffset("mixed", 0, Offset(34));
  auto first_last = sink->TranslateOffset("mixed", 0, Offset(36));
  REQUIRE(at_commit.ok());
  REQUIRE(aborted.ok());
  REQUIRE(gap.ok());
  REQUIRE(first_last.ok());
  CHECK(at_commit->value() == first_last->value());
  CHECK(aborted->value() == first_last->value());
  CHECK(gap->value() == first_last->value());
  auto end = sink->TranslateOffset("mixed", 0, Offset(41));
  REQUIRE(end.ok());
  CHECK(end->value() == static_cast<int64_t>(src.visible.size()));
  CHECK(sink->TranslateOffset("mixed", 0, Offset(42)).status().code() ==
        Status::Code::kNotFound);

  SUBCASE("a second sink finds the same map at the destination") {
    REQUIRE(sink->StoreCheckpoint("src-a", {{"mixed", 0, Offset(41)}}).ok());
    sink.reset();
    auto again = OpenSinkAt(b);
    auto cp = again->LoadCheckpoint("src-a");
    REQUIRE(cp.ok());
    REQUIRE(cp->size() == 1);
    CHECK((*cp)[0].source_next == Offset(41));
    CHECK(again->LoadCheckpoint("other")->empty());
    CheckCopy(*again, "mixed", src.visible);
    // Given the same batches again, it produces nothing.
    auto dup = again->Append("mixed", 0, Offset(0), src.All());
    REQUIRE(dup.ok());
    REQUIRE(again->Flush().ok());
    CheckCopy(*again, "mixed", src.visible);
  }
}

TEST_CASE("a restart after batches landed but before the map was stored produces none twice") {
  TestBroker b;
  SourceLog src = MixedSource();
  {
    auto sink = OpenSinkAt(b);
    REQUIRE(sink->EnsureTopic({"resume", 1, {}}, false).ok());
    REQUIRE(sink->Append("resume", 0, Offset(0), src.All(0, 3)).ok());
    REQUIRE(sink->Flush().ok());
    REQUIRE(sink->StoreCheckpoint("s", {{"resume", 0, Offset(9)}}).ok());
    // More batches go out and are acknowledged, but neither map nor checkpoint is stored: the
    // process dies here.
    REQUIRE(sink->Append("resume", 0, Offset(9), src.All(3, 7)).ok());
    auto probe = sink->LogEnd("resume", 0);
    for (int i = 0; i < 100 && probe.ok() && probe->value() < 15 + 3 + 2; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      probe = sink->LogEnd("resume", 0);
    }
  }
  auto sink = OpenSinkAt(b);
  auto end = sink->LogEnd("resume", 0);
  REQUIRE(end.ok());
  CHECK(end->value() == 20);  // 15 + 3 compacted survivors + 2 LogAppendTime records
  auto cp = sink->LoadCheckpoint("s");
  REQUIRE(cp.ok());
  REQUIRE(cp->size() == 1);
  Offset from = (*cp)[0].source_next;
  CHECK(from == Offset(9));
  // The replicator resumes at the checkpoint, with chunks that start inside a batch.
  REQUIRE(sink->Append("resume", 0, from, src.All(3, 9)).ok());
  REQUIRE(sink->Append("resume", 0, Offset(29), src.All(8)).ok());
  REQUIRE(sink->Flush().ok());
  CheckCopy(*sink, "resume", src.visible);
}

TEST_CASE("a destination that holds records the source does not have stops the copy") {
  TestBroker b;
  SourceLog src = MixedSource();
  {
    auto sink = OpenSinkAt(b);
    REQUIRE(sink->EnsureTopic({"div", 1, {}}, false).ok());
    REQUIRE(sink->Append("div", 0, Offset(0), src.All(0, 2)).ok());
    REQUIRE(sink->Flush().ok());
  }
  // Someone else writes to the destination.
  {
    auto cluster = ConnectTo(b);
    client::NetProducerOptions po;
    po.partition = 0;
    auto p = client::NetProducer::Open(cluster.get(), "div", po);
    REQUIRE(p.ok());
    REQUIRE((*p)->Send(std::string_view("intruder"), std::string_view("x"), {}).ok());
    REQUIRE((*p)->Flush().ok());
  }
  auto sink = OpenSinkAt(b);
  auto r = sink->Append("div", 0, Offset(6), src.All(2));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Status::Code::kInvalidArgument);
  CHECK(r.status().message().find("diverged") != std::string::npos);
}

TEST_CASE("group offsets land translated, and only for groups without members") {
  TestBroker b;
  auto sink = OpenSinkAt(b);
  REQUIRE(sink->EnsureTopic({"g", 1, {}}, false).ok());
  SourceLog src = MixedSource();
  REQUIRE(sink->Append("g", 0, Offset(0), src.All()).ok());
  REQUIRE(sink->Flush().ok());
  auto active = sink->GroupActive("readers");
  REQUIRE_MESSAGE(active.ok(), active.status().ToString());
  CHECK_FALSE(*active);

  GroupOffsets go;
  go.group = "readers";
  go.offsets.push_back({"g", 0, Offset(31), ""});  // inside the aborted transaction
  go.offsets.push_back({"g", 1, Offset(3), ""});   // a partition never copied: left out
  REQUIRE(sink->CommitGroupOffsets(go).ok());
  auto cluster = ConnectTo(b);
  auto committed = client::FetchCommitted(cluster.get(), "readers");
  REQUIRE_MESSAGE(committed.ok(), committed.status().ToString());
  auto t = sink->TranslateOffset("g", 0, Offset(36));
  REQUIRE(t.ok());
  CHECK((*committed)["g"][0] == t->value());
  CHECK((*committed)["g"].count(1) == 0);

  {
    // A consumer of the group at the destination resumes at the record after the transaction.
    client::NetConsumerOptions co;
    co.group = "readers";
    co.session_timeout_ms = 6000;
    co.max_wait_ms = 100;
    auto consumer = client::NetConsumer::Open(cluster.get(), "g", co);
    REQUIRE_MESSAGE(consumer.ok(), consumer.status().ToString());
    std::vector<format::Record> got;
    Status run = (*consumer)->Run(
        [&](int32_t, const format::RecordView& r) {
          got.push_back(r.ToRecord());
          return false;
        },
        nullptr, nullptr);
    REQUIRE_MESSAGE(run.ok(), run.ToString());
    REQUIRE(got.size() == 1);
    CHECK(got[0].offset == t->value());
    CHECK(got[0].key == "last");
    CHECK(got[0].value == "v0");
    REQUIRE((*consumer)->Close(false).ok());
  }

  go.offsets = {{"g", 0, Offset(9), ""}};
  REQUIRE(sink->CommitGroupOffsets(go).ok());
  committed = client::FetchCommitted(cluster.get(), "readers");
  REQUIRE(committed.ok());
  CHECK((*committed)["g"][0] == 9);  // before the first hole: the same offset
}

TEST_CASE("a copy killed with SIGKILL part-way and then resumed has no duplicate and no gap") {
  TestBroker b;
  // 120 batches of 40 records; every 7th batch is gone (compacted away): a hole in the source.
  SourceLog src;
  std::vector<int64_t> batch_next;
  for (int i = 0; i < 120; ++i) {
    if (i % 7 == 3) continue;
    format::RecordBatchBuilder::Options o;
    o.base_offset = i * 40;
    o.compression = i % 2 ? format::Compression::kLz4 : format::Compression::kNone;
    std::vector<format::Record> rs;
    for (int j = 0; j < 40; ++j) {
      rs.push_back(Rec("k" + std::to_string(i), std::string(200, static_cast<char>('a' + j % 26)),
                       1700000000000 + i * 40 + j, {{"n", std::to_string(j)}}));
    }
    src.Add(Batch(o, rs), true);
    batch_next.push_back((i + 1) * 40);
  }
  {
    auto sink = OpenSinkAt(b);
    REQUIRE(sink->EnsureTopic({"kill", 1, {}}, false).ok());
  }
  const EndpointSpec spec = SpecFor(b);
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // The copying process: chunks of 5 batches, a checkpoint after every third chunk.
    auto sink = MakeReproducingSink(spec, OpenOptions{});
    if (!sink.ok()) _exit(2);
    for (size_t i = 0, n = 0; i < src.batches.size(); i += 5, ++n) {
      int64_t from = i == 0 ? 0 : batch_next[i - 1];
      if (!(*sink)->Append("kill", 0, Offset(from), src.All(i, i + 5)).ok()) _exit(3);
      if (n % 3 == 2) {
        int64_t next = batch_next[std::min(i + 5, src.batches.size()) - 1];
        if (!(*sink)->Flush().ok()) _exit(4);
        if (!(*sink)->StoreCheckpoint("k", {{"kill", 0, Offset(next)}}).ok()) _exit(5);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    _exit(0);
  }
  {
    auto watcher = ConnectTo(b);
    for (int i = 0; i < 1000; ++i) {
      auto end = client::ListOffsets(watcher.get(), "kill", {{0, -1}});
      if (end.ok() && (*end)[0] >= 1500) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  REQUIRE(kill(child, SIGKILL) == 0);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  INFO("child status " << status);
  CHECK((WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) == 0)));

  auto sink = OpenSinkAt(b);
  auto cp = sink->LoadCheckpoint("k");
  REQUIRE(cp.ok());
  int64_t from = cp->empty() ? 0 : (*cp)[0].source_next.value();
  // Where the kill left things (usually records at the destination the stored map lacks).
  auto dest_end = sink->LogEnd("kill", 0);
  auto mapped = sink->TranslateOffset("kill", 0, Offset(from));
  INFO("resuming at source " << from << ", mapped to " << (mapped.ok() ? mapped->value() : -1)
                             << ", destination end " << (dest_end.ok() ? dest_end->value() : -1));
  size_t first = 0;
  while (first < batch_next.size() && batch_next[first] <= from) ++first;
  for (size_t i = first; i < src.batches.size(); i += 9) {
    auto r = sink->Append("kill", 0, Offset(i == first ? from : batch_next[i - 1]),
                          src.All(i, i + 9));
    REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  }
  REQUIRE(sink->Flush().ok());
  CheckCopy(*sink, "kill", src.visible);
}

TEST_CASE("a long copy stores its map whole now and then and deletes the chunks it replaces") {
  TestBroker b;
  SourceLog src;
  std::vector<int64_t> batch_start;
  for (int i = 0; i < 150; ++i) {
    format::RecordBatchBuilder::Options o;
    o.base_offset = i * 3;  // one offset compacted away after each batch of two: a run each
    src.Add(Batch(o, {Rec("k", "a" + std::to_string(i), 1700000000000 + i),
                      Rec("k", "b" + std::to_string(i), 1700000000000 + i)}),
            true);
    batch_start.push_back(i * 3);
  }
  {
    auto sink = OpenSinkAt(b);
    REQUIRE(sink->EnsureTopic({"long", 1, {}}, false).ok());
    for (size_t i = 0; i < src.batches.size(); ++i) {
      REQUIRE(sink->Append("long", 0, Offset(batch_start[i]), src.batches[i]).ok());
      REQUIRE(sink->Flush().ok());
    }
    CheckCopy(*sink, "long", src.visible);
  }
  auto sink = OpenSinkAt(b);
  CheckCopy(*sink, "long", src.visible);
  auto t = sink->TranslateOffset("long", 0, Offset(3 * 149 + 2));  // the last hole: the end
  REQUIRE(t.ok());
  CHECK(t->value() == 300);

  // The offsets topic: two snapshots, and a tombstone for each chunk they replaced.
  int snapshots = 0, tombstones = 0, chunks = 0;
  for (const format::Record& r : DestRecords(*sink, kOffsetsTopic, 0)) {
    REQUIRE(r.key.has_value());
    if ((*r.key)[0] == 's') ++snapshots;
    if ((*r.key)[0] == 'm') (r.value ? ++chunks : ++tombstones);
  }
  CHECK(chunks == 150);
  CHECK(snapshots == 2);
  CHECK(tombstones == 128);
  // Going on after the reopen stores chunks again and the map stays whole.
  format::RecordBatchBuilder::Options o;
  o.base_offset = 450;
  src.Add(Batch(o, {Rec("k", "after", 1700000009999)}), true);
  REQUIRE(sink->Append("long", 0, Offset(450), src.batches.back()).ok());
  REQUIRE(sink->Flush().ok());
  sink.reset();
  sink = OpenSinkAt(b);
  CheckCopy(*sink, "long", src.visible);
}

TEST_CASE("partitions copied side by side share the leader's connection without losing answers") {
  TestBroker b;
  SourceLog src = MixedSource();
  {
    auto sink = OpenSinkAt(b);
    REQUIRE(sink->EnsureTopic({"two", 2, {}}, false).ok());
    // Partition 1 already holds a copy whose map is stored, so its first Append reads back the
    // destination while partition 0's batches are still unanswered on the same connection.
    REQUIRE(sink->Append("two", 1, Offset(0), src.All(0, 3)).ok());
    REQUIRE(sink->Flush().ok());
  }
  {
    auto cluster = ConnectTo(b);
    client::NetProducerOptions po;
    po.partition = 1;
    auto p = client::NetProducer::Open(cluster.get(), "two", po);
    REQUIRE(p.ok());
    REQUIRE((*p)->Send(std::string_view("intruder"), std::string_view("x"), {}).ok());
    REQUIRE((*p)->Flush().ok());
  }
  auto sink = OpenSinkAt(b);
  REQUIRE(sink->Append("two", 0, Offset(0), src.All(0, 6)).ok());
  auto r = sink->Append("two", 1, Offset(9), src.All(3));  // reads the tail: diverged
  CHECK(r.status().code() == Status::Code::kInvalidArgument);
  REQUIRE(sink->Append("two", 0, Offset(24), src.All(6)).ok());
  REQUIRE(sink->Flush().ok());
  CheckCopy(*sink, "two", src.visible);
}
