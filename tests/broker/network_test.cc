// The network core: framing, ordering, limits, and hostile bytes on the port.
#include <dirent.h>

#include <thread>

#include "broker_test_util.h"

using namespace silt;
using namespace silt::broker;
using namespace silt::broker::testing;

namespace {

// True when `c` still answers an ApiVersions request.
bool Answers(Client& c) {
  protocol::ApiVersionsRequest req;
  protocol::ApiVersionsResponse resp;
  c.Send(req, 2, 4242);
  return c.Receive(&resp, 2) == 4242 && resp.error_code == 0 && !resp.api_keys.empty();
}

std::string Frame(std::string_view body) {
  std::string f;
  ByteWriter w(&f);
  w.I32(static_cast<int32_t>(body.size()));
  w.Raw(body);
  return f;
}

// The broker's end of `c`'s connection: the broker runs in this process, so its accepted socket
// is one of our own descriptors, the one whose peer is the client's local address. -1 if none.
int BrokerSideOf(const Client& c) {
  sockaddr_in client_addr{};
  socklen_t len = sizeof client_addr;
  REQUIRE(::getsockname(c.fd(), reinterpret_cast<sockaddr*>(&client_addr), &len) == 0);
  DIR* d = ::opendir("/proc/self/fd");
  REQUIRE(d != nullptr);
  int found = -1;
  while (dirent* e = ::readdir(d)) {
    int fd = std::atoi(e->d_name);
    if (fd <= 2 || fd == c.fd() || fd == ::dirfd(d)) continue;
    sockaddr_in peer{};
    socklen_t plen = sizeof peer;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &plen) != 0) continue;
    if (peer.sin_family == AF_INET && peer.sin_port == client_addr.sin_port &&
        peer.sin_addr.s_addr == client_addr.sin_addr.s_addr) {
      found = fd;
      break;
    }
  }
  ::closedir(d);
  return found;
}

}  // namespace

TEST_CASE("accepted connections have TCP_NODELAY set, so small responses are not held back") {
  TestBroker b;
  Client c(b.port);
  REQUIRE(Answers(c));  // the connection is accepted and served by now
  int fd = BrokerSideOf(c);
  REQUIRE(fd >= 0);
  int nodelay = 0;
  socklen_t len = sizeof nodelay;
  REQUIRE(::getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, &len) == 0);
  CHECK(nodelay != 0);
}

TEST_CASE("ApiVersions v0 to v3 list every API the dispatch table serves") {
  TestBroker b;
  Client c(b.port);
  for (int16_t v = 0; v <= 3; ++v) {
    protocol::ApiVersionsRequest req;
    if (v >= 3) {
      req.client_software_name = "silt-test";
      req.client_software_version = "1";
    }
    protocol::ApiVersionsResponse resp;
    c.Call(req, v, &resp);
    CHECK(resp.error_code == 0);
    REQUIRE(resp.api_keys.size() == ApiRows().size());
    bool has_produce = false, has_fetch = false;
    for (const auto& k : resp.api_keys) {
      CHECK(broker::FindApi(k.api_key) != nullptr);
      if (k.api_key == 0) has_produce = k.min_version == 0 && k.max_version == 11;
      if (k.api_key == 1) has_fetch = k.min_version == 0 && k.max_version == 17;
    }
    CHECK(has_produce);
    CHECK(has_fetch);
  }
}

TEST_CASE("an unsupported ApiVersions version is answered with a v0 body carrying error 35") {
  TestBroker b;
  Client c(b.port);
  protocol::RequestHeader h;
  h.request_api_key = 18;
  h.request_api_version = 9;
  h.correlation_id = 77;
  h.client_id = "future-client";
  std::string frame;
  // A future flexible version: header v2 with an empty tagged-field section, and some body.
  protocol::AppendRequestFrame(h, protocol::ApiVersionsRequest{}, &frame);
  REQUIRE(c.SendRaw(frame));
  std::string resp_frame;
  REQUIRE(c.ReadFrame(&resp_frame));
  ByteReader r(resp_frame);
  int32_t corr = 0;
  REQUIRE(r.I32(&corr));
  CHECK(corr == 77);
  protocol::ApiVersionsResponse resp;
  REQUIRE(resp.Decode(r, 0).ok());
  CHECK(resp.error_code == 35);
  bool lists_self = false;
  for (const auto& k : resp.api_keys) lists_self |= k.api_key == 18 && k.max_version == 4;
  CHECK(lists_self);
  CHECK(r.empty());
  // The connection stays usable for a retry at a supported version.
  CHECK(Answers(c));
}

