// Replica fetchers: a follower's copying of its leaders' logs (Kafka's ReplicaFetcherThread).
//
// One thread per leader node (Kafka's num.replica.fetchers = 1) fetches every partition this
// node follows from that leader in one Fetch: replica_id = this node, current_leader_epoch =
// the epoch it follows, fetch_offset = its log end, log_start_offset = its log start,
// replica.fetch.max.bytes per partition, replica.fetch.wait.max.ms, min_bytes 1. The connection
// goes to the leader's peer address from *this node's* voter list and opens with the "SILTKAFK"
// preamble (peer_preamble.h), so the leader serves it as the Kafka protocol from this node.
// What comes back is appended with Partition::AppendAsFollower (offsets and leader epochs as
// the leader wrote them), then the follower's high watermark follows the leader's
// (UpdateFollowerHighWatermark).
//
// A partition added for a new leader epoch first truncates (KIP-101/KIP-279): it asks the leader
// OffsetForLeaderEpoch for its own latest epoch, truncates to what DecideTruncation says and,
// when the leader's answer was for a smaller epoch than its own, asks again; only then it
// fetches. It never truncates to its high watermark, except when the leader's log has no epochs
// at all (the old protocol), as Kafka does.
//
// Errors: NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION: the partition
// waits replica.fetch.backoff.ms and tries again (a newer image re-adds it with the new leader or
// epoch); UNKNOWN_LEADER_EPOCH (the leader has not seen the epoch yet): retried after the
// backoff; OFFSET_OUT_OF_RANGE: truncation again when this log is ahead of the leader's, else
// (the leader's log start is above our log end) the log restarts at the leader's log start;
// connection errors: reconnect after the backoff.
//
// Thread-safety: every method may be called from any thread. Remove() returns only once no
// fetcher thread can append to the partition any more, so the caller may make it leader next.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/ids.h"
#include "broker/partition.h"
#include "cluster/voters.h"
#include "protocol/errors.h"

namespace silt::cluster {

struct ReplicaFetchConfig {
  int32_t fetch_max_bytes = 1048576;            // replica.fetch.max.bytes (per partition)
  int32_t fetch_response_max_bytes = 10485760;  // replica.fetch.response.max.bytes
  int32_t fetch_wait_max_ms = 500;              // replica.fetch.wait.max.ms
  int32_t fetch_backoff_ms = 500;               // replica.fetch.backoff.ms (Kafka: 1000)
  int32_t socket_timeout_ms = 10000;            // connect and answer deadline past the wait
  // The peer address of a leader that is not in the voter list (a broker-only node, from its
  // registration in the image); nullopt when unknown. Optional.
  std::function<std::optional<Voter>(NodeId)> resolve_peer;
};

// The leader's OffsetForLeaderEpoch answer for one partition.
struct LeaderEpochEnd {
  protocol::ErrorCode error = protocol::ErrorCode::NONE;
  LeaderEpoch epoch = kNoLeaderEpoch;  // -1: the leader has no epochs (old protocol)
  Offset end_offset = kInvalidOffset;  // -1: undefined
};

// What a follower does with that answer (Kafka's OffsetTruncationState).
struct TruncationDecision {
  Offset truncate_to = kInvalidOffset;  // cut every record at or after it (>= log end: none)
  bool done = true;                     // false: ask again, with the latest epoch left after it
};

// The truncation step of KIP-101/KIP-279, a pure function. `ours` is this log's own
// EndOffsetForEpoch(leader.epoch) (nullopt when the log knows no epoch <= it); `log_end` and
// `high_watermark` are this replica's.
//   - leader end offset undefined (-1): the leader's log has no epochs; truncate to the HW;
//   - leader epoch undefined: truncate to min(leader end, log end);
//   - we know no epoch <= the leader's: min(leader end, log end);
//   - our largest epoch <= theirs is theirs: min(leader end, our end of it, log end), done;
//   - it is smaller (theirs is one we never had): min(our end of it, log end), not done — the
//     next question names our latest epoch after this cut.
TruncationDecision DecideTruncation(const LeaderEpochEnd& leader,
                                    const std::optional<broker::Partition::EpochEnd>& ours,
                                    Offset log_end, Offset high_watermark);

// What a follower does when its fetch is OFFSET_OUT_OF_RANGE (Kafka's handleOutOfRangeError),
// given the leader's log start and this replica's log end.
enum class OutOfRangeAction {
  kTruncate,       // our log end is above the leader's: truncate again by epoch
  kRestartAtStart  // the leader's log start is above our log end: start over there
};
OutOfRangeAction DecideOutOfRange(Offset leader_log_start, Offset log_end);

// The latest leader epoch in `p`'s log and its end (the log end; Kafka's latestEpoch), what a
// follower asks the leader about. Found through EndOffsetForEpoch, which answers NotFound for
// every epoch above the latest, so the search runs down from the epoch the replica follows.
// NotFound when the log knows no epoch at or below it.
Result<broker::Partition::EpochEnd> LatestEpoch(const broker::Partition& p);

class ReplicaFetchers {
 public:
  ReplicaFetchers(NodeId self, std::vector<Voter> voters, ReplicaFetchConfig config);
  ~ReplicaFetchers();  // Stop()
  ReplicaFetchers(const ReplicaFetchers&) = delete;
  ReplicaFetchers& operator=(const ReplicaFetchers&) = delete;

  // Starts (or restarts) following `p` from `leader` at leader epoch `epoch`: truncation first,
  // then fetches. Replaces any earlier entry of the same partition (another leader or epoch).
  void Add(NodeId leader, LeaderEpoch epoch, std::shared_ptr<broker::Partition> p);
  // Stops fetching the partition. When it returns, no fetcher thread appends to it any more.
  void Remove(const std::string& topic, PartitionId partition);
  // The leader a partition is fetched from, if it is.
  std::optional<NodeId> LeaderOf(const std::string& topic, PartitionId partition) const;
  // Stops and joins every fetcher thread. Idempotent.
  void Stop();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace silt::cluster
