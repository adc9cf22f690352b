// Replication through the Partition seam, with no network: two (or three) Partition objects over
// their own temp data dirs, wired by hand the way a replica fetcher wires them (the leader's
// log-end read goes into the follower's AppendAsFollower, the follower's fetch offset into the
// leader's RecordFollowerFetch, the leader's high watermark back to the follower).
#include <algorithm>
#include <chrono>
#include <thread>

#include "base/clock.h"
#include "base/file.h"
#include "broker/partition.h"
#include "broker_test_util.h"
#include "format/layout.h"
#include "storage/partition_log.h"

using namespace silt;
using namespace silt::broker;
using namespace silt::broker::testing;

namespace {

constexpr NodeId kA{1};
constexpr NodeId kB{2};
constexpr NodeId kC{3};

// One replica of partition "r-0": its own data dir, log and Partition.
struct Replica {
  explicit Replica(NodeId id, storage::LogConfig config = {}) : id(id), config(config) {
    SetLogLevel(LogLevel::kWarn);
    root = TempDir();
    Open();
  }
  ~Replica() {
    Close();
    (void)RemoveAll(root);
  }
  void Open() {
    auto log = storage::PartitionLog::Open(root + "/r-0", config, {});
    REQUIRE_MESSAGE(log.ok(), log.status().ToString());
    std::shared_ptr<storage::PartitionLog> shared = std::move(log).value();
    auto p = Partition::Open("r", PartitionId(0), shared, id, LeaderEpoch(0));
    REQUIRE_MESSAGE(p.ok(), p.status().ToString());
    part = *p;
    log_ = shared;
  }
  void Close() {
    if (!part) return;
    REQUIRE(part->WriteProducerSnapshot().ok());
    part->Shutdown();
    part.reset();
    REQUIRE(log_->Close().ok());
    log_.reset();
  }
  // Appends a producer batch as the leader; returns its base offset (or -1 with *error set).
  int64_t Produce(const std::string& batch, protocol::ErrorCode* error = nullptr) {
    std::string copy = batch;
    ProduceAppend a = part->AppendFromProducer(copy.data(), copy.size(), part->config());
    if (error) *error = a.error;
    if (!error) REQUIRE_MESSAGE(a.error == protocol::ErrorCode::NONE, a.message);
    return a.base_offset.value();
  }
  // Every byte of the log from its start to its end.
  std::string Bytes() const {
    std::string out;
    Status s = part->ForEachBatch(part->log_end_offset(), [&](std::string_view b) {
      out.append(b);
      return Status::OK();
    });
    REQUIRE(s.ok());
    return out;
  }
  std::vector<std::pair<int32_t, int64_t>> Epochs() const {
    std::vector<std::pair<int32_t, int64_t>> out;
    for (const auto& e : log_->LeaderEpochs()) out.emplace_back(e.epoch, e.start_offset.value());
    return out;
  }
  std::string dir() const { return root + "/r-0"; }

  NodeId id;
  storage::LogConfig config;
  std::string root;
  std::shared_ptr<Partition> part;
  std::shared_ptr<storage::PartitionLog> log_;
};

// One fetch of `follower` from `leader`, as the replica fetcher makes it at time `now_ms`:
// returns how many bytes were appended.
size_t FetchOnce(Replica& leader, Replica& follower, int64_t now_ms = 0,
                 int64_t max_bytes = 1 << 20) {
  const Offset at = follower.part->log_end_offset();
  PartitionRead r = leader.part->Read(at, max_bytes, /*min_one=*/true, ReadIsolation::kLogEnd);
  REQUIRE(r.error == protocol::ErrorCode::NONE);
  leader.part->RecordFollowerFetch(follower.id, at, follower.part->log_start_offset(),
                                   now_ms ? now_ms : MonotonicMs());
  size_t n = 0;
  if (r.records) {
    std::string bytes;
    REQUIRE(r.records->file->PRead(r.records->position, static_cast<size_t>(r.records->length),
                                   &bytes)
                .ok());
    auto end = follower.part->AppendAsFollower(bytes);
    REQUIRE_MESSAGE(end.ok(), end.status().ToString());
    n = bytes.size();
  }
  follower.part->UpdateFollowerHighWatermark(leader.part->high_watermark());
  return n;
}

// What a follower of a new epoch does before fetching (KIP-101/KIP-279): asks the leader where
// its own latest epoch ends there, and truncates to that (never to its high watermark).
void TruncateByEpoch(Replica& leader, Replica& follower) {
  auto epochs = follower.Epochs();
  REQUIRE(!epochs.empty());
  auto end = leader.part->EndOffsetForEpoch(LeaderEpoch(epochs.back().first));
  REQUIRE(end.ok());
  Offset cut = std::min(end->end_offset, follower.part->log_end_offset());
  REQUIRE(follower.part->TruncateTo(cut).ok());
}

const Partition::FollowerState& StateOf(const std::vector<Partition::FollowerState>& v, NodeId id) {
  auto it = std::find_if(v.begin(), v.end(), [&](const auto& f) { return f.id == id; });
  REQUIRE(it != v.end());
  return *it;
}

std::string IdempotentBatch(int n, int64_t pid, int32_t seq, const std::string& prefix = "v-") {
  return MakeBatch(n, format::Compression::kNone, pid, 0, seq, prefix);
}

}  // namespace

