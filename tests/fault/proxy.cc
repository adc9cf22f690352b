// silt_fault_proxy: a fault-injecting TCP proxy for the fault suite (tests/fault/README.md).
//
// One process runs many links. A link listens on 127.0.0.1:P and forwards every connection it
// accepts to HOST:Q. The side that connects to P is "a", the target is "b"; the two directions
// of a link (a->b: what the connecting side sends, b->a: what comes back) have their own fault
// state, so one-way faults are possible:
//
//   pass            forward (clears delay and throttle)
//   cut             a black hole: bytes are read and dropped, connections stay open, nothing
//                   (not even a close) crosses until the direction leaves cut. A connection
//                   that lost bytes is reset when the cut ends: a stream with a hole in it is
//                   not TCP, and its reader would take the bytes after the hole for a frame
//                   header. A connection that lost nothing goes on.
//   hold            stop forwarding and buffer (up to kMaxQueued per connection, then TCP
//                   back-pressure); everything buffered goes out, in order, on pass
//   delay MS        forward every chunk MS milliseconds after it was read
//   throttle BPS    forward at most BPS bytes per second over all connections of the direction
//   reset           close every connection of the link with RST and refuse new ones (the link
//                   as a whole; pass on that direction lifts it)
//
// Control: a line protocol on a TCP port of its own (--control 127.0.0.1:0 prints the bound
// address as "control on HOST:PORT" on stdout). Every line gets one answer line, "ok ..." or
// "err ...":
//
//   add NAME LISTEN_PORT HOST:PORT      new link (LISTEN_PORT 0 = any); answers "ok PORT"
//   set NAMES DIR MODE [ARG]            NAMES = name[,name...] or "*"; DIR = ab | ba | both
//   stats NAME                          "ok name=... conns=... ab.mode=... ab.in=... ..."
//   list                                "ok NAME NAME ..."
//   remove NAME                         close the link and its connections
//   ping                                "ok pong"
//
// Single-threaded (one asio io_context): no locks. Not for production use: no auth on the
// control port, which binds loopback only.
#include <asio.hpp>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace {

using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

constexpr size_t kReadSize = 64 * 1024;
// Per connection and direction: past this many queued bytes the pipe stops reading, so held
// or throttled traffic pushes back through TCP instead of growing memory without bound.
constexpr size_t kMaxQueued = 8 * 1024 * 1024;

enum class Mode { kPass, kCut, kHold, kReset };

const char* ModeName(Mode m) {
  switch (m) {
    case Mode::kPass: return "pass";
    case Mode::kCut: return "cut";
    case Mode::kHold: return "hold";
    case Mode::kReset: return "reset";
  }
  return "?";
}

// The fault state and counters of one direction of a link, shared by all its connections.
struct Direction {
  Mode mode = Mode::kPass;
  int64_t delay_ms = 0;
  int64_t throttle_bps = 0;  // 0 = unlimited
  double tokens = 0;
  Clock::time_point refilled = Clock::now();
  uint64_t bytes_in = 0;       // read from the source
  uint64_t bytes_out = 0;      // written to the destination
  uint64_t bytes_dropped = 0;  // read while cut (or queued when the cut began)

  // Bytes that may go out now under the throttle (refills the bucket; at most one second's
  // worth is saved up).
  size_t Allowance(size_t want) {
    if (throttle_bps <= 0) return want;
    auto now = Clock::now();
    double secs = std::chrono::duration<double>(now - refilled).count();
    refilled = now;
    tokens = std::min<double>(tokens + secs * throttle_bps, double(throttle_bps));
    if (tokens < 1) return 0;
    size_t n = std::min<size_t>(want, size_t(tokens));
    return n;
  }
};

struct Link;

struct Chunk {
  std::vector<char> data;
  size_t sent = 0;
  Clock::time_point read_at;
};

class Conn;

// One direction of one connection: reads from `from`, writes to `to`.
struct Pipe {
  Conn* conn = nullptr;
  Direction* dir = nullptr;
  tcp::socket* from = nullptr;
  tcp::socket* to = nullptr;
  std::deque<Chunk> queue;
  size_t queued = 0;
  bool reading = false;
  bool writing = false;
  bool eof = false;       // the source sent FIN
  bool shut = false;      // FIN passed on to the destination
  bool failed = false;    // the source failed; the connection closes once this can be seen
  bool sink_dead = false; // a write to the destination failed: what is read now is dropped
  bool holed = false;     // bytes were dropped by a cut: the stream can never be whole again
  std::unique_ptr<asio::steady_timer> timer;
  bool timer_armed = false;
  std::vector<char> buf = std::vector<char>(kReadSize);
};

