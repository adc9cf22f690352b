// Controlled shutdown: leaderships moved away before the node stops.
#include "cluster/cluster_node_impl.h"

namespace silt::cluster {

using broker::LogInfo;
using broker::LogWarn;

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
        // The controller's own changes go out with the commit push (RaftQuorum's PushCommit),
        // an AppendEntries that closing the quorum could still drop from its send queue: a few
        // Raft heartbeat intervals for it, and the heartbeats after it, before going.
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

}  // namespace silt::cluster
