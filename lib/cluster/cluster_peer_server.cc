// The controller's side of forwarding: SILTPEER connections from other nodes, each served on a
// thread of its own (ServePeer), and the waits for every broker's applied index.
#include "cluster/cluster_node_impl.h"

namespace silt::cluster {

using broker::LogInfo;
using broker::LogWarn;

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

}  // namespace silt::cluster
