// The peer address as RaftQuorum serves it: preambles, garbage, and addresses from the local list.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cluster/peer_preamble.h"
#include "cluster/quorum_harness.h"

using namespace silt;
using namespace silt::cluster;
using namespace silt::cluster::testing;
using namespace std::chrono_literals;

namespace {

int ConnectTo(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  return fd;
}

void SendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return;  // the peer may already have closed it
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

// True when the other side closes `fd` (EOF or reset) within `limit`; whatever it sends is
// drained (a silt node sends nothing on these connections).
bool ClosedByPeerWithin(int fd, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) > 0) {
      char buf[256];
      ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) return true;
    }
  }
  return false;
}

}  // namespace

TEST_CASE(
    "a connection that does not open with a peer preamble is closed and the quorum works on") {
  TestCluster c;
  REQUIRE(c.ProposeAnywhere(NewRequestId(), "before").outcome == ProposeOutcome::kApplied);
  for (int i = 0; i < 3; ++i) {
    // A huge "length" right after a wrong magic: never read, the connection just closes.
    int fd = ConnectTo(c.voter(i).port);
    SendAll(fd, std::string("GET / HT\xff\xff\xff\xff\xff\xff\xff\xff", 16));
    CHECK(ClosedByPeerWithin(fd, 3s));
    ::close(fd);
  }
  ProposeResult r = c.ProposeAnywhere(NewRequestId(), "after");
  REQUIRE_MESSAGE(r.outcome == ProposeOutcome::kApplied, r.message);
  CHECK(r.result == "#2:after");
}

TEST_CASE("a connection that sends nothing is closed after the handshake timeout") {
  TestCluster c;
  int fd = ConnectTo(c.voter(0).port);
  auto start = std::chrono::steady_clock::now();
  CHECK(ClosedByPeerWithin(fd, 5s));
  CHECK(std::chrono::steady_clock::now() - start >= 900ms);  // the harness sets 1000 ms
  ::close(fd);
}

TEST_CASE("a Raft preamble from a node id outside the voter list is closed") {
  TestCluster c;
  int fd = ConnectTo(c.voter(0).port);
  SendAll(fd, EncodePreamble(PeerStream::kRaft, NodeId(42)));
  CHECK(ClosedByPeerWithin(fd, 3s));
  ::close(fd);
  int half = ConnectTo(c.voter(0).port);
  SendAll(half, std::string(kRaftMagic));  // the magic alone, then silence: the timeout closes it
  CHECK(ClosedByPeerWithin(half, 5s));
  ::close(half);
  REQUIRE(c.ProposeAnywhere(NewRequestId(), "x").outcome == ProposeOutcome::kApplied);
}

TEST_CASE("a SILTPEER connection reaches the peer handler with its sender and the bytes after") {
  TestCluster c;
  auto got = std::make_shared<std::promise<std::pair<NodeId, int>>>();
  c.StopNode(0);
  REQUIRE(c.StartNode(0, [got](NodeId sender, PeerStream kind, int fd) {
             CHECK(kind == PeerStream::kPeer);
             got->set_value({sender, fd});
           }).ok());
  int fd = ConnectTo(c.voter(0).port);
  SendAll(fd, EncodePreamble(PeerStream::kPeer, NodeId(2)) + "fetch me");
  auto f = got->get_future();
  REQUIRE(f.wait_for(5s) == std::future_status::ready);
  auto [sender, peer_fd] = f.get();
  CHECK(sender == NodeId(2));
  ::fcntl(peer_fd, F_SETFL, ::fcntl(peer_fd, F_GETFL) & ~O_NONBLOCK);
  timeval tv{5, 0};
  ::setsockopt(peer_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string read;
  char buf[64];
  while (read.size() < 8) {
    ssize_t n = ::recv(peer_fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    read.append(buf, static_cast<size_t>(n));
  }
  CHECK(read == "fetch me");
  SendAll(peer_fd, "answer");
  char back[6];
  CHECK(::recv(fd, back, 6, MSG_WAITALL) == 6);
  CHECK(std::string(back, 6) == "answer");
  ::close(peer_fd);
  ::close(fd);
  // Raft traffic on the same address still works.
  REQUIRE(c.ProposeAnywhere(NewRequestId(), "still raft").outcome == ProposeOutcome::kApplied);
}

TEST_CASE(
    "peers are reached at the addresses of the local list, not those of the Raft configuration") {
  TestCluster c;
  REQUIRE(c.ProposeAnywhere(NewRequestId(), "one").outcome == ProposeOutcome::kApplied);
  for (int i = 0; i < 3; ++i) c.StopNode(i);
  // Every node moves; the configuration bootstrapped into the Raft log still has the old ports,
  // where nothing listens now.
  c.MovePorts();
  for (int i = 0; i < 3; ++i) REQUIRE(c.StartNode(i).ok());
  ProposeResult r = c.ProposeAnywhere(NewRequestId(), "two");
  REQUIRE_MESSAGE(r.outcome == ProposeOutcome::kApplied, r.message);
  CHECK(r.result == "#2:two");
}
