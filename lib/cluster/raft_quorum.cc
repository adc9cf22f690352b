// RaftQuorum (raft_quorum.h): libraft 0.15 on a libuv loop thread.
//
// Log entry payload (RAFT_COMMAND), version 1. libraft 0.15's segment files need every entry's
// length to be a multiple of 8 (its writer asserts it, its reader assumes it), so the command is
// padded and its own length recorded:
//   Entry => version reserved command_length request_id command padding
//     version         int8   1
//     reserved        [3]    zero
//     command_length  int32
//     request_id      [16]   the proposer's RequestId (all zero: no dedup)
//     command         bytes  command_length bytes: what StateMachine::Apply receives
//     padding         [0-7]  zero, up to a multiple of 8
//
// Snapshot, version 1 (the whole replicated state: the dedup window and the state machine):
//   Snapshot => version window_count [window_entry] state
//     version       int8   1
//     window_count  int32
//     window_entry  => request_id [16], result_length int32, result bytes   (oldest first)
//     state         bytes  the rest: StateMachine::Snapshot()
#include "cluster/raft_quorum.h"

#include <uv.h>
// libraft 0.15 headers declare no C linkage of their own.
extern "C" {
#include <raft.h>
#include <raft/uv.h>
}

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "base/coding.h"
#include "base/file.h"
#include "cluster/peer_transport.h"

namespace silt::cluster {

const char* ProposeOutcomeName(ProposeOutcome o) {
  switch (o) {
    case ProposeOutcome::kApplied:
      return "applied";
    case ProposeOutcome::kNotLeader:
      return "not leader";
    case ProposeOutcome::kOutcomeUnknown:
      return "outcome unknown";
    case ProposeOutcome::kRejected:
      return "rejected";
    case ProposeOutcome::kShutdown:
      return "shut down";
  }
  return "?";
}

namespace {

constexpr int8_t kEntryVersion = 1;
constexpr int8_t kSnapshotVersion = 1;
constexpr size_t kEntryHeaderSize = 1 + 3 + 4 + 16;
static_assert(kEntryHeaderSize % 8 == 0);

struct UuidHash {
  size_t operator()(const Uuid& u) const {
    uint64_t h = 0;
    for (uint8_t b : u.bytes()) h = h * 1099511628211ull ^ b;
    return static_cast<size_t>(h);
  }
};

struct PendingProposal {
  RequestId id;
  std::string command;
  ProposeCallback done;
  bool read_index = false;  // a ReadIndex, not a command
};

}  // namespace

struct RaftQuorum::Impl {
  RaftQuorumOptions opts;

  // Loop-thread state.
  uv_loop_t loop{};
  uv_async_t wake{};
  uv_timer_t poll{};
  raft_uv_transport transport{};
  raft_io io{};
  raft_fsm fsm{};
  raft r{};
  bool raft_started = false;
  bool stopping_loop = false;
  raft_term barrier_term = 0;  // term whose barrier has been proposed
  // The commit push (PushCommit): an entry was applied on the leader since the last push went
  // out, and whether a push barrier is in the log and not yet committed.
  bool push_wanted = false;
  bool push_in_flight = false;
  raft_term ready_term = 0;    // term whose barrier has been applied while leading
  std::string last_result;     // result of the entry applied last (read by its apply callback)
  RaftIndex last_entry_index;
  // The dedup window: request id -> result, oldest first in `window_order`.
  std::unordered_map<Uuid, std::string, UuidHash> window;
  std::deque<Uuid> window_order;

  // Cross-thread state.
  std::mutex mu;
  std::vector<PendingProposal> queue;  // guarded by mu
  bool stop_requested = false;         // guarded by mu
  std::thread thread;
  std::atomic<uint64_t> committed{0}, applied{0}, term{0};
  std::atomic<int32_t> leader_id{0};
  std::atomic<bool> ready{false};
  mutable std::mutex log_ends_mu;
  std::vector<VoterLogEnd> log_ends;  // guarded by log_ends_mu; see voter_log_ends()
  // When a message from each peer last arrived (loop thread), the leader this node last
  // followed, and what previous_leader_contact() returns (under log_ends_mu), set as this node
  // becomes leader.
  std::map<raft_id, std::chrono::steady_clock::time_point> last_from;
  raft_id followed = 0;
  std::optional<LeaderContact> previous_contact;

