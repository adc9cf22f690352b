// Helpers for the broker tests: an in-process broker on an ephemeral port over a temp data dir,
// and a small blocking client that speaks the protocol through lib/protocol's codecs.
#pragma once

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/coding.h"
#include "base/file.h"
#include "broker/broker.h"
#include "broker/config.h"
#include "broker/dispatch.h"
#include "broker/logging.h"
#include "broker/server.h"
#include "format/record_batch.h"
#include "protocol/header.h"
#include "protocol/messages.h"

namespace silt::broker::testing {

inline std::string TempDir() {
  char tmpl[] = "/tmp/silt-broker-test-XXXXXX";
  const char* d = mkdtemp(tmpl);
  REQUIRE(d != nullptr);
  return d;
}

// A broker on 127.0.0.1:<ephemeral> over a fresh temp directory, removed at the end.
struct TestBroker {
  explicit TestBroker(BrokerConfig c = {}, std::string dir = "") {
    SetLogLevel(LogLevel::kWarn);
    own_dir = dir.empty();
    data_dir = own_dir ? TempDir() : dir;
    config = c;
    config.listen_host = "127.0.0.1";
    config.listen_port = 0;
    config.data_dir = data_dir;
    Start();
  }
  ~TestBroker() {
    server.reset();
    if (own_dir) (void)RemoveAll(data_dir);
  }
  void Start() {
    auto s = Server::Start(config);
    REQUIRE_MESSAGE(s.ok(), s.status().ToString());
    server = std::move(s).value();
    port = server->port();
  }
  // `clean`: the shutdown must succeed. A broker with a partition whose disk failed reports
  // it at shutdown (and leaves no clean-shutdown marker, so the restart recovers).
  void Restart(bool clean = true) {
    Status down = server->Shutdown();
    if (clean) REQUIRE_MESSAGE(down.ok(), down.ToString());
    server.reset();
    config.listen_port = 0;
    Start();
  }
  BrokerConfig config;
  std::string data_dir;
  bool own_dir = true;
  std::unique_ptr<Server> server;
  int port = 0;
};

// A blocking client over one TCP connection.
class Client {
 public:
  explicit Client(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~Client() {
    if (fd_ >= 0) ::close(fd_);
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Writes raw bytes; false when the peer has gone.
  bool SendRaw(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Encodes and sends one request.
  template <typename Body>
  void Send(const Body& body, int16_t version, int32_t correlation_id) {
    protocol::RequestHeader h;
    h.request_api_key = static_cast<int16_t>(Body::kApiKey);
    h.request_api_version = version;
    h.correlation_id = correlation_id;
    h.client_id = "broker-test";
    std::string frame;
    protocol::AppendRequestFrame(h, body, &frame);
    REQUIRE(SendRaw(frame));
  }

  // Reads `n` bytes within `timeout_ms`; false on EOF, error or timeout.
  bool ReadExact(size_t n, std::string* out, int timeout_ms = 10000) {
    out->clear();
    while (out->size() < n) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, timeout_ms) <= 0) return false;
      char buf[65536];
      ssize_t r = ::recv(fd_, buf, std::min(sizeof buf, n - out->size()), 0);
      if (r <= 0) return false;
      out->append(buf, static_cast<size_t>(r));
    }
    return true;
  }

  // Reads one response frame (without its size prefix); false on EOF or timeout.
  bool ReadFrame(std::string* frame, int timeout_ms = 10000) {
    std::string size;
    if (!ReadExact(4, &size, timeout_ms)) return false;
    int32_t n = static_cast<int32_t>(DecodeBE32(size.data()));
    REQUIRE(n >= 4);
    return ReadExact(static_cast<size_t>(n), frame, timeout_ms);
  }

  // Reads one response and decodes it as `Resp` for `version`; returns its correlation id
  // (or -1 when the connection closed).
  // Views in `resp` (record sets) point into the client's buffer until the next Receive.
  template <typename Resp>
  int32_t Receive(Resp* resp, int16_t version, int timeout_ms = 10000) {
    std::string& frame = last_frame_;
    if (!ReadFrame(&frame, timeout_ms)) return -1;
    ByteReader r(frame);
    protocol::ResponseHeader h;
    int16_t hv = protocol::ResponseHeaderVersion(static_cast<int16_t>(Resp::kApiKey), version);
    REQUIRE(h.Decode(r, hv).ok());
    Status s = resp->Decode(r, version);
    REQUIRE_MESSAGE(s.ok(), s.ToString());
    return h.correlation_id;
  }

  // One request, one response.
  template <typename Req, typename Resp>
  void Call(const Req& req, int16_t version, Resp* resp) {
    int32_t id = next_id_++;
    Send(req, version, id);
    REQUIRE(Receive(resp, version) == id);
  }

