// ClusterNode: the quorum, the image as metadata store, forwarding, registration.
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
namespace {

using Clock = std::chrono::steady_clock;
using broker::LogInfo;
using broker::LogWarn;

bool IsOffsetsTopic(const std::string& topic) { return topic == protocol::kConsumerOffsetsTopic; }

broker::TopicMetadata Describe(const MetadataImage& img, const TopicImage& t) {
  broker::TopicMetadata out;
  out.name = t.name;
  out.topic_id = t.id.ToString();
  out.partition_count = static_cast<int32_t>(t.partitions.size());
  out.configs = img.configs(ConfigResource::kTopic, t.name);
  out.internal = protocol::IsInternalTopic(t.name);
  for (const auto& [p, part] : t.partitions) {
    out.partitions.push_back(broker::PartitionAssignment{PartitionId(p), part.leader,
                                                         part.leader_epoch, part.replicas,
                                                         part.isr, OfflineReplicas(img, part)});
  }
  return out;
}

// A ConfigRecord for each key whose value differs between `current` and `next`, a null value
// for each key `next` drops: only what changed, so that concurrent changes of other keys stay.
std::vector<MetadataRecord> ConfigChanges(ConfigResource resource, const std::string& name,
                                          const std::map<std::string, std::string>& current,
                                          const std::map<std::string, std::string>& next) {
  std::vector<MetadataRecord> records;
  for (const auto& [k, v] : next) {
    auto it = current.find(k);
    if (it == current.end() || it->second != v) records.push_back(ConfigRecord{resource, name, k, v});
  }
  for (const auto& [k, v] : current) {
    if (!next.count(k)) records.push_back(ConfigRecord{resource, name, k, std::nullopt});
  }
  return records;
}

Status CheckConfigs(const storage::LogConfig& defaults,
                    const std::map<std::string, std::string>& configs) {
  for (const auto& [k, v] : configs) {
    if (!storage::LogConfig::IsKnownKey(k)) {
      return Status::InvalidArgument("Unknown topic config name: " + k);
    }
  }
  storage::LogConfig probe = defaults;
  return probe.Apply(configs);
}

}  // namespace

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

// ---- proposals --------------------------------------------------------------------------

ProposeResult ClusterNode::Impl::LocalPropose(const RequestId& id, std::string command,
                                              int timeout_ms) {
  auto promise = std::make_shared<std::promise<ProposeResult>>();
  auto future = promise->get_future();
  quorum->Propose(id, std::move(command),
                  [promise](ProposeResult r) { promise->set_value(std::move(r)); });
  if (future.wait_for(std::chrono::milliseconds(timeout_ms)) != std::future_status::ready) {
    ProposeResult r;
    r.outcome = ProposeOutcome::kOutcomeUnknown;
    r.message = "not committed within " + std::to_string(timeout_ms) + " ms";
    return r;
  }
  return future.get();
}

ProposeResult ClusterNode::Impl::LocalReadIndex(int timeout_ms) {
  auto promise = std::make_shared<std::promise<ProposeResult>>();
  auto future = promise->get_future();
  quorum->ReadIndex([promise](ProposeResult r) { promise->set_value(std::move(r)); });
  if (future.wait_for(std::chrono::milliseconds(timeout_ms)) != std::future_status::ready) {
    ProposeResult r;
    r.outcome = ProposeOutcome::kOutcomeUnknown;
    r.message = "no read index within " + std::to_string(timeout_ms) + " ms";
    return r;
  }
  return future.get();
}

Result<RaftIndex> ClusterNode::Impl::ReadIndex(int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string last = "no controller is known yet";
  auto remaining = [&] {
    return static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
  };
  while (remaining() > 0) {
    if (Stopping()) return Status::Busy("the node is shutting down");
    std::optional<NodeId> leader = quorum->leader();
    auto leader_changed = [&] { return quorum->leader() != leader; };
    if (!leader) {
      WaitImage(std::min(20, remaining()), leader_changed);
      continue;
    }
    ProposeResult r;
    if (*leader == options.node_id) {
      r = LocalReadIndex(remaining());
    } else {
      std::optional<Voter> to = FindVoter(options.voters, *leader);
      if (!to) return Status::Internal("the leader is not in the voter list");
      auto fr = ForwardPropose(*to, options.node_id,
                               ForwardRequest{Uuid(), "", ForwardKind::kReadIndex}, remaining());
      if (!fr.ok()) {
        last = fr.status().ToString();
        WaitImage(std::min(50, remaining()), leader_changed);
        continue;
      }
      r = std::move(fr).value();
    }
    if (r.outcome == ProposeOutcome::kApplied) return r.index;
    last = std::string(ProposeOutcomeName(r.outcome)) +
           (r.message.empty() ? "" : ": " + r.message);
    if (r.outcome == ProposeOutcome::kShutdown) break;
    WaitImage(std::min(20, remaining()), leader_changed);
  }
  return Status::Busy("no read index from the controller within " + std::to_string(timeout_ms) +
                      " ms (" + last + ")");
}

Result<RaftIndex> ClusterNode::Impl::Propose(const RequestId& id,
                                             const std::vector<MetadataRecord>& records,
                                             int timeout_ms) {
  const std::string command = EncodeCommand(records);
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string last = "no controller is known yet";
  auto remaining = [&] {
    return static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
  };
  while (remaining() > 0) {
    if (Stopping()) return Status::Busy("the node is shutting down");
    std::optional<NodeId> leader = quorum->leader();
    auto leader_changed = [&] { return quorum->leader() != leader; };
    ProposeResult r;
    if (!leader) {
      WaitImage(std::min(50, remaining()), leader_changed);
      continue;
    }
    int attempt_ms = std::min(remaining(), 3000);
    if (*leader == options.node_id) {
      r = LocalPropose(id, command, attempt_ms);
    } else {
      std::optional<Voter> to = FindVoter(options.voters, *leader);
      if (!to) return Status::Internal("the leader is not in the voter list");
      auto fr = ForwardPropose(*to, options.node_id, ForwardRequest{id, command}, attempt_ms);
      if (!fr.ok()) {
        last = fr.status().ToString();
        WaitImage(std::min(100, remaining()), leader_changed);
        continue;
      }
      r = std::move(fr).value();
    }
    switch (r.outcome) {
      case ProposeOutcome::kApplied: {
        SILT_TRY(DecodeApplyResult(r.result));
        // Applied on the controller; wait for this node's image to include it.
        if (!WaitImage(remaining(), [&] { return quorum->applied_index() >= r.index; }))
          return Status::Busy("committed, but this node has not applied it yet");
        return r.index;
      }
      case ProposeOutcome::kRejected:
        return Status::InvalidArgument("the controller refused the change: " + r.message);
      case ProposeOutcome::kNotLeader:
      case ProposeOutcome::kOutcomeUnknown:
      case ProposeOutcome::kShutdown:
        last = std::string(ProposeOutcomeName(r.outcome)) +
               (r.message.empty() ? "" : ": " + r.message);
        WaitImage(std::min(50, remaining()), leader_changed);
        continue;
    }
  }
  return Status::Busy("the metadata change was not committed within " + std::to_string(timeout_ms) +
                      " ms (" + last + ")");
}

void ClusterNode::Impl::Fatal(const Status& s) {
  if (fatal_sent.exchange(true)) return;
  broker::LogError(s.message());
  if (options.on_fatal) options.on_fatal(s);
}

// ---- the controller's side of forwarding ------------------------------------------------

void ClusterNode::Impl::OnPeer(NodeId sender, int fd) {
  std::lock_guard<std::mutex> lock(mu);
  if (stopping) {
    ::close(fd);
    return;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  peer_fds.insert(fd);
  ++peer_threads;
  broker::LogDebug("peer connection from node " + std::to_string(sender.value()));
  std::thread([this, sender, fd] { ServePeer(sender, fd); }).detach();
}

// A follower's Kafka-protocol connection ("SILTKAFK"): the broker serves it as from `sender`.
void ClusterNode::Impl::OnKafkaPeer(NodeId sender, int fd) {
  std::function<void(int, NodeId)> adopt;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!stopping && serving) adopt = services.adopt_peer_connection;
  }
  if (!adopt) {
    ::close(fd);
    return;
  }
  broker::LogDebug("replica connection from node " + std::to_string(sender.value()));
  adopt(fd, sender);
}