TEST_CASE("a follower copies the leader's batches byte for byte and the high watermark is the "
          "minimum log end over the ISR") {
  Replica a(kA), b(kB);
  REQUIRE(a.part->BecomeLeader(LeaderEpoch(1), 0, {kA, kB}, {kA, kB}).ok());
  REQUIRE(b.part->BecomeFollower(LeaderEpoch(1), 0, kA).ok());
  CHECK(a.part->is_leader());
  CHECK_FALSE(b.part->is_leader());
  CHECK(b.part->leader() == kA);

  a.Produce(MakeBatch(5));
  a.Produce(MakeBatch(3));
  // The follower has not fetched yet: nothing is committed.
  CHECK(a.part->high_watermark() == Offset(0));
  CHECK(a.part->log_end_offset() == Offset(8));

  CHECK(FetchOnce(a, b) > 0);
  CHECK(b.part->log_end_offset() == Offset(8));
  // The leader learns the follower has the records at its next fetch.
  CHECK(a.part->high_watermark() == Offset(0));
  CHECK(b.part->high_watermark() == Offset(0));
  CHECK(FetchOnce(a, b) == 0);
  CHECK(a.part->high_watermark() == Offset(8));
  CHECK(b.part->high_watermark() == Offset(8));

  // Offsets, leader epochs and CRCs are the leader's own.
  CHECK(b.Bytes() == a.Bytes());
  CHECK(b.Epochs() == std::vector<std::pair<int32_t, int64_t>>{{1, 0}});
  CHECK(b.Epochs() == a.Epochs());

  const auto followers = a.part->Followers();
  REQUIRE(followers.size() == 1);
  CHECK(followers[0].id == kB);
  CHECK(followers[0].log_end == Offset(8));
  CHECK(b.part->Followers().empty());
}

TEST_CASE("the high watermark waits for the slowest in-sync replica and never moves back") {
  Replica a(kA), b(kB), c(kC);
  REQUIRE(a.part->BecomeLeader(LeaderEpoch(1), 0, {kA, kB, kC}, {kA, kB, kC}).ok());
  REQUIRE(b.part->BecomeFollower(LeaderEpoch(1), 0, kA).ok());
  REQUIRE(c.part->BecomeFollower(LeaderEpoch(1), 0, kA).ok());
  a.Produce(MakeBatch(4));
  FetchOnce(a, b);
  FetchOnce(a, b);
  CHECK(a.part->high_watermark() == Offset(0));  // c has not fetched
  FetchOnce(a, c);
  FetchOnce(a, c);
  CHECK(a.part->high_watermark() == Offset(4));
  // A follower reporting a smaller log end (it restarted and lost its tail) does not move the
  // high watermark back.
  a.part->RecordFollowerFetch(kC, Offset(2), Offset(0), MonotonicMs());
  CHECK(a.part->high_watermark() == Offset(4));
  // Out of the ISR, c no longer holds the high watermark back.
  a.Produce(MakeBatch(2));
  FetchOnce(a, b);
  FetchOnce(a, b);
  CHECK(a.part->high_watermark() == Offset(4));
  a.part->SetIsr({kA, kB});
  CHECK(a.part->high_watermark() == Offset(6));
  // A fetch from a node that is not a replica is ignored.
  a.part->RecordFollowerFetch(NodeId(9), Offset(6), Offset(0), MonotonicMs());
  CHECK(a.part->Followers().size() == 2);
}

