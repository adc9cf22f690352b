// `silt consume`: records of a topic in a local data dir to stdout, like `cat` (or `tail -f`
// with -f). Reading and following live in client/local_consumer; formatting in
// client/record_format; this file wires flags, output and the consumer group position.
#include <CLI/CLI.hpp>

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "base/clock.h"
#include "client/cluster.h"
#include "client/local_consumer.h"
#include "client/net_consumer.h"
#include "client/offset_spec.h"
#include "client/record_format.h"
#include "cmd/cli_util.h"
#include "cmd/command.h"
#include "cmd/net_util.h"
#include "cmd/usage.h"
#include "format/record_batch.h"
#include "offsets/local.h"
#include "storage/data_dir.h"

namespace silt::cmd {
namespace {

struct ConsumeArgs {
  std::string topic;
  std::vector<int32_t> partitions;
  std::string offset = "beginning";
  bool follow = false;
  int64_t count = -1;
  std::string format = "text";
  std::string group;
  bool null_marker = false;
  bool strict = false;
};

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }

void CatchSignals() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

// The consumer of either mode, with what it reads from (kept alive as long as it).
struct Source {
  std::unique_ptr<storage::DataDir> dir;
  std::unique_ptr<client::Cluster> cluster;
  std::unique_ptr<client::Consumer> consumer;
};

// Damage met in a data dir (the partition is read up to it): reported as met, and the exit
// status is 2 when bytes that had been fsynced went bad.
bool g_damaged = false;

void ReportDamage(const std::string& message, bool fsynced) {
  std::fprintf(stderr, "silt: %s: %s\n", fsynced ? "damage" : "note", message.c_str());
  if (fsynced) g_damaged = true;
}

Result<Source> OpenSource(const GlobalOptions& g, const ConsumeArgs& a,
                          const client::OffsetSpec& spec) {
  Source s;
  if (NetworkMode(g)) {
    if (!a.group.empty() && !a.partitions.empty())
      return Status::InvalidArgument("-p cannot be used with -g: the group assigns the partitions");
    SILT_ASSIGN_OR_RETURN(s.cluster, ConnectCluster(g));
    client::NetConsumerOptions co;
    co.partitions = a.partitions;
    co.start = spec;
    co.follow = a.follow;
    co.group = a.group;
    SILT_ASSIGN_OR_RETURN(s.consumer, client::NetConsumer::Open(s.cluster.get(), a.topic, co));
    return s;
  }
  SILT_ASSIGN_OR_RETURN(s.dir, OpenDataDir(g, false, /*stop_at_damage=*/!a.strict));
  client::ConsumerOptions co;
  co.partitions = a.partitions;
  co.start = spec;
  co.follow = a.follow;
  co.group = a.group;
  co.stop_at_damage = !a.strict;
  co.on_damage = ReportDamage;
  SILT_ASSIGN_OR_RETURN(s.consumer, client::LocalConsumer::Open(s.dir.get(), a.topic, co));
  return s;
}

// One loop for both modes: the consumer delivers, this formats and writes.
int Run(const GlobalOptions& g, const ConsumeArgs& a) {
  auto range = client::ParseOffsetRange(a.offset);
  if (!range.ok()) return Fail(range.status());
  std::optional<client::OffsetSpec> end = range->end;
  ConsumeArgs args = a;
  // Up to the log end as it is now: what a run without -f reads.
  if (end && end->kind == client::OffsetSpec::Kind::kEnd) {
    args.follow = false;
    end.reset();
  }
  // The consumer counts a record it hands over as read, so a record past END would count as
  // read without being printed, and the group's position would move past it.
  if (end && !a.group.empty())
    return Fail("a range START:END cannot be used with -g: the group would record records past "
                "END as read; use -c N to stop after N records");
  const client::OffsetSpec* spec = &range->start;
  // A format with no %-token prints the same text for every record: a misspelt kind.
  if (a.format != "text" && a.format != "json" && a.format.find('%') == std::string::npos)
    return Fail("unknown format '" + a.format +
                "': expected text, json or a template with %-tokens like '%k=%s\\n'" +
                DidYouMean(a.format, {"text", "json"}));
  auto formatter = client::RecordFormatter::Parse(a.format);
  if (!formatter.ok()) return Fail(formatter.status());
  if (a.null_marker) formatter->set_null_marker("NULL");
  auto source = OpenSource(g, args, *spec);
  if (!source.ok()) return Fail(source.status());
  client::Consumer& consumer = *source->consumer;
  if (a.count == 0) return kExitOk;

  CatchSignals();
  Output out;
  const client::RecordFormatter& f = *formatter;
  const std::string& topic = a.topic;
  int64_t delivered = 0;
  const int64_t limit = a.count;
  // With a range END, each partition is done at its first record at or past END; the run is
  // done when every partition is.
  std::set<int32_t> open_partitions;
  auto past_end = [&](const format::RecordView& r) {
    if (end->kind == client::OffsetSpec::Kind::kAbsolute) return r.offset >= end->value;
    return r.timestamp >= end->value;
  };
  if (end) {
    for (const auto& [p, next] : consumer.Positions())
      if (end->kind != client::OffsetSpec::Kind::kAbsolute || next < end->value)
        open_partitions.insert(p);
    if (open_partitions.empty()) {
      Status closed = consumer.Close(true);
      return closed.ok() ? kExitOk : Fail(closed);
    }
  }
  auto fn = [&](int32_t partition, const format::RecordView& r) {
    if (end) {
      if (!open_partitions.count(partition)) return true;
      if (past_end(r)) {
        open_partitions.erase(partition);
        return !open_partitions.empty();
      }
    }
    f.Append(topic, partition, r, out.buffer());
    ++delivered;
    if (!out.MaybeFlush()) return false;
    return limit < 0 || delivered < limit;
  };
  // Without a count to stop at, long stretches may be formatted on both cores.
  if (limit < 0 && !end)
    consumer.SetBulkOutput(
        [&f, &topic](int32_t partition, const format::RecordView& r, std::string* o) {
          f.Append(topic, partition, r, o);
        },
        [&out](std::string_view s) { return out.Write(s); });
  // Flushed before the group commits, so a committed record has reached the reader.
  auto on_idle = [&]() -> Status {
    if (!out.Flush()) g_stop.store(true);  // the reader went away
    return Status::OK();
  };
  Status st = consumer.Run(fn, on_idle, &g_stop);
  out.Flush();
  // A reader that went away (EPIPE) took what it wanted: commit. Another write error lost
  // records the positions count as delivered: do not.
  const bool write_failed = out.broken() && out.error() != EPIPE;
  Status closed = consumer.Close(/*commit=*/!write_failed);
  if (write_failed) return Fail(std::string("writing to stdout: ") + std::strerror(out.error()));
  if (!st.ok()) return Fail(st);
  if (!closed.ok()) return Fail(closed);
  if (g_damaged)
    return Fail("the damage above was not read past (silt verify-crc --repair quarantines it)");
  return kExitOk;
}

}  // namespace

