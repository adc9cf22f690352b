// The peer-address preamble (peer_preamble.h).
#include "cluster/peer_preamble.h"

#include "base/coding.h"

namespace silt::cluster {

std::string EncodePreamble(PeerStream kind, NodeId sender) {
  std::string out;
  ByteWriter w(&out);
  w.Raw(kind == PeerStream::kRaft    ? kRaftMagic
        : kind == PeerStream::kKafka ? kKafkaMagic
                                     : kPeerMagic);
  w.I16(kPreambleVersion);
  w.I16(0);  // reserved
  w.I32(sender.value());
  return out;
}

Result<PeerStream> DecodePreambleMagic(std::string_view magic) {
  if (magic.size() >= kPreambleMagicSize) {
    std::string_view m = magic.substr(0, kPreambleMagicSize);
    if (m == kRaftMagic) return PeerStream::kRaft;
    if (m == kPeerMagic) return PeerStream::kPeer;
    if (m == kKafkaMagic) return PeerStream::kKafka;
  }
  return Status::InvalidArgument("not a silt peer preamble");
}

Result<Preamble> DecodePreamble(std::string_view bytes) {
  if (bytes.size() != kPreambleSize) {
    return Status::InvalidArgument("a peer preamble is " + std::to_string(kPreambleSize) +
                                   " bytes");
  }
  SILT_ASSIGN_OR_RETURN(PeerStream kind, DecodePreambleMagic(bytes));
  ByteReader r(bytes.substr(kPreambleMagicSize));
  int16_t version = 0, reserved = 0;
  int32_t sender = 0;
  (void)r.I16(&version);
  (void)r.I16(&reserved);
  (void)r.I32(&sender);
  if (version != kPreambleVersion) {
    return Status::Unsupported("peer preamble version " + std::to_string(version));
  }
  return Preamble{kind, NodeId(sender)};
}

}  // namespace silt::cluster
