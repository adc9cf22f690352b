// PeerListener: a broker-only node's peer address. With no Raft there is no libraft transport
// to share (peer_transport.h), so this is a small blocking listener of its own: each accepted
// connection must send its 16-byte preamble (peer_preamble.h) within the handshake timeout;
// "SILTKAFK" and "SILTPEER" streams go to the handler as an fd with their kind, "SILTRAFT" and
// anything else are closed (this node takes no part in Raft).
#pragma once

#include <functional>
#include <memory>

#include "base/ids.h"
#include "base/status.h"
#include "cluster/peer_preamble.h"
#include "cluster/voters.h"

namespace silt::cluster {

class PeerListener {
 public:
  using Handler = std::function<void(NodeId sender, PeerStream kind, int fd)>;
  // Binds `address` (IOError naming it when it cannot) and starts accepting. The handler owns
  // each fd it is given and must close it.
  static Result<std::unique_ptr<PeerListener>> Start(const Voter& address, Handler handler,
                                                     int handshake_timeout_ms = 5000);
  ~PeerListener();
  // Stops accepting and joins the accepting thread. Idempotent.
  void Stop();

  struct Impl;

 private:
  explicit PeerListener(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace silt::cluster
