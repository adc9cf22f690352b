// The controller's decisions (controller.h).
#include "cluster/controller.h"

#include <algorithm>
#include <set>

#include "cluster/reassignment.h"

namespace silt::cluster {
namespace {

bool Contains(const std::vector<NodeId>& v, NodeId n) {
  return std::find(v.begin(), v.end(), n) != v.end();
}

std::string PartitionName(const TopicImage& t, int32_t p) {
  return t.name + "-" + std::to_string(p);
}

std::string Nodes(const std::vector<NodeId>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(v[i].value());
  }
  return out + "]";
}

}  // namespace

Election Elect(const PartitionImage& p, const std::function<bool(NodeId)>& can_lead,
               bool unclean_allowed) {
  Election e;
  for (NodeId n : p.isr) {
    if (can_lead(n)) e.isr.push_back(n);
  }
  if (e.isr.empty()) {
    // The ISR never empties: the last member stays (the leader when it was one, as it is the
    // last to have been in sync; else the ISR as it was, already down to its last member).
    if (p.leader.value() != kNoLeader && Contains(p.isr, p.leader)) {
      e.isr = {p.leader};
    } else {
      e.isr = p.isr;
    }
  }
  if (p.leader.value() != kNoLeader && can_lead(p.leader) && Contains(e.isr, p.leader)) {
    e.leader = p.leader;
    return e;
  }
  for (NodeId r : p.replicas) {
    if (Contains(e.isr, r) && can_lead(r)) {
      e.leader = r;
      return e;
    }
  }
  if (unclean_allowed) {
    for (NodeId r : p.replicas) {
      if (can_lead(r)) {
        e.leader = r;
        e.isr = {r};
        e.unclean = true;
        return e;
      }
    }
  }
  e.leader = NodeId(kNoLeader);
  return e;
}

bool UncleanElectionAllowed(const MetadataImage& img, const std::string& topic,
                            bool broker_default) {
  const auto& configs = img.configs(ConfigResource::kTopic, topic);
  auto it = configs.find(kUncleanLeaderElectionKey);
  if (it == configs.end()) return broker_default;
  return it->second == "true";
}

std::vector<PartitionChangeRecord> PreferredLeaderChanges(
    const MetadataImage& img, const std::function<bool(NodeId)>& can_lead, int percentage,
    std::vector<std::string>* notes) {
  // Per preferred leader: how many partitions it is first replica of, and those it does not
  // lead now.
  struct Load {
    int64_t preferred = 0;
    std::vector<std::pair<const TopicImage*, int32_t>> not_led;
  };
  std::map<int32_t, Load> by_broker;
  for (const auto& [tid, t] : img.topics()) {
    for (const auto& [p, part] : t.partitions) {
      if (part.replicas.empty()) continue;
      Load& l = by_broker[part.replicas[0].value()];
      ++l.preferred;
      if (part.leader != part.replicas[0]) l.not_led.push_back({&t, p});
    }
  }
  std::vector<PartitionChangeRecord> out;
  for (const auto& [broker, load] : by_broker) {
    if (load.not_led.empty() || !can_lead(NodeId(broker))) continue;
    // Kafka's test: imbalance ratio = not led / preferred, above the percentage.
    if (static_cast<int64_t>(load.not_led.size()) * 100 <= load.preferred * percentage) continue;
    for (const auto& [t, p] : load.not_led) {
      const PartitionImage& part = t->partitions.at(p);
      if (!Contains(part.isr, NodeId(broker))) continue;
      out.push_back(PartitionChangeRecord{PartitionId(p), t->id, std::nullopt, NodeId(broker),
                                          std::nullopt, part.partition_epoch});
      if (notes) {
        notes->push_back(PartitionName(*t, p) + " back to its preferred leader " +
                         std::to_string(broker) + " (from " + std::to_string(part.leader.value()) +
                         ")");
      }
    }
  }
  return out;
}

std::vector<NodeId> OfflineReplicas(const MetadataImage& img, const PartitionImage& p) {
  std::vector<NodeId> out;
  for (NodeId r : p.replicas) {
    auto it = img.brokers().find(r.value());
    if (it == img.brokers().end() || it->second.fenced) out.push_back(r);
  }
  return out;
}

void Controller::Heard(NodeId broker, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  last_heard_[broker.value()] = now;
}

std::vector<int32_t> Controller::Silent(const MetadataImage& img, NodeId self,
                                        Clock::time_point now, Clock::duration after) const {
  std::vector<int32_t> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, b] : img.brokers()) {
    if (b.fenced || id == self.value()) continue;
    auto it = last_heard_.find(id);
    if (it != last_heard_.end() && now - it->second >= after) out.push_back(id);
  }
  return out;
}

