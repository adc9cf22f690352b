// `silt replicate SOURCE DEST`: copies topics between data dirs and clusters, byte for byte and
// at the same offsets where the destination allows it. The loop lives in
// lib/replicate/replicator; this file parses flags, opens both ends, shows progress and maps the
// outcome to an exit status.
#include <CLI/CLI.hpp>

#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstdio>
#include <map>
#include <memory>

#include "base/clock.h"
#include "client/offset_spec.h"
#include "client/table.h"
#include "cmd/command.h"
#include "cmd/usage.h"
#include "replicate/endpoint.h"
#include "replicate/replicator.h"

namespace silt::cmd {
namespace {

struct ReplicateArgs {
  std::string source;
  std::string dest;
  std::vector<std::string> topics;
  std::vector<std::string> patterns;
  bool follow = false;
  std::string from = "beginning";
  std::string groups;
  bool configs = false;
  std::string checkpoint;
  bool promote = false;
  bool allow_gaps = false;
  bool truncate_destination = false;
  std::string fsync = "step";
  std::string format = "text";
  bool quiet = false;
};

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }

void CatchSignals() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

// A stable name of the source for its checkpoint at the destination.
std::string SourceId(const replicate::EndpointSpec& spec) {
  if (spec.kind == replicate::EndpointSpec::Kind::kCluster) {
    std::string id = "kafka:";
    for (size_t i = 0; i < spec.bootstrap.size(); ++i) id += (i ? "," : "") + spec.bootstrap[i];
    return id;
  }
  char* real = ::realpath(spec.dir.c_str(), nullptr);
  std::string path = real ? real : spec.dir;
  ::free(real);
  return "dir:" + path;
}

// One line per topic on a terminal's stderr, redrawn in place.
class TerminalProgress {
 public:
  TerminalProgress() : enabled_(client::IsTerminal(2)), start_(MonotonicMs()) {}
  void Show(const replicate::Progress& pr) {
    if (!enabled_ || pr.final) return;
    if (MonotonicMs() - start_ < client::ProgressDelayMs()) return;
    struct Sum {
      int64_t records = 0, bytes = 0, lag = 0, lag_ms = 0;
      int parts = 0;
    };
    std::map<std::string, Sum> by_topic;
    for (const auto& p : pr.partitions) {
      Sum& s = by_topic[p.topic];
      s.records += p.records;
      s.bytes += p.bytes;
      s.lag += p.lag_records;
      s.lag_ms = std::max(s.lag_ms, p.lag_ms);
      ++s.parts;
    }
    std::string out;
    if (lines_ > 0) out += "\033[" + std::to_string(lines_) + "A";
    double secs = std::max(0.001, (MonotonicMs() - start_) / 1000.0);
    for (const auto& [topic, s] : by_topic) {
      char line[512];
      std::snprintf(line, sizeof line,
                    "\r\033[K%s: %lld records, %s copied (%s/s), lag %lld records, %.1f s\n",
                    topic.c_str(), static_cast<long long>(s.records),
                    client::HumanBytes(s.bytes).c_str(),
                    client::HumanBytes(static_cast<int64_t>(s.bytes / secs)).c_str(),
                    static_cast<long long>(s.lag), s.lag_ms / 1000.0);
      out += line;
    }
    std::fputs(out.c_str(), stderr);
    lines_ = static_cast<int>(by_topic.size());
  }
  void Done() {
    if (!enabled_ || lines_ == 0) return;
    std::string out = "\033[" + std::to_string(lines_) + "A";
    for (int i = 0; i < lines_; ++i) out += "\r\033[K\n";
    out += "\033[" + std::to_string(lines_) + "A";
    std::fputs(out.c_str(), stderr);
  }

