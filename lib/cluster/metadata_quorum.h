// The metadata quorum: a replicated log of metadata commands, applied in order on every node.
//
// MetadataQuorum is what the broker and the controller see; RaftQuorum (raft_quorum.h) is the one
// implementation, on libraft. Including this header costs nothing beyond the standard library:
// no Raft or libuv header reaches it.
//
// Commands are opaque bytes plus a RequestId chosen by the proposer. The replicated state is a
// StateMachine plus the quorum's table of recently applied request ids: an entry whose request id
// was already applied is not applied again, and its proposer gets the result of the first apply.
// So a proposal whose outcome is unknown (leadership was lost while it was in flight) is retried
// with the same RequestId, and takes effect at most once.
#pragma once

#include <cstdint>
#include <functional>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/ids.h"
#include "base/status.h"
#include "base/uuid.h"

namespace silt::cluster {

using RaftTerm = StrongId<struct RaftTermTag, uint64_t>;
using RaftIndex = StrongId<struct RaftIndexTag, uint64_t>;

// Identifies one logical command across retries (e.g. RandomUuid()). The zero id means "no
// dedup": such a command is applied each time it is committed.
using RequestId = Uuid;

// Runs a completion somewhere other than the quorum's own thread: the broker passes
// [&io](auto f) { asio::post(io, std::move(f)); }. An empty executor runs completions inline on
// the quorum's thread, where they must not block.
using Executor = std::function<void(std::function<void()>)>;

// The replicated state. Every method is called on the quorum's thread only, one at a time, so an
// implementation needs no locking of its own for them (readers on other threads need whatever
// the implementation publishes, e.g. an atomically swapped immutable image).
class StateMachine {
 public:
  virtual ~StateMachine() = default;

  // Applies one committed command and returns its result bytes. Never fails: a command that is
  // invalid against the current state leaves the state unchanged and says so in its result.
  // Must be deterministic: every node applies the same commands in the same order.
  virtual std::string Apply(std::string_view command) = 0;

  // The whole state as bytes (what Restore takes).
  virtual std::string Snapshot() = 0;

  // Replaces the whole state with a Snapshot() of another (or this) node. A non-OK Status means
  // the bytes are damaged; the quorum then refuses to continue rather than diverge.
  virtual Status Restore(std::string_view snapshot) = 0;
};

enum class ProposeOutcome {
  kApplied,         // committed and applied; `result` is the state machine's answer
  kNotLeader,       // this node is not the ready leader; nothing was appended (retry elsewhere)
  kOutcomeUnknown,  // appended, then leadership was lost or the node stopped: it may or may not
                    // commit. Retry with the same RequestId.
  kRejected,        // refused before appending (e.g. too large); retrying will not help
  kShutdown,        // the quorum is stopped; nothing was appended
};

const char* ProposeOutcomeName(ProposeOutcome o);

struct ProposeResult {
  ProposeOutcome outcome = ProposeOutcome::kNotLeader;
  RaftIndex index;                    // the entry's index when kApplied
  std::string result;                 // the state machine's result when kApplied
  std::optional<NodeId> leader_hint;  // the known leader when kNotLeader
  std::string message;                // why, for anything but kApplied
};

using ProposeCallback = std::function<void(ProposeResult)>;

// A change of this node's controller role. `ready` is true once this node leads in `term` and
// its barrier entry of that term has committed and been applied; false once it no longer does.
struct LeadershipChange {
  bool ready = false;
  RaftTerm term;
};

class MetadataQuorum {
 public:
  virtual ~MetadataQuorum() = default;

  // Proposes `command`. Thread-safe, never blocks; `done` runs exactly once on the executor,
  // with the outcome. Only a ready leader accepts proposals (kNotLeader otherwise).
  virtual void Propose(RequestId id, std::string command, ProposeCallback done) = 0;
  // Raft's ReadIndex: the ready leader appends a barrier entry of its term and, once it has
  // committed and been applied (so the node was still the leader when it was appended: a
  // majority took it), answers kApplied with the barrier's index. Every entry committed before
  // the call is at or below that index. Thread-safe, never blocks; `done` runs once on the
  // executor. kNotLeader (with a hint) anywhere but on the ready leader, as for Propose.
  virtual void ReadIndex(ProposeCallback done) {
    ProposeResult r;
    r.outcome = ProposeOutcome::kNotLeader;
    r.leader_hint = leader();
    r.message = "not the leader";
    done(std::move(r));
  }

  virtual NodeId node_id() const = 0;
  // The latest values seen on the quorum's thread (may lag it by a few milliseconds).
  virtual RaftIndex committed_index() const = 0;
  virtual RaftIndex applied_index() const = 0;
  virtual RaftTerm term() const = 0;
  virtual std::optional<NodeId> leader() const = 0;
  // True while this node leads and its barrier of the current term has been applied: only then
  // does its view of the state include every committed entry, so only then may it act as
  // controller.
  virtual bool IsReadyLeader() const = 0;
  // Each voter's last log index known to be on it (DescribeQuorum's LogEndOffset), ascending
  // id: on the leader, what it has seen replicated to each follower and its own last index;
  // elsewhere this node's own last index alone. Empty when the implementation does not track it.
  struct VoterLogEnd {
    NodeId id;
    RaftIndex log_end;
  };
  virtual std::vector<VoterLogEnd> voter_log_ends() const { return {}; }
  // The last leader this node followed in an earlier term, and when a message from it last
  // reached this node (steady clock): a new controller's evidence of when the old one was
  // last alive. nullopt when unknown (or not tracked).
  struct LeaderContact {
    NodeId leader;
    std::chrono::steady_clock::time_point at;
  };
  virtual std::optional<LeaderContact> previous_leader_contact() const { return std::nullopt; }

  // Stops the quorum: pending proposals complete (kOutcomeUnknown or kShutdown), the thread is
  // joined. Idempotent. The destructor calls it.
  virtual void Stop() = 0;
};

}  // namespace silt::cluster