TEST_CASE("a follower's caught-up time follows Kafka's rule: the leader's log end now, or at "
          "the follower's previous fetch") {
  Replica a(kA);
  REQUIRE(a.part->BecomeLeader(LeaderEpoch(1), 0, {kA, kB, kC}, {kA, kB}).ok());
  // makeLeader: an ISR member counts as caught up now, the other one not at all; neither's
  // log end is known until it fetches.
  {
    auto f = a.part->Followers();
    CHECK(StateOf(f, kB).last_caught_up_ms > 0);
    CHECK(StateOf(f, kC).last_caught_up_ms == 0);
    CHECK(StateOf(f, kB).log_end == kInvalidOffset);
  }
  auto caught_up = [&] { return StateOf(a.part->Followers(), kB).last_caught_up_ms; };
  const int64_t t = MonotonicMs() + 1'000'000;  // fetch times, later than the election
  a.Produce(MakeBatch(5));                                    // leader log end 5
  a.part->RecordFollowerFetch(kB, Offset(5), Offset(0), t + 100);  // at the log end
  CHECK(caught_up() == t + 100);
  a.Produce(MakeBatch(3));                                    // log end 8
  // Behind the log end now, but at the end the leader had at the previous fetch: caught up as
  // of that fetch.
  a.part->RecordFollowerFetch(kB, Offset(5), Offset(0), t + 200);
  CHECK(caught_up() == t + 100);
  a.Produce(MakeBatch(2));                                    // log end 10
  a.part->RecordFollowerFetch(kB, Offset(8), Offset(0), t + 300);
  CHECK(caught_up() == t + 200);
  // Behind both: no change.
  a.part->RecordFollowerFetch(kB, Offset(9), Offset(0), t + 400);
  CHECK(caught_up() == t + 200);
  a.part->RecordFollowerFetch(kB, Offset(10), Offset(3), t + 500);
  CHECK(caught_up() == t + 500);
  auto f = StateOf(a.part->Followers(), kB);
  CHECK(f.log_end == Offset(10));
  CHECK(f.log_start == Offset(3));
  CHECK(f.last_fetch_ms == t + 500);
}

TEST_CASE("a new leader records its epoch's start in leader-epoch-checkpoint before any append") {
  Replica a(kA);
  a.Produce(MakeBatch(4));  // epoch 0, as a single node writes
  REQUIRE(a.part->BecomeLeader(LeaderEpoch(3), 1, {kA}, {kA}).ok());
  CHECK(a.part->leader_epoch() == LeaderEpoch(3));
  CHECK(a.part->leader_epoch_start_offset() == Offset(4));
  // On disk already, with nothing appended in epoch 3.
  auto text = ReadFile(a.dir() + "/" + std::string(format::kLeaderEpochCheckpointFile));
  REQUIRE(text.ok());
  CHECK(*text == "0\n2\n0 0\n3 4\n");
  CHECK(a.part->EndOffsetForEpoch(LeaderEpoch(0))->end_offset == Offset(4));
  // ISR {local}: everything is committed at once.
  CHECK(a.part->high_watermark() == Offset(4));
  // The next append carries the epoch and adds no entry.
  a.Produce(MakeBatch(1));
  CHECK(a.Epochs() == std::vector<std::pair<int32_t, int64_t>>{{0, 0}, {3, 4}});
  // The same epoch again changes only replicas and ISR; an older one is refused.
  REQUIRE(a.part->BecomeLeader(LeaderEpoch(3), 2, {kA, kB}, {kA}).ok());
  CHECK(a.part->replicas() == std::vector<NodeId>{kA, kB});
  CHECK(a.part->leader_epoch_start_offset() == Offset(4));
  CHECK(a.part->BecomeLeader(LeaderEpoch(2), 3, {kA}, {kA}).code() == Status::Code::kInvalidArgument);
  // A stale partition epoch is skipped.
  REQUIRE(a.part->BecomeFollower(LeaderEpoch(9), 1, kB).ok());
  CHECK(a.part->is_leader());
  // Survives a restart.
  a.Close();
  a.Open();
  CHECK(a.Epochs() == std::vector<std::pair<int32_t, int64_t>>{{0, 0}, {3, 4}});
}

TEST_CASE("OffsetForLeaderEpoch answers as Kafka's leader-epoch cache does") {
  Replica a(kA);
  REQUIRE(a.part->BecomeLeader(LeaderEpoch(2), 0, {kA}, {kA}).ok());
  CHECK(a.part->EndOffsetForEpoch(LeaderEpoch(2))->end_offset == Offset(0));
  a.Produce(MakeBatch(5));
  REQUIRE(a.part->BecomeLeader(LeaderEpoch(5), 1, {kA}, {kA}).ok());
  a.Produce(MakeBatch(3));
  // The latest epoch ends at the log end.
  auto latest = a.part->EndOffsetForEpoch(LeaderEpoch(5));
  REQUIRE(latest.ok());
  CHECK(latest->epoch == LeaderEpoch(5));
  CHECK(latest->end_offset == Offset(8));
  // An older known epoch ends where the next starts.
  auto two = a.part->EndOffsetForEpoch(LeaderEpoch(2));
  CHECK(two->epoch == LeaderEpoch(2));
  CHECK(two->end_offset == Offset(5));
  // Between two known epochs: the older one and the newer one's start.
  auto four = a.part->EndOffsetForEpoch(LeaderEpoch(4));
  CHECK(four->epoch == LeaderEpoch(2));
  CHECK(four->end_offset == Offset(5));
  // Older than every known epoch: that epoch, and the first known epoch's start.
  auto one = a.part->EndOffsetForEpoch(LeaderEpoch(1));
  REQUIRE(one.ok());
  CHECK(one->epoch == LeaderEpoch(1));
  CHECK(one->end_offset == Offset(0));
  // Newer than every known epoch, or undefined: UNDEFINED.
  CHECK(a.part->EndOffsetForEpoch(LeaderEpoch(6)).status().IsNotFound());
  CHECK(a.part->EndOffsetForEpoch(LeaderEpoch(-1)).status().IsNotFound());
  Replica empty(kB);
  CHECK(empty.part->EndOffsetForEpoch(LeaderEpoch(0)).status().IsNotFound());
}

