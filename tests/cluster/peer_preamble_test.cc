#include "cluster/peer_preamble.h"

#include <doctest/doctest.h>

using silt::NodeId;
using namespace silt::cluster;

TEST_CASE("a peer preamble is 16 bytes: the magic, version 1, and the sender id") {
  std::string raft = EncodePreamble(PeerStream::kRaft, NodeId(3));
  REQUIRE(raft.size() == kPreambleSize);
  CHECK(raft == std::string("SILTRAFT\x00\x01\x00\x00\x00\x00\x00\x03", 16));
  auto p = DecodePreamble(raft);
  REQUIRE(p.ok());
  CHECK(p->kind == PeerStream::kRaft);
  CHECK(p->sender == NodeId(3));
  auto q = DecodePreamble(EncodePreamble(PeerStream::kPeer, NodeId(70000)));
  REQUIRE(q.ok());
  CHECK(q->kind == PeerStream::kPeer);
  CHECK(q->sender == NodeId(70000));
}

TEST_CASE("a SILTKAFK preamble names the Kafka-protocol peer stream") {
  std::string kafka = EncodePreamble(PeerStream::kKafka, NodeId(2));
  CHECK(kafka.substr(0, 8) == "SILTKAFK");
  auto p = DecodePreamble(kafka);
  REQUIRE(p.ok());
  CHECK(p->kind == PeerStream::kKafka);
  CHECK(p->sender == NodeId(2));
}

TEST_CASE("a preamble with another magic or version is refused") {
  CHECK_FALSE(DecodePreambleMagic("GET / HT").ok());
  CHECK_FALSE(DecodePreambleMagic("SILT").ok());
  std::string other = EncodePreamble(PeerStream::kRaft, NodeId(1));
  other[9] = 2;
  CHECK(DecodePreamble(other).status().code() == silt::Status::Code::kUnsupported);
  CHECK_FALSE(DecodePreamble(other.substr(0, 15)).ok());
}