void ClusterNode::Impl::StartReplicas() {
  broker::PartitionManager* partitions = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    partitions = services.partitions;
  }
  if (partitions == nullptr || replicas) return;
  ReplicaManagerOptions ro;
  ro.self = options.node_id;
  ro.voters = options.voters;
  ro.fetch.fetch_max_bytes = options.config.replica_fetch_max_bytes;
  ro.fetch.fetch_wait_max_ms = options.config.replica_fetch_wait_max_ms;
  ro.fetch.fetch_backoff_ms = options.config.replica_fetch_backoff_ms;
  ro.fetch.resolve_peer = [this](NodeId n) -> std::optional<Voter> {
    auto img = image();
    auto b = img->brokers().find(n.value());
    if (b == img->brokers().end() || b->second.peer_port <= 0) return std::nullopt;
    return Voter{n, b->second.peer_host, static_cast<uint16_t>(b->second.peer_port)};
  };
  ro.replica_lag_time_max_ms = options.config.replica_lag_time_max_ms;
  ro.broker_session_timeout_ms = options.config.broker_session_timeout_ms;
  ro.partitions = partitions;
  ro.image = [this] { return image(); };
  ro.propose = [this](const std::vector<MetadataRecord>& records) {
    return Propose(RandomUuid(), records, std::min(options.proposal_timeout_ms, 5000)).status();
  };
  ro.last_controller_contact_ms = [this] { return last_controller_contact_ms.load(); };
  auto rm = std::make_unique<ReplicaManager>(std::move(ro));
  rm->Start();
  std::lock_guard<std::mutex> lock(mu);
  replicas = std::move(rm);
}

void ClusterNode::Impl::ServePeer(NodeId sender, int fd) {
  for (;;) {
    auto body = ReadFrame(fd);
    if (!body.ok()) break;
    auto req = DecodeForwardRequest(*body);
    if (!req.ok()) {
      LogWarn("peer request: " + req.status().ToString());
      break;
    }
    ProposeResult r;
    if (req->kind == ForwardKind::kHeartbeat) {
      auto body = DecodeHeartbeat(req->command);
      if (!body.ok()) {
        r.outcome = ProposeOutcome::kRejected;
        r.message = body.status().message();
      } else if (quorum->IsReadyLeader()) {
        controller->ReportOffline(sender, body->incarnation, std::move(body->offline));
        if (body->applied) NoteApplied(sender, body->incarnation, *body->applied);
        r.outcome = ProposeOutcome::kApplied;
        // What this controller's image holds now: the node counts the answer once its own
        // image has caught up with it.
        r.index = quorum->applied_index();
        controller->Heard(sender, Clock::now());
      } else {
        r.outcome = ProposeOutcome::kNotLeader;
        r.leader_hint = quorum->leader();
      }
    } else if (req->kind == ForwardKind::kShutdown) {
      if (quorum->IsReadyLeader() && req->command.size() == 16) {
        Uuid::Bytes b;
        std::copy(req->command.begin(), req->command.end(), b.begin());
        controller->WantShutDown(sender, Uuid(b));
        controller->Heard(sender, Clock::now());
        LogInfo("controller: broker " + std::to_string(sender.value()) +
                " asks to shut down; moving its leaderships");
        r.outcome = ProposeOutcome::kApplied;
      } else if (req->command.size() != 16) {
        r.outcome = ProposeOutcome::kRejected;
        r.message = "a shutdown request carries the 16-byte incarnation id";
      } else {
        r.outcome = ProposeOutcome::kNotLeader;
        r.leader_hint = quorum->leader();
      }
    } else if (req->kind == ForwardKind::kReadIndex) {
      // LocalReadIndex answers kNotLeader (with a hint) on any node but the ready controller.
      r = LocalReadIndex(options.read_barrier_timeout_ms);
    } else if (req->kind == ForwardKind::kAwaitApplied) {
      auto cmd = DecodeAwaitApplied(req->command);
      if (!cmd.ok()) {
        r.outcome = ProposeOutcome::kRejected;
        r.message = cmd.status().message();
      } else if (quorum->IsReadyLeader()) {
        std::vector<int32_t> behind = WaitEveryBrokerApplied(cmd->first, cmd->second);
        r.outcome = behind.empty() ? ProposeOutcome::kApplied : ProposeOutcome::kOutcomeUnknown;
        r.index = cmd->first;
        for (int32_t b : behind) {
          r.message += (r.message.empty() ? "not applied by broker " : ", ") + std::to_string(b);
        }
      } else {
        r.outcome = ProposeOutcome::kNotLeader;
        r.leader_hint = quorum->leader();
      }
    } else if (req->kind == ForwardKind::kFetchMetadata) {
      auto have = DecodeMetadataFetch(req->command);
      if (!have.ok()) {
        r.outcome = ProposeOutcome::kRejected;
        r.message = have.status().message();
      } else if (quorum->IsReadyLeader()) {
        // The index first: the image read after it is at least that new.
        r.outcome = ProposeOutcome::kApplied;
        r.index = quorum->applied_index();
        r.result = EncodeMetadataSnapshotResult(
            quorum->term(), r.index > *have ? sm.Snapshot() : std::string());
      } else {
        r.outcome = ProposeOutcome::kNotLeader;
        r.leader_hint = quorum->leader();
      }
    } else {
      r = LocalPropose(req->id, std::move(req->command), options.proposal_timeout_ms);
    }
    if (!WriteAll(fd, EncodeForwardResponse(r)).ok()) break;
  }
  std::lock_guard<std::mutex> lock(mu);
  peer_fds.erase(fd);
  ::close(fd);
  --peer_threads;
  cv.notify_all();
}

// ---- registration and upkeep ------------------------------------------------------------

void ClusterNode::Impl::MemberLoop() {
  bool registered = false;
  std::shared_ptr<const MetadataImage> seen;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait_for(lock, std::chrono::milliseconds(100),
                  [this] { return stopping || image_changed; });
      if (stopping) return;
      image_changed = false;
      if (!serving) continue;
    }
    // The index first: the image read after it is at least that new.
    const RaftIndex img_index = quorum->applied_index();
    auto img = image();
    if (!img->cluster_id().empty() && img->cluster_id() != options.cluster_id) {
      Fatal(Status::InvalidArgument("this node's cluster id " + options.cluster_id +
                                    " differs from the cluster's " + img->cluster_id() +
                                    " (in its metadata log)"));
      return;
    }
    if (!registered) {
      std::vector<MetadataRecord> records{
          ClusterIdRecord{options.cluster_id},
          RegisterBrokerRecord{options.node_id, incarnation, node->advertised_host,
                               node->advertised_port,
                               broker_only() && options.broker_peer ? options.broker_peer->host
                                                                    : std::string(),
                               broker_only() && options.broker_peer ? options.broker_peer->port
                                                                    : 0},
          UnfenceBrokerRecord{options.node_id}};
      auto r = Propose(register_id, records, 2000);
      if (r.ok()) {
        registered = true;
        is_registered.store(true);
        last_controller_contact_ms = MonotonicMs();
        LogInfo("registered as broker " + std::to_string(options.node_id.value()) + " at " +
                node->advertised_host + ":" + std::to_string(node->advertised_port));
      } else if (r.status().code() == Status::Code::kInvalidArgument) {
        Fatal(Status::InvalidArgument("the controller refused this node's registration: " +
                                      r.status().message()));
        return;
      }
    }
    if (registered) {
      CheckLiveness();
      MaybeCreateOffsetsTopic();
    }
    // Only once registered: the registration's entry was applied here, so the image holds
    // every change committed before it, and a local topic missing from it was deleted (before
    // that, a restarted node's image may still lack topics it has logs of).
    if (registered && img != seen) {
      seen = img;
      Reconcile();
      // The BROKER configs of the image (the default and this node's) to the broker; only
      // once registered, like the topics, so that a restarted node takes them from the whole
      // replayed log, never from a prefix of it.
      std::function<void()> reload;
      {
        std::lock_guard<std::mutex> lock(mu);
        reload = services.reload_broker_configs;
      }
      if (reload) reload();
      if (!replicas) StartReplicas();
      if (replicas) replicas->Wake();
      // The broker follows leaderships (its group coordinator's partitions) from here.
      store.NotifyChange();
    }
    if (registered && img_index.value() > reconciled_index.load()) {
      reconciled_index.store(img_index.value());
      {
        std::lock_guard<std::mutex> lock(mu);
        heartbeat_now = true;
      }
      cv.notify_all();
      std::lock_guard<std::mutex> lock(applied_mu);
      applied_cv.notify_all();
    }
  }
}