TEST_CASE("a follower with an extra uncommitted epoch truncates to the leader's epoch end, not "
          "to its high watermark (KIP-101)") {
  Replica a(kA), b(kB);
  REQUIRE(a.part->BecomeLeader(LeaderEpoch(1), 0, {kA, kB}, {kA, kB}).ok());
  REQUIRE(b.part->BecomeFollower(LeaderEpoch(1), 0, kA).ok());
  a.Produce(MakeBatch(5, format::Compression::kNone, -1, -1, -1, "one-"));
  FetchOnce(a, b);
  FetchOnce(a, b);
  CHECK(a.part->high_watermark() == Offset(5));

  // a goes away; b leads epoch 2 alone and takes a batch nobody else ever gets.
  REQUIRE(b.part->BecomeLeader(LeaderEpoch(2), 1, {kA, kB}, {kB}).ok());
  b.Produce(MakeBatch(4, format::Compression::kNone, -1, -1, -1, "lost-"));
  CHECK(b.part->high_watermark() == Offset(9));  // committed as far as b alone knows
  CHECK(b.Epochs() == std::vector<std::pair<int32_t, int64_t>>{{1, 0}, {2, 5}});

  // b goes away before a copies it; a leads epoch 3 and takes other records at 5.
  REQUIRE(a.part->BecomeLeader(LeaderEpoch(3), 2, {kA, kB}, {kA}).ok());
  a.Produce(MakeBatch(2, format::Compression::kNone, -1, -1, -1, "three-"));

  // b comes back as a follower of epoch 3. Its high watermark (9) is past the divergence:
  // truncating to it would keep epoch 2's records at offsets a holds other records at.
  REQUIRE(b.part->BecomeFollower(LeaderEpoch(3), 3, kA).ok());
  CHECK(b.part->high_watermark() == Offset(9));
  auto where = a.part->EndOffsetForEpoch(LeaderEpoch(2));
  REQUIRE(where.ok());
  CHECK(where->epoch == LeaderEpoch(1));
  CHECK(where->end_offset == Offset(5));
  TruncateByEpoch(a, b);
  CHECK(b.part->log_end_offset() == Offset(5));
  CHECK(b.part->high_watermark() == Offset(5));
  // The leader-epoch cache is cut with the log.
  CHECK(b.Epochs() == std::vector<std::pair<int32_t, int64_t>>{{1, 0}});

  a.part->SetIsr({kA, kB});
  FetchOnce(a, b);
  FetchOnce(a, b);
  CHECK(b.Bytes() == a.Bytes());
  CHECK(b.Epochs() == a.Epochs());
  CHECK(a.part->high_watermark() == Offset(7));
  CHECK(b.part->high_watermark() == Offset(7));
  // And after a restart of the follower the cut epoch stays cut.
  b.Close();
  b.Open();
  CHECK(b.Epochs() == std::vector<std::pair<int32_t, int64_t>>{{1, 0}, {3, 5}});
}

