// `silt produce`: lines (or JSON objects) from files or stdin into a topic of a local data dir
// or (with -b) a cluster. The batching and partitioning live in client/ behind
// client::Producer; this file parses flags, reads input and reports, once for both modes.
#include <CLI/CLI.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "base/clock.h"
#include "client/cluster.h"
#include "client/line_reader.h"
#include "client/local_producer.h"
#include "client/net_producer.h"
#include "client/record_format.h"
#include "client/table.h"
#include "protocol/consumer_offsets.h"
#include "cmd/cli_util.h"
#include "cmd/command.h"
#include "cmd/net_util.h"
#include "cmd/usage.h"
#include "storage/data_dir.h"

namespace silt::cmd {
namespace {

struct ProduceArgs {
  std::string topic;
  std::vector<std::string> files;
  std::string key_delimiter;
  std::string key;
  bool key_set = false;
  std::vector<std::string> headers;
  int32_t partition = -1;
  std::string partitioner = "murmur2";
  std::string compression = "none";
  std::string format = "text";
  int64_t batch_size = 256 << 10;
  int64_t linger_ms = 5;
  bool no_create = false;
  std::string acks = "all";
  bool no_idempotence = false;
};

Result<format::Compression> ParseCompression(const std::string& s) {
  if (s == "none") return format::Compression::kNone;
  if (s == "gzip") return format::Compression::kGzip;
  if (s == "snappy") return format::Compression::kSnappy;
  if (s == "lz4") return format::Compression::kLz4;
  if (s == "zstd") return format::Compression::kZstd;
  return Status::InvalidArgument("unknown compression '" + s +
                                 "': expected none, gzip, snappy, lz4 or zstd");
}

// Progress on stderr, only when it is a terminal and the work takes a while.
class Progress {
 public:
  explicit Progress(int64_t total_bytes)
      : enabled_(client::IsTerminal(2)), total_(total_bytes), start_(MonotonicMs()) {}
  void Update(int64_t records, int64_t bytes) {
    if (!enabled_) return;
    int64_t now = MonotonicMs();
    if (now - start_ < client::ProgressDelayMs() || now - last_ < 250) return;
    last_ = now;
    double secs = (now - start_) / 1000.0;
    std::string pct;
    if (total_ > 0) pct = " (" + std::to_string(bytes * 100 / total_) + "%)";
    std::fprintf(stderr, "\r\033[Kproduced %lld records, %s read%s, %s/s",
                 static_cast<long long>(records), client::HumanBytes(bytes).c_str(), pct.c_str(),
                 client::HumanBytes(static_cast<int64_t>(bytes / secs)).c_str());
    shown_ = true;
  }
  void Done() {
    if (shown_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  bool enabled_;
  int64_t total_;
  int64_t start_;
  int64_t last_ = 0;
  bool shown_ = false;
};

// Set by SIGINT/SIGTERM: stop reading input, send what was read, say how much was written.
std::atomic<bool> g_interrupted{false};
void OnInterrupt(int) { g_interrupted.store(true); }

void CatchInterrupts() {
  struct sigaction sa {};
  sa.sa_handler = OnInterrupt;
  sa.sa_flags = SA_RESTART;  // file and socket calls carry on; only a wait (poll) is cut short
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

// Reads every input and hands each record to `p`. Stops at the first failure, which it stores
// in *failed with *failed_where naming the input line.
void PumpInputs(client::Producer& p, const ProduceArgs& a,
                const std::vector<std::pair<std::string, std::string>>& header_kv,
                std::vector<std::pair<std::string, int>>& inputs, int64_t total_bytes,
                Status* failed_out, std::string* failed_where_out,
                std::string* interrupted_where_out) {
  Status& failed = *failed_out;
  std::string& failed_where = *failed_where_out;
  const bool json = a.format == "json";
  // A JSON line may be several times its record's size (escapes, base64); the record itself is
  // checked against max.message.bytes once parsed.
  const size_t max_line = json ? static_cast<size_t>(p.max_message_bytes()) * 6 + 4096
                               : static_cast<size_t>(p.max_message_bytes());
  client::HeaderViews headers;
  client::InputRecord rec;
  Progress progress(total_bytes);
  int64_t read_before = 0;

  // Unless a record brings its own, its timestamp is the time its input was read: the clock is
  // read once per read() of the input rather than once per line.
  int64_t read_at = -1;
  int64_t read_at_bytes = -1;
  for (auto& [name, fd] : inputs) {
    read_at_bytes = -1;  // a new reader counts from 0 again
    struct stat st;
    const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    client::LineReader reader(fd, name, 1 << 20, max_line);
    for (;;) {
      std::string_view line;
      // Pipes and terminals: when input pauses, append what is waiting (linger), then block.
      int timeout = regular ? -1 : static_cast<int>(a.linger_ms);
      auto ev = reader.Next(&line, timeout);
      if (ev.ok() && *ev == client::LineReader::Event::kIdle) {
        failed = p.SendPending();
        if (!failed.ok()) break;
        // Wait for more in short steps, so that an interrupt is seen while input is quiet.
        do {
          ev = reader.Next(&line, 250);
        } while (ev.ok() && *ev == client::LineReader::Event::kIdle && !g_interrupted.load());
      }
      if (g_interrupted.load(std::memory_order_relaxed)) {
        *interrupted_where_out = name + " line " + std::to_string(reader.line_number() + 1);
        break;
      }
      if (!ev.ok()) {
        failed = ev.status();
        break;
      }
      if (*ev == client::LineReader::Event::kEof) break;
      if (*ev != client::LineReader::Event::kLine) continue;

      std::optional<std::string_view> key, value;
      headers.clear();
      int64_t ts = -1;
      if (json) {
        Status st = client::ParseJsonRecord(line, &rec);
        if (!st.ok()) {
          failed = st;
          failed_where = name + ": line " + std::to_string(reader.line_number());
          break;
        }
        if (rec.key) key = *rec.key;
        if (rec.value) value = *rec.value;
        for (const auto& [hk, hv] : rec.headers)
          headers.emplace_back(hk, hv ? std::optional<std::string_view>(*hv) : std::nullopt);
        ts = rec.timestamp;
      } else if (!a.key_delimiter.empty()) {
        size_t at = line.find(a.key_delimiter);
        if (at == std::string_view::npos) {
          value = line;
        } else {
          key = line.substr(0, at);
          value = line.substr(at + a.key_delimiter.size());
        }
      } else {
        value = line;
      }
      if (a.key_set) key = a.key;
      for (const auto& [hk, hv] : header_kv) headers.emplace_back(hk, hv);
      if (ts < 0) {
        if (reader.bytes_read() != read_at_bytes) {
          read_at_bytes = reader.bytes_read();
          read_at = NowMs().value();
        }
        ts = read_at;
      }
      Status st = p.Send(key, value, headers, ts);
      if (!st.ok()) {
        failed = st;
        failed_where = name + ": line " + std::to_string(reader.line_number());
        break;
      }
      progress.Update(p.records_delivered(), read_before + reader.bytes_read());
    }
    read_before += reader.bytes_read();
    if (!failed.ok() || !interrupted_where_out->empty()) break;
  }
  progress.Done();
}



// The producer of either mode, with what it writes to (kept alive as long as it).
struct Sink {
  std::unique_ptr<storage::DataDir> dir;
  std::unique_ptr<client::Cluster> cluster;
  std::unique_ptr<client::Producer> producer;
};

Result<Sink> OpenSink(const GlobalOptions& g, const ProduceArgs& a, format::Compression compression,
                      client::Partitioner::Kind kind) {
  Sink s;
  if (NetworkMode(g)) {
    client::NetProducerOptions po;
    po.compression = compression;
    po.batch_bytes = static_cast<size_t>(a.batch_size);
    po.linger_ms = a.linger_ms;
    if (a.acks == "all" || a.acks == "-1") po.acks = -1;
    else if (a.acks == "1") po.acks = 1;
    else if (a.acks == "0") po.acks = 0;
    else return Status::InvalidArgument("bad --acks '" + a.acks + "': expected 0, 1 or all");
    po.idempotent = !a.no_idempotence;
    po.partitioner = kind;
    po.partition = a.partition;
    po.create_topic = !a.no_create;
    SILT_ASSIGN_OR_RETURN(s.cluster, ConnectCluster(g));
    SILT_ASSIGN_OR_RETURN(s.producer, client::NetProducer::Open(s.cluster.get(), a.topic, po));
    return s;
  }
  if (a.topic == protocol::kConsumerOffsetsTopic)
    return Status::InvalidArgument(
        "cannot produce to the internal topic __consumer_offsets (use silt consume -g or "
        "silt group)");
  SILT_ASSIGN_OR_RETURN(s.dir, OpenDataDir(g, true));
  client::ProducerOptions po;
  po.compression = compression;
  po.batch_bytes = static_cast<size_t>(a.batch_size);
  po.partitioner = kind;
  po.partition = a.partition;
  po.create_topic = !a.no_create;
  po.background = true;  // parse lines on this core, compress and append on the other
  SILT_ASSIGN_OR_RETURN(s.producer, client::LocalProducer::Open(s.dir.get(), a.topic, po));
  return s;
}

int Run(const GlobalOptions& g, const ProduceArgs& a) {
  auto compression = ParseCompression(a.compression);
  if (!compression.ok()) return Fail(compression.status());
  auto kind = client::Partitioner::ParseKind(a.partitioner);
  if (!kind.ok()) return Fail(kind.status());
  if (a.format != "text" && a.format != "json")
    return Fail("unknown input format '" + a.format + "': expected text or json");
  if (a.format == "json" && !a.key_delimiter.empty())
    return Fail("-K splits text lines; it cannot be used with --format json");
  if (!a.key_delimiter.empty() && a.key_set) return Fail("-K and -k cannot be used together");
  if (a.batch_size < 1) return Fail("--batch-size must be positive");
  if (a.linger_ms < 0) return Fail("--linger-ms must not be negative");
  std::vector<std::pair<std::string, std::string>> header_kv;
  for (const auto& h : a.headers) {
    auto eq = h.find('=');
    if (eq == std::string::npos || eq == 0) return Fail("bad header '" + h + "': expected KEY=VALUE");
    header_kv.emplace_back(h.substr(0, eq), h.substr(eq + 1));
  }

  if (!NetworkMode(g)) {
    if (Status st = CheckCanCreateDataDir(g.data_dir); !st.ok()) return Fail(st);
  }

  // Open every input before writing anything, so a typo in a file name changes nothing.
  std::vector<std::pair<std::string, int>> inputs;
  int64_t total_bytes = 0;
  auto close_inputs = [&] {
    for (auto& [name, fd] : inputs)
      if (fd != STDIN_FILENO) ::close(fd);
  };
  if (a.files.empty()) inputs.emplace_back("stdin", STDIN_FILENO);
  for (const auto& f : a.files) {
    if (f == "-") {
      inputs.emplace_back("stdin", STDIN_FILENO);
      continue;
    }
    int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      int err = errno;
      close_inputs();
      return Fail("cannot read " + f + ": " + std::strerror(err));
    }
    struct stat st;
    if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
      ::close(fd);
      close_inputs();
      return Fail("cannot read " + f + ": is a directory");
    }
    if (S_ISREG(st.st_mode)) total_bytes += st.st_size;
    inputs.emplace_back(f, fd);
  }

  auto sink = OpenSink(g, a, *compression, *kind);
  if (!sink.ok()) {
    close_inputs();
    if (sink.status().IsNotFound())
      return Fail("topic '" + a.topic + "' does not exist" +
                  (a.no_create ? " (and --no-create was given)" : ""));
    return Fail(sink.status());
  }
  client::Producer& p = *sink->producer;

  Status failed;
  std::string failed_where, interrupted_where;
  CatchInterrupts();
  PumpInputs(p, a, header_kv, inputs, total_bytes, &failed, &failed_where, &interrupted_where);
  close_inputs();

  // Whatever happened, every record before the failure goes out as whole batches and is synced
  // (or acknowledged): nothing is left half-written.
  Status flushed = p.Flush();
  Status closed = sink->dir ? sink->dir->Close() : Status::OK();
  const char* done = sink->dir ? "written" : "acknowledged";
  if (!failed.ok()) {
    std::string msg = failed_where.empty() ? failed.message() : failed_where + ": " + failed.message();
    if (failed.IsTooLarge() && failed_where.empty())
      msg += " (topic '" + a.topic + "' has max.message.bytes=" +
             std::to_string(p.max_message_bytes()) + ")";
    msg += "; the " + std::to_string(p.records_delivered()) + " record(s) before it were " + done;
    return Fail(msg);
  }
  if (!flushed.ok()) return Fail(flushed);
  if (!closed.ok()) return Fail(closed);
  if (!interrupted_where.empty())
    return Fail("interrupted at " + interrupted_where + ": " +
                std::to_string(p.records_delivered()) + " record(s) before it were " + done +
                " to topic '" + a.topic + "'");
  if (p.records_failed() > 0)
    return Fail(std::to_string(p.records_failed()) + " record(s) were not acknowledged (" +
                std::to_string(p.records_delivered()) + " were); first error: " + p.first_error());
  return kExitOk;
}

}  // namespace

RunFn RegisterProduce(CLI::App* sub, GlobalOptions* g) {
  auto a = std::make_shared<ProduceArgs>();
  sub->add_option("-t,--topic", a->topic, "topic to write to")->required()->type_name("TOPIC");
  sub->add_option("file", a->files, "input files, one record per line (default: stdin; - is stdin)")
      ->type_name("FILE");
  sub->add_option("-K,--key-delimiter", a->key_delimiter,
                  "split each line at the first DELIM into key and value");
  sub->add_option("-k,--key", a->key, "the same key for every record")
      ->each([a](const std::string&) { a->key_set = true; });
  sub->add_option("-H,--header", a->headers, "header KEY=VALUE on every record (repeatable)")
      ->allow_extra_args(false);
  sub->add_option("-p,--partition", a->partition, "write every record to partition N")
      ->check(NonNegative());
  sub->add_option("--partitioner", a->partitioner,
                  "murmur2 (default; sticky for unkeyed records), round-robin or random")
      ->check(OneOf({"murmur2", "round-robin", "random"}));
  sub->add_option("-z,--compression", a->compression, "none, gzip, snappy, lz4 or zstd")
      ->check(OneOf({"none", "gzip", "snappy", "lz4", "zstd"}));
  sub->add_option("--format", a->format,
                  "input format: text (a record per line) or json (objects as consume prints)")
      ->check(OneOf({"text", "json"}));
  sub->add_option("--batch-size", a->batch_size, "close a batch at this many bytes (default 256 KiB)");
  sub->add_option("--linger-ms", a->linger_ms,
                  "when input pauses, write waiting records after MS milliseconds (default 5)");
  sub->add_flag("--no-create", a->no_create, "fail if the topic does not exist");
  sub->add_option("--acks", a->acks,
                  "with -b: acknowledgements to wait for: 0, 1 or all (default all)")
      ->check(OneOf({"0", "1", "all", "-1"}));
  sub->add_flag("--no-idempotence", a->no_idempotence,
                "with -b: no producer id and sequence numbers (retries may then duplicate)");
  AddDataDirOption(sub, g);
  AddBootstrapOption(sub, g);
  return [g, a]() { return Run(*g, *a); };
}

}  // namespace silt::cmd
