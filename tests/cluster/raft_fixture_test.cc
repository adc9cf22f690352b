// libraft 0.15's two known safety bugs, driven deterministically on its own raft_fixture
// (raft/fixture.h: in-memory I/O, simulated time and network). See lib/cluster/README.md for
// what they mean for silt.
//
// Each scenario runs in a forked child: the fixture abort()s when it sees two leaders in one
// term, and a scenario that goes wrong must not take the test binary with it. The child reports
// what it observed through a pipe; the parent asserts on it.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>
extern "C" {
#include <raft.h>
#include <raft/fixture.h>
}

using ApplyReq = struct raft_apply;
using BarrierReq = struct raft_barrier;

namespace {

// A state machine that keeps the 8-byte values of the entries it applied.
struct ValueFsm {
  raft_fsm fsm{};
  std::vector<uint64_t> applied;

  ValueFsm() {
    fsm.version = 1;
    fsm.data = this;
    fsm.apply = [](raft_fsm* f, const raft_buffer* buf, void** result) {
      uint64_t v = 0;
      std::memcpy(&v, buf->base, sizeof(v));
      static_cast<ValueFsm*>(f->data)->applied.push_back(v);
      *result = nullptr;
      return 0;
    };
    fsm.snapshot = [](raft_fsm*, raft_buffer**, unsigned*) { return RAFT_NOTFOUND; };
    fsm.restore = [](raft_fsm*, raft_buffer*) { return RAFT_NOTFOUND; };
  }
};

struct Cluster {
  raft_fixture f{};
  std::vector<ValueFsm> fsms;

  // n servers, the first n_voting of them voters, bootstrapped and started.
  Cluster(unsigned n, unsigned n_voting, bool pre_vote = false) : fsms(n) {
    REQUIRE(raft_fixture_initialize(&f) == 0);
    for (unsigned i = 0; i < n; ++i) REQUIRE(raft_fixture_grow(&f, &fsms[i].fsm) == 0);
    raft_configuration conf;
    REQUIRE(raft_fixture_configuration(&f, n_voting, &conf) == 0);
    REQUIRE(raft_fixture_bootstrap(&f, &conf) == 0);
    raft_configuration_close(&conf);
    for (unsigned i = 0; i < n; ++i) raft_set_pre_vote(raft(i), pre_vote);
    REQUIRE(raft_fixture_start(&f) == 0);
  }
  ~Cluster() { raft_fixture_close(&f); }

  struct raft* raft(unsigned i) {
    return raft_fixture_get(&f, i);
  }

  // " s<i>=<state>/<term>/<last index>" for each server, for failure messages.
  std::string Describe() {
    std::string out;
    for (unsigned i = 0; i < raft_fixture_n(&f); ++i) {
      out += " s" + std::to_string(i + 1) + "=" + std::to_string(raft_state(raft(i))) + "/" +
             std::to_string(raft(i)->current_term) + "/" +
             std::to_string(raft_last_index(raft(i))) + (raft_fixture_alive(&f, i) ? "" : "/dead");
    }
    out += " cut:";
    for (unsigned i = 0; i < raft_fixture_n(&f); ++i) {
      for (unsigned j = 0; j < raft_fixture_n(&f); ++j) {
        if (i != j && raft_fixture_saturated(&f, i, j)) {
          out += std::to_string(i + 1) + ">" + std::to_string(j + 1) + ",";
        }
      }
    }
    return out;
  }

  void Cut(unsigned i, unsigned j) {
    raft_fixture_saturate(&f, i, j);
    raft_fixture_saturate(&f, j, i);
  }
  void Heal(unsigned i, unsigned j) {
    raft_fixture_desaturate(&f, i, j);
    raft_fixture_desaturate(&f, j, i);
  }

  // Sets server j's election timer: `msecs` for every future randomization (the fixture's
  // random() answers it) and, for a follower or candidate, the running timer too (the
  // randomized timeout is the first field of both states). `expire_now` makes it fire at the
  // next tick.
  void SetTimer(unsigned j, unsigned msecs, bool expire_now) {
    struct raft* r = raft(j);
    raft_fixture_set_randomized_election_timeout(&f, j, msecs);
    if (raft_state(r) != RAFT_FOLLOWER && raft_state(r) != RAFT_CANDIDATE) return;
    unsigned t = msecs;
    raft_time elapsed = raft_fixture_time(&f) - r->election_timer_start;
    if (expire_now && elapsed > t) t = static_cast<unsigned>(elapsed);
    r->follower_state.randomized_election_timeout = t;
  }