class Conn : public std::enable_shared_from_this<Conn> {
 public:
  Conn(Link* link, tcp::socket a, tcp::socket b);
  void Start();
  // Moves whatever the current fault state allows.
  void Kick();
  // Closes both sockets; with `rst` the peers see a reset rather than a FIN.
  void Close(bool rst);
  bool closed() const { return closed_; }
  Pipe ab, ba;

 private:
  void Read(Pipe& p);
  void Write(Pipe& p);
  void Finish(Pipe& p);
  Link* link_;
  tcp::socket a_, b_;
  bool closed_ = false;
};

struct Link {
  std::string name;
  asio::io_context* io;
  tcp::acceptor acceptor;
  tcp::endpoint target;
  Direction ab, ba;
  std::vector<std::weak_ptr<Conn>> conns;
  uint64_t accepted = 0;
  uint64_t refused = 0;
  uint64_t connect_failures = 0;
  bool removed = false;

  Link(asio::io_context& ctx, std::string n, tcp::endpoint listen, tcp::endpoint to)
      : name(std::move(n)), io(&ctx), acceptor(ctx, listen), target(to) {}

  bool reset() const { return ab.mode == Mode::kReset || ba.mode == Mode::kReset; }

  std::vector<std::shared_ptr<Conn>> Live() {
    std::vector<std::shared_ptr<Conn>> out;
    std::vector<std::weak_ptr<Conn>> keep;
    for (auto& w : conns) {
      if (auto c = w.lock(); c && !c->closed()) {
        out.push_back(c);
        keep.push_back(w);
      }
    }
    conns.swap(keep);
    return out;
  }

  void Accept() {
    acceptor.async_accept([this](std::error_code ec, tcp::socket s) {
      if (removed) return;
      if (ec) {
        if (ec != asio::error::operation_aborted) Accept();
        return;
      }
      if (reset()) {
        ++refused;
        s.set_option(asio::socket_base::linger(true, 0), ec);
        s.close(ec);
        Accept();
        return;
      }
      ++accepted;
      auto a = std::make_shared<tcp::socket>(std::move(s));
      auto b = std::make_shared<tcp::socket>(*io);
      b->async_connect(target, [this, a, b](std::error_code cec) {
        if (removed) return;
        if (cec || reset()) {
          // The target is down: the client sees a reset, as it would connecting directly.
          if (cec) ++connect_failures;
          std::error_code e;
          a->set_option(asio::socket_base::linger(true, 0), e);
          a->close(e);
          return;
        }
        std::error_code e;
        a->set_option(tcp::no_delay(true), e);
        b->set_option(tcp::no_delay(true), e);
        auto c = std::make_shared<Conn>(this, std::move(*a), std::move(*b));
        conns.push_back(c);
        c->Start();
      });
      Accept();
    });
  }

  // Applies a direction's new state to every open connection.
  void Changed() {
    for (auto& c : Live()) {
      if (reset()) {
        c->Close(/*rst=*/true);
        continue;
      }
      c->Kick();
    }
  }
};

Conn::Conn(Link* link, tcp::socket a, tcp::socket b)
    : link_(link), a_(std::move(a)), b_(std::move(b)) {
  ab.conn = this;
  ab.dir = &link->ab;
  ab.from = &a_;
  ab.to = &b_;
  ba.conn = this;
  ba.dir = &link->ba;
  ba.from = &b_;
  ba.to = &a_;
  ab.timer = std::make_unique<asio::steady_timer>(*link->io);
  ba.timer = std::make_unique<asio::steady_timer>(*link->io);
}

void Conn::Start() {
  Read(ab);
  Read(ba);
}

