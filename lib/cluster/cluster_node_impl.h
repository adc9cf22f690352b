// The internals of ClusterNode (cluster_node.h), shared by the files that implement it:
// cluster_node.cc (proposals, start and stop), cluster_peer_server.cc (the controller's side
// of forwarded requests), cluster_membership.cc (registration, heartbeats, the controller's
// decisions), cluster_shutdown.cc (controlled shutdown), cluster_reconcile.cc (local
// partitions and replicas), image_store.cc (the image as the broker's metadata store) and
// producer_ids.cc (producer-id blocks). Not part of the library's interface.
#pragma once

#include "cluster/cluster_node.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <algorithm>
#include <map>
#include <set>
#include <thread>

#include "base/clock.h"
#include "base/random.h"
#include "base/topic_name.h"
#include "broker/dynamic_config.h"
#include "broker/local_metadata_store.h"
#include "broker/logging.h"
#include "broker/partition_manager.h"
#include "cluster/controller.h"
#include "cluster/controller_channel.h"
#include "cluster/listener_probe.h"
#include "cluster/metadata_image.h"
#include "cluster/node_directory.h"
#include "cluster/metadata_observer.h"
#include "cluster/peer_listener.h"
#include "cluster/read_barrier.h"
#include "cluster/placement.h"
#include "cluster/reassignment.h"
#include "cluster/raft_quorum.h"
#include "cluster/replica_manager.h"
#include "protocol/consumer_offsets.h"

namespace silt::cluster {

using Clock = std::chrono::steady_clock;

// The broker's metadata store and log provider over the image.
class ImageStore final : public broker::MetadataStore, public broker::LogProvider {
 public:
  explicit ImageStore(ClusterNode::Impl* node) : node_(node) {}

  std::vector<broker::TopicMetadata> ListTopics() override;
  Result<broker::TopicMetadata> GetTopic(const std::string& name) override;
  // The broker's topic defaults with its dynamic configs applied (dynamic_config.h): for the
  // topic configs this store reports and checks, and for the local logs.
  Status SetLogDefaults(const storage::LogConfig& defaults) override;
  storage::LogConfig LogDefaults();
  Result<broker::TopicMetadata> CreateTopic(
      const std::string& name, int32_t partitions,
      const std::map<std::string, std::string>& configs) override;
  Result<broker::TopicMetadata> CreateTopicWithReplicas(
      const std::string& name, int32_t partitions, int32_t replication_factor,
      const std::map<std::string, std::string>& configs) override;
  Status DeleteTopic(const std::string& name) override;
  Status AddPartitions(const std::string& name, int32_t new_total) override;
  Status AddPartitionsWithAssignment(const std::string& name, int32_t new_total,
                                     const std::vector<std::vector<NodeId>>& assignment) override;
  // The records of a new topic whose partition p has replicas[p]; proposed, then read back.
  Result<broker::TopicMetadata> ProposeTopic(const std::string& name,
                                             const std::vector<std::vector<NodeId>>& replicas,
                                             const std::map<std::string, std::string>& configs);
  static Status CheckRegistered(const MetadataImage& img,
                                const std::vector<std::vector<NodeId>>& assignment);
  // Proposes `records`, then waits (up to a broker session) until every unfenced broker has
  // applied them, so that a client asking any broker after the answer sees the change. Past
  // the wait the change stands and the answer is success all the same (a broker that far
  // behind is about to be fenced); the wait is skipped on the member thread, which reconciles
  // this node's own image and so cannot wait for it.
  Result<RaftIndex> ProposeVisible(const std::vector<MetadataRecord>& records);
  Result<broker::TopicMetadata> CreateTopicWithAssignment(
      const std::string& name, const std::vector<std::vector<NodeId>>& assignment,
      const std::map<std::string, std::string>& configs) override;
  Result<storage::LogConfig> TopicConfig(const std::string& name) override;
  Status AlterTopicConfig(const std::string& name, const ConfigEdit& edit,
                          bool validate_only) override;
  std::vector<broker::BrokerEndpoint> Brokers() override;
  // Once this node's registration is applied here, the image holds every change committed
  // before it (the same point from which Reconcile trusts the image).
  bool CaughtUp() const override;
  std::optional<NodeId> Controller() override;
  std::optional<broker::QuorumState> Quorum() override;
  // Reassignments and elections (reassignment.h), decided on this node's image and proposed
  // with the partition epoch they were decided on: retried on a newer image when refused.
  std::vector<Status> AlterPartitionReassignments(
      const std::vector<ReassignmentTarget>& targets) override;
  std::vector<OngoingReassignment> ListPartitionReassignments() override;
  std::vector<Status> ElectLeaders(bool unclean, const std::vector<ElectionTarget>& targets,
                                   std::vector<ElectionTarget>* elected) override;
  int64_t ReplicaFetchAllowance(const std::string& topic, PartitionId partition,
                                NodeId follower) override;
  void ChargeReplicaFetch(const std::string& topic, int64_t bytes) override;
  Result<std::shared_ptr<storage::PartitionLog>> OpenLog(const std::string& topic,
                                                         PartitionId partition) override;

