// The peer-address transport (peer_transport.h).
//
// Handle lifetimes follow libraft's rules: a stream handed to libraft (connect or accept
// callback) is allocated with raft_malloc, because libraft uv_close()s it and frees it with
// raft_free. Every other handle is closed here, and the transport's close callback fires only
// once every one of them has finished closing.
#include "cluster/peer_transport.h"

#include <uv.h>
// libraft 0.15 headers declare no C linkage of their own.
extern "C" {
#include <raft.h>
#include <raft/uv.h>
}

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <set>

#include "cluster/peer_preamble.h"

namespace silt::cluster {

namespace {

struct Transport;

// An accepted connection whose preamble is being read.
struct Incoming {
  Transport* t = nullptr;
  uv_tcp_t* tcp = nullptr;  // raft_malloc'ed: may be handed to libraft
  uv_timer_t timer{};
  char buf[kPreambleSize] = {};
  size_t got = 0;
  int closing = 0;  // close callbacks still to come
  bool tcp_given = false;
};

// An outgoing connection being made: TCP connect, then the preamble write.
struct Outgoing {
  Transport* t = nullptr;
  raft_uv_connect* req = nullptr;
  raft_uv_connect_cb cb = nullptr;
  uv_tcp_t* tcp = nullptr;  // raft_malloc'ed: handed to libraft on success
  uv_connect_t connect{};
  uv_write_t write{};
  std::string preamble;
  int status = RAFT_NOCONNECTION;  // reported when the connection fails
  bool closing = false;
};

struct Transport {
  uv_loop_t* loop = nullptr;
  PeerTransportOptions opts;
  std::map<int32_t, sockaddr_storage> addrs;  // voter id -> resolved peer address
  std::map<int32_t, std::string> addr_text;   // voter id -> "host:port"
  uv_tcp_t listener{};
  bool listening = false;
  bool listener_closed = true;
  raft_uv_accept_cb accept_cb = nullptr;
  std::set<Incoming*> incoming;
  std::set<Outgoing*> outgoing;
  bool closing = false;
  raft_uv_transport* self = nullptr;
  raft_uv_transport_close_cb close_cb = nullptr;