  // Server i campaigns and wins, with the votes of `voters` if they grant them. A follower
  // that knows a leader refuses every vote (libraft's leader stickiness), so each voter first
  // times out into a candidate of its own; then every timer but i's is pushed far out, and i's
  // fires. Returns as soon as i leads, before any AppendEntries round trip.
  bool Campaign(unsigned i, std::vector<unsigned> voters) {
    for (unsigned v : voters) {
      if (raft_state(raft(v)) == RAFT_FOLLOWER && raft(v)->follower_state.current_leader.id != 0) {
        SetTimer(v, raft(v)->election_timeout, true);
        if (!raft_fixture_step_until_state_is(&f, v, RAFT_CANDIDATE, 10000)) return false;
      }
      SetTimer(v, 1000000, false);
    }
    for (unsigned j = 0; j < raft_fixture_n(&f); ++j) {
      if (j != i) SetTimer(j, 1000000, false);
    }
    SetTimer(i, raft(i)->election_timeout, true);
    return raft_fixture_step_until_state_is(&f, i, RAFT_LEADER, 30000);
  }

  // Brings server i back. A server killed while leading still believes it leads (the fixture
  // only stops its clock and network); step until a higher term has made it a follower.
  bool Revive(unsigned i) {
    raft_fixture_revive(&f, i);
    if (raft_state(raft(i)) != RAFT_LEADER) return true;
    return raft_fixture_step_until_state_is(&f, i, RAFT_FOLLOWER, 10000);
  }

  bool StepUntil(std::function<bool()> cond, unsigned max_msecs) {
    struct Arg {
      std::function<bool()>* cond;
    } arg{&cond};
    return raft_fixture_step_until(
        &f, [](raft_fixture*, void* a) { return (*static_cast<Arg*>(a)->cond)(); }, &arg,
        max_msecs);
  }

  // Proposes an entry of `value` on server i; the libraft error code (0 when appended).
  int Apply(unsigned i, uint64_t value) {
    raft_buffer buf;
    buf.len = 8;
    buf.base = raft_malloc(8);
    std::memcpy(buf.base, &value, 8);
    auto* req = new ApplyReq();  // freed with the fixture's process (the child exits)
    int rv = raft_apply(raft(i), req, &buf, 1, [](ApplyReq*, int, void*) {});
    if (rv != 0) raft_free(buf.base);
    return rv;
  }
};

raft_term TermOf(struct raft* r, raft_index index) {
  // The raft_log is a circular buffer of entries; index i is at front + (i - offset - 1).
  const raft_log& log = r->log;
  if (index <= log.offset) return 0;
  size_t n = (log.back + log.size - log.front) % log.size;
  size_t k = index - log.offset - 1;
  if (k >= n) return 0;
  return log.entries[(log.front + k) % log.size].term;
}

// Runs `scenario` in a child process; returns what it wrote (one line of "key=value" words), or
// a description of how the child ended when it did not exit normally.
std::string RunInChild(std::function<std::string()> scenario) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    ::alarm(60);  // bound: a scenario that hangs is killed
    // The fixture prints its verdict on stderr before abort(): keep it on the pipe too.
    ::dup2(fds[1], 2);
    std::string out;
    try {
      out = scenario();
    } catch (...) {
      // A failed REQUIRE inside the scenario: report it, never run on in the child.
      out += " exception";
    }
    ssize_t w = ::write(fds[1], out.data(), out.size());
    (void)w;
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) out += " signal=" + std::to_string(WTERMSIG(status));
  return out;
}

bool Has(const std::string& out, const std::string& word) {
  return out.find(word) != std::string::npos;
}