  void NotifyDelete(const std::string& topic) {
    if (on_delete_) on_delete_(topic);
  }
  void NotifyChange() {
    if (on_change_) on_change_();
  }

 protected:
  bool auto_create_topics() const override;

 public:
  // An auto-creation waits on the quorum and on every broker: the Metadata request that asks
  // for it (on an io thread) starts it on the auto-create thread and is answered Busy at once.
  // At most kMaxAutoCreates wait at a time; past that the request is answered Busy without one.
  static constexpr size_t kMaxAutoCreates = 1000;
  Result<broker::TopicMetadata> GetOrCreateTopic(const std::string& name,
                                                 bool allow_auto_create) override;
  // Joins the auto-create thread (the node is stopping: its proposals return).
  void StopAutoCreate();

 private:
  void AutoCreateLoop();
  ClusterNode::Impl* node_;
  std::mutex create_mu_;
  std::condition_variable create_cv_;
  std::deque<std::string> create_queue_;
  std::set<std::string> creating_;  // queued or being created
  bool create_stopping_ = false;
  std::thread creator_;
  std::mutex defaults_mu_;
  std::optional<storage::LogConfig> log_defaults_;  // nullopt: the static config's
  std::mutex local_mu_;  // creating a led topic's local directory
  // The reassignment throttle: a token bucket per topic (bytes; refilled at the topic's rate,
  // holding at most one second of it; a read may take it below zero).
  struct ThrottleBucket {
    double tokens = 0;
    int64_t rate = 0;
    int64_t last_ms = 0;
  };
  std::mutex throttle_mu_;
  std::map<std::string, ThrottleBucket> throttle_;
};

// The dynamic broker configs as ConfigRecords of resource type BROKER in the metadata log:
// name "" for the cluster default, this node's id for its own (Kafka KRaft's records).
class ImageBrokerConfigs final : public broker::BrokerConfigStore {
 public:
  explicit ImageBrokerConfigs(ClusterNode::Impl* node) : node_(node) {}
  Result<Configs> Load(bool cluster_default) override;
  // Proposes a ConfigRecord for each key that differs (a null value for a removed one), so that
  // a concurrent change of other keys elsewhere is kept; returns once this node applied it.
  Status Store(bool cluster_default, const Configs& current, const Configs& next) override;

 private:
  std::string Name(bool cluster_default) const;
  ClusterNode::Impl* node_;
};

// Producer ids in blocks from the metadata log.
class BlockProducerIds final : public broker::ProducerIdAllocator {
 public:
  static constexpr int64_t kBlock = 1000;
  explicit BlockProducerIds(ClusterNode::Impl* node) : node_(node) {}
  Result<ProducerId> Allocate() override;
  // Proposes a reservation (a ProducerIdsRecord with reserved_producer_id) through the end of
  // the block of kBlock ids holding `id`, unless the image already reserves that far: every
  // node's Allocate then skips the reserved ids, in the block it holds as in later ones. A
  // node sees the reservation once its image has applied it (the proposing node before this
  // returns; the others as the metadata log reaches them, normally within milliseconds).
  Status ReserveThrough(ProducerId id) override;