  void MaybeClosed() {
    if (!closing || !listener_closed || !incoming.empty() || !outgoing.empty() || !close_cb) {
      return;
    }
    auto cb = close_cb;
    close_cb = nullptr;
    cb(self);
  }
};

Transport* Get(raft_uv_transport* t) { return static_cast<Transport*>(t->impl); }

void SetErr(raft_uv_transport* t, const std::string& msg) {
  std::snprintf(t->errmsg, RAFT_ERRMSG_BUF_SIZE, "%s", msg.c_str());
}

// ---- incoming ---------------------------------------------------------------------------

void IncomingHandleClosed(uv_handle_t* h) {
  auto* in = static_cast<Incoming*>(h->data);
  if (--in->closing > 0) return;
  if (!in->tcp_given) raft_free(in->tcp);
  Transport* t = in->t;
  delete in;
  t->MaybeClosed();
}

// Ends the preamble phase: the timer is closed, and the TCP handle too unless it has been given
// away (to libraft or, as a duplicated fd, to the peer handler).
void IncomingFinish(Incoming* in, bool close_tcp) {
  in->t->incoming.erase(in);
  uv_read_stop(reinterpret_cast<uv_stream_t*>(in->tcp));
  uv_timer_stop(&in->timer);
  in->closing = 1 + (close_tcp ? 1 : 0);
  in->tcp_given = !close_tcp;
  uv_close(reinterpret_cast<uv_handle_t*>(&in->timer), IncomingHandleClosed);
  if (close_tcp) uv_close(reinterpret_cast<uv_handle_t*>(in->tcp), IncomingHandleClosed);
}

void IncomingAlloc(uv_handle_t* h, size_t, uv_buf_t* buf) {
  auto* in = static_cast<Incoming*>(h->data);
  // Offer only the bytes still missing from the part being read (the magic first, then the
  // rest), so nothing past the preamble is ever consumed here.
  size_t want = (in->got < kPreambleMagicSize ? kPreambleMagicSize : kPreambleSize) - in->got;
  *buf = uv_buf_init(in->buf + in->got, static_cast<unsigned>(want));
}

void IncomingRead(uv_stream_t* s, ssize_t n, const uv_buf_t*) {
  auto* in = static_cast<Incoming*>(s->data);
  Transport* t = in->t;
  if (n < 0) {
    IncomingFinish(in, true);
    return;
  }
  in->got += static_cast<size_t>(n);
  if (in->got == kPreambleMagicSize &&
      !DecodePreambleMagic(std::string_view(in->buf, in->got)).ok()) {
    IncomingFinish(in, true);  // not a peer: nothing more is read from it
    return;
  }
  if (in->got < kPreambleSize) return;
  auto pre = DecodePreamble(std::string_view(in->buf, kPreambleSize));
  // Raft only from the voters; silt's own streams also from broker-only nodes (any positive
  // id), which are not in the voter list.
  if (!pre.ok() || t->closing || pre->sender.value() <= 0 ||
      (pre->kind == PeerStream::kRaft && !t->addrs.count(pre->sender.value()))) {
    IncomingFinish(in, true);
    return;
  }
  if (pre->kind == PeerStream::kRaft) {
    uv_tcp_t* tcp = in->tcp;
    IncomingFinish(in, false);
    tcp->data = nullptr;
    // libraft is told the address our own list gives for the sender.
    t->accept_cb(t->self, static_cast<raft_id>(pre->sender.value()),
                 t->addr_text[pre->sender.value()].c_str(), reinterpret_cast<uv_stream_t*>(tcp));
    return;
  }
  uv_os_fd_t fd = -1;
  int dup_fd = -1;
  if (t->opts.on_peer_connection && uv_fileno(reinterpret_cast<uv_handle_t*>(in->tcp), &fd) == 0) {
    dup_fd = ::dup(fd);
  }
  IncomingFinish(in, true);
  if (dup_fd >= 0) t->opts.on_peer_connection(pre->sender, pre->kind, dup_fd);
}

void IncomingTimeout(uv_timer_t* timer) {
  IncomingFinish(static_cast<Incoming*>(timer->data), true);
}

void OnConnection(uv_stream_t* server, int status) {
  auto* t = static_cast<Transport*>(server->data);
  if (status < 0 || t->closing) return;
  auto* in = new Incoming;
  in->t = t;
  in->tcp = static_cast<uv_tcp_t*>(raft_malloc(sizeof(uv_tcp_t)));
  uv_tcp_init(t->loop, in->tcp);
  in->tcp->data = in;
  uv_timer_init(t->loop, &in->timer);
  in->timer.data = in;
  t->incoming.insert(in);
  if (uv_accept(server, reinterpret_cast<uv_stream_t*>(in->tcp)) != 0) {
    IncomingFinish(in, true);
    return;
  }
  uv_timer_start(&in->timer, IncomingTimeout, t->opts.handshake_timeout_ms, 0);
  if (uv_read_start(reinterpret_cast<uv_stream_t*>(in->tcp), IncomingAlloc, IncomingRead) != 0) {
    IncomingFinish(in, true);
  }
}

// ---- outgoing ---------------------------------------------------------------------------

void OutgoingClosed(uv_handle_t* h) {
  auto* o = static_cast<Outgoing*>(h->data);
  raft_free(o->tcp);
  Transport* t = o->t;
  t->outgoing.erase(o);
  o->cb(o->req, nullptr, o->status);
  delete o;
  t->MaybeClosed();
}

void OutgoingFail(Outgoing* o, int status) {
  if (o->closing) return;
  o->closing = true;
  o->status = status;
  uv_close(reinterpret_cast<uv_handle_t*>(o->tcp), OutgoingClosed);
}

void OutgoingWritten(uv_write_t* w, int status) {
  auto* o = static_cast<Outgoing*>(w->data);
  if (o->closing) return;  // the close callback reports
  if (status < 0) {
    OutgoingFail(o, RAFT_NOCONNECTION);
    return;
  }
  o->t->outgoing.erase(o);
  uv_stream_t* stream = reinterpret_cast<uv_stream_t*>(o->tcp);
  stream->data = nullptr;
  auto cb = o->cb;
  auto* req = o->req;
  delete o;
  cb(req, stream, 0);
}

void OutgoingConnected(uv_connect_t* c, int status) {
  auto* o = static_cast<Outgoing*>(c->data);
  if (o->closing) return;
  if (status < 0) {
    OutgoingFail(o, RAFT_NOCONNECTION);
    return;
  }
  uv_buf_t buf = uv_buf_init(o->preamble.data(), static_cast<unsigned>(o->preamble.size()));
  if (uv_write(&o->write, reinterpret_cast<uv_stream_t*>(o->tcp), &buf, 1, OutgoingWritten) != 0) {
    OutgoingFail(o, RAFT_NOCONNECTION);
  }
}

// ---- the raft_uv_transport methods ------------------------------------------------------

int TransportInit(raft_uv_transport* t, raft_id id, const char*) {
  if (static_cast<int32_t>(id) != Get(t)->opts.self.value()) {
    SetErr(t, "transport initialised for another node id");
    return RAFT_INVALID;
  }
  return 0;
}

int TransportListen(raft_uv_transport* rt, raft_uv_accept_cb cb) {
  Transport* t = Get(rt);
  auto it = t->addrs.find(t->opts.self.value());
  if (it == t->addrs.end()) {
    SetErr(rt, "this node is not in the voter list");
    return RAFT_INVALID;
  }
  t->accept_cb = cb;
  uv_tcp_init(t->loop, &t->listener);
  t->listener.data = t;
  t->listening = true;
  t->listener_closed = false;
  int rv = uv_tcp_bind(&t->listener, reinterpret_cast<const sockaddr*>(&it->second), 0);
  if (rv == 0) rv = uv_listen(reinterpret_cast<uv_stream_t*>(&t->listener), 128, OnConnection);
  if (rv != 0) {
    SetErr(rt, "cannot listen on the peer address " + t->addr_text[t->opts.self.value()] + ": " +
                   uv_strerror(rv));
    return RAFT_IOERR;
  }
  return 0;
}

int TransportConnect(raft_uv_transport* rt, raft_uv_connect* req, raft_id id, const char*,
                     raft_uv_connect_cb cb) {
  Transport* t = Get(rt);
  // The address libraft passes (from the replicated configuration) is ignored: a peer is reached
  // only at the address our own static list gives for its id.
  auto it = t->addrs.find(static_cast<int32_t>(id));
  if (it == t->addrs.end() || t->closing) return RAFT_NOCONNECTION;
  auto* o = new Outgoing;
  o->t = t;
  o->req = req;
  o->cb = cb;
  o->preamble = EncodePreamble(PeerStream::kRaft, t->opts.self);
  o->tcp = static_cast<uv_tcp_t*>(raft_malloc(sizeof(uv_tcp_t)));
  uv_tcp_init(t->loop, o->tcp);
  uv_tcp_nodelay(o->tcp, 1);
  o->tcp->data = o;
  o->connect.data = o;
  o->write.data = o;
  t->outgoing.insert(o);
  if (uv_tcp_connect(&o->connect, o->tcp, reinterpret_cast<const sockaddr*>(&it->second),
                     OutgoingConnected) != 0) {
    OutgoingFail(o, RAFT_NOCONNECTION);  // reported through cb, after the close
  }
  return 0;
}

void ListenerClosed(uv_handle_t* h) {
  auto* t = static_cast<Transport*>(h->data);
  t->listener_closed = true;
  t->MaybeClosed();
}

void TransportClose(raft_uv_transport* rt, raft_uv_transport_close_cb cb) {
  Transport* t = Get(rt);
  t->closing = true;
  t->close_cb = cb;
  if (t->listening && !uv_is_closing(reinterpret_cast<uv_handle_t*>(&t->listener))) {
    uv_close(reinterpret_cast<uv_handle_t*>(&t->listener), ListenerClosed);
  }
  for (Incoming* in : std::set<Incoming*>(t->incoming)) IncomingFinish(in, true);
  for (Outgoing* o : std::set<Outgoing*>(t->outgoing)) OutgoingFail(o, RAFT_CANCELED);
  t->MaybeClosed();
}

}  // namespace

int PeerTransportInit(raft_uv_transport* rt, uv_loop_s* loop, PeerTransportOptions options) {
  std::memset(rt, 0, sizeof(*rt));
  auto* t = new Transport;
  t->loop = loop;
  t->self = rt;
  for (const Voter& v : options.voters) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    std::string port = std::to_string(v.port);
    int rv = getaddrinfo(v.host.c_str(), port.c_str(), &hints, &res);
    if (rv != 0 || res == nullptr) {
      SetErr(rt, "cannot resolve peer " + std::to_string(v.id.value()) + "@" + v.address() + ": " +
                     gai_strerror(rv));
      delete t;
      return RAFT_NOCONNECTION;
    }
    sockaddr_storage ss{};
    std::memcpy(&ss, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    t->addrs[v.id.value()] = ss;
    t->addr_text[v.id.value()] = v.address();
  }
  t->opts = std::move(options);
  rt->impl = t;
  rt->init = TransportInit;
  rt->listen = TransportListen;
  rt->connect = TransportConnect;
  rt->close = TransportClose;
  return 0;
}

void PeerTransportFree(raft_uv_transport* rt) {
  delete Get(rt);
  rt->impl = nullptr;
}

}  // namespace silt::cluster