  void Post(std::function<void()> f) {
    if (opts.executor) {
      opts.executor(std::move(f));
    } else {
      f();
    }
  }

  void Complete(ProposeCallback& done, ProposeResult res) {
    Post([done = std::move(done), res = std::move(res)]() mutable { done(std::move(res)); });
  }

  // ---- state machine adapter (loop thread) ----

  void Remember(const Uuid& id, const std::string& result) {
    window[id] = result;
    window_order.push_back(id);
    while (window_order.size() > opts.dedup_window) {
      window.erase(window_order.front());
      window_order.pop_front();
    }
  }

  void ApplyEntry(std::string_view payload) {
    ByteReader rd(payload);
    int8_t version = 0;
    uint32_t len = 0;
    std::string_view idb, command;
    if (!rd.I8(&version) || version != kEntryVersion || !rd.Skip(3) || !rd.U32(&len) ||
        !rd.Bytes(16, &idb) || !rd.Bytes(len, &command)) {
      // An entry this build cannot read: applied as a no-op on every node alike.
      last_result.clear();
      return;
    }
    Uuid::Bytes b;
    std::memcpy(b.data(), idb.data(), 16);
    Uuid id(b);
    if (!id.is_zero()) {
      auto it = window.find(id);
      if (it != window.end()) {
        last_result = it->second;  // a retry: the first apply's result, nothing applied again
        return;
      }
    }
    last_result = opts.state_machine->Apply(command);
    if (!id.is_zero()) Remember(id, last_result);
  }

  std::string SnapshotBytes() {
    std::string out;
    ByteWriter w(&out);
    w.I8(kSnapshotVersion);
    w.I32(static_cast<int32_t>(window_order.size()));
    for (const Uuid& id : window_order) {
      w.Raw(reinterpret_cast<const char*>(id.bytes().data()), 16);
      const std::string& res = window[id];
      w.I32(static_cast<int32_t>(res.size()));
      w.Raw(res);
    }
    w.Raw(opts.state_machine->Snapshot());
    return out;
  }

  Status RestoreBytes(std::string_view bytes) {
    ByteReader rd(bytes);
    int8_t version = 0;
    int32_t n = 0;
    if (!rd.I8(&version) || version != kSnapshotVersion || !rd.I32(&n) || n < 0) {
      return Status::Corruption("Raft snapshot: unknown version or damaged header");
    }
    std::unordered_map<Uuid, std::string, UuidHash> w;
    std::deque<Uuid> order;
    for (int32_t i = 0; i < n; ++i) {
      std::string_view idb, res;
      int32_t len = 0;
      if (!rd.Bytes(16, &idb) || !rd.I32(&len) || len < 0 ||
          !rd.Bytes(static_cast<size_t>(len), &res)) {
        return Status::Corruption("Raft snapshot: damaged request id window");
      }
      Uuid::Bytes b;
      std::memcpy(b.data(), idb.data(), 16);
      w[Uuid(b)] = std::string(res);
      order.push_back(Uuid(b));
    }
    SILT_TRY(opts.state_machine->Restore(rd.rest()));
    window = std::move(w);
    window_order = std::move(order);
    return Status::OK();
  }

  static int FsmApply(raft_fsm* fsm, const raft_buffer* buf, void** result) {
    auto* self = static_cast<Impl*>(fsm->data);
    self->ApplyEntry(std::string_view(static_cast<const char*>(buf->base), buf->len));
    *result = nullptr;  // results travel in last_result: libraft drops this pointer on followers
    self->applied.store(self->r.last_applied + 1);
    if (self->opts.on_applied) self->opts.on_applied();
    self->push_wanted = true;  // AfterEvent pushes the commit on if this node leads
    return 0;
  }