TEST_CASE("a retry of a replicated batch gets its original offsets from the new leader") {
  Replica a(kA), b(kB);
  REQUIRE(a.part->BecomeLeader(LeaderEpoch(1), 0, {kA, kB}, {kA, kB}).ok());
  REQUIRE(b.part->BecomeFollower(LeaderEpoch(1), 0, kA).ok());
  const int64_t pid = 4242;
  CHECK(a.Produce(IdempotentBatch(5, pid, 0)) == 0);
  CHECK(a.Produce(IdempotentBatch(3, pid, 5)) == 5);
  FetchOnce(a, b);
  FetchOnce(a, b);
  CHECK(a.part->high_watermark() == Offset(8));

  // The leader fails after the append but before the producer hears back; b takes over.
  REQUIRE(b.part->BecomeLeader(LeaderEpoch(2), 1, {kA, kB}, {kB}).ok());
  // The producer retries both batches at the new leader: the same offsets, nothing appended.
  CHECK(b.Produce(IdempotentBatch(3, pid, 5)) == 5);
  CHECK(b.Produce(IdempotentBatch(5, pid, 0)) == 0);
  CHECK(b.part->log_end_offset() == Offset(8));
  // The next batch follows; a gap is refused: just after the leader change as one that may be
  // overtaking a batch still in flight to the old leader (retriable), later as out of order.
  CHECK(b.Produce(IdempotentBatch(2, pid, 8)) == 8);
  protocol::ErrorCode e;
  b.Produce(IdempotentBatch(1, pid, 20), &e);
  CHECK(e == protocol::ErrorCode::NOT_LEADER_OR_FOLLOWER);
  b.part->SetUnknownProducerGraceMs(0);
  b.Produce(IdempotentBatch(1, pid, 20), &e);
  CHECK(e == protocol::ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER);

  // The same holds after the follower restarts (its state rebuilt from the replicated log).
  Replica c(kC);
  REQUIRE(c.part->BecomeFollower(LeaderEpoch(2), 1, kB).ok());
  b.part->SetIsr({kB, kC});
  FetchOnce(b, c);
  c.Close();
  c.Open();
  REQUIRE(c.part->BecomeLeader(LeaderEpoch(3), 2, {kB, kC}, {kC}).ok());
  CHECK(c.Produce(IdempotentBatch(2, pid, 8)) == 8);
  CHECK(c.part->log_end_offset() == Offset(10));
}

TEST_CASE("a follower refuses producer appends, a leader replica appends, and a replica append "
          "checks where and what it appends") {
  Replica a(kA), b(kB);
  REQUIRE(a.part->BecomeLeader(LeaderEpoch(1), 0, {kA, kB}, {kA, kB}).ok());
  REQUIRE(b.part->BecomeFollower(LeaderEpoch(1), 0, kA).ok());
  protocol::ErrorCode e;
  b.Produce(MakeBatch(1), &e);
  CHECK(e == protocol::ErrorCode::NOT_LEADER_OR_FOLLOWER);
  std::string internal = MakeBatch(1);
  CHECK(b.part->AppendInternal(&internal).status().code() == Status::Code::kNotLeader);
  CHECK(a.part->AppendAsFollower(MakeBatch(1)).status().code() == Status::Code::kInvalidArgument);

  a.Produce(MakeBatch(2));
  a.Produce(MakeBatch(3));
  a.Produce(MakeBatch(4));
  std::string all = a.Bytes();
  const format::BatchHeader first = format::DecodeBatchHeader(all);
  const size_t first_size = static_cast<size_t>(first.size());
  const size_t second_size = static_cast<size_t>(format::DecodeBatchHeader(all.substr(first_size)).size());
  auto end = b.part->AppendAsFollower(all.substr(0, first_size));
  REQUIRE(end.ok());
  CHECK(*end == Offset(2));
  // Not at the log end: the third batch alone.
  CHECK(b.part->AppendAsFollower(all.substr(first_size + second_size)).status().code() ==
        Status::Code::kInvalidArgument);
  // A damaged batch: nothing of the call is appended.
  std::string damaged = all.substr(first_size);
  damaged[format::kBatchHeaderSize + 2] ^= 0x5a;
  CHECK(b.part->AppendAsFollower(damaged).status().IsCorruption());
  CHECK(b.part->log_end_offset() == Offset(2));
  // A fetch cut inside the third batch: the whole one goes in, the partial one waits.
  end = b.part->AppendAsFollower(std::string_view(all).substr(first_size, all.size() - first_size - 7));
  REQUIRE(end.ok());
  CHECK(*end == Offset(5));
  // Less than a header: nothing, and no error.
  end = b.part->AppendAsFollower(std::string_view(all).substr(all.size() - 7));
  REQUIRE(end.ok());
  CHECK(*end == Offset(5));
  // The follower's high watermark never passes its own log end nor moves back.
  b.part->UpdateFollowerHighWatermark(Offset(9));
  CHECK(b.part->high_watermark() == Offset(5));
  b.part->UpdateFollowerHighWatermark(Offset(2));
  CHECK(b.part->high_watermark() == Offset(5));

  // An empty follower starts where the leader's log does (a leader whose log start moved on).
  Replica c(kC);
  REQUIRE(c.part->BecomeFollower(LeaderEpoch(1), 0, kA).ok());
  end = c.part->AppendAsFollower(all.substr(first_size));
  REQUIRE(end.ok());
  CHECK(c.part->log_start_offset() == Offset(2));
  CHECK(*end == Offset(9));
}

