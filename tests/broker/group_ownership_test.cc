// GroupOwnership: the coordinator's partitions follow this node's leaderships of
// __consumer_offsets as the metadata store reports them.
#include "broker/group_ownership.h"

#include <doctest/doctest.h>

#include <mutex>

#include "broker/group_coordinator.h"
#include "broker/logging.h"
#include "broker/metadata_store.h"
#include "protocol/consumer_offsets.h"
#include "protocol/errors.h"

namespace silt::broker {
namespace {

constexpr NodeId kMe{1};
constexpr NodeId kOther{2};

// A metadata store holding only __consumer_offsets, whose leaders the test sets.
class FakeStore : public MetadataStore {
 public:
  void Lead(int32_t partitions, std::vector<std::pair<NodeId, int32_t>> leaders) {
    std::lock_guard<std::mutex> lock(mu_);
    TopicMetadata t;
    t.name = protocol::kConsumerOffsetsTopic;
    t.partition_count = partitions;
    for (int32_t p = 0; p < partitions; ++p) {
      auto [leader, epoch] = leaders[p];
      t.partitions.push_back({PartitionId(p), leader, LeaderEpoch(epoch), {leader}, {leader}});
    }
    topic_ = t;
  }
  std::vector<TopicMetadata> ListTopics() override { return {}; }
  Result<TopicMetadata> GetTopic(const std::string& name) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!topic_ || name != topic_->name) return Status::NotFound(name);
    return *topic_;
  }
  Result<TopicMetadata> CreateTopic(const std::string&, int32_t,
                                    const std::map<std::string, std::string>&) override {
    return Status::Unsupported("fake");
  }
  Status DeleteTopic(const std::string&) override { return Status::Unsupported("fake"); }
  Status AddPartitions(const std::string&, int32_t) override {
    return Status::Unsupported("fake");
  }
  Result<storage::LogConfig> TopicConfig(const std::string&) override {
    return Status::Unsupported("fake");
  }
  Status AlterTopicConfig(const std::string&, const ConfigEdit&, bool) override {
    return Status::Unsupported("fake");
  }

 protected:
  bool auto_create_topics() const override { return false; }

 private:
  std::mutex mu_;
  std::optional<TopicMetadata> topic_;
};

int16_t CommitError(GroupCoordinator& c, const std::string& group) {
  protocol::OffsetCommitRequest r;
  r.group_id = group;
  r.generation_id_or_member_epoch = -1;
  r.topics.push_back({"t", {{0, 1, -1, -1, std::string()}}});
  return c.CommitOffsets(r, 7).topics[0].partitions[0].error_code;
}

TEST_CASE("the coordinator loads the partitions this node comes to lead and unloads the others") {
  SetLogLevel(LogLevel::kWarn);
  MemoryOffsetLog log(4);
  GroupCoordinatorOptions o;
  o.run_timer_thread = false;
  GroupCoordinator c(o, &log);
  c.UseOwnedPartitions(4);
  FakeStore store;
  GroupOwnership own(&store, &c, kMe);

  // No topic yet: nothing is owned.
  own.Reconcile();
  CHECK(c.OwnedPartitions().empty());

  // "g" lives in partition 3 of 4, "h" in partition 0.
  store.Lead(4, {{kMe, 0}, {kOther, 0}, {kOther, 0}, {kMe, 0}});
  own.Reconcile();
  CHECK(c.OwnedPartitions() == std::vector<int32_t>{0, 3});
  CHECK(CommitError(c, "g") == 0);
  CHECK(CommitError(c, "h") == 0);

  // Partition 3 moves to the other node: its groups are sent away.
  store.Lead(4, {{kMe, 0}, {kOther, 0}, {kOther, 0}, {kOther, 1}});
  own.Reconcile();
  CHECK(c.OwnedPartitions() == std::vector<int32_t>{0});
  CHECK(CommitError(c, "g") == protocol::ToWire(protocol::ErrorCode::NOT_COORDINATOR));
  CHECK(CommitError(c, "h") == 0);

  // ... and comes back at a new epoch: loaded again, with what was committed before.
  store.Lead(4, {{kMe, 0}, {kOther, 0}, {kOther, 0}, {kMe, 2}});
  own.Reconcile();
  CHECK(c.OwnedPartitions() == std::vector<int32_t>{0, 3});
  protocol::OffsetFetchRequest f;
  f.group_id = "g";
  f.topics.emplace();
  f.topics->push_back({"t", {0}});
  CHECK(c.FetchOffsets(f, 5).topics[0].partitions[0].committed_offset == 1);
}

TEST_CASE("the ownership thread acts on a poke and stops cleanly") {
  SetLogLevel(LogLevel::kWarn);
  MemoryOffsetLog log(2);
  GroupCoordinatorOptions o;
  o.run_timer_thread = false;
  GroupCoordinator c(o, &log);
  c.UseOwnedPartitions(2);
  FakeStore store;
  GroupOwnership own(&store, &c, kMe, /*recheck_ms=*/60000);
  own.Start();
  store.Lead(2, {{kOther, 0}, {kMe, 0}});
  own.Poke();
  for (int i = 0; i < 200 && c.OwnedPartitions().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(c.OwnedPartitions() == std::vector<int32_t>{1});
  own.Stop();
}

}  // namespace
}  // namespace silt::broker