// Raft's Figure 8 up to (c): S1 (index 0) leads term 2 and gets entry 2 to S2 only; S5 leads
// term 3 and appends its own entry 2 alone; S1 comes back and leads term 4 with S2 and S3.
// `barrier_on_win` does what silt's leader does: propose a barrier as soon as it has won.
// Returns S1's commit index and entry terms once it has sent its log to S3, and, when `finish`
// is set, the rest of Figure 8: S1 dies, S5 wins term 5 with S2, S3, S4 and replicates.
std::string Figure8(bool barrier_on_win, bool finish) {
  Cluster c(5, 5);
  std::string out;
  if (!c.Campaign(0, {1, 2, 3, 4})) return "no-leader-term2";
  out += " s1_term=" + std::to_string(c.raft(0)->current_term);
  out += " index_after_win=" + std::to_string(raft_last_index(c.raft(0)));
  for (unsigned j : {2u, 3u, 4u}) c.Cut(0, j);
  if (c.Apply(0, 2) != 0) return out + " apply-refused";
  if (!c.StepUntil([&] { return raft_last_index(c.raft(1)) == 2; }, 5000)) return "no-replica";
  // (b): S1 and S2 are down; S5 wins term 3 with S3 and S4, appends its entry 2 and dies
  // before sending it anywhere.
  raft_fixture_kill(&c.f, 0);
  raft_fixture_kill(&c.f, 1);
  if (!c.Campaign(4, {2, 3})) return out + " no-leader-term3" + c.Describe();
  out += " s5_term=" + std::to_string(c.raft(4)->current_term);
  for (unsigned j : {1u, 2u, 3u}) c.Cut(4, j);
  if (c.Apply(4, 3) != 0) return out + " apply-refused";
  raft_fixture_kill(&c.f, 4);
  // (c): S1 and S2 come back; S4 is down, so S1 leads term 4 with S2 and S3.
  raft_fixture_kill(&c.f, 3);
  c.Heal(0, 2);
  raft_fixture_revive(&c.f, 1);
  if (!c.Revive(0)) return out + " s1-still-leads" + c.Describe();
  if (!c.Campaign(0, {1, 2})) return out + " no-leader-again" + c.Describe();
  out += " s1_term_again=" + std::to_string(c.raft(0)->current_term);
  if (barrier_on_win) {
    auto* b = new BarrierReq();
    if (raft_barrier(c.raft(0), b, [](BarrierReq*, int) {}) != 0) return out + " barrier-refused";
  }
  // Watch S1's commit index while it brings S2 and S3 up to date.
  std::vector<raft_index> commits{c.raft(0)->commit_index};
  c.StepUntil(
      [&] {
        if (c.raft(0)->commit_index != commits.back()) commits.push_back(c.raft(0)->commit_index);
        return raft_last_index(c.raft(2)) >= raft_last_index(c.raft(0)) &&
               c.raft(0)->commit_index >= 2;
      },
      5000);
  for (int k = 0; k < 50; ++k) {
    raft_fixture_step(&c.f);
    if (c.raft(0)->commit_index != commits.back()) commits.push_back(c.raft(0)->commit_index);
  }
  out += " commits=";
  for (size_t k = 0; k < commits.size(); ++k) out += (k ? "," : "") + std::to_string(commits[k]);
  out += " term_of_2=" + std::to_string(TermOf(c.raft(0), 2));
  out += " s1_applied=" + std::to_string(c.fsms[0].applied.size());
  if (!c.fsms[0].applied.empty()) out += " s1_first_value=" + std::to_string(c.fsms[0].applied[0]);
  if (!finish) return out;
  // (d): S1 dies; S4 and S5 come back, and S5 asks S2, S3 and S4 for their votes.
  raft_fixture_kill(&c.f, 0);
  raft_fixture_revive(&c.f, 3);
  for (unsigned j : {1u, 2u, 3u}) c.Heal(4, j);
  if (!c.Revive(4)) return out + " s5-still-leads" + c.Describe();
  bool won = c.Campaign(4, {1, 2, 3});
  out += won ? " s5_won_again=1" : " s5_won_again=0";
  if (won) {
    c.StepUntil([&] { return TermOf(c.raft(1), 2) == 3 || TermOf(c.raft(2), 2) == 3; }, 5000);
  }
  out += " s2_commit=" + std::to_string(c.raft(1)->commit_index);
  out += " s2_state=" + std::to_string(raft_state(c.raft(1)));
  out += " s3_state=" + std::to_string(raft_state(c.raft(2)));
  out += " s2_term_of_2=" + std::to_string(TermOf(c.raft(1), 2));
  out += " s3_term_of_2=" + std::to_string(TermOf(c.raft(2), 2));
  return out + c.Describe();
}

}  // namespace