TEST_CASE("KIP-320: the leader epoch check fences older epochs and does not know newer ones") {
  Replica a(kA);
  REQUIRE(a.part->BecomeLeader(LeaderEpoch(4), 0, {kA}, {kA}).ok());
  using protocol::ErrorCode;
  CHECK(a.part->CheckLeaderEpoch(-1, true) == ErrorCode::NONE);
  CHECK(a.part->CheckLeaderEpoch(4, true) == ErrorCode::NONE);
  CHECK(a.part->CheckLeaderEpoch(3, true) == ErrorCode::FENCED_LEADER_EPOCH);
  CHECK(a.part->CheckLeaderEpoch(5, true) == ErrorCode::UNKNOWN_LEADER_EPOCH);
  REQUIRE(a.part->BecomeFollower(LeaderEpoch(5), 1, kB).ok());
  CHECK(a.part->CheckLeaderEpoch(-1, true) == ErrorCode::NOT_LEADER_OR_FOLLOWER);
  CHECK(a.part->CheckLeaderEpoch(5, false) == ErrorCode::NONE);
  CHECK(a.part->CheckLeaderEpoch(4, false) == ErrorCode::FENCED_LEADER_EPOCH);
}

TEST_CASE("min.insync.replicas is capped by the replicas assigned, as Kafka's effective minimum") {
  Replica a(kA);
  storage::LogConfig cfg;
  cfg.min_insync_replicas = 2;
  CHECK(a.part->EffectiveMinIsr(cfg) == 1);  // a single node
  REQUIRE(a.part->BecomeLeader(LeaderEpoch(1), 0, {kA, kB, kC}, {kA}).ok());
  CHECK(a.part->EffectiveMinIsr(cfg) == 2);
}

TEST_CASE("the first role change starts the high watermark at the restart hint, never at an "
          "unchecked log end") {
  Replica b(kB);
  b.Produce(MakeBatch(6));
  CHECK(b.part->high_watermark() == Offset(6));  // a single node commits everything
  b.part->SetHighWatermarkHint(Offset(4));
  REQUIRE(b.part->BecomeFollower(LeaderEpoch(1), 0, kA).ok());
  CHECK(b.part->high_watermark() == Offset(4));
  // Without a hint, the log start.
  Replica c(kC);
  c.Produce(MakeBatch(3));
  REQUIRE(c.part->BecomeLeader(LeaderEpoch(1), 0, {kC, kA}, {kC, kA}).ok());
  CHECK(c.part->high_watermark() == Offset(0));
  // ListOffsets cannot say what is latest until the high watermark reaches the epoch's start.
  CHECK(c.part->ListOffset(-1).error == protocol::ErrorCode::OFFSET_NOT_AVAILABLE);
  CHECK(c.part->ListOffset(-2).error == protocol::ErrorCode::NONE);
  c.part->RecordFollowerFetch(kA, Offset(3), Offset(0), MonotonicMs());
  CHECK(c.part->high_watermark() == Offset(3));
  OffsetAnswer latest = c.part->ListOffset(-1);
  CHECK(latest.error == protocol::ErrorCode::NONE);
  CHECK(latest.offset == Offset(3));
}

// A leader whose process was stopped past its session, or that lost the controller, must not
// answer clients from its stale role for even one request: the lease is checked by each request.
TEST_CASE("a leader whose lease ran out answers NOT_LEADER_OR_FOLLOWER to produce and fetch, "
          "and serves again under a renewed lease") {
  using protocol::ErrorCode;
  Replica a(kA);
  REQUIRE(a.part->BecomeLeader(LeaderEpoch(1), 1, {kA, kB}, {kA}).ok());
  // No lease (a single node): always leader.
  CHECK(a.part->serves_as_leader());
  CHECK(a.Produce(MakeBatch(2)) == 0);

  a.part->SetLeaderLease(MonotonicMs() + 60000);
  CHECK(a.part->serves_as_leader());
  CHECK(a.part->CheckLeaderEpoch(-1, /*leader_only=*/true) == ErrorCode::NONE);
  CHECK(a.Produce(MakeBatch(1)) == 2);

  a.part->SetLeaderLease(MonotonicMs() - 1);
  CHECK(a.part->is_leader());  // its role is unchanged: only the lease ran out
  CHECK_FALSE(a.part->serves_as_leader());
  CHECK(a.part->CheckLeaderEpoch(-1, true) == ErrorCode::NOT_LEADER_OR_FOLLOWER);
  CHECK(a.part->CheckLeaderEpoch(1, true) == ErrorCode::NOT_LEADER_OR_FOLLOWER);
  // KIP-320 fencing still comes first, and a non-leader-only check is not the lease's business.
  CHECK(a.part->CheckLeaderEpoch(0, true) == ErrorCode::FENCED_LEADER_EPOCH);
  CHECK(a.part->CheckLeaderEpoch(-1, false) == ErrorCode::NONE);
  ErrorCode error = ErrorCode::NONE;
  a.Produce(MakeBatch(1), &error);
  CHECK(error == ErrorCode::NOT_LEADER_OR_FOLLOWER);
  std::string internal = MakeBatch(1);
  CHECK(a.part->AppendInternal(&internal).status().code() == Status::Code::kNotLeader);
  CHECK(a.part->log_end_offset() == Offset(3));

  a.part->SetLeaderLease(MonotonicMs() + 60000);
  CHECK(a.Produce(MakeBatch(1)) == 3);
}