  static int FsmSnapshot(raft_fsm* fsm, raft_buffer* bufs[], unsigned* n_bufs) {
    auto* self = static_cast<Impl*>(fsm->data);
    std::string bytes = self->SnapshotBytes();
    // Version 1 FSM: libraft owns and frees both allocations.
    *bufs = static_cast<raft_buffer*>(raft_malloc(sizeof(raft_buffer)));
    if (*bufs == nullptr) return RAFT_NOMEM;
    (*bufs)[0].len = bytes.size();
    (*bufs)[0].base = raft_malloc(bytes.size() ? bytes.size() : 1);
    if ((*bufs)[0].base == nullptr) {
      raft_free(*bufs);
      return RAFT_NOMEM;
    }
    std::memcpy((*bufs)[0].base, bytes.data(), bytes.size());
    *n_bufs = 1;
    return 0;
  }

  static int FsmRestore(raft_fsm* fsm, raft_buffer* buf) {
    auto* self = static_cast<Impl*>(fsm->data);
    Status s = self->RestoreBytes(std::string_view(static_cast<const char*>(buf->base), buf->len));
    if (!s.ok()) {
      std::snprintf(self->r.errmsg, RAFT_ERRMSG_BUF_SIZE, "%s", s.ToString().c_str());
      return RAFT_CORRUPT;  // libraft keeps ownership of buf on failure
    }
    raft_free(buf->base);  // on success the buffer is ours
    return 0;
  }

  // ---- proposals (loop thread) ----

  struct ApplyReq {
    struct raft_apply req {};
    Impl* self = nullptr;
    ProposeCallback done;
  };

  static void ApplyDone(struct raft_apply* req, int status, void*) {
    auto* a = static_cast<ApplyReq*>(req->data);
    Impl* self = a->self;
    ProposeResult res;
    if (status == 0) {
      res.outcome = ProposeOutcome::kApplied;
      res.index = RaftIndex(req->index);
      res.result = self->last_result;
    } else {
      // Appended but not known to be committed (RAFT_LEADERSHIPLOST, RAFT_SHUTDOWN, ...).
      res.outcome = ProposeOutcome::kOutcomeUnknown;
      res.message = raft_strerror(status);
    }
    self->Complete(a->done, std::move(res));
    delete a;
  }

  void ProposeNow(PendingProposal p) {
    ProposeResult res;
    if (stopping_loop) {
      res.outcome = ProposeOutcome::kShutdown;
      res.message = "the quorum is stopping";
      Complete(p.done, std::move(res));
      return;
    }
    if (raft_state(&r) != RAFT_LEADER || ready_term != r.current_term) {
      res.outcome = ProposeOutcome::kNotLeader;
      int32_t l = leader_id.load();
      if (l != 0 && l != opts.node_id.value()) res.leader_hint = NodeId(l);
      res.message =
          raft_state(&r) == RAFT_LEADER ? "leader not ready (barrier pending)" : "not the leader";
      Complete(p.done, std::move(res));
      return;
    }
    if (p.command.size() > opts.max_command_bytes) {
      res.outcome = ProposeOutcome::kRejected;
      res.message = "command of " + std::to_string(p.command.size()) + " bytes exceeds " +
                    std::to_string(opts.max_command_bytes);
      Complete(p.done, std::move(res));
      return;
    }
    raft_buffer buf;
    buf.len = (kEntryHeaderSize + p.command.size() + 7) / 8 * 8;
    buf.base = raft_calloc(1, buf.len);
    auto* base = static_cast<char*>(buf.base);
    base[0] = static_cast<char>(kEntryVersion);
    EncodeBE32(base + 4, static_cast<uint32_t>(p.command.size()));
    std::memcpy(base + 8, p.id.bytes().data(), 16);
    std::memcpy(base + kEntryHeaderSize, p.command.data(), p.command.size());
    auto* a = new ApplyReq;
    a->self = this;
    a->done = std::move(p.done);
    a->req.data = a;
    int rv = raft_apply(&r, &a->req, &buf, 1, ApplyDone);
    if (rv != 0) {
      raft_free(buf.base);  // not taken by libraft
      res.outcome = rv == RAFT_NOTLEADER ? ProposeOutcome::kNotLeader : ProposeOutcome::kRejected;
      res.message = raft_strerror(rv);
      Complete(a->done, std::move(res));
      delete a;
    }
  }