void Conn::Kick() {
  if (closed_) return;
  for (Pipe* p : {&ab, &ba}) {
    if (p->holed && p->dir->mode != Mode::kCut) {
      Close(/*rst=*/true);
      return;
    }
  }
  for (Pipe* p : {&ab, &ba}) {
    if (p->dir->mode == Mode::kCut && !p->queue.empty()) {
      p->holed = true;
      // A black hole swallows what it had not delivered yet, too.
      if (p->writing) {
        // The chunk being written stays; the rest goes.
        Chunk front = std::move(p->queue.front());
        p->queue.pop_front();
        for (auto& c : p->queue) p->dir->bytes_dropped += c.data.size() - c.sent;
        p->queue.clear();
        p->queue.push_back(std::move(front));
        p->queued = p->queue.front().data.size() - p->queue.front().sent;
      } else {
        for (auto& c : p->queue) p->dir->bytes_dropped += c.data.size() - c.sent;
        p->queue.clear();
        p->queued = 0;
      }
    }
    Read(*p);
    Write(*p);
    Finish(*p);
  }
}

void Conn::Close(bool rst) {
  if (closed_) return;
  closed_ = true;
  std::error_code ec;
  for (tcp::socket* s : {&a_, &b_}) {
    if (rst) s->set_option(asio::socket_base::linger(true, 0), ec);
    s->close(ec);
  }
  ab.timer->cancel();
  ba.timer->cancel();
}

void Conn::Read(Pipe& p) {
  if (closed_ || p.reading || p.eof || p.failed || p.queued >= kMaxQueued) return;
  p.reading = true;
  auto self = shared_from_this();
  p.from->async_read_some(asio::buffer(p.buf), [this, self, &p](std::error_code ec, size_t n) {
    p.reading = false;
    if (closed_) return;
    if (ec) {
      if (ec == asio::error::eof) {
        p.eof = true;
      } else {
        p.failed = true;
      }
      Finish(p);
      return;
    }
    p.dir->bytes_in += n;
    if (p.dir->mode == Mode::kCut) {
      p.dir->bytes_dropped += n;
      p.holed = true;
    } else {
      Chunk c;
      c.data.assign(p.buf.begin(), p.buf.begin() + n);
      c.read_at = Clock::now();
      p.queue.push_back(std::move(c));
      p.queued += n;
      Write(p);
    }
    Read(p);
  });
}

void Conn::Write(Pipe& p) {
  if (closed_ || p.writing || p.queue.empty()) return;
  Direction& d = *p.dir;
  if (p.sink_dead) {
    p.queue.clear();
    p.queued = 0;
    return;
  }
  if (d.mode != Mode::kPass) return;  // hold and cut keep (or have dropped) the queue
  Chunk& front = p.queue.front();
  auto now = Clock::now();
  Clock::time_point due = front.read_at + std::chrono::milliseconds(d.delay_ms);
  size_t want = front.data.size() - front.sent;
  size_t n = now < due ? 0 : d.Allowance(want);
  if (n == 0) {
    if (p.timer_armed) return;
    // Wait for the delay to pass or the bucket to hold at least a little.
    Clock::time_point at = now < due ? due : now + std::chrono::milliseconds(10);
    p.timer_armed = true;
    p.timer->expires_at(at);
    auto self = shared_from_this();
    p.timer->async_wait([this, self, &p](std::error_code) {
      p.timer_armed = false;
      if (closed_) return;
      Write(p);
    });
    return;
  }
  if (d.throttle_bps > 0) d.tokens -= double(n);
  p.writing = true;
  auto self = shared_from_this();
  asio::async_write(*p.to, asio::buffer(front.data.data() + front.sent, n),
                    [this, self, &p](std::error_code ec, size_t wrote) {
                      p.writing = false;
                      if (closed_) return;
                      if (ec) {
                        // The destination is gone. That news travels the other way, so the
                        // other direction decides (through Finish) whether it may be seen.
                        p.sink_dead = true;
                        p.queue.clear();
                        p.queued = 0;
                        Pipe& other = (&p == &ab) ? ba : ab;
                        other.failed = true;
                        Finish(other);
                        Read(p);
                        return;
                      }
                      p.dir->bytes_out += wrote;
                      Chunk& f = p.queue.front();
                      f.sent += wrote;
                      p.queued -= wrote;
                      if (f.sent == f.data.size()) p.queue.pop_front();
                      Write(p);
                      Read(p);
                      Finish(p);
                    });
}

// Passes the end of a source on once everything before it went out, unless the direction is
// cut or held (then the other side must not learn of it yet).
void Conn::Finish(Pipe& p) {
  if (closed_ || !(p.eof || p.failed) || !p.queue.empty() || p.writing) return;
  if (p.dir->mode != Mode::kPass) return;
  if (p.failed) {
    Close(/*rst=*/true);
    return;
  }
  if (!p.shut) {
    p.shut = true;
    std::error_code ec;
    p.to->shutdown(tcp::socket::shutdown_send, ec);
  }
  Pipe& other = (&p == &ab) ? ba : ab;
  if (other.shut) Close(/*rst=*/false);
}

