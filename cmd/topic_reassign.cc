// `silt topic reassign`: partition reassignment with the plan files of Kafka's
// kafka-reassign-partitions (client/reassign.h has the requests and the plan format).
#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "client/admin.h"
#include "client/cluster.h"
#include "client/reassign.h"
#include "cmd/cli_util.h"
#include "cmd/command.h"
#include "cmd/net_util.h"
#include "protocol/errors.h"

namespace silt::cmd {

// silt's own topic config of the reassignment throttle (bytes per second of each leader's
// replica fetches for the partitions' adding replicas).
constexpr const char* kThrottleKey = "replica.reassignment.throttle.bytes";

namespace {

using Json = nlohmann::json;

// The plan file of kafka-reassign-partitions:
//   {"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2,3]}, ...]}
// InvalidArgument naming what is wrong (other version, missing field, a replica listed twice, a
// partition listed twice).
Result<std::vector<client::PartitionMove>> ParsePlan(const std::string& text) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::InvalidArgument("the plan is not a JSON object");
  }
  if (j.contains("version") && !(j["version"].is_number_integer() && j["version"] == 1)) {
    return Status::InvalidArgument("the plan's \"version\" must be 1");
  }
  if (!j.contains("partitions") || !j["partitions"].is_array()) {
    return Status::InvalidArgument("the plan has no \"partitions\" array");
  }
  std::vector<client::PartitionMove> out;
  std::set<std::pair<std::string, int32_t>> seen;
  for (const Json& e : j["partitions"]) {
    if (!e.is_object() || !e.contains("topic") || !e["topic"].is_string() ||
        !e.contains("partition") || !e["partition"].is_number_integer()) {
      return Status::InvalidArgument("each entry of \"partitions\" needs a \"topic\" string and "
                                     "a \"partition\" number");
    }
    client::PartitionMove m;
    m.topic = e["topic"].get<std::string>();
    m.partition = e["partition"].get<int32_t>();
    const std::string name = m.topic + "-" + std::to_string(m.partition);
    if (m.partition < 0) return Status::InvalidArgument("negative partition in " + name);
    if (!seen.insert({m.topic, m.partition}).second) {
      return Status::InvalidArgument(name + " is listed twice");
    }
    if (e.contains("replicas") && !e["replicas"].is_null()) {
      if (!e["replicas"].is_array()) {
        return Status::InvalidArgument("\"replicas\" of " + name + " is not an array");
      }
      m.replicas.emplace();
      std::set<int32_t> ids;
      for (const Json& r : e["replicas"]) {
        if (!r.is_number_integer() || r.get<int64_t>() < 0) {
          return Status::InvalidArgument("\"replicas\" of " + name + " must be broker ids");
        }
        if (!ids.insert(r.get<int32_t>()).second) {
          return Status::InvalidArgument("broker " + std::to_string(r.get<int32_t>()) +
                                         " is listed twice in the replicas of " + name);
        }
        m.replicas->push_back(r.get<int32_t>());
      }
      if (m.replicas->empty()) {
        return Status::InvalidArgument("\"replicas\" of " + name + " is empty");
      }
    }
    out.push_back(std::move(m));
  }
  return out;
}

std::string FormatPlan(const std::vector<client::PartitionMove>& moves) {
  Json parts = Json::array();
  for (const client::PartitionMove& m : moves) {
    Json e = {{"topic", m.topic}, {"partition", m.partition}};
    e["replicas"] = m.replicas ? Json(*m.replicas) : Json(nullptr);
    parts.push_back(std::move(e));
  }
  return Json{{"version", 1}, {"partitions", parts}}.dump();
}

struct ReassignArgs {
  std::string plan;
  bool execute = false;
  bool verify = false;
  bool cancel = false;
  bool generate = false;
  int64_t throttle = -1;
  std::string brokers;
  std::string topics;
};

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::string Ints(const std::vector<int32_t>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + std::to_string(v[i]);
  return out + "]";
}

