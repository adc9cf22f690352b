// The replica manager over real partitions and a hand-driven image: roles, ISR changes proposed
// as AlterPartition records, and the isolated leader's step-down.
#include "cluster/replica_manager.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "base/clock.h"
#include "base/file.h"
#include "base/random.h"
#include "broker/broker_test_util.h"
#include "broker/partition_manager.h"
#include "cluster/quorum_harness.h"
#include "cluster/reassignment.h"
#include "storage/partition_log.h"

using namespace silt;
using namespace silt::cluster;
using namespace std::chrono_literals;
using silt::cluster::testing::FreePort;
using silt::cluster::testing::WaitUntil;

namespace {

const Uuid kTopic = *Uuid::Parse("AAAAAAAAAAAAAAAAAAAACQ");

// Logs in a temp dir, opened on demand (what cluster mode's ImageStore does over the data dir).
class TempLogs final : public broker::LogProvider {
 public:
  explicit TempLogs(std::string root) : root_(std::move(root)) {}
  ~TempLogs() override {
    for (auto& [k, log] : logs_) (void)log->Close();
  }
  Result<std::shared_ptr<storage::PartitionLog>> OpenLog(const std::string& topic,
                                                         PartitionId partition) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::string dir = root_ + "/" + topic + "-" + std::to_string(partition.value());
    auto& slot = logs_[dir];
    if (!slot) {
      SILT_ASSIGN_OR_RETURN(auto log, storage::PartitionLog::Open(dir, storage::LogConfig{}, {}));
      slot = std::move(log);
    }
    return slot;
  }

 private:
  std::string root_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<storage::PartitionLog>> logs_;
};

// The image a controller would hold: proposals are applied to it, the way a committed
// AlterPartition is in this node's image by the time Propose returns.
struct Controller {
  std::mutex mu;
  std::shared_ptr<const MetadataImage> image;
  std::vector<AlterPartitionRecord> proposed;

  std::shared_ptr<const MetadataImage> Get() {
    std::lock_guard<std::mutex> lock(mu);
    return image;
  }
  Status Propose(const std::vector<MetadataRecord>& records) {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& r : records) {
      if (auto* a = std::get_if<AlterPartitionRecord>(&r)) proposed.push_back(*a);
    }
    SILT_ASSIGN_OR_RETURN(MetadataImage next, image->Apply(records));
    image = std::make_shared<const MetadataImage>(std::move(next));
    return Status::OK();
  }
  void Apply(const std::vector<MetadataRecord>& records) {
    Status s = Propose(records);
    REQUIRE_MESSAGE(s.ok(), s.ToString());
  }
  std::vector<NodeId> Isr(int32_t p) {
    std::lock_guard<std::mutex> lock(mu);
    return image->FindTopic(kTopic)->partitions.at(p).isr;
  }
};

// Brokers 1..n, registered and unfenced.
std::vector<MetadataRecord> BrokerRecords(int n) {
  std::vector<MetadataRecord> out;
  for (int b = 1; b <= n; ++b) {
    out.push_back(RegisterBrokerRecord{NodeId(b), RandomUuid(), "127.0.0.1", 9092});
    out.push_back(UnfenceBrokerRecord{NodeId(b)});
  }
  return out;
}

// Node 1 of three voters, over `partitions`, its image and proposals through `controller`.
ReplicaManagerOptions NodeOneOptions(broker::PartitionManager* partitions, Controller* controller) {
  ReplicaManagerOptions o;
  o.self = NodeId(1);
  for (int i = 1; i <= 3; ++i) o.voters.push_back(Voter{NodeId(i), "127.0.0.1", FreePort()});
  o.partitions = partitions;
  o.image = [controller] { return controller->Get(); };
  o.propose = [controller](const std::vector<MetadataRecord>& r) { return controller->Propose(r); };
  return o;
}

}  // namespace

