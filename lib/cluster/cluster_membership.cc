// Registration and upkeep: the member loop, heartbeats, and the ready controller's decisions
// (CheckLiveness).
#include "cluster/cluster_node_impl.h"

namespace silt::cluster {

using broker::LogInfo;
using broker::LogWarn;

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

}  // namespace silt::cluster
