// The controller's decisions: which brokers are fenced, which replica leads each partition, who
// stays in the ISR, and when leadership goes back to the preferred replica. Kafka's KRaft
// controller (ReplicationControlManager, PartitionChangeBuilder) is the model.
//
// Everything here is a function of the metadata image, the controller's own view of liveness
// (heartbeats, controlled-shutdown requests) and the time; nothing proposes, blocks or does
// I/O. ClusterNode feeds it heartbeats and proposes what Decide returns, so that the rules can
// be tested without processes or a quorum.
//
// The rules (every decision is level-triggered: Decide looks at every partition each time and
// proposes only what differs from the image, so a lost proposal is made again next time):
// - A broker silent for the session timeout is fenced; a fenced one heard from again is
//   unfenced. A broker that asked for a controlled shutdown stays unfenced (it still serves)
//   but is treated like a fenced one for leadership and ISRs, until it registers again.
// - A replica its broker reports offline (a failed disk, damage recovery may not cut: Kafka's
//   offline log directories) is treated like a fenced broker for that partition alone: it
//   leaves the ISR and leads nothing, until the broker reports it healthy again (a restart,
//   whose new incarnation forgets the report).
// - A broker that is fenced or shutting down leaves the ISR of every partition, unless it is
//   the last member: the ISR never empties (when every member is gone, the leader, or else the
//   ISR as it was, stays as the last member).
// - A partition whose leader cannot lead (fenced, shutting down, or outside the ISR) gets the
//   first replica in assignment order that is in the ISR and can lead; with none, leader -1
//   (LEADER_NOT_AVAILABLE) until an ISR member can lead again. With the topic's
//   unclean.leader.election.enable (the broker default when the topic does not set it), the
//   first replica that can lead becomes leader with an ISR of itself alone (an unclean
//   election: records only the old ISR had are lost).
// - Preferred leaders: every leader.imbalance.check.interval, for each broker that is the first
//   replica (the preferred leader) of more partitions than it leads by more than
//   leader.imbalance.per.broker.percentage, the partitions where it can lead and is in the ISR
//   go back to it.
// - Reassignments (reassignment.h): a partition whose target replicas are all in the ISR gets
//   its reassignment completed (the removed replicas dropped, leadership moved into the target).
// Every change is a PartitionChangeRecord; the image bumps the partition epoch on each and the
// leader epoch when the leader changes.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/ids.h"
#include "base/uuid.h"
#include "cluster/metadata_image.h"
#include "cluster/metadata_records.h"

namespace silt::cluster {

// The topic config and broker default that allow an unclean election.
inline constexpr const char* kUncleanLeaderElectionKey = "unclean.leader.election.enable";

struct ControllerConfig {
  std::chrono::milliseconds session_timeout{1500};  // broker.session.timeout.ms
  bool unclean_leader_election = false;             // unclean.leader.election.enable
  bool auto_leader_rebalance = true;                // auto.leader.rebalance.enable
  // leader.imbalance.check.interval.seconds
  std::chrono::milliseconds imbalance_check_interval{30000};
  int imbalance_per_broker_percentage = 10;  // leader.imbalance.per.broker.percentage
};

// What one partition becomes when the brokers for which `can_lead` is false go away.
struct Election {
  NodeId leader{kNoLeader};
  std::vector<NodeId> isr;
  bool unclean = false;  // the leader was not in the ISR
};

// The election rules above for one partition. `can_lead(n)`: n is registered, unfenced and not
// shutting down. The current leader stays when it can lead and is in the ISR.
Election Elect(const PartitionImage& p, const std::function<bool(NodeId)>& can_lead,
               bool unclean_allowed);

// Whether `topic` allows an unclean election: its unclean.leader.election.enable, else
// `broker_default`.
bool UncleanElectionAllowed(const MetadataImage& img, const std::string& topic,
                            bool broker_default);

// The changes that give partitions back to their preferred leader (the first replica), by the
// percentage rule above; `can_lead` as for Elect. Each note names the partition and the move.
std::vector<PartitionChangeRecord> PreferredLeaderChanges(
    const MetadataImage& img, const std::function<bool(NodeId)>& can_lead, int percentage,
    std::vector<std::string>* notes);

// The replicas of `p` that are not registered, or fenced (Metadata's offline_replicas).
std::vector<NodeId> OfflineReplicas(const MetadataImage& img, const PartitionImage& p);

// What the controller proposes at one moment: the records (one command) and a line for each
// change, for the log; `unclean` lines are to be logged as errors.
struct ControllerDecision {
  std::vector<MetadataRecord> records;
  std::vector<std::string> notes;
  std::vector<std::string> unclean;
  bool empty() const { return records.empty(); }
};

// The controller's state between decisions: when each broker was last heard from, which
// brokers asked to shut down, and when preferred leaders are next checked. Thread-safe.
class Controller {
 public:
  using Clock = std::chrono::steady_clock;