TEST_CASE("the replica manager gives replicas their roles, moves the ISR through AlterPartition, "
          "and an isolated leader stops leading") {
  broker::SetLogLevel(broker::LogLevel::kWarn);
  std::string root = broker::testing::TempDir();
  TempLogs logs(root);
  broker::PartitionManager partitions(&logs, NodeId(1));
  Controller controller;
  std::vector<NodeId> all{NodeId(1), NodeId(2), NodeId(3)};
  std::vector<MetadataRecord> start = BrokerRecords(3);
  start.push_back(TopicRecord{"t", kTopic});
  start.push_back(PartitionRecord{PartitionId(0), kTopic, all, all, NodeId(1), LeaderEpoch(0), 0});
  start.push_back(PartitionRecord{PartitionId(1), kTopic, all, all, NodeId(2), LeaderEpoch(0), 0});
  controller.image = std::make_shared<const MetadataImage>(*MetadataImage().Apply(start));

  std::atomic<int64_t> contact{MonotonicMs()};
  ReplicaManagerOptions o = NodeOneOptions(&partitions, &controller);
  o.fetch.fetch_backoff_ms = 50;
  o.replica_lag_time_max_ms = 300;
  o.broker_session_timeout_ms = 500;
  o.last_controller_contact_ms = [&] { return contact.load(); };
  ReplicaManager rm(o);
  rm.Start();
  // Keeps the controller answering until told otherwise.
  std::atomic<bool> answering{true};
  auto keep_contact = [&] {
    if (answering) contact = MonotonicMs();
  };

  std::shared_ptr<broker::Partition> p0, p1;
  REQUIRE(WaitUntil(
      [&] {
        keep_contact();
        auto a = partitions.Get("t", PartitionId(0));
        auto b = partitions.Get("t", PartitionId(1));
        if (!a.ok() || !b.ok()) return false;
        p0 = *a;
        p1 = *b;
        return p0->is_leader() && !p1->is_leader() && p1->leader() == NodeId(2);
      },
      5000ms));

  // Neither follower of partition 0 fetches: after the lag the leader proposes the ISR {1},
  // based on leader epoch 0 and partition epoch 0, and takes it once the image has it.
  REQUIRE(WaitUntil(
      [&] {
        keep_contact();
        return controller.Isr(0) == std::vector<NodeId>{NodeId(1)} &&
               p0->isr() == std::vector<NodeId>{NodeId(1)};
      },
      5000ms));
  {
    std::lock_guard<std::mutex> lock(controller.mu);
    REQUIRE_FALSE(controller.proposed.empty());
    const AlterPartitionRecord& first = controller.proposed.front();
    CHECK(first.leader == NodeId(1));
    CHECK(first.leader_epoch == LeaderEpoch(0));
    CHECK(first.partition_epoch == 0);
    CHECK(first.new_isr == std::vector<NodeId>{NodeId(1)});
  }
  // Partition 1 is led elsewhere: this node never proposes for it.
  for (const auto& r : controller.proposed) CHECK(r.partition_id == PartitionId(0));

  // Follower 2 fetches at the leader's log end: it is added back.
  REQUIRE(WaitUntil(
      [&] {
        keep_contact();
        p0->RecordFollowerFetch(NodeId(2), Offset(0), Offset(0), MonotonicMs());
        return controller.Isr(0) == std::vector<NodeId>{NodeId(1), NodeId(2)};
      },
      5000ms));

  // A fenced broker is not taken into the ISR however well it fetches.
  controller.Apply({FenceBrokerRecord{NodeId(3)}});
  for (int i = 0; i < 10; ++i) {
    keep_contact();
    p0->RecordFollowerFetch(NodeId(3), Offset(0), Offset(0), MonotonicMs());
    std::this_thread::sleep_for(50ms);
  }
  CHECK(controller.Isr(0) == std::vector<NodeId>{NodeId(1), NodeId(2)});
  {
    std::lock_guard<std::mutex> lock(controller.mu);
    for (const auto& r : controller.proposed) {
      CHECK(std::find(r.new_isr.begin(), r.new_isr.end(), NodeId(3)) == r.new_isr.end());
    }
  }

  // No ready controller answers for the session: the leader stops leading; it leads again
  // once one answers (and the image still names it).
  answering = false;
  REQUIRE(WaitUntil([&] { return !p0->is_leader(); }, 5000ms));
  answering = true;
  REQUIRE(WaitUntil(
      [&] {
        keep_contact();
        return p0->is_leader();
      },
      5000ms));

  // A new leader in the image (a controller's election): this node follows it.
  controller.Apply({PartitionChangeRecord{PartitionId(0), kTopic,
                                          std::vector<NodeId>{NodeId(1), NodeId(2)}, NodeId(2),
                                          std::nullopt}});
  REQUIRE(WaitUntil(
      [&] {
        keep_contact();
        return !p0->is_leader() && p0->leader() == NodeId(2) &&
               p0->leader_epoch() == LeaderEpoch(1);
      },
      5000ms));

  rm.Stop();
  partitions.ShutdownAll();
  (void)RemoveAll(root);
}