void ClusterNode::Impl::NoteApplied(NodeId broker, const Uuid& incarnation, RaftIndex index) {
  std::lock_guard<std::mutex> lock(applied_mu);
  auto& [inc, have] = broker_applied[broker.value()];
  if (inc != incarnation || index > have) {
    inc = incarnation;
    have = index;
    applied_cv.notify_all();
  }
}

std::vector<int32_t> ClusterNode::Impl::WaitEveryBrokerApplied(RaftIndex index, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::unique_lock<std::mutex> lock(applied_mu);
  for (;;) {
    // The image again each time: a broker fenced meanwhile is no longer waited for.
    auto img = image();
    std::vector<int32_t> behind;
    for (const auto& [id, b] : img->brokers()) {
      if (b.fenced) continue;
      RaftIndex have(0);
      if (id == options.node_id.value()) {
        have = RaftIndex(reconciled_index.load());
      } else if (auto it = broker_applied.find(id);
                 it != broker_applied.end() && it->second.first == b.incarnation_id) {
        have = it->second.second;
      }
      if (have < index) behind.push_back(id);
    }
    // The quorum pushes each commit to the Raft followers at once (RaftQuorum's PushCommit):
    // the other voters apply it without waiting for the leader's heartbeat.
    if (behind.empty() || Stopping()) return behind;
    // Also woken by image changes (OnImageChanged), and at least every 100 ms.
    if (Clock::now() >= deadline) return behind;
    applied_cv.wait_until(lock, std::min(deadline, Clock::now() + std::chrono::milliseconds(100)));
  }
}

Status ClusterNode::Impl::AwaitEveryBroker(RaftIndex index, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  auto remaining = [&] {
    return static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
  };
  if (quorum->IsReadyLeader()) {
    std::vector<int32_t> behind = WaitEveryBrokerApplied(index, timeout_ms);
    if (behind.empty()) return Status::OK();
    std::string who;
    for (int32_t b : behind) who += (who.empty() ? "" : ", ") + std::to_string(b);
    return Status::Busy("not applied by broker " + who + " within " + std::to_string(timeout_ms) +
                        " ms");
  }
  std::optional<NodeId> leader = quorum->leader();
  if (!leader) return Status::Busy("no controller is known");
  std::optional<Voter> to = FindVoter(options.voters, *leader);
  if (!to) return Status::Internal("the leader is not in the voter list");
  // The controller answers by the timeout sent; the connection gets a margin past it.
  const int wait_ms = std::max(0, remaining());
  auto fr = ForwardPropose(*to, options.node_id,
                           ForwardRequest{Uuid(), EncodeAwaitApplied(index, wait_ms),
                                          ForwardKind::kAwaitApplied},
                           wait_ms + 1000);
  if (!fr.ok()) return fr.status();
  if (fr->outcome == ProposeOutcome::kApplied) return Status::OK();
  return Status::Busy(std::string(ProposeOutcomeName(fr->outcome)) +
                      (fr->message.empty() ? "" : ": " + fr->message));
}

void ClusterNode::Impl::OnImageChanged() {
  read_barrier.Applied();
  {
    std::lock_guard<std::mutex> lock(applied_mu);
    applied_cv.notify_all();
  }
  std::lock_guard<std::mutex> lock(mu);
  image_changed = true;
  if (replicas) replicas->Wake();
  cv.notify_all();
}

// Every broker.heartbeat.interval.ms, once registered: a heartbeat to the controller, or, on
// the ready controller itself, its own contact. The time counted is the one the heartbeat was
// sent at (the controller heard it later than that), and only once this node's image has
// reached the controller's applied index of the answer: whatever the controller had decided
// by then (this node fenced, its partitions led elsewhere) is in the image before the node
// counts as in touch, or a node back from a pause would lead again from its stale image. The
// wait for that is not a heartbeat's: later heartbeats go out meanwhile.
void ClusterNode::Impl::HeartbeatLoop() {
  const auto interval =
      std::chrono::milliseconds(std::max(10, options.config.broker_heartbeat_interval_ms));
  std::deque<std::pair<int64_t, RaftIndex>> pending;  // (sent at, controller's applied index)
  auto due = Clock::now();
  bool early = false;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu);
      auto until = pending.empty() ? due : std::min(due, Clock::now() + std::chrono::milliseconds(5));
      cv.wait_until(lock, until, [this] { return stopping || heartbeat_now; });
      if (stopping) return;
      // A newer reconciled index goes to the controller at once, out of turn (an admin request
      // may wait for it), without moving the next regular heartbeat.
      early = heartbeat_now;
      heartbeat_now = false;
    }
    const RaftIndex applied = quorum->applied_index();
    while (!pending.empty() && pending.front().second <= applied) {
      last_controller_contact_ms = pending.front().first;
      pending.pop_front();
    }
    const auto now = Clock::now();
    if (now < due) {
      if (early && is_registered.load() && !quorum->IsReadyLeader()) SendHeartbeat();
      continue;
    }
    // Woken a whole interval later than meant (the process was stopped, or starved): what this
    // thread knew before is stale. A controller does not count itself in touch in this round;
    // the quorum's own timers and messages run first (a Raft leader deposed meanwhile learns it
    // from the first message of the new term), so it does not lead on from a stale role.
    const bool stalled = now - due > interval;
    due = now + interval;
    if (stalled) pending.clear();
    if (!is_registered.load()) continue;
    const int64_t sent_ms = MonotonicMs();
    if (quorum->IsReadyLeader()) {
      if (!stalled) last_controller_contact_ms = sent_ms;
      controller->ReportOffline(options.node_id, incarnation, LocalOfflineReplicas());
    } else if (std::optional<RaftIndex> index = SendHeartbeat()) {
      if (pending.size() >= 64) pending.pop_front();
      pending.emplace_back(sent_ms, *index);
    }
  }
}

std::optional<RaftIndex> ClusterNode::Impl::SendHeartbeat() {
  std::optional<NodeId> leader = quorum->leader();
  if (!leader || *leader == options.node_id) return std::nullopt;
  std::optional<Voter> to = FindVoter(options.voters, *leader);
  if (!to) return std::nullopt;
  // Bounded by half a session rather than by the interval: a slow link still gets its
  // heartbeats through (the next ones wait meanwhile).
  const int timeout_ms = std::max({100, options.config.broker_heartbeat_interval_ms * 2,
                                   options.config.broker_session_timeout_ms / 2});
  const std::string body = EncodeHeartbeat(incarnation, LocalOfflineReplicas(),
                                           RaftIndex(reconciled_index.load()));
  auto r = ForwardPropose(*to, options.node_id,
                          ForwardRequest{Uuid(), body, ForwardKind::kHeartbeat}, timeout_ms);
  if (!r.ok()) {
    broker::LogDebug("heartbeat to node " + std::to_string(leader->value()) + ": " +
                     r.status().ToString());
    return std::nullopt;
  }
  if (r->outcome != ProposeOutcome::kApplied) return std::nullopt;
  return r->index;
}