  // ---- read index (loop thread) ----

  struct ReadReq {
    struct raft_barrier req {};
    Impl* self = nullptr;
    raft_term term = 0;
    ProposeCallback done;
  };

  static void ReadIndexDone(struct raft_barrier* req, int status) {
    auto* q = static_cast<ReadReq*>(req->data);
    Impl* self = q->self;
    ProposeResult res;
    if (status == 0 && self->r.current_term == q->term) {
      // Committed in the term it was appended in: this node led when it appended it.
      res.outcome = ProposeOutcome::kApplied;
      res.index = RaftIndex(req->index);
    } else {
      res.outcome = ProposeOutcome::kNotLeader;
      int32_t l = self->leader_id.load();
      if (l != 0 && l != self->opts.node_id.value()) res.leader_hint = NodeId(l);
      res.message = status == 0 ? "the term changed" : raft_strerror(status);
    }
    self->Complete(q->done, std::move(res));
    delete q;
  }

  void ReadIndexNow(PendingProposal p) {
    ProposeResult res;
    if (stopping_loop) {
      res.outcome = ProposeOutcome::kShutdown;
      res.message = "the quorum is stopping";
      Complete(p.done, std::move(res));
      return;
    }
    if (raft_state(&r) != RAFT_LEADER || ready_term != r.current_term) {
      res.outcome = ProposeOutcome::kNotLeader;
      int32_t l = leader_id.load();
      if (l != 0 && l != opts.node_id.value()) res.leader_hint = NodeId(l);
      res.message = "not the ready leader";
      Complete(p.done, std::move(res));
      return;
    }
    auto* q = new ReadReq;
    q->self = this;
    q->term = r.current_term;
    q->done = std::move(p.done);
    q->req.data = q;
    int rv = raft_barrier(&r, &q->req, ReadIndexDone);
    if (rv != 0) {
      res.outcome = rv == RAFT_NOTLEADER ? ProposeOutcome::kNotLeader : ProposeOutcome::kRejected;
      res.message = raft_strerror(rv);
      Complete(q->done, std::move(res));
      delete q;
    }
  }

  // ---- leadership (loop thread) ----

  struct BarrierReq {
    struct raft_barrier req {};
    Impl* self = nullptr;
    raft_term term = 0;
  };

  static void BarrierDone(struct raft_barrier* req, int status) {
    auto* b = static_cast<BarrierReq*>(req->data);
    Impl* self = b->self;
    if (status == 0 && !self->stopping_loop && raft_state(&self->r) == RAFT_LEADER &&
        self->r.current_term == b->term) {
      self->ready_term = b->term;
      self->Publish();  // term and leader first: whoever sees `ready` sees this term
      self->ready.store(true);
      self->Notify(true, b->term);
    } else if (self->barrier_term == b->term) {
      self->barrier_term = 0;  // let the poll try again if we still lead in this term
    }
    delete b;
  }

  void Notify(bool is_ready, raft_term t) {
    if (!opts.on_leadership) return;
    LeadershipChange c{is_ready, RaftTerm(t)};
    Post([cb = opts.on_leadership, c] { cb(c); });
  }

