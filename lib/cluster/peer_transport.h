// The peer-address transport: libraft's raft_uv_transport, implemented by silt (internal to
// lib/cluster; RaftQuorum is its only user).
//
// Outgoing: a connection to peer N goes to the address the node's own voter list gives for N,
// whatever address libraft passes, and starts with the "SILTRAFT" preamble (peer_preamble.h),
// which replaces libraft's TCP handshake (the one whose address length it trusts).
// Incoming: the listener binds the node's own entry, reads exactly the preamble of each accepted
// connection and hands Raft streams to libraft, "SILTPEER" and "SILTKAFK" streams to the peer handler (with their kind), and
// closes anything else (unknown magic, other version, a Raft stream from a sender not in the
// voter list, or silence past the handshake timeout). SILTPEER and SILTKAFK streams are taken
// from any positive sender id: broker-only nodes are not in the list.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/ids.h"
#include "cluster/peer_preamble.h"
#include "cluster/voters.h"

struct raft_uv_transport;
struct uv_loop_s;

namespace silt::cluster {

struct PeerTransportOptions {
  NodeId self;
  std::vector<Voter> voters;
  std::function<void(NodeId sender, PeerStream kind, int fd)> on_peer_connection;
  unsigned handshake_timeout_ms = 5000;
};

// Fills `t` (whose memory the caller keeps until PeerTransportFree) so that raft_uv_init can use
// it on `loop`. Resolves every voter's address now (blocking, once). Returns 0 or a libraft
// error code with `t->errmsg` set.
int PeerTransportInit(raft_uv_transport* t, uv_loop_s* loop, PeerTransportOptions options);

// Releases what PeerTransportInit allocated; only after the transport's close callback ran (or
// when it was never listened on).
void PeerTransportFree(raft_uv_transport* t);

}  // namespace silt::cluster