void Controller::Refused(NodeId broker, Clock::time_point probe_started) {
  std::lock_guard<std::mutex> lock(mu_);
  refused_[broker.value()] = probe_started;
}

void Controller::WantShutDown(NodeId broker, const Uuid& incarnation) {
  std::lock_guard<std::mutex> lock(mu_);
  shutting_down_[broker.value()] = incarnation;
}

bool Controller::ShuttingDown(NodeId broker) const {
  std::lock_guard<std::mutex> lock(mu_);
  return shutting_down_.count(broker.value()) > 0;
}

void Controller::ReportOffline(NodeId broker, const Uuid& incarnation,
                               std::set<ReplicaKey> offline) {
  std::lock_guard<std::mutex> lock(mu_);
  if (offline.empty()) {
    offline_.erase(broker.value());
  } else {
    offline_[broker.value()] = {incarnation, std::move(offline)};
  }
}

void Controller::ElectAll(const MetadataImage& img, const std::function<bool(NodeId)>& can_lead,
                          const std::map<int32_t, std::set<ReplicaKey>>& offline,
                          ControllerDecision* out) const {
  for (const auto& [tid, t] : img.topics()) {
    const bool unclean = UncleanElectionAllowed(img, t.name, config_.unclean_leader_election);
    for (const auto& [p, part] : t.partitions) {
      auto can_lead_here = [&, topic_id = t.id, partition = p](NodeId n) {
        if (!can_lead(n)) return false;
        auto o = offline.find(n.value());
        return o == offline.end() || o->second.count({topic_id, partition}) == 0;
      };
      Election e = offline.empty() ? Elect(part, can_lead, unclean)
                                   : Elect(part, can_lead_here, unclean);
      const bool isr_changed = e.isr != part.isr;
      const bool leader_changed = e.leader != part.leader;
      if (!isr_changed && !leader_changed) continue;
      out->records.push_back(PartitionChangeRecord{
          PartitionId(p), t.id, isr_changed ? std::optional(e.isr) : std::nullopt,
          leader_changed ? e.leader : NodeId(kNoLeaderChange), std::nullopt,
          part.partition_epoch});
      std::string note = PartitionName(t, p) + ":";
      if (leader_changed) {
        note += " leader " + std::to_string(part.leader.value()) + " -> " +
                std::to_string(e.leader.value());
      }
      if (isr_changed) note += " isr " + Nodes(part.isr) + " -> " + Nodes(e.isr);
      if (e.unclean) {
        out->unclean.push_back("UNCLEAN leader election of " + PartitionName(t, p) + ": node " +
                               std::to_string(e.leader.value()) + " was not in the ISR " +
                               Nodes(part.isr) + " and leads now (" + kUncleanLeaderElectionKey +
                               "); records only the old ISR held are lost");
      } else {
        out->notes.push_back(std::move(note));
      }
    }
  }
}

void Controller::CompleteReassignments(const MetadataImage& img,
                                       const std::function<bool(NodeId)>& can_lead,
                                       ControllerDecision* out) const {
  // Partitions another change of this command already touches wait for the next decision (one
  // command is applied all or nothing, and each change expects the epoch it was decided on).
  std::set<std::pair<Uuid, int32_t>> changed;
  for (const MetadataRecord& r : out->records) {
    if (auto* c = std::get_if<PartitionChangeRecord>(&r)) {
      changed.insert({c->topic_id, c->partition_id.value()});
    }
  }
  for (const auto& [tid, t] : img.topics()) {
    for (const auto& [p, part] : t.partitions) {
      if (!part.reassigning() || changed.count({t.id, p})) continue;
      std::optional<PartitionChangeRecord> done = CompleteReassignment(t, p, can_lead);
      if (!done) continue;
      out->notes.push_back(PartitionName(t, p) + ": reassignment complete, replicas " +
                           Nodes(part.replicas) + " -> " + Nodes(*done->replicas) +
                           (done->leader.value() != kNoLeaderChange
                                ? ", leader " + std::to_string(part.leader.value()) + " -> " +
                                      std::to_string(done->leader.value())
                                : std::string()));
      out->records.push_back(std::move(*done));
    }
  }
}