  // Publishes what the getters read. Called after every libraft event and by the poll.
  void Publish() {
    raft_id lid = 0;
    const char* laddr = nullptr;
    raft_leader(&r, &lid, &laddr);
    if (raft_state(&r) == RAFT_FOLLOWER && lid != 0 && lid != r.id) followed = lid;
    if (raft_state(&r) == RAFT_LEADER && static_cast<int32_t>(lid) != leader_id.load() &&
        followed != 0) {
      // Just won an election: remember when the leader before us was last heard from.
      auto it = last_from.find(followed);
      std::lock_guard<std::mutex> lock(log_ends_mu);
      previous_contact.reset();
      if (it != last_from.end())
        previous_contact = LeaderContact{NodeId(static_cast<int32_t>(followed)), it->second};
      followed = 0;  // a later win has a previous leader only if this node follows one again
    }
    leader_id.store(static_cast<int32_t>(lid));
    term.store(r.current_term);
    committed.store(r.commit_index);
    const uint64_t was_applied = applied.exchange(raft_last_applied(&r));
    if (was_applied != raft_last_applied(&r) && opts.on_applied) opts.on_applied();
    std::vector<VoterLogEnd> ends;
    const bool leading = raft_state(&r) == RAFT_LEADER && r.leader_state.progress != nullptr;
    for (unsigned i = 0; i < r.configuration.n; ++i) {
      const raft_id id = r.configuration.servers[i].id;
      if (id == r.id) {
        ends.push_back({NodeId(static_cast<int32_t>(id)), RaftIndex(raft_last_index(&r))});
      } else if (leading) {
        ends.push_back({NodeId(static_cast<int32_t>(id)),
                        RaftIndex(r.leader_state.progress[i].match_index)});
      }
    }
    std::sort(ends.begin(), ends.end(),
              [](const VoterLogEnd& a, const VoterLogEnd& b) { return a.id < b.id; });
    std::lock_guard<std::mutex> lock(log_ends_mu);
    log_ends = std::move(ends);
  }

  void Refresh() {
    if (!raft_started) return;
    Publish();
    bool leading = raft_state(&r) == RAFT_LEADER;
    if (ready_term != 0 && (!leading || r.current_term != ready_term)) {
      raft_term lost = ready_term;
      ready_term = 0;
      ready.store(false);
      Notify(false, lost);
    }
    MaybeBarrier();
  }

  // A new leader acts only after an entry of its own term commits: that commits every earlier
  // entry by the Raft rules and makes its state complete (README.md). Called right after each
  // tick and message libraft handles (the only places it wins an election), so the barrier is
  // in the log before the new leader sends any entry: entries of earlier terms then travel with
  // it, and libraft 0.15 never gets to commit them alone by counting replicas.
  void MaybeBarrier() {
    if (!raft_started || stopping_loop || raft_state(&r) != RAFT_LEADER ||
        barrier_term == r.current_term) {
      return;
    }
    auto* b = new BarrierReq;
    b->self = this;
    b->term = r.current_term;
    b->req.data = b;
    if (raft_barrier(&r, &b->req, BarrierDone) == 0) {
      barrier_term = r.current_term;
    } else {
      delete b;
    }
  }

  // Raft followers learn that an entry committed from the leader's next AppendEntries, which
  // an idle libraft leader sends at its heartbeat only (heartbeat_timeout_ms): every broker
  // would apply a metadata change (a fenced broker, a new leader) up to that much after the
  // controller. After the leader applies entries it appends a barrier, whose AppendEntries
  // carries the new commit index to every follower at once. One push at a time: entries
  // applied while one is in flight get the next. Barriers are not applied, so they never ask
  // for a push themselves.
  struct PushReq {
    struct raft_barrier req {};
    Impl* self = nullptr;
  };
  static void PushDone(struct raft_barrier* req, int) {
    auto* p = static_cast<PushReq*>(req->data);
    p->self->push_in_flight = false;
    delete p;
  }
  void PushCommit() {
    if (!push_wanted || push_in_flight) return;
    push_wanted = false;
    if (stopping_loop || raft_state(&r) != RAFT_LEADER || ready_term != r.current_term) return;
    auto* p = new PushReq;
    p->self = this;
    p->req.data = p;
    if (raft_barrier(&r, &p->req, PushDone) == 0) {
      push_in_flight = true;
    } else {
      delete p;
    }
  }

  void AfterEvent() {
    if (!raft_started) return;
    Publish();
    MaybeBarrier();
    PushCommit();
  }

  // libraft hands its tick and receive callbacks to the I/O layer in io->start; these wrap
  // them so MaybeBarrier runs the moment an election is won.
  raft_io_tick_cb raft_tick = nullptr;
  raft_io_recv_cb raft_recv = nullptr;
  int (*uv_start)(raft_io*, unsigned, raft_io_tick_cb, raft_io_recv_cb) = nullptr;