 private:
  ClusterNode::Impl* node_;
  std::mutex mu_;
  int64_t next_ = 0;
  int64_t limit_ = 0;
};

// The quorum's state machine: the image's, and a call after each change of it (on the loop
// thread), so that the node reacts to a new image at once rather than at its next poll.
class NotifyingStateMachine final : public StateMachine {
 public:
  NotifyingStateMachine(MetadataStateMachine* sm, std::function<void()> changed,
                        std::function<void()> before)
      : sm_(sm), changed_(std::move(changed)), before_(std::move(before)) {}
  std::string Apply(std::string_view command) override {
    if (before_) before_();
    std::string r = sm_->Apply(command);
    changed_();
    return r;
  }
  std::string Snapshot() override { return sm_->Snapshot(); }
  Status Restore(std::string_view snapshot) override {
    Status s = sm_->Restore(snapshot);
    changed_();
    return s;
  }

 private:
  MetadataStateMachine* sm_;
  std::function<void()> changed_;
  std::function<void()> before_;
};

struct ClusterNode::Impl {
  ClusterNodeOptions options;
  MetadataStateMachine sm;
  NotifyingStateMachine notifying{&sm, [this] { OnImageChanged(); },
                                  [this] {
                                    if (options.before_apply) options.before_apply();
                                  }};
  std::unique_ptr<MetadataQuorum> quorum;  // RaftQuorum, or a broker-only node's observer
  std::unique_ptr<PeerListener> broker_listener;  // a broker-only node's peer address
  bool broker_only() const { return !FindVoter(options.voters, options.node_id).has_value(); }
  broker::LocalMetadataStore* local = nullptr;
  const broker::NodeIdentity* node = nullptr;
  ImageStore store{this};
  ImageBrokerConfigs broker_configs{this};
  BlockProducerIds producer_ids{this};
  ReadBarrier read_barrier{ReadBarrier::Options{
      [this](int timeout_ms) { return ReadIndex(timeout_ms); },
      [this] { return quorum->applied_index(); }}};
  const Uuid incarnation = RandomUuid();
  const RequestId register_id = RandomUuid();

  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  bool serving = false;
  bool stopped = false;
  int peer_threads = 0;
  std::set<int> peer_fds;
  std::thread member;
  // Heartbeats have a thread of their own, so that nothing slow on the member thread (a
  // proposal, the topic upkeep) delays them past the session timeout.
  std::thread heartbeat;
  bool image_changed = false;  // under mu: the member loop has a new image to reconcile
  std::atomic<bool> fatal_sent{false};
  std::atomic<bool> is_registered{false};  // the registration was applied (set by MemberLoop)
  // The controller's decisions (controller.h): heartbeats heard, shutdown requests.
  std::unique_ptr<Controller> controller;
  // The broker's partitions and peer-connection hook, from Serving() on (under mu).
  broker::BrokerServices services;
  std::set<std::pair<std::string, int32_t>> assigned;
  // Roles, replica fetchers and ISR changes (replica_manager.h), from registration on.
  std::unique_ptr<ReplicaManager> replicas;
  // MonotonicMs of the last heartbeat a ready controller answered (or of this node's own
  // readiness as the controller); the replica manager's isolation test.
  std::atomic<int64_t> last_controller_contact_ms{MonotonicMs()};
  // The controller's next try at creating __consumer_offsets (member thread).
  Clock::time_point next_offsets_topic_try;
  // The metadata index through which this node's image is applied and its replicas reconciled
  // (set by the member loop after each Reconcile; reported with each heartbeat).
  std::atomic<uint64_t> reconciled_index{0};
  bool heartbeat_now = false;  // under mu: a newer reconciled index to report at once
  // On the ready controller: each broker's reconciled index from its heartbeats, with the
  // incarnation that reported it (a restarted broker starts from nothing again).
  std::mutex applied_mu;
  std::condition_variable applied_cv;
  std::map<int32_t, std::pair<Uuid, RaftIndex>> broker_applied;
  void NoteApplied(NodeId broker, const Uuid& incarnation, RaftIndex index);
  // On the ready controller: waits up to `timeout_ms` for every unfenced broker of the image
  // to have reconciled `index`; the brokers that have not, when the time is up (empty: all
  // have).
  std::vector<int32_t> WaitEveryBrokerApplied(RaftIndex index, int timeout_ms);
  // The same from any node (asking the controller by a ForwardKind::kAwaitApplied when it is
  // elsewhere): OK once every unfenced broker has reconciled `index`, Busy naming the reason
  // when not within `timeout_ms`.
  Status AwaitEveryBroker(RaftIndex index, int timeout_ms);