TEST_CASE("pipelined requests are answered in order on one connection") {
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "pipe");
  // A long-polling fetch first, then quick requests: their answers must wait behind it.
  c.Send(MakeFetch("pipe", 0, 0, /*max_wait_ms=*/300, /*min_bytes=*/1), 11, 1);
  protocol::MetadataRequest md;
  md.topics.emplace();
  c.Send(md, 8, 2);
  c.Send(protocol::ApiVersionsRequest{}, 2, 3);
  std::string batch = MakeBatch(3);
  c.Send(MakeProduce("pipe", 0, batch), 8, 4);
  protocol::FetchResponse f;
  CHECK(c.Receive(&f, 11) == 1);
  protocol::MetadataResponse m;
  CHECK(c.Receive(&m, 8) == 2);
  protocol::ApiVersionsResponse a;
  CHECK(c.Receive(&a, 2) == 3);
  protocol::ProduceResponse p;
  CHECK(c.Receive(&p, 8) == 4);
  REQUIRE(p.responses.size() == 1);
  CHECK(p.responses[0].partition_responses[0].error_code == 0);
}

TEST_CASE("hostile frames close only their own connection") {
  BrokerConfig cfg;
  cfg.socket_request_max_bytes = 1 << 20;
  TestBroker b(cfg);
  Client good(b.port);
  REQUIRE(Answers(good));

  SUBCASE("a size above socket.request.max.bytes") {
    Client bad(b.port);
    std::string f;
    ByteWriter w(&f);
    w.I32((1 << 20) + 1);
    REQUIRE(bad.SendRaw(f));
    CHECK(bad.ClosedByPeer());
  }
  SUBCASE("a negative size") {
    Client bad(b.port);
    REQUIRE(bad.SendRaw(std::string("\xff\xff\xff\xf0", 4)));
    CHECK(bad.ClosedByPeer());
  }
  SUBCASE("an HTTP GET") {
    Client bad(b.port);
    REQUIRE(bad.SendRaw("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"));
    CHECK(bad.ClosedByPeer());
  }
  SUBCASE("a TLS ClientHello") {
    Client bad(b.port);
    const char hello[] = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03";
    REQUIRE(bad.SendRaw(std::string(hello, sizeof hello - 1)));
    CHECK(bad.ClosedByPeer());
  }
  SUBCASE("a frame too short for a request header") {
    Client bad(b.port);
    REQUIRE(bad.SendRaw(Frame(std::string("\x00\x12\x00", 3))));
    CHECK(bad.ClosedByPeer());
  }
  SUBCASE("a truncated request body") {
    Client bad(b.port);
    // Metadata v8 header, then a topic array count promising far more than is there.
    std::string body;
    ByteWriter w(&body);
    w.I16(3);
    w.I16(8);
    w.I32(5);
    w.I16(-1);
    w.I32(1);  // one topic...
    w.I16(40);  // ...whose name claims 40 bytes
    w.Raw("abc");
    REQUIRE(bad.SendRaw(Frame(body)));
    CHECK(bad.ClosedByPeer());
  }
  SUBCASE("an array count larger than the bytes left") {
    Client bad(b.port);
    std::string body;
    ByteWriter w(&body);
    w.I16(3);
    w.I16(8);
    w.I32(6);
    w.I16(-1);
    w.I32(0x7fffffff);  // topics: two billion entries in a 20-byte frame
    REQUIRE(bad.SendRaw(Frame(body)));
    CHECK(bad.ClosedByPeer());
  }
  SUBCASE("an unknown api key") {
    Client bad(b.port);
    std::string body;
    ByteWriter w(&body);
    w.I16(999);
    w.I16(0);
    w.I32(7);
    w.I16(-1);
    REQUIRE(bad.SendRaw(Frame(body)));
    CHECK(bad.ClosedByPeer());
  }
  SUBCASE("an unsupported version of an API other than ApiVersions") {
    Client bad(b.port);
    bad.Send(protocol::MetadataRequest{}, 30, 1);
    CHECK(bad.ClosedByPeer());
  }
  SUBCASE("a peer that stops half-way through a frame") {
    Client bad(b.port);
    std::string f;
    ByteWriter w(&f);
    w.I32(1000);
    w.Raw("partial");
    REQUIRE(bad.SendRaw(f));
    // It just sits there; the other connection must not notice.
  }
  CHECK(Answers(good));
}

