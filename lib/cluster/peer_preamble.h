// The preamble that opens every connection to a node's peer address.
//
// A node binds one peer address (its entry in the static voter list) for Raft and for all other
// peer traffic. The connecting side writes a fixed 16-byte preamble before anything else; the
// accepting side reads exactly these bytes and dispatches on the magic:
//
//   Preamble => magic version reserved sender_id      (16 bytes, big-endian integers)
//     magic      [8]    "SILTRAFT" (Raft messages follow), "SILTPEER" (silt's own peer
//                         requests: controller_channel.h) or "SILTKAFK" (the Kafka protocol
//                         follows: a follower's replica fetches and OffsetForLeaderEpoch, served
//                         by the broker as a connection from node sender_id)
//     version    int16  1
//     reserved   int16  0
//     sender_id  int32  the connecting node's id (must be in the accepting node's voter list)
//
// An unknown magic is closed after its first 8 bytes, before anything is read that could be
// taken for a length. After a Raft preamble libraft's own message framing follows unchanged.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "base/ids.h"
#include "base/status.h"

namespace silt::cluster {

inline constexpr size_t kPreambleMagicSize = 8;
inline constexpr size_t kPreambleSize = kPreambleMagicSize + 2 + 2 + 4;
static_assert(kPreambleSize == 16);
inline constexpr int16_t kPreambleVersion = 1;
inline constexpr std::string_view kRaftMagic = "SILTRAFT";
inline constexpr std::string_view kPeerMagic = "SILTPEER";
inline constexpr std::string_view kKafkaMagic = "SILTKAFK";

enum class PeerStream { kRaft, kPeer, kKafka };

// The 16 bytes a connection of `kind` from node `sender` starts with.
std::string EncodePreamble(PeerStream kind, NodeId sender);

// The kind named by the first kPreambleMagicSize bytes of `magic`; InvalidArgument for any other
// magic (the connection is to be closed).
Result<PeerStream> DecodePreambleMagic(std::string_view magic);

struct Preamble {
  PeerStream kind;
  NodeId sender;
};

// A whole preamble (exactly kPreambleSize bytes). InvalidArgument for an unknown magic, Unsupported
// for another version. The sender id is not checked against the voter list here.
Result<Preamble> DecodePreamble(std::string_view bytes);

}  // namespace silt::cluster