std::set<std::pair<Uuid, int32_t>> ClusterNode::Impl::LocalOfflineReplicas() {
  std::set<std::pair<Uuid, int32_t>> out;
  broker::PartitionManager* partitions = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    partitions = services.partitions;
  }
  if (partitions == nullptr) return out;
  auto offline = partitions->Offline();
  if (offline.empty()) return out;
  auto img = image();
  for (const auto& [topic, p] : offline)
    if (const TopicImage* t = img->FindTopic(topic)) out.insert({t->id, p});
  return out;
}

// On the ready controller: propose what the controller decides now (controller.h).
void ClusterNode::Impl::CheckLiveness() {
  if (!quorum->IsReadyLeader()) {
    probes.CloseAll();
    return;
  }
  auto img = image();
  // A broker silent for two heartbeat intervals has its client listener probed: a refused
  // connection means its process is gone, and the decision below fences it at once instead
  // of a whole session after its last heartbeat (Controller::Refused).
  {
    const auto now = Clock::now();
    const auto silent_after =
        std::chrono::milliseconds(std::max(100, 2 * options.config.broker_heartbeat_interval_ms));
    for (int32_t id : controller->Silent(*img, options.node_id, now, silent_after)) {
      auto b = img->brokers().find(id);
      if (b != img->brokers().end())
        probes.Start(id, b->second.host, b->second.port, now, silent_after);
    }
    // After starting: on loopback a refusal is known at once, and fenced in this decision.
    probes.Poll(now, std::chrono::seconds(1), [&](int32_t id, Clock::time_point started) {
      LogInfo("controller: broker " + std::to_string(id) +
              " is silent and its listener refuses connections");
      controller->Refused(NodeId(id), started);
    });
  }
  std::optional<Controller::PreviousLeader> previous;
  if (auto c = quorum->previous_leader_contact()) previous = Controller::PreviousLeader{c->leader, c->at};
  ControllerDecision d = controller->Decide(*img, quorum->term().value(), options.node_id,
                                            Clock::now(), previous);
  if (d.empty()) return;
  auto r = Propose(d.records);
  if (!r.ok()) {
    LogWarn("controller: proposing " + std::to_string(d.records.size()) +
            " change(s): " + r.status().ToString());
    return;
  }
  for (const std::string& u : d.unclean) broker::LogError("controller: " + u);
  std::string text;
  for (const std::string& n : d.notes) text += (text.empty() ? " " : "; ") + n;
  if (!text.empty()) LogInfo("controller:" + text);
}

// Controlled shutdown: ask the controller (a ForwardKind::kShutdown, or this node's own
// Controller when it is the controller) to move this node's leaderships to other in-sync
// replicas, asking again every half second (the controller may change meanwhile), until the
// image shows this node leads nothing or controlled.shutdown.timeout.ms has passed. Skipped
// when no other broker is unfenced: nobody could take over.
void ClusterNode::Impl::ControlledShutdown() {
  if (!options.config.controlled_shutdown_enable || !quorum || !is_registered.load()) return;
  auto leading = [this] {
    auto img = image();
    int n = 0;
    for (const auto& [tid, t] : img->topics()) {
      for (const auto& [p, part] : t.partitions) n += part.leader == options.node_id ? 1 : 0;
    }
    return n;
  };
  int led_now = leading();
  if (led_now == 0) return;
  {
    auto img = image();
    bool other = false;
    for (const auto& [id, b] : img->brokers()) other |= !b.fenced && b.id != options.node_id;
    if (!other) return;
  }
  LogInfo("controlled shutdown: asking the controller to move the leadership of " +
          std::to_string(led_now) + " partition(s) away");
  const auto start = Clock::now();
  const auto deadline =
      start + std::chrono::milliseconds(options.config.controlled_shutdown_timeout_ms);
  std::string command(16, '\0');
  std::copy(incarnation.bytes().begin(), incarnation.bytes().end(), command.begin());
  while (Clock::now() < deadline) {
    std::optional<NodeId> leader = quorum->leader();
    if (leader && *leader == options.node_id) {
      controller->WantShutDown(options.node_id, incarnation);
    } else if (leader) {
      if (std::optional<Voter> to = FindVoter(options.voters, *leader)) {
        auto r = ForwardPropose(
            *to, options.node_id, ForwardRequest{RandomUuid(), command, ForwardKind::kShutdown},
            1000);
        if (!r.ok()) broker::LogDebug("controlled shutdown: " + r.status().ToString());
      }
    }
    const auto next = std::min(deadline, Clock::now() + std::chrono::milliseconds(500));
    while (Clock::now() < next) {
      if (leading() == 0) {
        // The controller's own changes reach the other nodes with its next Raft heartbeats
        // (they learn the commit index from them): give them those before going.
        if (quorum->leader() == options.node_id) {
          std::this_thread::sleep_for(std::chrono::milliseconds(3 * options.heartbeat_timeout_ms));
        }
        LogInfo("controlled shutdown: this node leads no partition now (after " +
                std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   Clock::now() - start)
                                   .count()) +
                " ms)");
        return;
      }
      // Until the image moves (the controller's change arriving), at most to the next ask.
      const auto seen = quorum->applied_index();
      WaitImage(static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                     next - Clock::now())
                                     .count()),
                [&] { return quorum->applied_index() != seen; });
    }
  }
  LogWarn("controlled shutdown: still leading " + std::to_string(leading()) +
          " partition(s) after " + std::to_string(options.config.controlled_shutdown_timeout_ms) +
          " ms (controlled.shutdown.timeout.ms); stopping anyway");
}

int32_t ClusterNode::Impl::OffsetsReplicationFactor() const {
  int32_t rf = options.config.offsets_topic_replication_factor;
  if (rf > 0) return rf;
  return std::min<int32_t>(3, static_cast<int32_t>(options.voters.size()));
}

void ClusterNode::Impl::MaybeCreateOffsetsTopic() {
  if (!quorum->IsReadyLeader()) return;
  auto now = Clock::now();
  if (now < next_offsets_topic_try) return;
  auto img = image();
  if (img->FindTopic(std::string(protocol::kConsumerOffsetsTopic)) != nullptr) return;
  int32_t up = 0;
  for (const auto& [id, b] : img->brokers()) {
    if (!b.fenced) ++up;
  }
  if (up < OffsetsReplicationFactor()) return;
  next_offsets_topic_try = now + std::chrono::seconds(2);
  auto r = store.CreateTopicWithReplicas(std::string(protocol::kConsumerOffsetsTopic), -1, -1,
                                         {{"cleanup.policy", "compact"}});
  if (r.ok()) {
    LogInfo("controller: created " + std::string(protocol::kConsumerOffsetsTopic) + " with " +
            std::to_string(r->partition_count) + " partition(s), replication factor " +
            std::to_string(OffsetsReplicationFactor()));
  } else if (r.status().code() != Status::Code::kAlreadyExists) {
    LogWarn("controller: creating " + std::string(protocol::kConsumerOffsetsTopic) + ": " +
            r.status().ToString());
  }
}

void ClusterNode::Impl::Reconcile() {
  // The local topics first, then the image: an image is never older than the local topics
  // made from it, so a local topic missing from it was deleted.
  std::vector<broker::TopicMetadata> locals = local->ListTopics();
  auto img = image();
  // Partitions no longer assigned to this node are let go of (their files stay), so that the
  // next request for them asks the image again (NOT_LEADER_OR_FOLLOWER) instead of reaching an
  // open log; the replica manager reopens the topic's other partitions with their roles.
  std::set<std::pair<std::string, int32_t>> now_assigned;
  for (const auto& [tid, t] : img->topics()) {
    for (const auto& [p, part] : t.partitions) {
      if (std::find(part.replicas.begin(), part.replicas.end(), options.node_id) !=
          part.replicas.end()) {
        now_assigned.insert({t.name, p});
      }
    }
  }
  std::set<std::string> lost;
  for (const auto& k : assigned) {
    if (!now_assigned.count(k)) lost.insert(k.first);
  }
  assigned = std::move(now_assigned);
  for (const std::string& topic : lost) {
    LogInfo("some partitions of " + topic + " are no longer assigned here; closing them");
    store.NotifyDelete(topic);
  }
  for (const broker::TopicMetadata& t : locals) {
    const TopicImage* ti = img->FindTopic(t.name);
    if (ti == nullptr || ti->id.ToString() != t.topic_id) {
      Status s = local->DeleteTopic(t.name);
      if (!s.ok())
        LogWarn("removing the local logs of deleted topic " + t.name + ": " + s.ToString());
      continue;
    }
    const auto& want = img->configs(ConfigResource::kTopic, t.name);
    if (want != t.configs) {
      Status s = local->AlterTopicConfig(
          t.name,
          [&want](std::map<std::string, std::string>* o) {
            *o = want;
            return Status::OK();
          },
          false);
      if (!s.ok()) LogWarn("topic " + t.name + ": applying its configs: " + s.ToString());
    }
    int32_t count = static_cast<int32_t>(ti->partitions.size());
    if (count > t.partition_count) {
      Status s = local->AddPartitions(t.name, count);
      if (!s.ok()) LogWarn("topic " + t.name + ": adding partitions: " + s.ToString());
    }
  }
}

