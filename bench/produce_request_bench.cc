// What one Produce request costs a broker, by the number of partitions it carries.
//
//   produce_request_bench -b HOST:PORT -t TOPIC --partitions-per-request K [--records-per-batch M]
//                         [--requests R] [--depth D] [--broker-pid PID]
//
// Sends R Produce requests (acks=1), each with one batch of M 100-byte records for each of K
// partitions (0..K-1 of TOPIC, which must have at least K), keeping D requests in flight on one
// connection, and prints requests/s, partitions/s, records/s and, given the broker's pid, the
// broker's CPU microseconds per request and per partition entry (utime + stime from
// /proc/PID/stat). The batches are built once and re-sent as they are: the figure is the
// broker's, not a client's.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "net/connection.h"
#include "format/record_batch.h"
#include "protocol/messages.h"

namespace {

double BrokerCpuSeconds(int pid) {
  if (pid <= 0) return 0;
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  // Fields after the command name, which is in parentheses and may hold spaces.
  size_t at = s.rfind(')');
  if (at == std::string::npos) return 0;
  std::vector<std::string> fields;
  size_t i = at + 2;
  while (i < s.size()) {
    size_t j = s.find(' ', i);
    if (j == std::string::npos) j = s.size();
    fields.push_back(s.substr(i, j - i));
    i = j + 1;
  }
  // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
  if (fields.size() < 13) return 0;
  return (std::stod(fields[11]) + std::stod(fields[12])) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

int Usage() {
  std::fprintf(stderr,
               "usage: produce_request_bench -b HOST:PORT -t TOPIC --partitions-per-request K "
               "[--records-per-batch M] [--requests R] [--depth D] [--broker-pid PID]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace silt;
  std::string bootstrap, topic;
  int k = 0, m = 100, requests = 1000, depth = 5, pid = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i], v = argv[i + 1];
    if (a == "-b") bootstrap = v;
    else if (a == "-t") topic = v;
    else if (a == "--partitions-per-request") k = std::atoi(v.c_str());
    else if (a == "--records-per-batch") m = std::atoi(v.c_str());
    else if (a == "--requests") requests = std::atoi(v.c_str());
    else if (a == "--depth") depth = std::atoi(v.c_str());
    else if (a == "--broker-pid") pid = std::atoi(v.c_str());
    else return Usage();
  }
  if (bootstrap.empty() || topic.empty() || k < 1 || m < 1 || requests < 1 || depth < 1) return Usage();
  auto hps = net::ParseBootstrap(bootstrap);
  if (!hps.ok() || hps->empty()) return Usage();
  auto conn = net::Connection::Open(hps->front(), "produce-request-bench", 10000);
  if (!conn.ok()) {
    std::fprintf(stderr, "%s\n", conn.status().ToString().c_str());
    return 1;
  }
  net::Connection& c = **conn;
  auto version = c.RequireVersion(protocol::ApiKey::kProduce);
  if (!version.ok()) {
    std::fprintf(stderr, "%s\n", version.status().ToString().c_str());
    return 1;
  }

  std::string value(90, 'v');
  std::vector<std::string> batches(k);
  for (int p = 0; p < k; ++p) {
    format::RecordBatchBuilder b({});
    for (int r = 0; r < m; ++r) {
      char key[16];
      std::snprintf(key, sizeof key, "%010d", p * m + r);
      b.Add(std::string_view(key, 10), value);
    }
    auto bytes = b.Finish();
    if (!bytes.ok()) return 1;
    batches[p] = std::move(*bytes);
  }
  protocol::ProduceRequest req;
  req.acks = 1;
  req.timeout_ms = 30000;
  req.topic_data.push_back({topic, {}});
  for (int p = 0; p < k; ++p) {
    protocol::ProduceRequest::PartitionData pd;
    pd.index = p;
    pd.records.bytes = std::string_view(batches[p]);
    req.topic_data[0].partition_data.push_back(pd);
  }

  const double cpu0 = BrokerCpuSeconds(pid);
  const auto t0 = std::chrono::steady_clock::now();
  int sent = 0, answered = 0, errors = 0;
  std::string body;
  while (answered < requests) {
    while (sent < requests && sent - answered < depth) {
      auto id = c.Send(req, *version);
      if (!id.ok()) {
        std::fprintf(stderr, "%s\n", id.status().ToString().c_str());
        return 1;
      }
      ++sent;
    }
    int32_t id = 0;
    Status st = c.Receive(&id, &body, 30000);
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", st.ToString().c_str());
      return 1;
    }
    ++answered;
    protocol::ProduceResponse resp;
    ByteReader r(body);
    if (!resp.Decode(r, *version).ok()) return 1;
    for (const auto& t : resp.responses)
      for (const auto& pr : t.partition_responses)
        if (pr.error_code != 0) ++errors;
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = BrokerCpuSeconds(pid) - cpu0;
  if (errors > 0) {
    std::fprintf(stderr, "%d partition answers carried an error\n", errors);
    return 1;
  }
  std::printf("%d partitions/request x %d records: %.0f requests/s, %.0f partitions/s, %.0f records/s",
              k, m, requests / secs, static_cast<double>(requests) * k / secs,
              static_cast<double>(requests) * k * m / secs);
  if (pid > 0)
    std::printf(", broker CPU %.1f us/request, %.2f us/partition", cpu * 1e6 / requests,
                cpu * 1e6 / (static_cast<double>(requests) * k));
  std::printf("\n");
  return 0;
}
