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
};

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }

// Records `positions` for `group` under `topic` in the data dir's __consumer_offsets. The dir
// stays read-only: appending takes only that partition's writer lock, so a producer running
// at the same time (e.g. `tail -F log | silt produce`) never holds the consumer up.
Status CommitPositions(offsets::LocalOffsets* store, const std::string& group,
                       const std::string& topic, const std::map<int32_t, int64_t>& positions) {
  offsets::GroupOffsets o;
  for (const auto& [p, off] : positions) o[topic][p].offset = off;
  Status s = store->Commit(group, o);
  if (!s.ok()) return s.WithContext("recording the position of group '" + group + "'");
  return Status::OK();
}

void CatchSignals() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

// Network mode: the same output through client::NetConsumer (and a Kafka consumer group with -g).
int RunNet(const GlobalOptions& g, const ConsumeArgs& a, const client::OffsetSpec& spec,
           const client::RecordFormatter& f) {
  auto cluster = ConnectCluster(g);
  if (!cluster.ok()) return Fail(cluster.status());
  client::NetConsumerOptions co;
  co.partitions = a.partitions;
  co.start = spec;
  co.follow = a.follow;
  co.group = a.group;
  if (!a.group.empty() && !a.partitions.empty())
    return Fail("-p cannot be used with -g: the group assigns the partitions");
  auto consumer = client::NetConsumer::Open(cluster->get(), a.topic, co);
  if (!consumer.ok()) return Fail(consumer.status());
  CatchSignals();
  Output out;
  int64_t delivered = 0;
  const int64_t limit = a.count;
  auto fn = [&](int32_t partition, const format::RecordView& r) {
    f.Append(a.topic, partition, r, out.buffer());
    ++delivered;
    if (!out.MaybeFlush()) return false;
    return limit < 0 || delivered < limit;
  };
  auto after_batch = [&]() -> Status {
    // Flushed before the group commits, so a committed record has reached the reader.
    if (!out.Flush()) g_stop.store(true);
    return Status::OK();
  };
  Status st = limit == 0 ? Status::OK() : (*consumer)->Run(fn, after_batch, &g_stop);
  out.Flush();
  Status closed = (*consumer)->Close();
  if (out.broken() && out.error() != EPIPE)
    return Fail(std::string("writing to stdout: ") + std::strerror(out.error()));
  if (!st.ok()) return Fail(st);
  if (!closed.ok()) return Fail(closed);
  return kExitOk;
}

int Run(const GlobalOptions& g, const ConsumeArgs& a) {
  auto spec = client::ParseOffsetSpec(a.offset);
  if (!spec.ok()) return Fail(spec.status());
  auto formatter = client::RecordFormatter::Parse(a.format);
  if (!formatter.ok()) return Fail(formatter.status());
  if (NetworkMode(g)) return RunNet(g, a, *spec, *formatter);

  auto dir = OpenDataDir(g, false);
  if (!dir.ok()) return Fail(dir.status());
  if (a.count == 0) return kExitOk;

  client::ConsumerOptions co;
  co.partitions = a.partitions;
  co.start = *spec;
  co.follow = a.follow;
  std::unique_ptr<offsets::LocalOffsets> store;
  if (!a.group.empty()) {
    // A broker owns the group's offsets while it runs; fail now rather than at the first commit.
    if (auto pid = offsets::RunningBrokerPid(g.data_dir))
      return Fail(offsets::BrokerRunningError(g.data_dir, *pid));
    auto opened = offsets::LocalOffsets::Open(dir->get());
    if (!opened.ok()) return Fail(opened.status());
    store = std::move(opened).value();
    auto committed = store->Group(a.group);
    if (!committed.ok()) return Fail(committed.status());
    if (*committed) {
      auto t = (*committed)->offsets.find(a.topic);
      if (t != (*committed)->offsets.end())
        for (const auto& [p, c] : t->second) co.committed[p] = c.offset;
    }
  }
  auto consumer = client::LocalConsumer::Open(dir->get(), a.topic, co);
  if (!consumer.ok()) return Fail(consumer.status());

  CatchSignals();

  Output out;
  const client::RecordFormatter& f = *formatter;
  const std::string& topic = a.topic;
  int64_t delivered = 0;
  const int64_t limit = a.count;
  auto fn = [&](int32_t partition, const format::RecordView& r) {
    f.Append(topic, partition, r, out.buffer());
    ++delivered;
    if (!out.MaybeFlush()) return false;
    return limit < 0 || delivered < limit;
  };
  // Without a count to stop at, long stretches are formatted on both cores.
  if (limit < 0)
    (*consumer)->SetBulkOutput(
        [&f, &topic](int32_t partition, const format::RecordView& r, std::string* o) {
          f.Append(topic, partition, r, o);
        },
        [&out](std::string_view s) { return out.Write(s); });
  int64_t last_commit = 0;
  std::map<int32_t, int64_t> committed_positions = co.committed;
  auto commit = [&]() -> Status {
    if (a.group.empty()) return Status::OK();
    auto pos = (*consumer)->Positions();
    if (pos == committed_positions) return Status::OK();
    SILT_TRY(CommitPositions(store.get(), a.group, a.topic, pos));
    committed_positions = pos;
    return Status::OK();
  };
  auto on_idle = [&]() -> Status {
    if (!out.Flush()) {
      g_stop.store(true);  // the reader went away
      return Status::OK();
    }
    if (!a.group.empty() && MonotonicMs() - last_commit >= 1000) {
      last_commit = MonotonicMs();
      SILT_TRY(commit());
    }
    return Status::OK();
  };
  Status st = (*consumer)->Run(fn, on_idle, &g_stop);
  out.Flush();
  if (out.broken() && out.error() != EPIPE)
    return Fail(std::string("writing to stdout: ") + std::strerror(out.error()));
  if (!st.ok()) return Fail(st);
  st = commit();
  if (!st.ok()) return Fail(st);
  return kExitOk;
}

}  // namespace

RunFn RegisterConsume(CLI::App* sub, GlobalOptions* g) {
  auto a = std::make_shared<ConsumeArgs>();
  sub->add_option("-t,--topic", a->topic, "topic to read")->required();
  sub->add_option("-p,--partition", a->partitions, "read only partition N (repeatable)")
      ->allow_extra_args(false)
      ->check(CLI::NonNegativeNumber);
  sub->add_option("-o,--offset", a->offset, "start at beginning, end, N, -N or @TIME (default beginning)");
  sub->add_flag("-f,--follow", a->follow, "keep waiting for new records, like tail -f");
  sub->add_option("-c,--count", a->count, "stop after N records")->check(CLI::NonNegativeNumber);
  sub->add_option("--format", a->format, "text (the value), json, or a template of %t %p %o %k %s %T %h");
  sub->add_option("-g,--group", a->group,
                  "consumer group: resume after its recorded position and record the new one");
  AddDataDirOption(sub, g);
  AddBootstrapOption(sub, g);
  return [g, a]() { return Run(*g, *a); };
}

}  // namespace silt::cmd