Result<std::vector<client::PartitionMove>> ReadPlan(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::IOError("cannot read the plan " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto plan = ParsePlan(ss.str());
  if (!plan.ok()) return plan.status().WithContext(path);
  if (plan->empty()) return Status::InvalidArgument(path + ": the plan lists no partitions");
  return plan;
}

// The current replicas of every partition of `topics` (topic -> partition -> replicas).
Result<std::map<std::string, std::map<int32_t, std::vector<int32_t>>>> Current(
    client::Cluster* cluster, const std::set<std::string>& topics) {
  std::map<std::string, std::map<int32_t, std::vector<int32_t>>> out;
  for (const std::string& t : topics) {
    SILT_ASSIGN_OR_RETURN(client::TopicMeta meta, cluster->Topic(t, false));
    for (const auto& p : meta.partitions) out[t][p.partition] = p.replicas;
  }
  return out;
}

std::set<std::string> TopicsOf(const std::vector<client::PartitionMove>& plan) {
  std::set<std::string> out;
  for (const auto& m : plan) out.insert(m.topic);
  return out;
}

int Generate(client::Cluster* cluster, const ReassignArgs& a) {
  std::vector<int32_t> brokers;
  for (const std::string& b : Split(a.brokers)) {
    try {
      brokers.push_back(std::stoi(b));
    } catch (...) {
      return Fail("--brokers: '" + b + "' is not a broker id");
    }
  }
  std::vector<std::string> topics = Split(a.topics);
  if (brokers.empty() || topics.empty()) {
    return Fail("--generate needs --brokers ID,ID,... and --topics NAME,NAME,...");
  }
  auto current = Current(cluster, std::set<std::string>(topics.begin(), topics.end()));
  if (!current.ok()) return Fail(current.status());
  std::vector<client::PartitionMove> now;
  for (const auto& [t, parts] : *current) {
    for (const auto& [p, r] : parts) now.push_back({t, p, r});
  }
  auto plan = client::GeneratePlan(*current, brokers);
  if (!plan.ok()) return Fail(plan.status());
  std::printf("Current partition replica assignment\n%s\n\nProposed partition reassignment "
              "configuration\n%s\n",
              FormatPlan(now).c_str(), FormatPlan(*plan).c_str());
  return kExitOk;
}

int Report(const std::vector<client::PartitionOutcome>& outcomes, const char* what) {
  int failed = 0;
  for (const auto& o : outcomes) {
    if (o.error_code == 0) continue;
    ++failed;
    std::fprintf(stderr, "%s-%d: %s: %s\n", o.topic.c_str(), o.partition,
                 protocol::ErrorName(o.error_code), o.message.c_str());
  }
  if (failed) {
    std::fprintf(stderr, "silt topic reassign: %d of %zu partition(s) could not be %s\n", failed,
                 outcomes.size(), what);
    return kExitError;
  }
  std::printf("Successfully %s %zu partition(s).\n", what, outcomes.size());
  return kExitOk;
}

int Execute(client::Cluster* cluster, const ReassignArgs& a) {
  auto plan = ReadPlan(a.plan);
  if (!plan.ok()) return Fail(plan.status());
  for (const auto& m : *plan) {
    if (!m.replicas) return Fail(m.topic + "-" + std::to_string(m.partition) +
                                 ": --execute needs replicas for every partition");
  }
  auto current = Current(cluster, TopicsOf(*plan));
  if (!current.ok()) return Fail(current.status());
  std::vector<client::PartitionMove> rollback;
  for (const auto& m : *plan) {
    auto t = current->find(m.topic);
    if (t == current->end() || !t->second.count(m.partition)) {
      return Fail("partition " + m.topic + "-" + std::to_string(m.partition) +
                  " does not exist");
    }
    rollback.push_back({m.topic, m.partition, t->second.at(m.partition)});
  }
  std::printf("Current partition replica assignment\n%s\n\nSave this to use as the --plan "
              "during rollback\n",
              FormatPlan(rollback).c_str());
  if (a.throttle >= 0) {
    for (const std::string& t : TopicsOf(*plan)) {
      Status st =
          client::AlterTopicConfigs(cluster, t, {{kThrottleKey, std::to_string(a.throttle)}}, {});
      if (!st.ok()) return Fail(st.WithContext("setting the throttle of " + t));
    }
    std::printf("The reassignment throttle is %lld B/s; --verify removes it once the "
                "reassignment is complete.\n",
                static_cast<long long>(a.throttle));
  }
  auto outcomes = client::AlterPartitionReassignments(cluster, *plan);
  if (!outcomes.ok()) return Fail(outcomes.status());
  return Report(*outcomes, "started reassigning");
}

int Cancel(client::Cluster* cluster, const ReassignArgs& a) {
  auto plan = ReadPlan(a.plan);
  if (!plan.ok()) return Fail(plan.status());
  for (auto& m : *plan) m.replicas.reset();
  auto outcomes = client::AlterPartitionReassignments(cluster, *plan);
  if (!outcomes.ok()) return Fail(outcomes.status());
  return Report(*outcomes, "cancelled the reassignment of");
}

int Verify(client::Cluster* cluster, const ReassignArgs& a) {
  auto plan = ReadPlan(a.plan);
  if (!plan.ok()) return Fail(plan.status());
  auto ongoing = client::ListPartitionReassignments(cluster);
  if (!ongoing.ok()) return Fail(ongoing.status());
  std::map<std::pair<std::string, int32_t>, client::Reassignment> moving;
  for (const auto& r : *ongoing) moving[{r.topic, r.partition}] = r;
  auto current = Current(cluster, TopicsOf(*plan));
  if (!current.ok()) return Fail(current.status());
  int pending = 0, wrong = 0;
  for (const auto& m : *plan) {
    const std::string name = m.topic + "-" + std::to_string(m.partition);
    auto it = moving.find({m.topic, m.partition});
    if (it != moving.end()) {
      ++pending;
      std::printf("Reassignment of partition %s is still in progress (adding %s, removing %s).\n",
                  name.c_str(), Ints(it->second.adding_replicas).c_str(),
                  Ints(it->second.removing_replicas).c_str());
      continue;
    }
    std::vector<int32_t> now;
    auto t = current->find(m.topic);
    if (t != current->end() && t->second.count(m.partition)) now = t->second.at(m.partition);
    if (m.replicas && now != *m.replicas) {
      ++wrong;
      std::printf("There is no active reassignment of partition %s, but its replicas are %s, "
                  "not %s.\n",
                  name.c_str(), Ints(now).c_str(), Ints(*m.replicas).c_str());
    } else {
      std::printf("Reassignment of partition %s is complete.\n", name.c_str());
    }
  }
  if (pending == 0 && wrong == 0) {
    // As Kafka's tool: the throttle goes once nothing of the plan is moving. Unlike it, not while
    // a partition's replicas still differ from the plan: the metadata answering may trail the
    // controller's list, and a --verify that exits 1 should leave the throttle for the next one.
    for (const std::string& t : TopicsOf(*plan)) {
      auto configs = client::DescribeTopicConfigs(cluster, t);
      if (!configs.ok()) continue;
      bool set = false;
      for (const auto& c : *configs) set |= c.name == kThrottleKey && !c.is_default;
      if (!set) continue;
      Status st = client::AlterTopicConfigs(cluster, t, {}, {kThrottleKey});
      if (!st.ok()) return Fail(st.WithContext("removing the throttle of " + t));
      std::printf("Removed the reassignment throttle of topic %s.\n", t.c_str());
    }
  }
  if (pending || wrong) return kExitProblem;
  return kExitOk;
}

}  // namespace