  // True when the peer closes the connection within `timeout_ms` of quiet; what it still sent
  // before that is appended to *out when given.
  bool ReadUntilClosed(std::string* out, int timeout_ms = 5000) {
    for (;;) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, timeout_ms) <= 0) return false;
      char buf[4096];
      ssize_t r = ::recv(fd_, buf, sizeof buf, 0);
      if (r == 0) return true;
      if (r < 0) return errno == ECONNRESET;
      if (out != nullptr) out->append(buf, static_cast<size_t>(r));
    }
  }

  // True when the broker closes the connection within `timeout_ms` (reading and discarding
  // anything it still sends).
  bool ClosedByPeer(int timeout_ms = 5000) { return ReadUntilClosed(nullptr, timeout_ms); }

  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  int32_t next_id_ = 1;
  std::string last_frame_;
};

// A batch of `n` records "value-<i>" (keys "key-<i>"), optionally idempotent.
inline std::string MakeBatch(int n, format::Compression c = format::Compression::kNone,
                             int64_t pid = -1, int16_t epoch = -1, int32_t seq = -1,
                             const std::string& prefix = "value-") {
  format::RecordBatchBuilder::Options o;
  o.compression = c;
  o.producer_id = pid;
  o.producer_epoch = epoch;
  o.base_sequence = seq;
  format::RecordBatchBuilder b(o);
  for (int i = 0; i < n; ++i) {
    std::string k = "key-" + std::to_string(i);
    std::string v = prefix + std::to_string(i);
    b.Add(std::string_view(k), std::string_view(v));
  }
  auto r = b.Finish();
  REQUIRE(r.ok());
  return std::move(r).value();
}

inline protocol::ProduceRequest MakeProduce(const std::string& topic, int32_t partition,
                                            const std::string& batch, int16_t acks = -1) {
  protocol::ProduceRequest p;
  p.acks = acks;
  p.timeout_ms = 5000;
  protocol::ProduceRequest::TopicData td;
  td.name = topic;
  protocol::ProduceRequest::PartitionData pd;
  pd.index = partition;
  pd.records.bytes = std::string_view(batch);
  td.partition_data.push_back(pd);
  p.topic_data.push_back(td);
  return p;
}

inline protocol::FetchRequest MakeFetch(const std::string& topic, int32_t partition, int64_t offset,
                                        int32_t max_wait_ms = 0, int32_t min_bytes = 1) {
  protocol::FetchRequest f;
  f.max_wait_ms = max_wait_ms;
  f.min_bytes = min_bytes;
  f.max_bytes = 50 << 20;
  protocol::FetchRequest::Topic t;
  t.topic = topic;
  protocol::FetchRequest::Partition p;
  p.partition = partition;
  p.fetch_offset = offset;
  p.partition_max_bytes = 1 << 20;
  t.partitions.push_back(p);
  f.topics.push_back(t);
  return f;
}

// Creates `topic` through the CreateTopics API.
inline void CreateTopic(Client& c, const std::string& topic, int32_t partitions = 1) {
  protocol::CreateTopicsRequest req;
  protocol::CreateTopicsRequest::Topic t;
  t.name = topic;
  t.num_partitions = partitions;
  t.replication_factor = 1;
  req.topics.push_back(t);
  protocol::CreateTopicsResponse resp;
  c.Call(req, 4, &resp);
  REQUIRE(resp.topics.size() == 1);
  REQUIRE(resp.topics[0].error_code == 0);
}

// Creates `topic` (one partition) with topic configs, through the CreateTopics API.
inline void CreateTopicWithConfigs(
    Client& c, const std::string& topic,
    const std::vector<std::pair<std::string, std::string>>& configs) {
  protocol::CreateTopicsRequest req;
  protocol::CreateTopicsRequest::Topic t;
  t.name = topic;
  t.num_partitions = 1;
  t.replication_factor = 1;
  for (const auto& [k, v] : configs) t.configs.push_back({k, v});
  req.topics.push_back(t);
  protocol::CreateTopicsResponse resp;
  c.Call(req, 4, &resp);
  REQUIRE(resp.topics.size() == 1);
  REQUIRE_MESSAGE(resp.topics[0].error_code == 0, resp.topics[0].error_message.value_or(""));
}

// Every record value in a fetched record set.
inline std::vector<std::string> Values(std::string_view records) {
  std::vector<std::string> out;
  while (!records.empty()) {
    auto v = format::RecordBatchView::Parse(records);
    if (!v.ok()) break;
    auto recs = v->Records();
    REQUIRE(recs.ok());
    for (auto& r : *recs) out.push_back(r.value.value_or("<null>"));
    records.remove_prefix(v->bytes().size());
  }
  return out;
}

}  // namespace silt::broker::testing