TEST_CASE("a leader learns a reassignment's new replica within its epoch and takes it into the "
          "ISR once it has caught up") {
  broker::SetLogLevel(broker::LogLevel::kWarn);
  std::string root = broker::testing::TempDir();
  TempLogs logs(root);
  broker::PartitionManager partitions(&logs, NodeId(1));
  Controller controller;
  std::vector<NodeId> three{NodeId(1), NodeId(2), NodeId(3)};
  std::vector<MetadataRecord> start = BrokerRecords(4);
  start.push_back(TopicRecord{"t", kTopic});
  start.push_back(
      PartitionRecord{PartitionId(0), kTopic, three, three, NodeId(1), LeaderEpoch(0), 0});
  controller.image = std::make_shared<const MetadataImage>(*MetadataImage().Apply(start));

  std::atomic<int64_t> contact{MonotonicMs()};
  ReplicaManagerOptions o = NodeOneOptions(&partitions, &controller);
  o.fetch.fetch_backoff_ms = 50;
  o.replica_lag_time_max_ms = 60000;  // nobody is dropped for not fetching here
  o.broker_session_timeout_ms = 60000;
  o.last_controller_contact_ms = [&] { return contact.load(); };
  ReplicaManager rm(o);
  rm.Start();
  std::shared_ptr<broker::Partition> p0;
  REQUIRE(WaitUntil(
      [&] {
        auto a = partitions.Get("t", PartitionId(0));
        if (!a.ok()) return false;
        p0 = *a;
        return p0->is_leader();
      },
      5000ms));

  // The move to {4,2,3} starts: same leader, same leader epoch, one more replica.
  auto img = controller.Get();
  auto change = StartReassignment(*img, *img->FindTopic(kTopic), 0,
                                  {NodeId(4), NodeId(2), NodeId(3)});
  REQUIRE(change.ok());
  controller.Apply({*change});
  REQUIRE(WaitUntil(
      [&] {
        auto r = p0->replicas();
        return std::find(r.begin(), r.end(), NodeId(4)) != r.end();
      },
      5000ms));
  CHECK(p0->leader_epoch() == LeaderEpoch(0));
  // Replica 4 fetches at the log end: the leader adds it, and the controller's rule then
  // completes the move.
  REQUIRE(WaitUntil(
      [&] {
        p0->RecordFollowerFetch(NodeId(4), Offset(0), Offset(0), MonotonicMs());
        auto isr = controller.Isr(0);
        return std::find(isr.begin(), isr.end(), NodeId(4)) != isr.end();
      },
      5000ms));
  auto now = controller.Get();
  auto done = CompleteReassignment(*now->FindTopic(kTopic), 0,
                                   [](NodeId) { return true; });
  REQUIRE(done.has_value());
  controller.Apply({*done});
  auto final_image = controller.Get();
  const PartitionImage& after = final_image->FindTopic(kTopic)->partitions.at(0);
  CHECK(after.replicas == std::vector<NodeId>{NodeId(4), NodeId(2), NodeId(3)});
  CHECK(after.leader == NodeId(4));  // the old leader left with the move
  rm.Stop();
  (void)RemoveAll(root);
}

TEST_CASE("a role change that fails is tried again until it succeeds") {
  broker::SetLogLevel(broker::LogLevel::kError);
  std::string root = broker::testing::TempDir();
  // The leader epoch's checkpoint cannot be written while a directory stands where its
  // temporary file goes: BecomeLeader fails, as it would on a disk error.
  const std::string blocker = root + "/t-0/leader-epoch-checkpoint.tmp";
  REQUIRE(CreateDirs(blocker).ok());
  TempLogs logs(root);
  broker::PartitionManager partitions(&logs, NodeId(1));
  Controller controller;
  std::vector<NodeId> all{NodeId(1), NodeId(2), NodeId(3)};
  std::vector<MetadataRecord> start = BrokerRecords(3);
  start.push_back(TopicRecord{"t", kTopic});
  start.push_back(PartitionRecord{PartitionId(0), kTopic, all, all, NodeId(1), LeaderEpoch(0), 0});
  controller.image = std::make_shared<const MetadataImage>(*MetadataImage().Apply(start));

  ReplicaManagerOptions o = NodeOneOptions(&partitions, &controller);
  o.replica_lag_time_max_ms = 60000;
  o.broker_session_timeout_ms = 60000;
  o.last_controller_contact_ms = [] { return MonotonicMs(); };
  ReplicaManager rm(o);
  rm.Start();
  // Find, not Get: opened here the partition would start as a single node's leader.
  std::shared_ptr<broker::Partition> p0;
  REQUIRE(WaitUntil(
      [&] {
        p0 = partitions.Find("t", PartitionId(0));
        return p0 != nullptr;
      },
      5000ms));
  // A few attempts fail meanwhile: no leader-epoch checkpoint (the first thing a successful
  // BecomeLeader writes).
  const std::string checkpoint = root + "/t-0/leader-epoch-checkpoint";
  std::this_thread::sleep_for(400ms);
  CHECK_FALSE(PathExists(checkpoint));
  // The disk is fine again: a later attempt (the image did not change) makes it the leader.
  REQUIRE(RemoveAll(blocker).ok());
  CHECK(WaitUntil([&] { return PathExists(checkpoint); }, 10000ms));
  CHECK(WaitUntil([&] { return p0->EndOffsetForEpoch(LeaderEpoch(0)).ok(); }, 5000ms));
  CHECK(p0->is_leader());
  rm.Stop();
  (void)RemoveAll(root);
}