// ---- the image as metadata store --------------------------------------------------------

bool ImageStore::CaughtUp() const { return node_->is_registered.load(); }

bool ImageStore::auto_create_topics() const { return node_->options.config.auto_create_topics; }

Result<broker::TopicMetadata> ImageStore::GetOrCreateTopic(const std::string& name,
                                                           bool allow_auto_create) {
  auto t = GetTopic(name);
  if (t.ok() || !t.status().IsNotFound() || !allow_auto_create || !auto_create_topics()) return t;
  std::lock_guard<std::mutex> lock(create_mu_);
  if (create_stopping_) return Status::Busy("the node is shutting down");
  if (creating_.size() < kMaxAutoCreates && creating_.insert(name).second) {
    create_queue_.push_back(name);
    if (!creator_.joinable()) creator_ = std::thread([this] { AutoCreateLoop(); });
    create_cv_.notify_one();
  }
  return Status::Busy("topic '" + name + "' is being created");
}

void ImageStore::AutoCreateLoop() {
  std::unique_lock<std::mutex> lock(create_mu_);
  for (;;) {
    create_cv_.wait(lock, [this] { return create_stopping_ || !create_queue_.empty(); });
    if (create_stopping_) return;
    std::string name = std::move(create_queue_.front());
    create_queue_.pop_front();
    lock.unlock();
    auto created = CreateTopic(name, -1, {});
    if (created.ok()) {
      LogInfo("auto-created topic " + name + " with " +
              std::to_string(created->partition_count) + " partition(s)");
    } else if (created.status().code() != Status::Code::kAlreadyExists) {
      LogWarn("auto-creating topic " + name + ": " + created.status().ToString());
    }
    lock.lock();
    creating_.erase(name);
  }
}

void ImageStore::StopAutoCreate() {
  {
    std::lock_guard<std::mutex> lock(create_mu_);
    create_stopping_ = true;
    create_cv_.notify_all();
  }
  if (creator_.joinable()) creator_.join();
}

std::vector<broker::TopicMetadata> ImageStore::ListTopics() {
  auto img = node_->image();
  std::map<std::string, broker::TopicMetadata> by_name;
  for (const auto& [id, t] : img->topics()) by_name[t.name] = Describe(*img, t);
  std::vector<broker::TopicMetadata> out;
  for (auto& [name, t] : by_name) out.push_back(std::move(t));
  return out;
}

Result<broker::TopicMetadata> ImageStore::GetTopic(const std::string& name) {
  auto img = node_->image();
  const TopicImage* t = img->FindTopic(name);
  if (t == nullptr) return Status::NotFound("topic '" + name + "' does not exist");
  return Describe(*img, *t);
}

// Auto-created topics (and CreateTopic without a factor) get default.replication.factor.
Result<broker::TopicMetadata> ImageStore::CreateTopic(
    const std::string& name, int32_t partitions,
    const std::map<std::string, std::string>& configs) {
  return CreateTopicWithReplicas(name, partitions,
                                 node_->options.config.default_replication_factor, configs);
}

// The replicas asked for (CheckRegistered), proposed as ProposeTopic says. A fenced broker's
// replicas leave the ISR once the controller sees it fenced.
Result<broker::TopicMetadata> ImageStore::CreateTopicWithAssignment(
    const std::string& name, const std::vector<std::vector<NodeId>>& assignment,
    const std::map<std::string, std::string>& configs) {
  SILT_TRY(ValidateTopicName(name));
  if (IsOffsetsTopic(name)) return Status::InvalidArgument("__consumer_offsets is placed by the cluster");
  if (assignment.empty()) return Status::InvalidArgument("no partitions");
  SILT_TRY(CheckConfigs(LogDefaults(), configs));
  auto img = node_->image();
  if (img->FindTopic(name) != nullptr) {
    return Status::AlreadyExists("topic '" + name + "' already exists");
  }
  SILT_TRY(CheckRegistered(*img, assignment));
  return ProposeTopic(name, assignment, configs);
}

// Placed replicas (PlaceReplicas), proposed as ProposeTopic says.
Result<broker::TopicMetadata> ImageStore::CreateTopicWithReplicas(
    const std::string& name, int32_t partitions, int32_t replication_factor,
    const std::map<std::string, std::string>& configs) {
  SILT_TRY(ValidateTopicName(name));
  if (IsOffsetsTopic(name)) {
    // Whoever asks (the controller, a FindCoordinator, a commit), the topic is made the same.
    partitions = node_->options.config.offsets_topic_num_partitions;
    replication_factor = node_->OffsetsReplicationFactor();
  }
  if (partitions == -1) partitions = node_->options.config.num_partitions;
  if (partitions <= 0) return Status::InvalidArgument("number of partitions must be at least 1");
  SILT_TRY(CheckConfigs(LogDefaults(), configs));
  auto img = node_->image();
  if (img->FindTopic(name) != nullptr) {
    return Status::AlreadyExists("topic '" + name + "' already exists");
  }
  SILT_ASSIGN_OR_RETURN(auto placement, PlaceReplicas(*img, partitions, replication_factor));
  return ProposeTopic(name, placement, configs);
}

// Every replica of a new partition starts in sync (all are empty), as in Kafka, and the first
// leads (the preferred leader).
Result<broker::TopicMetadata> ImageStore::ProposeTopic(
    const std::string& name, const std::vector<std::vector<NodeId>>& replicas,
    const std::map<std::string, std::string>& configs) {
  const Uuid id = NewTopicId();
  std::vector<MetadataRecord> records{TopicRecord{name, id}};
  for (size_t p = 0; p < replicas.size(); ++p) {
    records.push_back(PartitionRecord{PartitionId(static_cast<int32_t>(p)), id, replicas[p],
                                      replicas[p], replicas[p][0], LeaderEpoch(0), 0});
  }
  for (const auto& [k, v] : configs) {
    records.push_back(ConfigRecord{ConfigResource::kTopic, name, k, v});
  }
  auto r = ProposeVisible(records);
  if (!r.ok()) {
    if (r.status().message().find("' exists") != std::string::npos) {
      return Status::AlreadyExists("topic '" + name + "' already exists");
    }
    return r.status();
  }
  return GetTopic(name);
}

Result<RaftIndex> ImageStore::ProposeVisible(const std::vector<MetadataRecord>& records) {
  SILT_ASSIGN_OR_RETURN(RaftIndex index, node_->Propose(records));
  if (std::this_thread::get_id() == node_->member.get_id()) return index;
  const int64_t t0 = MonotonicMs();
  Status s = node_->AwaitEveryBroker(
      index, std::max(100, node_->options.config.broker_session_timeout_ms));
  if (!s.ok()) {
    LogWarn("metadata change " + std::to_string(index.value()) + " committed; answered before " +
            "every broker applied it: " + s.ToString());
  } else {
    broker::LogDebug("metadata change " + std::to_string(index.value()) +
                     " applied by every unfenced broker " + std::to_string(MonotonicMs() - t0) +
                     " ms after its commit here");
  }
  return index;
}

