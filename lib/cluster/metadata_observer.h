// MetadataObserver: the metadata quorum as a broker-only node sees it (Kafka's
// process.roles=broker). It holds no Raft log and never votes: it follows the controller's
// applied image over the SILTPEER channel (controller_channel.h's ForwardKind::kFetchMetadata),
// restoring its state machine from the controller's snapshot whenever the controller has
// applied a newer index. The image it serves is so always one the controller applied, a
// committed state of the log, and the index only moves forward (an answer at or below the
// index held is ignored, whichever voter gives it).
//
// Proposals are not taken here (kNotLeader naming the controller): ClusterNode forwards them to
// the controller as on any follower.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "cluster/metadata_quorum.h"
#include "cluster/voters.h"

namespace silt::cluster {

struct MetadataObserverOptions {
  NodeId node_id;             // this broker's id, not one of the voters
  std::vector<Voter> voters;  // where the controller may be
  StateMachine* state_machine = nullptr;  // not owned; restored from each newer snapshot
  int poll_interval_ms = 100;             // between fetches once caught up
  int request_timeout_ms = 2000;
  // Optional, run on the fetching thread after applied_index() moved (RaftQuorumOptions'
  // on_applied); it must not block.
  std::function<void()> on_applied;
};

class MetadataObserver final : public MetadataQuorum {
 public:
  // Starts the fetching thread. InvalidArgument when node_id is a voter or no voter is given.
  static Result<std::unique_ptr<MetadataObserver>> Start(MetadataObserverOptions options);
  ~MetadataObserver() override;

  void Propose(RequestId id, std::string command, ProposeCallback done) override;
  NodeId node_id() const override;
  RaftIndex committed_index() const override;
  RaftIndex applied_index() const override;
  RaftTerm term() const override;
  std::optional<NodeId> leader() const override;
  bool IsReadyLeader() const override { return false; }
  void Stop() override;

  struct Impl;

 private:
  explicit MetadataObserver(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The controller's answer to a kFetchMetadata request whose command is `have` (the requester's
// applied index, 8 bytes big-endian): the result bytes are term int64, then, when `applied` is
// above `have`, `snapshot` (a MetadataStateMachine snapshot at `applied`).
std::string EncodeMetadataFetch(RaftIndex have);
Result<RaftIndex> DecodeMetadataFetch(std::string_view command);
std::string EncodeMetadataSnapshotResult(RaftTerm term, const std::string& snapshot);

}  // namespace silt::cluster