// A producer's first batch refused while the replica opened (or taken by an old leader that never
// replicated it) must not be overtaken by its next one: the client would report it delivered.
TEST_CASE("for a grace period after it starts leading, a partition refuses an unknown producer's "
          "batch that does not start at sequence 0, and takes any start after it") {
  Replica a(kA);
  REQUIRE(a.part->BecomeLeader(LeaderEpoch(1), 0, {kA}, {kA}).ok());
  CHECK(Partition::kUnknownProducerGraceMs == 10000);

  protocol::ErrorCode e = protocol::ErrorCode::NONE;
  a.Produce(IdempotentBatch(2, 7001, 3), &e);
  CHECK(e == protocol::ErrorCode::NOT_LEADER_OR_FOLLOWER);
  CHECK(a.part->log_end_offset() == Offset(0));

  // Sequence 0 is taken, and the producer's next batches after it.
  CHECK(a.Produce(IdempotentBatch(3, 7001, 0)) == 0);
  CHECK(a.Produce(IdempotentBatch(2, 7001, 3)) == 3);
  // A non-idempotent batch is not concerned.
  CHECK(a.Produce(MakeBatch(1)) == 5);

  // After the grace period another unknown producer is taken at any sequence.
  a.part->SetUnknownProducerGraceMs(200);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(a.Produce(IdempotentBatch(2, 7002, 3)) == 6);
  CHECK(a.part->log_end_offset() == Offset(8));
}