  static Impl* FromIo(raft_io* io) {
    return static_cast<Impl*>(static_cast<raft*>(io->data)->data);
  }
  static void TickThenBarrier(raft_io* io) {
    Impl* self = FromIo(io);
    self->raft_tick(io);
    self->AfterEvent();
  }
  static void RecvThenBarrier(raft_io* io, raft_message* m) {
    Impl* self = FromIo(io);
    self->last_from[m->server_id] = std::chrono::steady_clock::now();
    self->raft_recv(io, m);
    self->AfterEvent();
  }
  static int StartWrapped(raft_io* io, unsigned msecs, raft_io_tick_cb tick, raft_io_recv_cb recv) {
    Impl* self = FromIo(io);
    self->raft_tick = tick;
    self->raft_recv = recv;
    return self->uv_start(io, msecs, TickThenBarrier, RecvThenBarrier);
  }

  static void OnPoll(uv_timer_t* t) { static_cast<Impl*>(t->data)->Refresh(); }

  static void OnWake(uv_async_t* a) {
    auto* self = static_cast<Impl*>(a->data);
    std::vector<PendingProposal> batch;
    bool stop;
    {
      std::lock_guard<std::mutex> lock(self->mu);
      batch.swap(self->queue);
      stop = self->stop_requested;
    }
    self->Refresh();
    for (auto& p : batch) {
      if (p.read_index) {
        self->ReadIndexNow(std::move(p));
      } else {
        self->ProposeNow(std::move(p));
      }
    }
    if (stop && !self->stopping_loop) self->BeginStop();
  }

  static void OnRaftClosed(raft* r) {
    auto* self = static_cast<Impl*>(r->data);
    raft_uv_close(&self->io);
    PeerTransportFree(&self->transport);
    uv_close(reinterpret_cast<uv_handle_t*>(&self->wake), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&self->poll), nullptr);
  }

  void BeginStop() {
    stopping_loop = true;  // no new proposals or barriers from here on
    if (ready_term != 0) {
      ready.store(false);
      Notify(false, ready_term);
      ready_term = 0;
    }
    // libraft 0.15 crashes when a leader's log write completes as cancelled after raft_close
    // (appendLeaderCb looks up the request in leader state that closing has already cleared),
    // and closing cancels the writes in flight. So a leader first lets its writes finish.
    stop_deadline = uv_now(&loop) + kStopWriteWaitMs;
    uv_timer_stop(&poll);
    uv_timer_start(&poll, OnStopPoll, 0, 1);
  }

  static constexpr uint64_t kStopWriteWaitMs = 2000;
  uint64_t stop_deadline = 0;

  static void OnStopPoll(uv_timer_t* t) {
    auto* self = static_cast<Impl*>(t->data);
    raft* r = &self->r;
    bool writing = raft_state(r) == RAFT_LEADER && r->last_stored < raft_last_index(r);
    if (writing && uv_now(&self->loop) < self->stop_deadline) return;
    uv_timer_stop(t);
    raft_close(r, OnRaftClosed);  // pending proposals complete: RAFT_LEADERSHIPLOST/SHUTDOWN
  }

  // Runs on the loop thread: sets everything up, reports through `started`, then runs the loop.
  void Run(std::promise<Status>* started) {
    // A write to a peer that went away must fail with EPIPE, not kill the process: SIGPIPE
    // stays blocked on this thread (it is the only one writing to peer sockets).
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
    Status s = Setup();
    bool ok = s.ok();
    started->set_value(std::move(s));
    if (!ok) return;
    uv_run(&loop, UV_RUN_DEFAULT);
    // Proposals that raced with the stop.
    std::vector<PendingProposal> rest;
    {
      std::lock_guard<std::mutex> lock(mu);
      rest.swap(queue);
    }
    for (auto& p : rest) {
      ProposeResult res;
      res.outcome = ProposeOutcome::kShutdown;
      res.message = "the quorum is stopped";
      Complete(p.done, std::move(res));
    }
    uv_loop_close(&loop);
  }

  Status Fail(const std::string& what, int rv, const char* errmsg) {
    return Status::IOError("raft " + what + ": " + raft_strerror(rv) +
                           (errmsg && *errmsg ? std::string(" (") + errmsg + ")" : ""));
  }

