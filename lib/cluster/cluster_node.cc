// ClusterNode: proposals through the quorum, and starting and stopping the node (the rest of Impl
// is in the files cluster_node_impl.h lists).
#include "cluster/cluster_node_impl.h"

namespace silt::cluster {

using broker::LogInfo;
using broker::LogWarn;

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