class Proxy {
 public:
  explicit Proxy(asio::io_context& io) : io_(io) {}

  std::string Handle(const std::string& line) {
    std::istringstream in(line);
    std::string cmd;
    in >> cmd;
    if (cmd == "ping") return "ok pong";
    if (cmd == "add") {
      std::string name, target;
      int port = -1;
      in >> name >> port >> target;
      auto colon = target.rfind(':');
      if (name.empty() || port < 0 || port > 65535 || colon == std::string::npos)
        return "err usage: add NAME LISTEN_PORT HOST:PORT";
      if (links_.count(name)) return "err link exists: " + name;
      std::error_code ec;
      auto addr = asio::ip::make_address(target.substr(0, colon), ec);
      if (ec) return "err bad target address: " + target;
      int tport = std::atoi(target.c_str() + colon + 1);
      try {
        auto l = std::make_unique<Link>(
            io_, name, tcp::endpoint(asio::ip::make_address("127.0.0.1"), uint16_t(port)),
            tcp::endpoint(addr, uint16_t(tport)));
        int bound = l->acceptor.local_endpoint().port();
        l->Accept();
        links_[name] = std::move(l);
        return "ok " + std::to_string(bound);
      } catch (const std::system_error& e) {
        return std::string("err listen: ") + e.what();
      }
    }
    if (cmd == "set") {
      std::string names, dir, mode;
      in >> names >> dir >> mode;
      int64_t arg = -1;
      in >> arg;
      std::vector<Link*> targets;
      if (names == "*") {
        for (auto& [n, l] : links_) targets.push_back(l.get());
      } else {
        std::stringstream ns(names);
        std::string n;
        while (std::getline(ns, n, ',')) {
          auto it = links_.find(n);
          if (it == links_.end()) return "err no such link: " + n;
          targets.push_back(it->second.get());
        }
      }
      if (dir != "ab" && dir != "ba" && dir != "both") return "err DIR must be ab, ba or both";
      bool needs_arg = mode == "delay" || mode == "throttle";
      if (needs_arg && arg < 0) return "err " + mode + " needs a value";
      if (mode != "pass" && mode != "cut" && mode != "hold" && mode != "reset" && !needs_arg)
        return "err unknown mode: " + mode;
      for (Link* l : targets) {
        for (Direction* d : {&l->ab, &l->ba}) {
          if (dir == "ab" && d != &l->ab) continue;
          if (dir == "ba" && d != &l->ba) continue;
          if (mode == "pass") {
            d->mode = Mode::kPass;
            d->delay_ms = 0;
            d->throttle_bps = 0;
          } else if (mode == "cut") {
            d->mode = Mode::kCut;
          } else if (mode == "hold") {
            d->mode = Mode::kHold;
          } else if (mode == "reset") {
            d->mode = Mode::kReset;
          } else if (mode == "delay") {
            d->mode = Mode::kPass;
            d->delay_ms = arg;
          } else if (mode == "throttle") {
            d->mode = Mode::kPass;
            d->throttle_bps = arg;
            d->tokens = 0;
            d->refilled = Clock::now();
          }
        }
        l->Changed();
      }
      return "ok";
    }
    if (cmd == "stats") {
      std::string name;
      in >> name;
      auto it = links_.find(name);
      if (it == links_.end()) return "err no such link: " + name;
      Link& l = *it->second;
      auto live = l.Live();
      std::ostringstream o;
      o << "ok name=" << l.name << " listen=" << l.acceptor.local_endpoint().port()
        << " target=" << l.target.address().to_string() << ":" << l.target.port()
        << " conns=" << live.size() << " accepted=" << l.accepted << " refused=" << l.refused
        << " connect_failures=" << l.connect_failures;
      for (auto [tag, d] : {std::pair{"ab", &l.ab}, std::pair{"ba", &l.ba}}) {
        size_t queued = 0;
        for (auto& c : live) queued += (d == &l.ab ? c->ab : c->ba).queued;
        o << " " << tag << ".mode=" << ModeName(d->mode) << " " << tag
          << ".delay_ms=" << d->delay_ms << " " << tag << ".throttle_bps=" << d->throttle_bps
          << " " << tag << ".in=" << d->bytes_in << " " << tag << ".out=" << d->bytes_out << " "
          << tag << ".dropped=" << d->bytes_dropped << " " << tag << ".queued=" << queued;
      }
      return o.str();
    }
    if (cmd == "list") {
      std::string out = "ok";
      for (auto& [n, l] : links_) out += " " + n;
      return out;
    }
    if (cmd == "remove") {
      std::string name;
      in >> name;
      auto it = links_.find(name);
      if (it == links_.end()) return "err no such link: " + name;
      Link* l = it->second.get();
      l->removed = true;
      std::error_code ec;
      l->acceptor.close(ec);
      for (auto& c : l->Live()) c->Close(/*rst=*/true);
      // Handlers still queued for this link check `removed` first, so it must outlive them.
      graveyard_.push_back(std::move(it->second));
      links_.erase(it);
      return "ok";
    }
    return "err unknown command: " + cmd;
  }

