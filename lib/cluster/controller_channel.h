// Forwarding metadata proposals to the controller: a small silt-internal request over a
// "SILTPEER" connection to the controller's peer address (the one this node's own voter list
// gives for it, never an address learned from the network).
//
// Only the Raft leader can append to the metadata log, so a node that is not the controller
// sends its command there and gets the outcome back. The request carries the command's
// RequestId: a retry after an unknown outcome takes effect at most once (metadata_quorum.h).
//
//   connection => Preamble("SILTPEER", sender)  then requests and responses, one at a time
//   ForwardRequest  => length int32 (of the rest), version int16 (1), kind int8 (0 propose,
//                      1 heartbeat, 2 shutdown, 3 fetch metadata, 4 read index, 5 await
//                      applied), request_id
//                      uuid, command bytes (the rest:
//                      metadata_records.h's Command; empty for a heartbeat; for a shutdown
//                      the sender's incarnation id, 16 bytes)
//   ForwardResponse => length int32, version int16 (1), outcome int8 (ProposeOutcome order:
//                      0 applied, 1 not leader, 2 unknown, 3 rejected, 4 shutdown),
//                      index int64, leader_hint int32 (-1: none), message string (int16
//                      length), result bytes (the rest: the apply result)
//
// A heartbeat tells the controller that the sending node (the preamble's sender) is alive; the
// answer is kApplied from the ready controller, kNotLeader (with a hint) from any other node.
// Its command names the sender's replicas that are offline now (a failed disk; Kafka's offline
// log directories), all of them each time, and the metadata index through which the sender's
// image is applied and its replicas reconciled (KRaft's CurrentMetadataOffset):
//   Heartbeat => incarnation uuid, count int32, [topic_id uuid, partition int32], applied int64
// (an empty command, or one without the applied index, comes from a node of an earlier version:
// nothing offline, applied index unknown).
// An await applied asks the ready controller to answer once every unfenced broker has reported
// an applied index at or above the one given, or after the timeout given (both in the command:
// index int64, timeout_ms int32): kApplied when they all have, kOutcomeUnknown naming those that
// have not, kNotLeader (with a hint) from any other node. A node answers CreateTopics,
// CreatePartitions and DeleteTopics only after it, so that a client asking any broker next sees
// the change.
// A shutdown (Kafka's BrokerHeartbeat with want_shut_down is the model) asks the controller to
// move every leadership of the sender (of that incarnation) to other in-sync replicas and take
// it out of the ISRs where it is not the last member (controller.h); the answer is kApplied
// once the ready controller has noted it, and the sender watches its image for the moves.
// A read index (Raft's ReadIndex; MetadataQuorum::ReadIndex) asks the controller for an index
// at or above everything committed when it answers, the controller having confirmed with a
// majority that it still leads: kApplied with that index, kNotLeader (with a hint) elsewhere.
// The sender then waits for its own image to reach it (a read barrier, cluster/read_barrier.h).
// A frame longer than kMaxForwardFrame is a protocol error and closes the connection.
#pragma once

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <string_view>

#include "base/status.h"
#include "cluster/metadata_quorum.h"
#include "cluster/voters.h"

namespace silt::cluster {

inline constexpr int16_t kForwardVersion = 1;
inline constexpr size_t kMaxForwardFrame = 4 << 20;

// kFetchMetadata: a broker-only node's request for the controller's image
// (metadata_observer.h): the command is the index it holds; the answer kApplied at the
// controller's applied index, with the term and, when that index is newer, the snapshot.
enum class ForwardKind : int8_t {
  kPropose = 0,
  kHeartbeat = 1,
  kShutdown = 2,
  kFetchMetadata = 3,
  kReadIndex = 4,
  kAwaitApplied = 5,
};

struct ForwardRequest {
  RequestId id;
  std::string command;
  ForwardKind kind = ForwardKind::kPropose;
};

// Whole frames, length prefix included.
std::string EncodeForwardRequest(const ForwardRequest& r);
std::string EncodeForwardResponse(const ProposeResult& r);
// Frame bodies (after the length prefix). Corruption for short or damaged input, Unsupported
// for another version.
Result<ForwardRequest> DecodeForwardRequest(std::string_view body);
Result<ProposeResult> DecodeForwardResponse(std::string_view body);

// A heartbeat's command (above).
std::string EncodeHeartbeat(const Uuid& incarnation,
                            const std::set<std::pair<Uuid, int32_t>>& offline, RaftIndex applied);
struct HeartbeatBody {
  Uuid incarnation;
  std::set<std::pair<Uuid, int32_t>> offline;
  std::optional<RaftIndex> applied;  // nullopt: a node that does not report it
};
// Corruption for damaged input; an empty command is an empty body.
Result<HeartbeatBody> DecodeHeartbeat(std::string_view command);

// An await applied's command (above): the index and the timeout.
std::string EncodeAwaitApplied(RaftIndex index, int32_t timeout_ms);
Result<std::pair<RaftIndex, int32_t>> DecodeAwaitApplied(std::string_view command);

// Sends `r` to `to`'s peer address as node `self` and waits up to `timeout_ms` for the answer.
// IOError when the controller cannot be reached or the connection fails (the outcome is then
// unknown: retry with the same RequestId).
Result<ProposeResult> ForwardPropose(const Voter& to, NodeId self, const ForwardRequest& r,
                                     int timeout_ms);

// Blocking frame I/O on a connected socket, for the controller's side. ReadFrame returns the
// body; IOError at end of stream or on error, Corruption for an oversized frame.
Result<std::string> ReadFrame(int fd);
Status WriteAll(int fd, std::string_view bytes);

}  // namespace silt::cluster