  explicit Controller(ControllerConfig config) : config_(config) {}

  // A heartbeat from `broker`. A registration of a new incarnation in the image counts as one.
  void Heard(NodeId broker, Clock::time_point now);
  // `broker` (of this incarnation) asks to shut down: it is to lead nothing and leave the ISRs
  // where it is not the last member. Forgotten when the broker registers again (another
  // incarnation) or leaves the image.
  void WantShutDown(NodeId broker, const Uuid& incarnation);
  bool ShuttingDown(NodeId broker) const;
  // The replicas on `broker` (of this incarnation) that are offline now: the whole set, which
  // replaces the one reported before (each heartbeat carries it).
  using ReplicaKey = std::pair<Uuid, int32_t>;  // topic id, partition
  void ReportOffline(NodeId broker, const Uuid& incarnation, std::set<ReplicaKey> offline);

  // What the ready controller of Raft term `term` (this node, `self`) proposes now. A new term
  // starts the session of every unfenced broker afresh (a new controller gives everyone a full
  // session from its election; a fenced broker stays fenced until it is heard from) and the
  // preferred-leader timer from now. The exception is `previous_leader`, the controller this
  // one took over from by election, when given: its session runs from the last time this node
  // heard from it (as a Raft follower), not from the election, so that a controller that died
  // is fenced a session after its death rather than a session after the election. (A previous
  // controller alive but cut off cannot reach this one either; once it can, its heartbeats
  // keep it, or bring it back, like any broker's.)
  struct PreviousLeader {
    NodeId id;
    Clock::time_point last_heard;
  };
  ControllerDecision Decide(const MetadataImage& img, uint64_t term, NodeId self,
                            Clock::time_point now,
                            std::optional<PreviousLeader> previous_leader = std::nullopt);

  // Fast fencing of a broker that died. The unfenced brokers (other than `self`) not heard
  // from in the current term for `after` or longer: the caller probes their client listeners.
  std::vector<int32_t> Silent(const MetadataImage& img, NodeId self, Clock::time_point now,
                              Clock::duration after) const;
  // A connection to `broker`'s listener, started at `probe_started`, was refused: nothing
  // listens there any more, so the process is gone. Unless a heartbeat arrived after
  // `probe_started`, the next decision fences it without waiting out its session (a broker
  // that is merely slow or cut off keeps its full session: its listener answers, or nothing
  // comes back at all).
  void Refused(NodeId broker, Clock::time_point probe_started);

 private:
  // Elections and ISR removals for every partition under `can_lead`.
  // `offline`: broker -> its replicas reported offline (they can lead nothing, nor stay in an
  // ISR).
  void ElectAll(const MetadataImage& img, const std::function<bool(NodeId)>& can_lead,
                const std::map<int32_t, std::set<ReplicaKey>>& offline,
                ControllerDecision* out) const;
  // Reassignments whose target replicas are all in the ISR complete (reassignment.h), for the
  // partitions no earlier change in `out` touches.
  void CompleteReassignments(const MetadataImage& img, const std::function<bool(NodeId)>& can_lead,
                             ControllerDecision* out) const;

  const ControllerConfig config_;
  mutable std::mutex mu_;
  std::map<int32_t, Clock::time_point> last_heard_;
  std::map<int32_t, Clock::time_point> refused_;  // broker -> start of the refused probe
  std::map<int32_t, Uuid> shutting_down_;  // broker -> the incarnation that asked
  // broker -> (the incarnation that reported, its offline replicas)
  std::map<int32_t, std::pair<Uuid, std::set<ReplicaKey>>> offline_;
  std::map<int32_t, Uuid> incarnations_;   // broker -> the incarnation last seen in the image
  uint64_t term_ = 0;
  Clock::time_point next_imbalance_check_{};
};

}  // namespace silt::cluster