// Each partition of a manual assignment names at least one replica, every one a registered
// broker (a fenced one may be named, as in Kafka).
Status ImageStore::CheckRegistered(const MetadataImage& img,
                                   const std::vector<std::vector<NodeId>>& assignment) {
  for (const auto& replicas : assignment) {
    if (replicas.empty()) return Status::InvalidArgument("a partition without replicas");
    for (NodeId b : replicas) {
      if (img.brokers().count(b.value()) == 0) {
        return Status::InvalidArgument("broker " + std::to_string(b.value()) +
                                       " is not registered in the cluster");
      }
    }
  }
  return Status::OK();
}

Status ImageStore::DeleteTopic(const std::string& name) {
  auto img = node_->image();
  const TopicImage* t = img->FindTopic(name);
  if (t == nullptr) return Status::NotFound("topic '" + name + "' does not exist");
  SILT_TRY(ProposeVisible({RemoveTopicRecord{t->id}}).status());
  LogInfo("deleted topic " + name + " from the cluster metadata");
  // This node's logs go now; the other nodes' when they see the image without it.
  NotifyDelete(name);
  if (node_->local->GetTopic(name).ok()) {
    Status s = node_->local->DeleteTopic(name);
    if (!s.ok()) LogWarn("removing the local logs of " + name + ": " + s.ToString());
  }
  return Status::OK();
}

Status ImageStore::AddPartitions(const std::string& name, int32_t new_total) {
  return AddPartitionsWithAssignment(name, new_total, {});
}

// `assignment` empty: the new partitions are placed (PlaceReplicas); otherwise entry i holds the
// replicas of partition have + i, each a registered broker.
Status ImageStore::AddPartitionsWithAssignment(
    const std::string& name, int32_t new_total,
    const std::vector<std::vector<NodeId>>& assignment) {
  auto img = node_->image();
  const TopicImage* t = img->FindTopic(name);
  if (t == nullptr) return Status::NotFound("topic '" + name + "' does not exist");
  int32_t have = static_cast<int32_t>(t->partitions.size());
  if (new_total <= have) {
    return Status::InvalidArgument("topic " + name + " has " + std::to_string(have) +
                                   " partitions; the new total must be larger");
  }
  // New partitions get as many replicas as the topic's first partition has.
  int32_t factor = t->partitions.empty()
                       ? 1
                       : static_cast<int32_t>(t->partitions.begin()->second.replicas.size());
  std::vector<std::vector<NodeId>> placement;
  if (assignment.empty()) {
    SILT_ASSIGN_OR_RETURN(placement, PlaceReplicas(*img, new_total - have, factor));
  } else {
    if (static_cast<int32_t>(assignment.size()) != new_total - have) {
      return Status::InvalidArgument("one assignment per new partition is needed");
    }
    SILT_TRY(CheckRegistered(*img, assignment));
    placement = assignment;
  }
  std::vector<MetadataRecord> records;
  for (int32_t p = have; p < new_total; ++p) {
    const auto& replicas = placement[p - have];
    records.push_back(PartitionRecord{
        PartitionId(p), t->id, replicas, replicas, replicas[0], LeaderEpoch(0), 0});
  }
  SILT_TRY(ProposeVisible(records).status());
  LogInfo("topic " + name + " now has " + std::to_string(new_total) +
          " partition(s) in the "
          "cluster metadata");
  return Status::OK();
}

Status ImageStore::SetLogDefaults(const storage::LogConfig& defaults) {
  {
    std::lock_guard<std::mutex> lock(defaults_mu_);
    log_defaults_ = defaults;
  }
  // The logs this node keeps (every replica's) follow them at once.
  return node_->local->SetLogDefaults(defaults);
}

storage::LogConfig ImageStore::LogDefaults() {
  std::lock_guard<std::mutex> lock(defaults_mu_);
  return log_defaults_ ? *log_defaults_ : node_->options.config.log_defaults;
}

std::string ImageBrokerConfigs::Name(bool cluster_default) const {
  return cluster_default ? std::string() : std::to_string(node_->options.node_id.value());
}

Result<broker::BrokerConfigStore::Configs> ImageBrokerConfigs::Load(bool cluster_default) {
  auto img = node_->image();
  return img->configs(ConfigResource::kBroker, Name(cluster_default));
}

Status ImageBrokerConfigs::Store(bool cluster_default, const Configs& current,
                                 const Configs& next) {
  std::vector<MetadataRecord> records =
      ConfigChanges(ConfigResource::kBroker, Name(cluster_default), current, next);
  if (records.empty()) return Status::OK();
  return node_->Propose(records).status();
}

Result<storage::LogConfig> ImageStore::TopicConfig(const std::string& name) {
  auto img = node_->image();
  if (img->FindTopic(name) == nullptr)
    return Status::NotFound("topic '" + name + "' does not exist");
  storage::LogConfig c = LogDefaults();
  SILT_TRY(c.Apply(img->configs(ConfigResource::kTopic, name)));
  return c;
}

Status ImageStore::AlterTopicConfig(const std::string& name, const ConfigEdit& edit,
                                    bool validate_only) {
  auto img = node_->image();
  if (img->FindTopic(name) == nullptr)
    return Status::NotFound("topic '" + name + "' does not exist");
  const std::map<std::string, std::string> current = img->configs(ConfigResource::kTopic, name);
  std::map<std::string, std::string> next = current;
  SILT_TRY(edit(&next));
  SILT_TRY(CheckConfigs(LogDefaults(), next));
  if (validate_only || next == current) return Status::OK();
  SILT_TRY(ProposeVisible(ConfigChanges(ConfigResource::kTopic, name, current, next)).status());
  // This node's open logs take it now; the others' when they see the image.
  if (node_->local->GetTopic(name).ok()) {
    return node_->local->AlterTopicConfig(
        name,
        [&next](std::map<std::string, std::string>* o) {
          *o = next;
          return Status::OK();
        },
        false);
  }
  return Status::OK();
}

std::vector<broker::BrokerEndpoint> ImageStore::Brokers() {
  std::vector<broker::BrokerEndpoint> out;
  // Held for the loop: a range-for keeps only the last temporary alive, not the image.
  auto img = node_->image();
  for (const auto& [id, b] : img->brokers()) {
    if (!b.fenced) out.push_back(broker::BrokerEndpoint{b.id, b.host, b.port});
  }
  return out;
}

std::optional<NodeId> ImageStore::Controller() {
  return node_->quorum ? node_->quorum->leader().value_or(NodeId(-1)) : NodeId(-1);
}

std::optional<broker::QuorumState> ImageStore::Quorum() {
  broker::QuorumState q;
  if (!node_->quorum) return q;
  q.leader = node_->quorum->leader();
  q.term = static_cast<int64_t>(node_->quorum->term().value());
  q.commit_index = static_cast<int64_t>(node_->quorum->committed_index().value());
  q.applied_index = static_cast<int64_t>(node_->quorum->applied_index().value());
  q.is_ready_leader = node_->quorum->IsReadyLeader();
  auto ends = node_->quorum->voter_log_ends();
  for (const Voter& v : node_->options.voters) {
    broker::QuorumVoterState s{v.id, -1};
    for (const auto& e : ends)
      if (e.id == v.id) s.log_end = static_cast<int64_t>(e.log_end.value());
    q.voters.push_back(s);
  }
  std::sort(q.voters.begin(), q.voters.end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
  auto img = node_->image();
  for (const auto& [id, b] : img->brokers())
    if (b.fenced) q.fenced_brokers.push_back(b.id);
  return q;
}

namespace {

// Decides one partition change on the current image and proposes it; a change refused because
// the partition moved on meanwhile (INVALID_UPDATE_VERSION) is decided again, twice at most.
template <class Decide>
Status ProposePartitionChange(ClusterNode::Impl* node, const std::string& topic, Decide decide) {
  Status last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto img = node->image();
    const TopicImage* t = img->FindTopic(topic);
    if (t == nullptr) return Status::NotFound("UNKNOWN_TOPIC_OR_PARTITION: " + topic);
    Result<PartitionChangeRecord> change = decide(*img, *t);
    if (!change.ok()) return change.status();
    last = node->Propose({*change}).status();
    if (last.ok() || last.message().find("INVALID_UPDATE_VERSION") == std::string::npos) {
      return last;
    }
    // The partition moved on in the controller's image: decide again once ours has too.
    const auto seen = node->quorum->applied_index();
    node->WaitImage(100, [&] { return node->quorum->applied_index() != seen; });
  }
  return last;
}

}  // namespace