ControllerDecision Controller::Decide(const MetadataImage& img, uint64_t term, NodeId self,
                                      Clock::time_point now,
                                      std::optional<PreviousLeader> previous_leader) {
  std::set<int32_t> dead, back, leaving, refused_dead;
  std::map<int32_t, std::set<ReplicaKey>> offline;  // reported offline replicas, by broker
  bool check_imbalance = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (term != term_) {
      term_ = term;
      last_heard_.clear();
      refused_.clear();
      if (previous_leader && previous_leader->id != self)
        last_heard_[previous_leader->id.value()] = std::min(now, previous_leader->last_heard);
      next_imbalance_check_ = now + config_.imbalance_check_interval;
    }
    last_heard_[self.value()] = now;
    for (const auto& [id, b] : img.brokers()) {
      // A broker that registered again (a restart) was just heard from: its registration
      // came through this controller, whose last heartbeat time is of the old process.
      auto [inc, fresh] = incarnations_.try_emplace(id, b.incarnation_id);
      if (!fresh && inc->second != b.incarnation_id) {
        inc->second = b.incarnation_id;
        if (!b.fenced) last_heard_[id] = now;
      }
      auto it = last_heard_.find(id);
      if (it == last_heard_.end()) {
        // Not heard from in this term: an unfenced broker gets a full session from now; a
        // fenced one stays fenced until it is heard from.
        if (b.fenced) continue;
        it = last_heard_.emplace(id, now).first;
      }
      if (auto r = refused_.find(id); r != refused_.end()) {
        // Refused with no heartbeat since the probe began: gone. Its last heartbeat is
        // forgotten too, so that it stays fenced until it is heard from again (its session, by
        // the clock alone, would not have run out). Either way the mark is used.
        const bool gone = it->second < r->second && !b.fenced;
        refused_.erase(r);
        if (gone) {
          refused_dead.insert(id);
          dead.insert(id);
          last_heard_.erase(it);
          continue;
        }
      }
      bool alive = now - it->second <= config_.session_timeout;
      if (!alive && !b.fenced) dead.insert(id);
      if (alive && b.fenced) back.insert(id);
    }
    // So does a report of offline replicas.
    for (auto it = offline_.begin(); it != offline_.end();) {
      auto b = img.brokers().find(it->first);
      if (b == img.brokers().end() || b->second.incarnation_id != it->second.first) {
        it = offline_.erase(it);
      } else {
        offline.emplace(it->first, it->second.second);
        ++it;
      }
    }
    // A shutdown request lasts as long as the incarnation that made it.
    for (auto it = shutting_down_.begin(); it != shutting_down_.end();) {
      auto b = img.brokers().find(it->first);
      if (b == img.brokers().end() || b->second.incarnation_id != it->second) {
        it = shutting_down_.erase(it);
      } else {
        leaving.insert(it->first);
        ++it;
      }
    }
    check_imbalance = config_.auto_leader_rebalance && now >= next_imbalance_check_;
  }
  // A broker shutting down is not unfenced again when it goes quiet and comes back.
  for (int32_t id : leaving) back.erase(id);
  ControllerDecision out;
  for (int32_t id : dead) {
    out.records.push_back(FenceBrokerRecord{NodeId(id)});
    out.notes.push_back("fenced broker " + std::to_string(id) +
                        (refused_dead.count(id)
                             ? std::string(" (heartbeats stopped and its listener refuses "
                                           "connections)")
                             : " (no heartbeat for " +
                                   std::to_string(config_.session_timeout.count()) + " ms)"));
  }
  for (int32_t id : back) {
    out.records.push_back(UnfenceBrokerRecord{NodeId(id)});
    out.notes.push_back("unfenced broker " + std::to_string(id));
  }
  auto can_lead = [&](NodeId n) {
    if (dead.count(n.value()) || leaving.count(n.value())) return false;
    auto it = img.brokers().find(n.value());
    return it != img.brokers().end() && (!it->second.fenced || back.count(n.value()));
  };
  const size_t broker_changes = out.records.size();
  ElectAll(img, can_lead, offline, &out);
  CompleteReassignments(img, can_lead, &out);
  // Preferred leaders only when no partition changes otherwise (else at the next decision), so
  // that the partitions they are decided on are the ones they apply to; fencing in the same
  // command is fine, as can_lead already counts it.
  if (check_imbalance && out.records.size() == broker_changes) {
    for (auto& r : PreferredLeaderChanges(img, can_lead, config_.imbalance_per_broker_percentage,
                                          &out.notes)) {
      out.records.push_back(std::move(r));
    }
    std::lock_guard<std::mutex> lock(mu_);
    next_imbalance_check_ = now + config_.imbalance_check_interval;
  }
  return out;
}

}  // namespace silt::cluster
