// RaftQuorum: the MetadataQuorum on libraft (canonical/raft 0.15), on its own libuv loop thread.
//
// Static voters only: on first start every node bootstraps the same configuration from the
// static list, and membership never changes afterwards. Pre-vote is on. After winning an
// election the leader appends a barrier and is a "ready leader" only once that barrier, an entry
// of its own term, has been applied (see README.md for the libraft 0.15 bugs these guard
// against). Snapshots of the whole state keep the Raft log short.
//
// Threads: Propose and the getters may be called from any thread. Commands cross to the loop
// thread through a mutex-guarded queue and uv_async_send; StateMachine methods and the peer
// connection handler run on the loop thread; proposal completions and leadership changes run
// on the caller's executor.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cluster/metadata_quorum.h"
#include "cluster/peer_preamble.h"
#include "cluster/voters.h"

namespace silt::cluster {

// Called on the loop thread for each accepted connection that opened with a "SILTPEER" or
// "SILTKAFK" preamble (peer_preamble.h; `kind` says which) from node `sender`. The handler owns `fd` (a connected, non-blocking TCP
// socket whose preamble has been consumed) and must close it. Without a handler such
// connections are closed.
using PeerConnectionHandler = std::function<void(NodeId sender, PeerStream kind, int fd)>;

struct RaftQuorumOptions {
  NodeId node_id;
  std::vector<Voter> voters;  // must contain node_id; the node binds its entry's address
  std::string raft_dir;       // created if missing; libraft's log, metadata and snapshots
  StateMachine* state_machine = nullptr;                // not owned; outlives the quorum
  Executor executor;                                    // for completions (see metadata_quorum.h)
  std::function<void(LeadershipChange)> on_leadership;  // optional, run on the executor
  PeerConnectionHandler on_peer_connection;             // optional
  // Optional, run on the loop thread each time applied_index() has moved (after the state
  // machine's Apply or Restore returned, so that a reader woken by the state machine itself
  // may have read the index too early): it must not block.
  std::function<void()> on_applied;

  unsigned election_timeout_ms = 1000;
  unsigned heartbeat_timeout_ms = 100;
  unsigned snapshot_threshold = 1024;  // entries after the last snapshot before a new one
  unsigned snapshot_trailing = 128;    // entries kept in the log behind a snapshot
  unsigned connect_retry_delay_ms = 250;
  // A snapshot sent to a follower and not acknowledged by then is sent again. libraft 0.15 drops
  // an InstallSnapshot that arrives while the follower still installs an earlier one, without an
  // answer, so this bounds how long such a follower stays behind (libraft's default is 30 s).
  unsigned install_snapshot_timeout_ms = 5000;
  unsigned handshake_timeout_ms = 5000;  // an accepted connection must send its preamble by then
  size_t max_command_bytes = 1 << 20;
  size_t dedup_window = 8192;  // request ids remembered (part of the replicated state)
};

class RaftQuorum final : public MetadataQuorum {
 public:
  // Validates `options`, creates the Raft directory, bootstraps it if it is pristine, binds the
  // peer address and starts the loop thread. IOError when the directory or the address cannot
  // be used, Corruption when libraft cannot load its directory, InvalidArgument for bad options.
  static Result<std::unique_ptr<RaftQuorum>> Start(RaftQuorumOptions options);

  ~RaftQuorum() override;
  RaftQuorum(const RaftQuorum&) = delete;
  RaftQuorum& operator=(const RaftQuorum&) = delete;

  void Propose(RequestId id, std::string command, ProposeCallback done) override;
  void ReadIndex(ProposeCallback done) override;
  NodeId node_id() const override;
  RaftIndex committed_index() const override;
  RaftIndex applied_index() const override;
  RaftTerm term() const override;
  std::optional<NodeId> leader() const override;
  bool IsReadyLeader() const override;
  std::vector<VoterLogEnd> voter_log_ends() const override;
  std::optional<LeaderContact> previous_leader_contact() const override;
  void Stop() override;

  struct Impl;

 private:
  explicit RaftQuorum(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace silt::cluster