std::vector<Status> ImageStore::AlterPartitionReassignments(
    const std::vector<ReassignmentTarget>& targets) {
  std::vector<Status> out;
  for (const ReassignmentTarget& target : targets) {
    const int32_t p = target.partition.value();
    Status s = ProposePartitionChange(
        node_, target.topic,
        [&](const MetadataImage& img, const TopicImage& t) -> Result<PartitionChangeRecord> {
          if (!target.replicas) return CancelReassignment(t, p);
          return StartReassignment(img, t, p, *target.replicas);
        });
    if (s.ok()) {
      LogInfo("partition " + target.topic + "-" + std::to_string(p) +
              (target.replicas ? ": reassignment started" : ": reassignment cancelled"));
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<broker::MetadataStore::OngoingReassignment> ImageStore::ListPartitionReassignments() {
  std::vector<OngoingReassignment> out;
  for (auto& r : OngoingReassignments(*node_->image())) {
    out.push_back({r.topic, PartitionId(r.partition), r.replicas, r.adding_replicas,
                   r.removing_replicas});
  }
  return out;
}

std::vector<Status> ImageStore::ElectLeaders(bool unclean,
                                             const std::vector<ElectionTarget>& targets,
                                             std::vector<ElectionTarget>* elected) {
  std::vector<ElectionTarget> todo = targets;
  const bool all = targets.empty();
  if (all) {
    // Every partition that needs an election of this type.
    auto img = node_->image();
    for (const auto& [id, t] : img->topics()) {
      for (const auto& [p, part] : t.partitions) {
        if (DecideElection(*img, t, p, unclean).ok()) todo.push_back({t.name, PartitionId(p)});
      }
    }
  }
  std::vector<Status> out;
  for (const ElectionTarget& target : todo) {
    out.push_back(ProposePartitionChange(
        node_, target.topic,
        [&](const MetadataImage& img, const TopicImage& t) -> Result<PartitionChangeRecord> {
          return DecideElection(img, t, target.partition.value(), unclean);
        }));
  }
  if (elected) *elected = std::move(todo);
  return out;
}

int64_t ImageStore::ReplicaFetchAllowance(const std::string& topic, PartitionId partition,
                                          NodeId follower) {
  auto img = node_->image();
  const TopicImage* t = img->FindTopic(topic);
  if (t == nullptr) return -1;
  auto p = t->partitions.find(partition.value());
  if (p == t->partitions.end() || !IsAddingReplica(p->second, follower)) return -1;
  const auto& configs = img->configs(ConfigResource::kTopic, topic);
  auto c = configs.find(kReassignmentThrottleKey);
  if (c == configs.end()) return -1;
  int64_t rate = 0;
  try {
    rate = std::stoll(c->second);
  } catch (...) {
    return -1;
  }
  if (rate <= 0) return -1;
  const int64_t now = MonotonicMs();
  std::lock_guard<std::mutex> lock(throttle_mu_);
  auto [it, fresh] = throttle_.try_emplace(topic);
  ThrottleBucket& b = it->second;
  if (fresh || b.rate != rate) {
    b.rate = rate;
    b.tokens = std::min<double>(b.tokens, static_cast<double>(rate));
    if (fresh) b.tokens = static_cast<double>(rate) / 10;
    b.last_ms = now;
  }
  b.tokens = std::min<double>(static_cast<double>(rate),
                              b.tokens + static_cast<double>(rate) * (now - b.last_ms) / 1000.0);
  b.last_ms = now;
  return b.tokens >= 1 ? static_cast<int64_t>(b.tokens) : 0;
}

void ImageStore::ChargeReplicaFetch(const std::string& topic, int64_t bytes) {
  std::lock_guard<std::mutex> lock(throttle_mu_);
  auto it = throttle_.find(topic);
  if (it != throttle_.end()) it->second.tokens -= static_cast<double>(bytes);
}

Result<std::shared_ptr<storage::PartitionLog>> ImageStore::OpenLog(const std::string& topic,
                                                                   PartitionId partition) {
  auto img = node_->image();
  const TopicImage* t = img->FindTopic(topic);
  if (t == nullptr) return Status::NotFound("topic '" + topic + "' does not exist");
  auto it = t->partitions.find(partition.value());
  if (it == t->partitions.end()) {
    return Status::NotFound(topic + "-" + std::to_string(partition.value()) +
                            ": no such partition");
  }
  const auto& replicas = it->second.replicas;
  if (std::find(replicas.begin(), replicas.end(), node_->options.node_id) == replicas.end()) {
    return Status::NotLeader(topic + "-" + std::to_string(partition.value()) + " is led by node " +
                             std::to_string(it->second.leader.value()) + " (no replica here)");
  }
  // With a broker behind it, only the replica manager opens a replica (and gives it its role
  // before any request can use it); anyone else is told to retry, and the manager is woken.
  // That holds from the moment the broker serves, before the manager exists (it starts once
  // this node is registered): a partition opened by a request then would act as a single
  // node's leader, ISR {this node}, and acknowledge acks=all alone — a node restarted within
  // its session, still leader in the image, did exactly that and lost acknowledged records.
  if (!OpeningForReplicaManager()) {
    // Under mu: Stop() takes the manager away under it before destroying it.
    std::lock_guard<std::mutex> lock(node_->mu);
    if (node_->replicas || node_->services.partitions != nullptr) {
      if (node_->replicas) node_->replicas->Wake();
      return Status::NotLeader(topic + "-" + std::to_string(partition.value()) +
                               ": the replica is not open here yet");
    }
  }
  {
    // The data dir keeps the topic under the image's id, with every partition the image has.
    std::lock_guard<std::mutex> lock(local_mu_);
    int32_t count = static_cast<int32_t>(t->partitions.size());
    auto have = node_->local->GetTopic(topic);
    if (!have.ok()) {
      if (!have.status().IsNotFound()) return have.status();
      SILT_TRY(
          node_->local
              ->CreateTopicWithId(topic, t->id, count, img->configs(ConfigResource::kTopic, topic))
              .status());
    } else if (have->topic_id != t->id.ToString()) {
      return Status::NotLeader(topic +
                               ": the local logs are of an older topic of that name "
                               "(being removed)");
    } else if (have->partition_count < count) {
      SILT_TRY(node_->local->AddPartitions(topic, count));
    }
  }
  return node_->local->OpenLog(topic, partition);
}

Result<ProducerId> BlockProducerIds::Allocate() {
  // First the image must hold every reservation committed before this call (a node learns of
  // one only as its image applies it): a read barrier, shared with the calls made meanwhile.
  SILT_TRY(node_->read_barrier.Wait(node_->options.read_barrier_timeout_ms));
  std::lock_guard<std::mutex> lock(mu_);
  // Ids of the block held that a reservation made since covers are skipped.
  const int64_t reserved = node_->image()->reserved_producer_id().value();
  if (next_ <= reserved) next_ = std::min(reserved + 1, limit_);
  // Every block ends at a multiple of kBlock above the last one: a proposal made from a stale
  // image does not advance the next id, is refused, and is retried from a newer image. A
  // reservation moves the next id to a multiple of kBlock too, so a block granted after it
  // lies wholly above it.
  for (int attempt = 0; next_ >= limit_; ++attempt) {
    int64_t base = node_->image()->next_producer_id().value();
    int64_t end = (base / kBlock + 1) * kBlock;
    auto r = node_->Propose({ProducerIdsRecord{node_->options.node_id, ProducerId(end)}});
    if (r.ok()) {
      next_ = end - kBlock;
      limit_ = end;
      break;
    }
    if (r.status().code() != Status::Code::kInvalidArgument || attempt >= 10) return r.status();
  }
  return ProducerId(next_++);
}

Status BlockProducerIds::ReserveThrough(ProducerId id) {
  if (id.value() < 0) return Status::OK();
  if (id.value() > INT64_MAX - 2 * kBlock)
    return Status::InvalidArgument("producer id " + std::to_string(id.value()) +
                                   " is too large to reserve");
  std::lock_guard<std::mutex> lock(mu_);
  // Whole blocks: a source's producer ids grow one by one, so one proposal covers a
  // thousand of them.
  const int64_t through = (id.value() / kBlock + 1) * kBlock - 1;
  for (int attempt = 0;; ++attempt) {
    auto image = node_->image();
    if (image->reserved_producer_id() >= id) break;
    const int64_t next = std::max(image->next_producer_id().value(), through + 1);
    auto r = node_->Propose(
        {ProducerIdsRecord{node_->options.node_id, ProducerId(next), ProducerId(through)}});
    if (r.ok()) break;
    // Refused: the image changed since it was read (another reservation); look again.
    if (r.status().code() != Status::Code::kInvalidArgument || attempt >= 10) return r.status();
  }
  const int64_t reserved = node_->image()->reserved_producer_id().value();
  if (next_ <= reserved) next_ = std::min(reserved + 1, limit_);
  return Status::OK();
}

// ---- ClusterNode ------------------------------------------------------------------------

ClusterNode::ClusterNode(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ClusterNode::~ClusterNode() { Stop(); }

Result<std::unique_ptr<ClusterNode>> ClusterNode::Create(ClusterNodeOptions options) {
  if (!FindVoter(options.voters, options.node_id) && !options.broker_peer) {
    return Status::InvalidArgument("node id " + std::to_string(options.node_id.value()) +
                                   " is not in the voter list " + FormatVoters(options.voters) +
                                   ": a broker-only node needs its own peer address");
  }
  SILT_ASSIGN_OR_RETURN(
      options.cluster_id,
      CheckNodeDirectory(options.config.data_dir, options.node_id, options.cluster_id));
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  const broker::BrokerConfig& c = impl->options.config;
  ControllerConfig cc;
  cc.session_timeout = std::chrono::milliseconds(c.broker_session_timeout_ms);
  cc.unclean_leader_election = c.unclean_leader_election_enable;
  cc.auto_leader_rebalance = c.auto_leader_rebalance_enable;
  cc.imbalance_check_interval = std::chrono::milliseconds(c.leader_imbalance_check_interval_ms);
  cc.imbalance_per_broker_percentage = c.leader_imbalance_per_broker_percentage;
  impl->controller = std::make_unique<Controller>(cc);
  return std::unique_ptr<ClusterNode>(new ClusterNode(std::move(impl)));
}

Status ClusterNode::Start(broker::LocalMetadataStore* local, const broker::NodeIdentity* node) {
  Impl& s = *impl_;
  s.local = local;
  s.node = node;
  Impl* raw_node = &s;
  if (s.broker_only()) {
    // A broker only: its own peer listener for silt's streams, and the controller's image.
    auto listener = PeerListener::Start(
        *s.options.broker_peer, [raw_node](NodeId sender, PeerStream kind, int fd) {
          if (kind == PeerStream::kKafka) {
            raw_node->OnKafkaPeer(sender, fd);
          } else {
            raw_node->OnPeer(sender, fd);
          }
        });
    if (!listener.ok()) return listener.status().WithContext("starting the peer listener");
    s.broker_listener = std::move(listener).value();
    MetadataObserverOptions mo;
    mo.node_id = s.options.node_id;
    mo.voters = s.options.voters;
    mo.state_machine = &s.notifying;
    // The state machine's own call comes before the applied index moves: the member loop is
    // woken again once it has, or it would note the image as reconciled one index short.
    mo.on_applied = [raw_node] { raw_node->OnImageChanged(); };
    auto observer = MetadataObserver::Start(std::move(mo));
    if (!observer.ok()) return observer.status().WithContext("following the metadata quorum");
    s.quorum = std::move(observer).value();
    s.member = std::thread([raw_node] { raw_node->MemberLoop(); });
    s.heartbeat = std::thread([raw_node] { raw_node->HeartbeatLoop(); });
    LogInfo("broker-only node " + std::to_string(s.options.node_id.value()) + " (voters " +
            FormatVoters(s.options.voters) + ", peer address " +
            s.options.broker_peer->address() + ", cluster " + s.options.cluster_id + ")");
    return Status::OK();
  }
  RaftQuorumOptions q;
  q.node_id = s.options.node_id;
  q.voters = s.options.voters;
  q.raft_dir = RaftDirectory(s.options.config.data_dir);
  q.state_machine = &s.notifying;
  q.on_applied = [&s] { s.OnImageChanged(); };  // as for the observer above
  q.election_timeout_ms = s.options.election_timeout_ms;
  q.heartbeat_timeout_ms = s.options.heartbeat_timeout_ms;
  Impl* raw = &s;
  q.on_leadership = [](LeadershipChange c) {
    if (c.ready) {
      LogInfo("this node is the controller (term " + std::to_string(c.term.value()) + ")");
    } else {
      LogInfo("this node is no longer the controller");
    }
  };
  q.on_peer_connection = [raw](NodeId sender, PeerStream kind, int fd) {
    if (kind == PeerStream::kKafka) {
      raw->OnKafkaPeer(sender, fd);
    } else {
      raw->OnPeer(sender, fd);
    }
  };
  auto started = RaftQuorum::Start(std::move(q));
  if (!started.ok()) return started.status().WithContext("starting the metadata quorum");
  s.quorum = std::move(started).value();
  SILT_TRY(MarkVoter(s.options.config.data_dir, s.options.node_id, s.options.cluster_id));
  s.member = std::thread([raw] { raw->MemberLoop(); });
  s.heartbeat = std::thread([raw] { raw->HeartbeatLoop(); });
  LogInfo("cluster node " + std::to_string(s.options.node_id.value()) + " of " +
          std::to_string(s.options.voters.size()) + " (voters " + FormatVoters(s.options.voters) +
          ", cluster " + s.options.cluster_id + ")");
  return Status::OK();
}

broker::MetadataStore& ClusterNode::metadata() { return impl_->store; }
const std::string& ClusterNode::cluster_id() const { return impl_->options.cluster_id; }
broker::LogProvider& ClusterNode::logs() { return impl_->store; }
broker::ProducerIdAllocator* ClusterNode::producer_ids() { return &impl_->producer_ids; }
broker::BrokerConfigStore* ClusterNode::broker_configs() { return &impl_->broker_configs; }

void ClusterNode::Serving(const broker::BrokerServices& services) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->services = services;
  impl_->serving = true;
  impl_->cv.notify_all();
}

void ClusterNode::Stop() {
  Impl& s = *impl_;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.stopped) return;
  }
  s.ControlledShutdown();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.stopped) return;
    s.stopped = true;
    s.stopping = true;
    s.cv.notify_all();
  }
  {
    std::lock_guard<std::mutex> lock(s.applied_mu);  // out of WaitImage
    s.applied_cv.notify_all();
  }
  if (s.member.joinable()) s.member.join();
  if (s.heartbeat.joinable()) s.heartbeat.join();
  s.store.StopAutoCreate();
  // The replica manager's proposals see the node stopping and return.
  std::unique_ptr<ReplicaManager> replicas;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    replicas = std::move(s.replicas);
  }
  if (replicas) replicas->Stop();
  // Pending proposals complete (their waiters return); the loop thread is joined, so no new
  // peer connection arrives after this.
  if (s.quorum) s.quorum->Stop();
  if (s.broker_listener) s.broker_listener->Stop();
  std::unique_lock<std::mutex> lock(s.mu);
  for (int fd : s.peer_fds) ::shutdown(fd, SHUT_RDWR);
  s.cv.wait(lock, [&s] { return s.peer_threads == 0; });
}

}  // namespace silt::cluster