RunFn RegisterConsume(CLI::App* sub, GlobalOptions* g) {
  auto a = std::make_shared<ConsumeArgs>();
  sub->add_option("-t,--topic", a->topic, "topic to read")->required()->type_name("TOPIC");
  sub->add_option("-p,--partition", a->partitions, "read only partition N (repeatable)")
      ->allow_extra_args(false)
      ->check(NonNegative());
  sub->add_option("-o,--offset", a->offset,
                  "start at beginning, end, N, -N or @TIME, or read a range START:END (default "
                  "beginning); TIME: seconds (below 1e11) or ms since the epoch, -1h, -15m, or "
                  "ISO-8601");
  sub->add_flag("-f,--follow", a->follow, "keep waiting for new records, like tail -f");
  sub->add_option("-c,--count", a->count, "stop after N records")->check(NonNegative());
  sub->add_option("--format", a->format,
                  "text (the value), json, or a template of %t %p %o %k %s %K %S %T %T{iso} %h");
  sub->add_flag("-Z,--null", a->null_marker,
                "print a null key or value as NULL instead of nothing (json prints null)");
  sub->add_option("-g,--group", a->group,
                  "consumer group: resume after its recorded position and record the new one")
      ->type_name("GROUP");
  sub->add_flag("--strict", a->strict,
                "with -d: stop at damaged data before printing anything, instead of reading each "
                "partition up to its damage");
  AddDataDirOption(sub, g);
  AddBootstrapOption(sub, g);
  return [g, a]() { return Run(*g, *a); };
}

}  // namespace silt::cmd