  std::shared_ptr<const MetadataImage> image() const { return sm.image(); }
  bool Stopping() {
    std::lock_guard<std::mutex> lock(mu);
    return stopping;
  }
  // Waits up to `ms` for `done`, checked under applied_mu each time the image changes (the
  // applied index moved: OnImageChanged), at Stop, and at the end: the waits between attempts
  // of Propose and ReadIndex, which return as soon as what they wait for (a leader, a new one,
  // this node's image catching up) has happened rather than after a fixed sleep. True when
  // `done` holds. Lock order: applied_mu before mu (Stopping).
  template <class Pred>
  bool WaitImage(int ms, Pred done) {
    std::unique_lock<std::mutex> lock(applied_mu);
    applied_cv.wait_for(lock, std::chrono::milliseconds(std::max(0, ms)),
                        [&] { return done() || Stopping(); });
    return done();
  }

  ProposeResult LocalPropose(const RequestId& id, std::string command, int timeout_ms);
  ProposeResult LocalReadIndex(int timeout_ms);
  // The controller's read index (MetadataQuorum::ReadIndex), from this node's own quorum when
  // it is the controller, else through a ForwardKind::kReadIndex; Busy after `timeout_ms`.
  Result<RaftIndex> ReadIndex(int timeout_ms);
  Result<RaftIndex> Propose(const RequestId& id, const std::vector<MetadataRecord>& records,
                            int timeout_ms);
  Result<RaftIndex> Propose(const std::vector<MetadataRecord>& records) {
    return Propose(RandomUuid(), records, options.proposal_timeout_ms);
  }
  void Fatal(const Status& s);
  void MemberLoop();
  void HeartbeatLoop();
  // One heartbeat to the controller: the controller's applied index when a ready controller
  // answered it, nullopt otherwise.
  std::optional<RaftIndex> SendHeartbeat();
  void OnImageChanged();
  void CheckLiveness();
  // The member loop's probes of silent brokers' listeners (CheckLiveness; listener_probe.h).
  ListenerProbes probes;
  // This node's replicas that are offline (broker::PartitionManager::Offline), for the
  // controller: by topic id.
  std::set<std::pair<Uuid, int32_t>> LocalOfflineReplicas();
  void Reconcile();
  void ControlledShutdown();
  void OnPeer(NodeId sender, int fd);
  void OnKafkaPeer(NodeId sender, int fd);
  void StartReplicas();
  void ServePeer(NodeId sender, int fd);

  // offsets.topic.replication.factor, or min(3, voters) when it is -1.
  int32_t OffsetsReplicationFactor() const;
  // On the ready controller: creates __consumer_offsets once enough brokers are up for its
  // replication factor (as Kafka, which waits for them too).
  void MaybeCreateOffsetsTopic();
};

}  // namespace silt::cluster