TEST_CASE("the unknown-producer grace period starts again when a follower becomes leader") {
  Replica a(kA);
  a.part->SetUnknownProducerGraceMs(200);
  REQUIRE(a.part->BecomeLeader(LeaderEpoch(1), 0, {kA, kB}, {kA, kB}).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(a.Produce(IdempotentBatch(1, 7003, 4)) == 0);
  REQUIRE(a.part->BecomeFollower(LeaderEpoch(2), 1, kB).ok());
  REQUIRE(a.part->BecomeLeader(LeaderEpoch(3), 2, {kA, kB}, {kA}).ok());
  protocol::ErrorCode e = protocol::ErrorCode::NONE;
  a.Produce(IdempotentBatch(1, 7004, 4), &e);
  CHECK(e == protocol::ErrorCode::NOT_LEADER_OR_FOLLOWER);
  // A producer the log holds is known: its next sequence is taken at once.
  CHECK(a.Produce(IdempotentBatch(1, 7003, 5)) == 1);
}

// librdkafka answers OUT_OF_ORDER_SEQUENCE_NUMBER on a batch behind a refused one by bumping its
// producer epoch, which renumbers batches already in other partitions' logs: duplicates. A gap
// behind a recent retriable refusal gets that refusal's error instead.
TEST_CASE(
    "a batch refused before the append makes the producer's next batches retriable, not "
    "out of order") {
  Replica a(kA), b(kB);
  REQUIRE(a.part->BecomeLeader(LeaderEpoch(1), 0, {kA, kB}, {kA, kB}).ok());
  REQUIRE(b.part->BecomeFollower(LeaderEpoch(1), 0, kA).ok());
  const int64_t pid = 5151;
  CHECK(a.Produce(IdempotentBatch(5, pid, 0)) == 0);
  FetchOnce(a, b);
  CHECK(b.part->log_end_offset() == Offset(5));

  // The producer's batch at sequence 5 reaches b just before b takes over; the one behind it
  // (sequence 8), right after.
  // No leader-change grace here: the refusal alone is what answers the gap.
  b.part->SetUnknownProducerGraceMs(0);
  protocol::ErrorCode e = protocol::ErrorCode::NONE;
  b.Produce(IdempotentBatch(3, pid, 5), &e);
  CHECK(e == protocol::ErrorCode::NOT_LEADER_OR_FOLLOWER);
  REQUIRE(b.part->BecomeLeader(LeaderEpoch(2), 1, {kA, kB}, {kB}).ok());
  b.Produce(IdempotentBatch(2, pid, 8), &e);
  CHECK(e == protocol::ErrorCode::NOT_LEADER_OR_FOLLOWER);
  CHECK(b.part->log_end_offset() == Offset(5));
  // Sent again in order, both are appended.
  CHECK(b.Produce(IdempotentBatch(3, pid, 5)) == 5);
  CHECK(b.Produce(IdempotentBatch(2, pid, 8)) == 8);
  // Once the producer is back in sequence, a gap is out of order again.
  b.Produce(IdempotentBatch(1, pid, 30), &e);
  CHECK(e == protocol::ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER);

  // The handler's refusals (too few in-sync replicas) are remembered the same way, for the
  // same producer epoch only.
  b.part->NoteRetriableRefusal(IdempotentBatch(1, pid, 10),
                               protocol::ErrorCode::NOT_ENOUGH_REPLICAS);
  b.Produce(IdempotentBatch(1, pid, 11), &e);
  CHECK(e == protocol::ErrorCode::NOT_ENOUGH_REPLICAS);
  CHECK(b.Produce(IdempotentBatch(1, pid, 10)) == 10);
  CHECK(b.Produce(IdempotentBatch(1, pid, 11)) == 11);
  // Another producer is not concerned.
  b.part->NoteRetriableRefusal(IdempotentBatch(1, pid, 12),
                               protocol::ErrorCode::NOT_ENOUGH_REPLICAS);
  b.Produce(IdempotentBatch(1, 6161, 0), &e);
  CHECK(e == protocol::ErrorCode::NONE);
  CHECK(b.part->log_end_offset() == Offset(13));
}

TEST_CASE("just after a leader change a gap in a known producer's sequence is retriable") {
  Replica a(kA), b(kB);
  REQUIRE(a.part->BecomeLeader(LeaderEpoch(1), 0, {kA, kB}, {kA, kB}).ok());
  REQUIRE(b.part->BecomeFollower(LeaderEpoch(1), 0, kA).ok());
  const int64_t pid = 7171;
  CHECK(a.Produce(IdempotentBatch(2, pid, 0)) == 0);
  FetchOnce(a, b);
  // The batch at sequence 2 went to a, which is no longer leader; the next one reaches b first.
  b.part->SetUnknownProducerGraceMs(300);
  REQUIRE(b.part->BecomeLeader(LeaderEpoch(2), 1, {kA, kB}, {kB}).ok());
  protocol::ErrorCode e = protocol::ErrorCode::NONE;
  b.Produce(IdempotentBatch(3, pid, 4), &e);
  CHECK(e == protocol::ErrorCode::NOT_LEADER_OR_FOLLOWER);
  CHECK(b.Produce(IdempotentBatch(2, pid, 2)) == 2);
  CHECK(b.Produce(IdempotentBatch(3, pid, 4)) == 4);
  // An overlap (a batch that starts inside what the producer has written) is no batch in
  // flight elsewhere: out of order at once.
  b.Produce(IdempotentBatch(3, pid, 5), &e);
  CHECK(e == protocol::ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER);
  // Past the grace period a gap is out of order, as in Kafka.
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  b.Produce(IdempotentBatch(1, pid, 40), &e);
  CHECK(e == protocol::ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER);
}

TEST_CASE("a producer's gap is answered retriably for at most kGapGraceMs") {
  Replica a(kA), b(kB);
  REQUIRE(a.part->BecomeLeader(LeaderEpoch(1), 0, {kA, kB}, {kA, kB}).ok());
  REQUIRE(b.part->BecomeFollower(LeaderEpoch(1), 0, kA).ok());
  const int64_t pid = 7272;
  CHECK(a.Produce(IdempotentBatch(2, pid, 0)) == 0);
  FetchOnce(a, b);
  REQUIRE(b.part->BecomeLeader(LeaderEpoch(2), 1, {kA, kB}, {kB}).ok());
  protocol::ErrorCode e = protocol::ErrorCode::NONE;
  b.Produce(IdempotentBatch(1, pid, 9), &e);
  CHECK(e == protocol::ErrorCode::NOT_LEADER_OR_FOLLOWER);
  // The batch before it never comes: a real gap, refused as out of order once the budget is
  // spent, well inside the leader-change grace period.
  std::this_thread::sleep_for(std::chrono::milliseconds(Partition::kGapGraceMs + 100));
  b.Produce(IdempotentBatch(1, pid, 9), &e);
  CHECK(e == protocol::ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER);
  // A later leadership has a budget of its own.
  REQUIRE(b.part->BecomeFollower(LeaderEpoch(3), 2, kA).ok());
  REQUIRE(b.part->BecomeLeader(LeaderEpoch(4), 3, {kA, kB}, {kB}).ok());
  b.Produce(IdempotentBatch(1, pid, 9), &e);
  CHECK(e == protocol::ErrorCode::NOT_LEADER_OR_FOLLOWER);
}