 private:
  bool enabled_;
  int64_t start_;
  int lines_ = 0;
};

void PrintJson(const replicate::Progress& pr) {
  const int64_t now = NowMs().value();
  for (const auto& p : pr.partitions) {
    std::printf(
        "{\"time\":%lld,\"topic\":\"%s\",\"partition\":%d,\"records\":%lld,\"bytes\":%lld,"
        "\"next_offset\":%lld,\"source_end\":%lld,\"lag_records\":%lld,\"lag_seconds\":%.3f}\n",
        static_cast<long long>(now), p.topic.c_str(), p.partition,
        static_cast<long long>(p.records), static_cast<long long>(p.bytes),
        static_cast<long long>(p.next.value()), static_cast<long long>(p.source_end.value()),
        static_cast<long long>(p.lag_records), p.lag_ms / 1000.0);
  }
  std::fflush(stdout);
}

int Run(const ReplicateArgs& a) {
  auto src = replicate::ParseEndpoint(a.source);
  if (!src.ok()) return Fail(src.status());
  auto dst = replicate::ParseEndpoint(a.dest);
  if (!dst.ok()) return Fail(dst.status());
  if (src->kind == replicate::EndpointSpec::Kind::kDataDir &&
      dst->kind == replicate::EndpointSpec::Kind::kDataDir && SourceId(*src) == SourceId(*dst))
    return Fail("SOURCE and DEST are the same data dir");

  replicate::ReplicatorOptions o;
  o.topics = a.topics;
  o.patterns = a.patterns;
  o.follow = a.follow;
  o.copy_configs = a.configs;
  if (!a.groups.empty()) o.groups = a.groups;
  o.promote = a.promote;
  o.allow_gaps = a.allow_gaps;
  o.truncate_destination = a.truncate_destination;
  o.checkpoint_file = a.checkpoint;
  if (a.fsync == "end") {
    o.fsync = replicate::FsyncMode::kEnd;
  } else if (a.fsync == "never") {
    o.fsync = replicate::FsyncMode::kNever;
  }
  if (o.fsync != replicate::FsyncMode::kStep &&
      dst->kind != replicate::EndpointSpec::Kind::kDataDir)
    return Fail("--fsync " + a.fsync + ": only a data dir DEST can be written without an fsync "
                "at every step (a cluster acknowledges what it has made durable)");
  o.source_id = SourceId(*src);
  o.stop = &g_stop;
  // A data dir's step costs a few cache flushes whatever its size (a syncfs and the atomic
  // checkpoint file, some 25 ms on a common disk), which at local copy speeds is a third of a
  // 64 MiB step: its steps are larger, still bounded by step_ms (a resume after a crash compares
  // what was copied past the checkpoint and goes on after it, it does not copy it again).
  if (dst->kind == replicate::EndpointSpec::Kind::kDataDir) o.step_bytes = 256 << 20;
  // Bytes copied between two checkpoints (a tuning knob; small values make tests of a kill in
  // the middle of a copy reliable).
  if (const char* v = ::getenv("SILT_REPLICATE_STEP_BYTES"); v && *v) {
    char* end = nullptr;
    long long n = std::strtoll(v, &end, 10);
    if (*end != '\0' || n <= 0)
      return Fail(std::string("SILT_REPLICATE_STEP_BYTES: expected a positive number of bytes, "
                              "got '") + v + "'");
    o.step_bytes = n;
    o.chunk_bytes = std::min<int64_t>(o.chunk_bytes, n);
    o.file_chunk_bytes = std::min<int64_t>(o.file_chunk_bytes, n);
  }
  if (a.promote && a.follow) return Fail("--promote cannot be used with --follow: a promoted "
                                         "topic is no longer a copy");
  if (a.from == "beginning") {
    o.from = replicate::ReplicatorOptions::From::kBeginning;
  } else if (a.from == "end") {
    o.from = replicate::ReplicatorOptions::From::kEnd;
  } else if (!a.from.empty() && a.from[0] == '@') {
    auto ts = client::ParseTimestampMs(a.from.substr(1));
    if (!ts.ok()) return Fail(ts.status().WithContext("--from"));
    o.from = replicate::ReplicatorOptions::From::kTime;
    o.from_time_ms = *ts;
  } else {
    return Fail("--from '" + a.from + "': expected beginning, end or @TIME" +
                DidYouMean(a.from, {"beginning", "end"}));
  }

  replicate::OpenOptions oo;
  oo.fsync = o.fsync;
  // Copy into a cluster the way it is done into Apache Kafka even when the destination is a
  // silt cluster (re-produced batches and an offset map): for tests and comparisons.
  if (const char* v = ::getenv("SILT_REPLICATE_REPRODUCE"); v && std::string(v) == "1")
    oo.force_reproduce = true;
  auto source = replicate::OpenSource(*src, oo);
  if (!source.ok()) return Fail(source.status());
  auto sink = replicate::OpenSink(*dst, oo);
  if (!sink.ok()) return Fail(sink.status());

  const bool json = a.format == "json";
  TerminalProgress progress;
  if (json) {
    o.on_progress = [](const replicate::Progress& pr) { PrintJson(pr); };
  } else if (!a.quiet) {
    o.on_progress = [&progress](const replicate::Progress& pr) { progress.Show(pr); };
    o.progress_ms = 250;
  }
  CatchSignals();
  const int64_t start = MonotonicMs();
  replicate::Replicator r(source->get(), sink->get(), o);
  Status st = r.Run();
  progress.Done();
  const replicate::Summary& s = r.summary();
  sink->reset();  // closes the destination (a data dir's clean-shutdown marker, its lock)
  const double secs = (MonotonicMs() - start) / 1000.0;
  if (json) {
    std::printf("{\"done\":true,\"ok\":%s,\"stopped\":%s,\"topics\":%lld,\"partitions\":%lld,"
                "\"records\":%lld,\"bytes\":%lld,\"batches\":%lld,\"groups\":%lld,"
                "\"seconds\":%.3f}\n",
                st.ok() ? "true" : "false", s.stopped ? "true" : "false",
                static_cast<long long>(s.topics), static_cast<long long>(s.partitions),
                static_cast<long long>(s.records), static_cast<long long>(s.bytes),
                static_cast<long long>(s.batches), static_cast<long long>(s.groups_copied), secs);
    std::fflush(stdout);
  } else if (!a.quiet && (st.ok() || s.records > 0)) {
    std::printf("%s %lld records (%s in %lld batches) of %lld topic(s), %lld partition(s) in "
                "%.1f s%s\n",
                st.ok() ? "copied" : "copied before the error", static_cast<long long>(s.records),
                client::HumanBytes(s.bytes).c_str(), static_cast<long long>(s.batches),
                static_cast<long long>(s.topics), static_cast<long long>(s.partitions), secs,
                s.stopped ? " (interrupted; the next run resumes from the checkpoint)" : "");
    if (s.groups_copied || s.groups_skipped_active)
      std::printf("copied the offsets of %lld group(s); left %lld active group(s) alone\n",
                  static_cast<long long>(s.groups_copied),
                  static_cast<long long>(s.groups_skipped_active));
    if (s.gaps_skipped)
      std::printf("skipped records deleted at the source in %lld partition(s) (--allow-gaps)\n",
                  static_cast<long long>(s.gaps_skipped));
    if (s.truncated)
      std::printf("truncated %lld destination partition(s) (--truncate-destination)\n",
                  static_cast<long long>(s.truncated));
    for (const auto& t : s.promoted) std::printf("promoted %s\n", t.c_str());
  }
  if (!st.ok()) {
    Fail(st);
    return s.mismatch ? kExitProblem : kExitError;
  }
  return kExitOk;
}

}  // namespace