  // Tears down a partially set-up loop (after a failure in Setup).
  void Abandon(bool raft_inited) {
    if (raft_inited) {
      raft_close(&r, [](raft* rr) {
        auto* self = static_cast<Impl*>(rr->data);
        raft_uv_close(&self->io);
      });
    }
    uv_close(reinterpret_cast<uv_handle_t*>(&wake), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&poll), nullptr);
    uv_run(&loop, UV_RUN_DEFAULT);
    if (transport.impl) PeerTransportFree(&transport);
    uv_loop_close(&loop);
  }

  Status Setup() {
    int rv = uv_loop_init(&loop);
    if (rv != 0) return Status::IOError(std::string("uv_loop_init: ") + uv_strerror(rv));
    uv_async_init(&loop, &wake, OnWake);
    wake.data = this;
    uv_timer_init(&loop, &poll);
    poll.data = this;

    Voter self_voter = *FindVoter(opts.voters, opts.node_id);
    PeerTransportOptions topts;
    topts.self = opts.node_id;
    topts.voters = opts.voters;
    topts.on_peer_connection = opts.on_peer_connection;
    topts.handshake_timeout_ms = opts.handshake_timeout_ms;
    rv = PeerTransportInit(&transport, &loop, std::move(topts));
    if (rv != 0) {
      Status s = Fail("transport", rv, transport.errmsg);
      Abandon(false);
      return s;
    }
    rv = raft_uv_init(&io, &loop, opts.raft_dir.c_str(), &transport);
    if (rv != 0) {
      Status s = Fail("uv init of " + opts.raft_dir, rv, io.errmsg);
      Abandon(false);
      return s;
    }
    raft_uv_set_segment_size(&io, 1 << 20);
    raft_uv_set_snapshot_compression(&io, false);
    raft_uv_set_connect_retry_delay(&io, opts.connect_retry_delay_ms);
    uv_start = io.start;
    io.start = StartWrapped;

    fsm.version = 1;
    fsm.data = this;
    fsm.apply = FsmApply;
    fsm.snapshot = FsmSnapshot;
    fsm.restore = FsmRestore;
    std::string address = self_voter.address();
    rv = raft_init(&r, &io, &fsm, static_cast<raft_id>(opts.node_id.value()), address.c_str());
    if (rv != 0) {
      Status s = Fail("init", rv, raft_errmsg(&r));
      raft_uv_close(&io);
      Abandon(false);
      return s;
    }
    r.data = this;
    raft_set_election_timeout(&r, opts.election_timeout_ms);
    raft_set_heartbeat_timeout(&r, opts.heartbeat_timeout_ms);
    raft_set_install_snapshot_timeout(&r, opts.install_snapshot_timeout_ms);
    raft_set_snapshot_threshold(&r, opts.snapshot_threshold);
    raft_set_snapshot_trailing(&r, opts.snapshot_trailing);
    raft_set_pre_vote(&r, true);

    // Static voters: the same configuration, from the same list, on every node's first start.
    // A directory that already holds state refuses (RAFT_CANTBOOTSTRAP), which is the normal
    // restart; membership is never changed afterwards.
    raft_configuration conf;
    raft_configuration_init(&conf);
    for (const Voter& v : opts.voters) {
      raft_configuration_add(&conf, static_cast<raft_id>(v.id.value()), v.address().c_str(),
                             RAFT_VOTER);
    }
    rv = raft_bootstrap(&r, &conf);
    raft_configuration_close(&conf);
    if (rv != 0 && rv != RAFT_CANTBOOTSTRAP) {
      Status s = Fail("bootstrap of " + opts.raft_dir, rv, raft_errmsg(&r));
      Abandon(true);
      return s;
    }
    rv = raft_start(&r);
    if (rv != 0) {
      Status s = rv == RAFT_CORRUPT || rv == RAFT_MALFORMED
                     ? Status::Corruption(std::string("raft start: ") + raft_errmsg(&r))
                     // A listen failure is said in the transport's message, not raft's.
                     : Fail("start", rv,
                            *transport.errmsg != '\0' ? transport.errmsg : raft_errmsg(&r));
      Abandon(true);
      return s;
    }
    raft_started = true;
    unsigned every = std::max(1u, std::min(20u, opts.heartbeat_timeout_ms / 2));
    uv_timer_start(&poll, OnPoll, every, every);
    Refresh();
    return Status::OK();
  }
};