TEST_CASE("a stuck client that never reads does not stall other connections") {
  TestBroker b;
  Client setup(b.port);
  CreateTopic(setup, "big");
  std::string value(200 * 1024, 'x');
  for (int i = 0; i < 5; ++i) {
    format::RecordBatchBuilder bb({});
    bb.Add(std::string_view("k"), std::string_view(value));
    std::string batch = bb.Finish().value();
    protocol::ProduceResponse pr;
    setup.Call(MakeProduce("big", 0, batch), 8, &pr);
    REQUIRE(pr.responses[0].partition_responses[0].error_code == 0);
  }
  // The stuck client asks for megabytes again and again and never reads a byte.
  Client stuck(b.port);
  int rcv = 4096;
  setsockopt(stuck.fd(), SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv);
  for (int i = 0; i < 20; ++i) stuck.Send(MakeFetch("big", 0, 0), 11, i);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  Client other(b.port);
  for (int i = 0; i < 20; ++i) CHECK(Answers(other));
  protocol::FetchResponse f;
  other.Call(MakeFetch("big", 0, 0), 11, &f);
  CHECK(f.responses[0].partitions[0].error_code == 0);
}

TEST_CASE("connections beyond max.connections are refused while existing ones keep working") {
  BrokerConfig cfg;
  cfg.max_connections = 2;
  TestBroker b(cfg);
  Client a(b.port);
  Client c(b.port);
  REQUIRE(Answers(a));
  REQUIRE(Answers(c));
  Client third(b.port);
  CHECK(third.ClosedByPeer());
  CHECK(Answers(a));
}

TEST_CASE("acks=0 produce gets no response and the next request is answered") {
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "fire");
  std::string batch = MakeBatch(2);
  c.Send(MakeProduce("fire", 0, batch, /*acks=*/0), 8, 10);
  protocol::ApiVersionsResponse a;
  c.Send(protocol::ApiVersionsRequest{}, 1, 11);
  CHECK(c.Receive(&a, 1) == 11);
  protocol::ListOffsetsRequest lo;
  lo.topics.push_back({"fire", {{0, -1, -1, 1}}});
  protocol::ListOffsetsResponse lr;
  c.Call(lo, 5, &lr);
  CHECK(lr.topics[0].partitions[0].offset == 2);
}

TEST_CASE("shutdown answers a waiting long poll and closes the data dir cleanly") {
  TestBroker b;
  Client c(b.port);
  CreateTopic(c, "quiet");
  c.Send(MakeFetch("quiet", 0, 0, /*max_wait_ms=*/30000), 11, 5);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto start = std::chrono::steady_clock::now();
  REQUIRE(b.server->Shutdown().ok());
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(4));
  protocol::FetchResponse f;
  CHECK(c.Receive(&f, 11, 2000) == 5);
  CHECK(PathExists(JoinPath(b.data_dir, "clean-shutdown")));
}

TEST_CASE("more pipelined requests than the in-flight limit are all answered, in order") {
  BrokerConfig cfg;
  cfg.max_in_flight_per_connection = 8;
  TestBroker b(cfg);
  Client c(b.port);
  CreateTopic(c, "many");
  std::string batch = MakeBatch(1);
  for (int i = 0; i < 150; ++i) {
    if (i % 3 == 0) {
      c.Send(MakeProduce("many", 0, batch), 8, 1000 + i);
    } else {
      c.Send(protocol::ApiVersionsRequest{}, 3, 1000 + i);
    }
  }
  int64_t next_offset = 0;
  for (int i = 0; i < 150; ++i) {
    if (i % 3 == 0) {
      protocol::ProduceResponse p;
      REQUIRE(c.Receive(&p, 8) == 1000 + i);
      CHECK(p.responses[0].partition_responses[0].base_offset == next_offset++);
    } else {
      protocol::ApiVersionsResponse a;
      REQUIRE(c.Receive(&a, 3) == 1000 + i);
    }
  }
}