TEST_CASE(
    "libraft 0.15 bug reproduced: a leader commits an earlier term's entry by counting "
    "replicas (Raft Figure 8)") {
  std::string out = RunInChild([] { return Figure8(false, true); });
  INFO("observed:" << out);
  CHECK(Has(out, "index_after_win=1"));  // 0.15 appends nothing of its own on winning
  CHECK(Has(out, "s1_term_again=4"));
  CHECK(Has(out, "term_of_2=2"));
  // What Raft forbids (§5.4.2) and 0.15 does: commit index 2 (term 2) in term 4 with no entry
  // of term 4 in the log at all, and apply it.
  CHECK(Has(out, "commits=1,2"));
  CHECK(Has(out, "s1_first_value=2"));
  // And the consequence (Figure 8 (d)): S5, without the committed entry 2, wins a later term
  // with the votes of S2, S3 and S4 (Leader Completeness broken). Observed on 0.15.0: S2 and
  // S3, which had learned commit index 2, do not let S5 overwrite it: they stop
  // (RAFT_UNAVAILABLE), and the quorum is gone.
  CHECK(Has(out, "s5_won_again=1"));
  CHECK(Has(out, "s2_commit=2"));
  CHECK(Has(out, "s2_state=0"));
  CHECK(Has(out, "s3_state=0"));
}

TEST_CASE(
    "with a barrier proposed on winning, the earlier term's entry commits only with an "
    "entry of the leader's own term") {
  std::string out = RunInChild([] { return Figure8(true, true); });
  INFO("observed:" << out);
  CHECK(Has(out, "s1_term_again=4"));
  CHECK(Has(out, "term_of_2=2"));
  // The barrier (index 3, term 4) is in the first AppendEntries that carries entry 2, so the
  // commit index goes from 1 to 3 at once: entry 2 is committed by the Raft rules.
  CHECK(Has(out, "commits=1,3"));
  CHECK_FALSE(Has(out, "commits=1,2"));
  // Then S5 cannot win with S2 and S3, whose logs end in term 4: the entry stays, and they
  // keep running.
  CHECK(Has(out, "s5_won_again=0"));
  CHECK(Has(out, "s2_term_of_2=2"));
  CHECK_FALSE(Has(out, "s2_state=0"));
  CHECK_FALSE(Has(out, "s3_state=0"));
}

namespace {

using ChangeReq = struct raft_change;

// The scenario of upstream's startElectionWithUnpersistedEntries test (fixed in 0.18.0), on
// four servers of which the first three vote: server 1 persists slowly; the leader demotes it
// and promotes server 3; server 1 receives that configuration but has not persisted it when a
// partition {0, 3} | {1, 2} comes. Returns what each side does next.
std::string UnpersistedConfiguration() {
  Cluster c(4, 3);
  std::string out;
  raft_fixture_set_disk_latency(&c.f, 1, 10000);
  c.Cut(0, 1);
  if (!c.Campaign(0, {2})) return "no-first-leader" + c.Describe();
  out += raft_state(c.raft(0)) == RAFT_LEADER ? " first_leader=0" : " first_leader=?";
  auto* demote = new ChangeReq();
  if (raft_assign(c.raft(0), demote, 2, RAFT_STANDBY, nullptr) != 0) return out + " assign-refused";
  if (!raft_fixture_step_until_applied(&c.f, 0, 2, 2000)) return out + " demotion-not-applied";
  auto* promote = new ChangeReq();
  int rv = raft_assign(c.raft(0), promote, 4, RAFT_VOTER, nullptr);
  if (rv != 0) return out + " promote-refused:" + raft_strerror(rv);
  if (!raft_fixture_step_until_applied(&c.f, 3, 3, 5000)) {
    return out + " promotion-not-applied" + c.Describe();
  }
  // Server 1 now receives the two configuration entries but keeps them in memory only.
  c.Heal(0, 1);
  c.StepUntil([&] { return raft_last_index(c.raft(1)) == raft_last_index(c.raft(0)); }, 3000);
  out += " s1_last_index=" + std::to_string(raft_last_index(c.raft(1)));
  out += " s1_last_stored=" + std::to_string(c.raft(1)->last_stored);
  out += " s0_last_index=" + std::to_string(raft_last_index(c.raft(0)));
  for (auto [i, j] : {std::pair{0u, 1u}, {0u, 2u}, {3u, 1u}, {3u, 2u}}) c.Cut(i, j);
  bool s1_won = c.Campaign(1, {2});
  out += s1_won ? " s1_won=1" : " s1_won=0";
  // Watch for a step at which servers 0 and 1 both lead.
  bool both = false;
  raft_term t0 = 0, t1 = 0;
  for (int k = 0; k < 20000 && raft_fixture_time(&c.f) < 60000; ++k) {
    raft_fixture_step(&c.f);
    if (raft_state(c.raft(0)) == RAFT_LEADER && raft_state(c.raft(1)) == RAFT_LEADER) {
      both = true;
      t0 = c.raft(0)->current_term;
      t1 = c.raft(1)->current_term;
      break;
    }
  }
  out += both ? " two_leaders=1" : " two_leaders=0";
  if (both) {
    out += " terms=" + std::to_string(t0) + "," + std::to_string(t1);
    // Each side commits on its own: server 1 with server 2, server 0 with server 3.
    if (c.Apply(1, 11) != 0 || c.Apply(0, 10) != 0) return out + " apply-refused";
    raft_index c0 = c.raft(0)->commit_index, c1 = c.raft(1)->commit_index;
    // Server 1's own disk takes 10 s (simulated) to persist.
    c.StepUntil([&] { return c.raft(0)->commit_index > c0 && c.raft(1)->commit_index > c1; },
                30000);
    out += c.raft(0)->commit_index > c0 ? " s0_commits=1" : " s0_commits=0";
    out += c.raft(1)->commit_index > c1 ? " s1_commits=1" : " s1_commits=0";
  }
  out += " s0_state=" + std::to_string(raft_state(c.raft(0)));
  return out + c.Describe();
}

}  // namespace

