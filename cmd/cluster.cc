// `silt cluster`: the cluster at a glance, like `kcat -L` and `rpk cluster info`: brokers, the
// controller, fenced brokers, the metadata quorum (Raft term, commit index, each voter's log
// end) and every partition's leader, leader epoch, replicas, ISR, offline replicas and status
// (ok, under-replicated: ISR smaller than the replicas, offline: no leader). Over the
// network with standard Kafka requests (Metadata, DescribeQuorum), so it works against Apache
// Kafka as well; on a data directory (-d) the single-node view of its topics.
#include "client/cluster.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "client/admin.h"
#include "client/table.h"
#include "cmd/cli_util.h"
#include "cmd/command.h"
#include "cmd/net_util.h"
#include "cmd/usage.h"

namespace silt::cmd {
namespace {

using Json = nlohmann::ordered_json;

struct ClusterArgs {
  std::vector<std::string> topics;
  bool internal = false;
  std::string format = "text";
};

// What one view needs, from either mode.
struct View {
  client::ClusterDescription cluster;
  std::vector<int32_t> fenced;  // voters that Metadata does not list as brokers
  std::optional<client::QuorumDescription> quorum;
  bool data_dir = false;
};

std::string Ints(const std::vector<int32_t>& v) {
  std::string s;
  for (int32_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s.empty() ? "-" : s;
}

std::string NodeOrDash(int32_t id) { return id < 0 ? "-" : std::to_string(id); }

Json NodeOrNull(int32_t id) { return id < 0 ? Json(nullptr) : Json(id); }

// A partition without a leader is offline; one whose ISR is smaller than its replica set is
// under-replicated (a data directory, which knows no replicas, is neither).
bool Known(const client::PartitionInfo& p) { return !p.replicas.empty(); }
bool Offline(const client::PartitionInfo& p) { return Known(p) && p.leader < 0; }
bool UnderReplicated(const client::PartitionInfo& p) { return p.isr.size() < p.replicas.size(); }
std::string PartitionStatus(const client::PartitionInfo& p) {
  if (!Known(p)) return "-";
  if (Offline(p)) return "offline";
  if (UnderReplicated(p)) return "under-replicated";
  return "ok";
}

bool Wanted(const client::TopicInfo& t, const ClusterArgs& a) {
  return !t.internal || a.internal || !a.topics.empty();
}

Result<View> NetworkView(const GlobalOptions& g, const ClusterArgs& a) {
  SILT_ASSIGN_OR_RETURN(std::unique_ptr<client::Cluster> c, ConnectCluster(g));
  View v;
  std::optional<std::vector<std::string>> topics;
  if (!a.topics.empty()) topics = a.topics;
  SILT_ASSIGN_OR_RETURN(v.cluster, client::DescribeCluster(c.get(), topics));
  SILT_ASSIGN_OR_RETURN(v.quorum, client::DescribeQuorum(c.get(), v.cluster.controller_id));
  if (v.quorum) {
    // Every voter is also a broker (combined mode): one Metadata does not list is fenced.
    std::set<int32_t> listed;
    for (const auto& b : v.cluster.brokers) listed.insert(b.node_id);
    for (const auto& r : v.quorum->voters)
      if (!listed.count(r.replica_id)) v.fenced.push_back(r.replica_id);
  }
  return v;
}

Result<View> DataDirView(const GlobalOptions& g, const ClusterArgs& a) {
  SILT_ASSIGN_OR_RETURN(std::unique_ptr<client::Admin> admin, OpenAdmin(g, /*writable=*/false));
  View v;
  v.data_dir = true;
  std::vector<std::string> names = a.topics;
  if (names.empty()) {
    auto listed = admin->ListTopics();
    if (!listed.ok()) return listed.status();
    for (const auto& t : *listed) names.push_back(t.name);
  }
  for (const std::string& name : names) {
    auto d = admin->DescribeTopic(name);
    if (!d.ok()) return d.status();
    client::TopicInfo ti;
    ti.name = d->name;
    ti.topic_id = d->topic_id;
    ti.internal = d->internal;
    for (const auto& p : d->partitions)
      ti.partitions.push_back({p.partition, p.leader.value_or(-1), -1, 0, p.replicas, p.isr, {}});
    v.cluster.topics.push_back(std::move(ti));
  }
  std::sort(v.cluster.topics.begin(), v.cluster.topics.end(),
            [](const auto& x, const auto& y) { return x.name < y.name; });
  (void)admin->Close();
  return v;
}

// The one JSON schema (man/silt-cluster.1, OUTPUT FORMAT).
std::string RenderJson(const View& v, const ClusterArgs& a) {
  Json brokers = Json::array();
  for (const auto& b : v.cluster.brokers)
    brokers.push_back({{"id", b.node_id},
                       {"host", b.host},
                       {"port", b.port},
                       {"rack", b.rack ? Json(*b.rack) : Json(nullptr)}});
  Json quorum = nullptr;
  if (v.quorum) {
    auto replicas = [&](const std::vector<client::QuorumReplica>& rs) {
      Json out = Json::array();
      for (const auto& r : rs) {
        Json lag = r.log_end_offset < 0
                       ? Json(nullptr)
                       : Json(std::max<int64_t>(0, v.quorum->high_watermark - r.log_end_offset));
        out.push_back({{"id", r.replica_id},
                       {"log_end", r.log_end_offset < 0 ? Json(nullptr) : Json(r.log_end_offset)},
                       {"lag", lag}});
      }
      return out;
    };
    quorum = {{"leader", NodeOrNull(v.quorum->leader_id)},
              {"term", v.quorum->leader_epoch},
              {"commit_index", v.quorum->high_watermark},
              {"voters", replicas(v.quorum->voters)},
              {"observers", replicas(v.quorum->observers)}};
  }
  Json topics = Json::array();
  for (const auto& t : v.cluster.topics) {
    if (!Wanted(t, a)) continue;
    Json parts = Json::array();
    for (const auto& p : t.partitions)
      parts.push_back({{"partition", p.partition},
                       {"leader", NodeOrNull(p.leader)},
                       {"leader_epoch", p.leader_epoch < 0 ? Json(nullptr) : Json(p.leader_epoch)},
                       {"replicas", p.replicas},
                       {"isr", p.isr},
                       {"offline_replicas", p.offline_replicas},
                       {"error_code", p.error_code},
                       {"under_replicated", Known(p) ? Json(UnderReplicated(p)) : Json(nullptr)},
                       {"offline", Known(p) ? Json(Offline(p)) : Json(nullptr)}});
    topics.push_back({{"topic", t.name},
                      {"topic_id", t.topic_id ? Json(*t.topic_id) : Json(nullptr)},
                      {"internal", t.internal},
                      {"partitions", parts}});
  }
  Json j = {{"cluster_id", v.cluster.cluster_id ? Json(*v.cluster.cluster_id) : Json(nullptr)},
            {"controller", NodeOrNull(v.cluster.controller_id)},
            {"brokers", brokers},
            {"fenced_brokers", v.fenced},
            {"quorum", quorum},
            {"topics", topics}};
  return j.dump() + "\n";
}

// On a terminal: headed sections of aligned tables. In a pipe: tab-separated rows, each starting
// with what it describes (broker, quorum, voter, partition), so awk can pick them apart.
std::string RenderText(const View& v, const ClusterArgs& a, bool human) {
  std::string out;
  auto section = [&](const std::string& title, const client::Table& t) {
    if (human) out += (out.empty() ? "" : "\n") + title + "\n";
    out += t.Render(human);
  };
  if (!v.data_dir) {
    if (human)
      out += "Cluster: " + v.cluster.cluster_id.value_or("-") +
             "\nController: " + NodeOrDash(v.cluster.controller_id) + "\n";
    client::Table b(human ? std::vector<std::string>{"ID", "HOST", "PORT", "STATUS"}
                          : std::vector<std::string>{"", "", "", "", ""});
    std::vector<std::pair<int32_t, std::vector<std::string>>> rows;
    for (const auto& x : v.cluster.brokers)
      rows.push_back({x.node_id,
                      {Num(x.node_id), x.host, Num(x.port),
                       x.node_id == v.cluster.controller_id ? "controller" : "active"}});
    for (int32_t f : v.fenced) rows.push_back({f, {Num(f), "-", "-", "fenced"}});
    std::sort(rows.begin(), rows.end());
    for (auto& [id, r] : rows) {
      if (!human) r.insert(r.begin(), "broker");
      b.AddRow(r);
    }
    section("Brokers:", b);
    if (v.quorum) {
      const auto& q = *v.quorum;
      if (human) {
        out += "\nQuorum: leader " + NodeOrDash(q.leader_id) + ", term " + Num(q.leader_epoch) +
               ", commit index " + Num(q.high_watermark) + "\n";
      } else {
        out += "quorum\t" + NodeOrDash(q.leader_id) + "\t" + Num(q.leader_epoch) + "\t" +
               Num(q.high_watermark) + "\n";
      }
      client::Table t(human ? std::vector<std::string>{"VOTER", "LOG-END", "LAG"}
                            : std::vector<std::string>{"", "", "", ""});
      for (const auto& r : q.voters) {
        std::string end = r.log_end_offset < 0 ? "-" : Num(r.log_end_offset);
        std::string lag = r.log_end_offset < 0
                              ? "-"
                              : Num(std::max<int64_t>(0, q.high_watermark - r.log_end_offset));
        std::vector<std::string> row = {Num(r.replica_id), end, lag};
        if (!human) row.insert(row.begin(), "voter");
        t.AddRow(row);
      }
      out += t.Render(human);
    }
  }
  client::Table p(human ? std::vector<std::string>{"TOPIC", "PARTITION", "LEADER", "EPOCH",
                                                   "REPLICAS", "ISR", "OFFLINE", "STATUS"}
                        : std::vector<std::string>{"", "", "", "", "", "", "", "", ""});
  for (const auto& t : v.cluster.topics) {
    if (!Wanted(t, a)) continue;
    for (const auto& x : t.partitions) {
      std::vector<std::string> row = {t.name,
                                      Num(x.partition),
                                      NodeOrDash(x.leader),
                                      x.leader_epoch < 0 ? "-" : Num(x.leader_epoch),
                                      Ints(x.replicas),
                                      Ints(x.isr),
                                      Ints(x.offline_replicas),
                                      PartitionStatus(x)};
      if (!human) row.insert(row.begin(), "partition");
      p.AddRow(row);
    }
  }
  if (!human || !p.empty()) section(v.data_dir ? "Topics (data directory):" : "Topics:", p);
  return out;
}

}  // namespace

RunFn RegisterCluster(CLI::App* sub, GlobalOptions* g) {
  auto a = std::make_shared<ClusterArgs>();
  AddDataDirOption(sub, g);
  AddBootstrapOption(sub, g);
  sub->add_option("-t,--topic", a->topics, "only this topic (repeatable)")
      ->type_name("TOPIC")
      ->allow_extra_args(false);
  sub->add_flag("--internal", a->internal, "include internal topics (__consumer_offsets)");
  sub->add_option("--format", a->format, "output format: text or json")
      ->check(OneOf({"text", "json"}));
  return [=]() {
    auto v = NetworkMode(*g) ? NetworkView(*g, *a) : DataDirView(*g, *a);
    if (!v.ok()) return Fail(v.status());
    std::string out =
        a->format == "json" ? RenderJson(*v, *a) : RenderText(*v, *a, client::IsTerminal(1));
    std::fwrite(out.data(), 1, out.size(), stdout);
    return kExitOk;
  };
}

}  // namespace silt::cmd