RunFn RegisterReplicate(CLI::App* sub, GlobalOptions*) {
  auto a = std::make_shared<ReplicateArgs>();
  sub->add_option("source", a->source,
                  "where to copy from: a data dir, or a cluster kafka://HOST:PORT[,HOST:PORT...]")
      ->required()
      ->type_name("SOURCE");
  sub->add_option("dest", a->dest,
                  "where to copy to: a data dir, or a cluster kafka://HOST:PORT[,HOST:PORT...]")
      ->required()
      ->type_name("DEST");
  sub->add_option("-t,--topic", a->topics, "copy topic NAME (repeatable; default: every topic)")
      ->type_name("NAME")
      ->allow_extra_args(false);
  sub->add_option("--topics", a->patterns,
                  "copy the topics whose whole name matches REGEX (repeatable)")
      ->type_name("REGEX")
      ->allow_extra_args(false);
  sub->add_flag("-f,--follow", a->follow,
                "keep copying new records, partitions and topics until interrupted");
  sub->add_option("--from", a->from,
                  "where a partition not copied before starts: beginning (default), end or "
                  "@TIME");
  sub->add_option("--groups", a->groups,
                  "also copy the committed offsets of the groups matching REGEX (those not "
                  "active at DEST)")
      ->type_name("REGEX");
  sub->add_flag("--configs", a->configs,
                "copy topic configs too, except those that describe the destination cluster");
  sub->add_option("--checkpoint", a->checkpoint,
                  "keep the checkpoint in FILE instead of at DEST")
      ->type_name("FILE");
  sub->add_flag("--promote", a->promote,
                "when the copy is complete, check it and make the copies writable");
  sub->add_flag("--allow-gaps", a->allow_gaps,
                "skip records the source deleted before they were copied, instead of failing");
  sub->add_flag("--truncate-destination", a->truncate_destination,
                "cut a destination whose records differ from the source's, instead of failing");
  sub->add_option("--fsync", a->fsync,
                  "into a data dir, when to fsync what is copied: step (before each checkpoint; "
                  "the default), end (once, at the end) or never (left to the page cache, as cp)")
      ->type_name("MODE")
      ->check(OneOf({"step", "end", "never"}));
  sub->add_option("--format", a->format,
                  "text, or json: one line per partition per second (records, bytes, lag)")
      ->check(OneOf({"text", "json"}));
  sub->add_flag("-q,--quiet", a->quiet, "print nothing but errors");
  return [a] { return Run(*a); };
}

}  // namespace silt::cmd