RunFn RegisterTopicReassign(CLI::App* cmd, GlobalOptions* g) {
  auto a = std::make_shared<ReassignArgs>();
  cmd->add_option("--plan", a->plan,
                  "the reassignment plan, JSON as kafka-reassign-partitions writes it")
      ->type_name("FILE");
  cmd->add_flag("--execute", a->execute, "start the plan's reassignments");
  cmd->add_flag("--verify", a->verify,
                "say which of the plan's partitions are done (exit 1 while any is not); once "
                "all are, remove the throttle");
  cmd->add_flag("--cancel", a->cancel, "cancel the plan's reassignments in progress");
  cmd->add_flag("--generate", a->generate,
                "print a balanced plan of --topics over --brokers (changes nothing)");
  cmd->add_option("--throttle", a->throttle,
                  "with --execute: at most BYTES per second per leader for the new replicas' "
                  "catch-up (topic config " + std::string(kThrottleKey) + ")")
      ->type_name("BYTES/S");
  cmd->add_option("--brokers", a->brokers, "with --generate: the broker ids to place on")
      ->type_name("ID,ID,...");
  cmd->add_option("--topics", a->topics, "with --generate: the topics to move")
      ->type_name("NAME,NAME,...");
  AddBootstrapOption(cmd, g);
  return [=]() {
    const int modes = a->execute + a->verify + a->cancel + a->generate;
    if (modes != 1) {
      return Fail("topic reassign: give exactly one of --execute, --verify, --cancel or "
                  "--generate");
    }
    if (!NetworkMode(*g)) return Fail("topic reassign needs a cluster: -b HOST:PORT");
    if (!a->generate && a->plan.empty()) return Fail("topic reassign needs --plan FILE");
    if (a->throttle >= 0 && !a->execute) return Fail("--throttle goes with --execute");
    auto cluster = ConnectCluster(*g);
    if (!cluster.ok()) return Fail(cluster.status());
    if (a->generate) return Generate(cluster->get(), *a);
    if (a->execute) return Execute(cluster->get(), *a);
    if (a->cancel) return Cancel(cluster->get(), *a);
    return Verify(cluster->get(), *a);
  };
}

}  // namespace silt::cmd