RaftQuorum::RaftQuorum(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RaftQuorum::~RaftQuorum() { Stop(); }

Result<std::unique_ptr<RaftQuorum>> RaftQuorum::Start(RaftQuorumOptions options) {
  if (options.state_machine == nullptr) {
    return Status::InvalidArgument("RaftQuorum needs a state machine");
  }
  if (options.node_id.value() <= 0) return Status::InvalidArgument("node id must be positive");
  if (!FindVoter(options.voters, options.node_id)) {
    return Status::InvalidArgument("node " + std::to_string(options.node_id.value()) +
                                   " is not in controller.quorum.voters (" +
                                   FormatVoters(options.voters) + ")");
  }
  if (options.raft_dir.empty()) return Status::InvalidArgument("RaftQuorum needs a Raft directory");
  if (options.heartbeat_timeout_ms == 0 ||
      options.election_timeout_ms <= options.heartbeat_timeout_ms) {
    return Status::InvalidArgument("the election timeout must exceed the heartbeat interval");
  }
  SILT_TRY(CreateDirs(options.raft_dir));
  auto impl = std::make_unique<Impl>();
  impl->opts = std::move(options);
  std::promise<Status> started;
  auto fut = started.get_future();
  Impl* raw = impl.get();
  impl->thread = std::thread([raw, &started] { raw->Run(&started); });
  Status s = fut.get();
  if (!s.ok()) {
    impl->thread.join();
    return s;
  }
  return std::unique_ptr<RaftQuorum>(new RaftQuorum(std::move(impl)));
}

void RaftQuorum::Propose(RequestId id, std::string command, ProposeCallback done) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (!impl_->stop_requested) {
      impl_->queue.push_back(PendingProposal{id, std::move(command), std::move(done)});
      uv_async_send(&impl_->wake);
      return;
    }
  }
  ProposeResult res;
  res.outcome = ProposeOutcome::kShutdown;
  res.message = "the quorum is stopped";
  impl_->Complete(done, std::move(res));
}

void RaftQuorum::ReadIndex(ProposeCallback done) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (!impl_->stop_requested) {
      impl_->queue.push_back(PendingProposal{RequestId(), std::string(), std::move(done), true});
      uv_async_send(&impl_->wake);
      return;
    }
  }
  ProposeResult res;
  res.outcome = ProposeOutcome::kShutdown;
  res.message = "the quorum is stopped";
  impl_->Complete(done, std::move(res));
}

NodeId RaftQuorum::node_id() const { return impl_->opts.node_id; }
RaftIndex RaftQuorum::committed_index() const { return RaftIndex(impl_->committed.load()); }
RaftIndex RaftQuorum::applied_index() const { return RaftIndex(impl_->applied.load()); }
RaftTerm RaftQuorum::term() const { return RaftTerm(impl_->term.load()); }
std::optional<NodeId> RaftQuorum::leader() const {
  int32_t l = impl_->leader_id.load();
  if (l == 0) return std::nullopt;
  return NodeId(l);
}
bool RaftQuorum::IsReadyLeader() const { return impl_->ready.load(); }
std::optional<MetadataQuorum::LeaderContact> RaftQuorum::previous_leader_contact() const {
  std::lock_guard<std::mutex> lock(impl_->log_ends_mu);
  return impl_->previous_contact;
}

std::vector<MetadataQuorum::VoterLogEnd> RaftQuorum::voter_log_ends() const {
  std::lock_guard<std::mutex> lock(impl_->log_ends_mu);
  return impl_->log_ends;
}

void RaftQuorum::Stop() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stop_requested) {
      // Already stopping (or stopped): only the first caller joins.
      return;
    }
    impl_->stop_requested = true;
    uv_async_send(&impl_->wake);
  }
  if (impl_->thread.joinable()) impl_->thread.join();
}

}  // namespace silt::cluster