TEST_CASE(
    "libraft 0.15 bug reproduced: a candidate's unpersisted configuration entry lets two "
    "leaders commit at once") {
  std::string out = RunInChild(UnpersistedConfiguration);
  INFO("observed:" << out);
  CHECK(Has(out, "first_leader=0"));
  // Server 1 has the demotion and the promotion in memory, not on disk.
  CHECK(Has(out, "s0_last_index=3"));
  CHECK(Has(out, "s1_last_index=3"));
  CHECK(Has(out, "s1_last_stored=1"));
  // 0.15.0 sends the in-memory last index in RequestVote, server 2 grants, and server 1 leads
  // by the old configuration {0, 1, 2} while server 0 leads by the new one {0, 2, 3}.
  CHECK(Has(out, "two_leaders=1"));
  CHECK(Has(out, "s0_commits=1"));
  CHECK(Has(out, "s1_commits=1"));
}

TEST_CASE(
    "with static voters, a slow disk and the same partition give at most one side that "
    "commits") {
  std::string out = RunInChild([] {
    Cluster c(3, 3);
    std::string o;
    raft_fixture_set_disk_latency(&c.f, 1, 10000);
    if (!c.Campaign(0, {1, 2})) return std::string("no-first-leader");
    if (c.Apply(0, 1) != 0 || c.Apply(0, 2) != 0) return std::string("apply-refused");
    // Server 1 holds both entries in memory only; server 2 has them on disk.
    c.StepUntil([&] { return raft_last_index(c.raft(1)) == 3 && c.raft(0)->commit_index == 3; },
                3000);
    o += " s1_last_stored=" + std::to_string(c.raft(1)->last_stored);
    c.Cut(0, 1);
    c.Cut(0, 2);
    bool s1_won = c.Campaign(1, {2});
    o += s1_won ? " s1_won=1" : " s1_won=0";
    raft_index c0 = c.raft(0)->commit_index;
    // The old leader, alone, may still believe it leads for a while.
    o += c.Apply(0, 10) == 0 ? " s0_appended=1" : " s0_appended=0";
    o += c.Apply(1, 11) == 0 ? " s1_appended=1" : " s1_appended=0";
    c.StepUntil([&] { return false; }, 30000);
    o += c.raft(0)->commit_index > c0 ? " s0_commits=1" : " s0_commits=0";
    o += " s1_commit=" + std::to_string(c.raft(1)->commit_index);
    return o + c.Describe();
  });
  INFO("observed:" << out);
  CHECK(Has(out, "s1_last_stored=1"));
  CHECK(Has(out, "s1_won=1"));      // a legitimate election: {1, 2} is a majority of {0, 1, 2}
  CHECK(Has(out, "s0_commits=0"));  // and the old leader cannot commit alone
  CHECK(Has(out, "s1_commit=4"));   // the new one commits once its disk catches up
}