 private:
  asio::io_context& io_;
  std::map<std::string, std::unique_ptr<Link>> links_;
  std::vector<std::unique_ptr<Link>> graveyard_;
};

class ControlSession : public std::enable_shared_from_this<ControlSession> {
 public:
  ControlSession(tcp::socket s, Proxy& p) : sock_(std::move(s)), proxy_(p) {}
  void Start() { ReadLine(); }

 private:
  void ReadLine() {
    auto self = shared_from_this();
    asio::async_read_until(sock_, asio::dynamic_buffer(in_, 1 << 16), '\n',
                           [this, self](std::error_code ec, size_t n) {
                             if (ec) return;
                             std::string line = in_.substr(0, n - 1);
                             in_.erase(0, n);
                             if (!line.empty() && line.back() == '\r') line.pop_back();
                             out_ = proxy_.Handle(line) + "\n";
                             asio::async_write(sock_, asio::buffer(out_),
                                               [this, self](std::error_code wec, size_t) {
                                                 if (!wec) ReadLine();
                                               });
                           });
  }
  tcp::socket sock_;
  Proxy& proxy_;
  std::string in_, out_;
};

void AcceptControl(tcp::acceptor& acc, Proxy& proxy) {
  acc.async_accept([&acc, &proxy](std::error_code ec, tcp::socket s) {
    if (!ec) std::make_shared<ControlSession>(std::move(s), proxy)->Start();
    if (ec != asio::error::operation_aborted) AcceptControl(acc, proxy);
  });
}

int Usage() {
  std::fprintf(stderr,
               "usage: silt_fault_proxy [--control 127.0.0.1:PORT] "
               "[--link NAME=LISTEN_PORT:HOST:PORT]...\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string control = "127.0.0.1:0";
  std::vector<std::string> links;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--control" && i + 1 < argc) {
      control = argv[++i];
    } else if (a == "--link" && i + 1 < argc) {
      links.push_back(argv[++i]);
    } else {
      return Usage();
    }
  }
  asio::io_context io;
  Proxy proxy(io);
  for (const std::string& l : links) {
    // NAME=LISTEN_PORT:HOST:PORT -> "add NAME LISTEN_PORT HOST:PORT"
    auto eq = l.find('=');
    auto colon = l.find(':', eq == std::string::npos ? 0 : eq);
    if (eq == std::string::npos || colon == std::string::npos) return Usage();
    std::string r = proxy.Handle("add " + l.substr(0, eq) + " " +
                                 l.substr(eq + 1, colon - eq - 1) + " " + l.substr(colon + 1));
    if (r.rfind("ok", 0) != 0) {
      std::fprintf(stderr, "silt_fault_proxy: %s\n", r.c_str());
      return 2;
    }
    std::printf("link %s on 127.0.0.1:%s\n", l.substr(0, eq).c_str(), r.c_str() + 3);
  }
  auto colon = control.rfind(':');
  if (colon == std::string::npos) return Usage();
  std::error_code ec;
  auto addr = asio::ip::make_address(control.substr(0, colon), ec);
  if (ec) return Usage();
  tcp::acceptor acc(io, tcp::endpoint(addr, uint16_t(std::atoi(control.c_str() + colon + 1))));
  std::printf("control on %s:%d\n", addr.to_string().c_str(), acc.local_endpoint().port());
  std::fflush(stdout);
  AcceptControl(acc, proxy);
  // A write to a peer that went away must be an error, not a signal.
  std::signal(SIGPIPE, SIG_IGN);
  io.run();
  return 0;
}
