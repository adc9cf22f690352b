// `silt topic create|list|describe|delete|alter-config` on a local data directory.
#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <map>
#include <memory>

#include "base/random.h"
#include "client/admin.h"
#include "client/cluster.h"
#include "client/table.h"
#include "cmd/cli_util.h"
#include "cmd/command.h"
#include "cmd/net_util.h"
#include "storage/data_dir.h"

namespace silt::cmd {
namespace {

struct TopicArgs {
  std::string name;
  int32_t partitions = 1;
  int16_t replication_factor = -1;
  int32_t new_partitions = 0;
  std::vector<std::string> configs;
  std::vector<std::string> delete_configs;
  std::string format = "text";
};

Result<std::map<std::string, std::string>> ParseConfigs(const std::vector<std::string>& kvs) {
  std::map<std::string, std::string> out;
  for (const auto& kv : kvs) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      return Status::InvalidArgument("bad --config '" + kv + "': expected KEY=VALUE");
    out[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return out;
}

std::string JoinConfigs(const std::map<std::string, std::string>& m) {
  std::string s;
  for (const auto& [k, v] : m) {
    if (!s.empty()) s += ", ";
    s += k + "=" + v;
  }
  return s.empty() ? "(defaults)" : s;
}

int Create(const GlobalOptions& g, const TopicArgs& a) {
  auto configs = ParseConfigs(a.configs);
  if (!configs.ok()) return Fail(configs.status());
  if (a.partitions < 1) return Fail("--partitions must be at least 1");
  auto dir = OpenDataDir(g, true);
  if (!dir.ok()) return Fail(dir.status());
  auto info = (*dir)->CreateTopic(a.name, NewTopicId(), a.partitions, *configs);
  if (!info.ok()) return Fail(info.status());
  Status st = (*dir)->Close();
  if (!st.ok()) return Fail(st);
  if (client::IsTerminal(1))
    std::printf("created topic %s with %d partition(s)\n", a.name.c_str(), info->partitions);
  return kExitOk;
}

int List(const GlobalOptions& g, const TopicArgs& a) {
  auto dir = OpenDataDir(g, false);
  if (!dir.ok()) return Fail(dir.status());
  std::string out;
  client::Table t({"TOPIC", "PARTITIONS"});
  for (const storage::TopicInfo& ti : (*dir)->ListTopics()) {
    if (a.format == "json") {
      nlohmann::ordered_json j = {{"topic", ti.name}, {"partitions", ti.partitions}};
      out += j.dump() + "\n";
    } else {
      t.AddRow({ti.name, Num(ti.partitions)});
    }
  }
  if (a.format != "json") out = t.Render(client::IsTerminal(1));
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

int Describe(const GlobalOptions& g, const TopicArgs& a) {
  auto dir = OpenDataDir(g, false);
  if (!dir.ok()) return Fail(dir.status());
  auto info = (*dir)->GetTopic(a.name);
  if (!info.ok()) {
    if (info.status().IsNotFound()) return Fail("topic '" + a.name + "' does not exist");
    return Fail(info.status());
  }
  auto config = (*dir)->TopicConfig(a.name);
  if (!config.ok()) return Fail(config.status());
  const bool human = client::IsTerminal(1);
  client::Table t({"PARTITION", "LOG-START", "LOG-END", "SIZE", "SEGMENTS"});
  nlohmann::ordered_json parts = nlohmann::ordered_json::array();
  std::vector<int32_t> ids = info->partition_ids;
  if (ids.empty())
    for (int32_t p = 0; p < info->partitions; ++p) ids.push_back(p);
  for (int32_t p : ids) {
    auto log = (*dir)->Partition(a.name, p);
    if (!log.ok()) return Fail(log.status());
    const storage::PartitionLog* l = *log;
    int64_t size = l->size_bytes();
    size_t segments = l->Segments().size();
    parts.push_back({{"partition", p},
                     {"log_start_offset", l->log_start_offset().value()},
                     {"log_end_offset", l->log_end_offset().value()},
                     {"size", size},
                     {"segments", segments}});
    t.AddRow({Num(p), Num(l->log_start_offset().value()), Num(l->log_end_offset().value()),
              human ? client::HumanBytes(size) : Num(size), Num(static_cast<int64_t>(segments))});
  }
  std::string out;
  if (a.format == "json") {
    nlohmann::ordered_json j = {{"topic", info->name},
                        {"topic_id", info->topic_id},
                        {"partition_count", info->partitions},
                        {"partitions", parts},
                        {"configs", info->configs},
                        {"effective_configs", config->ToMap()}};
    out = j.dump() + "\n";
  } else {
    out = "Topic: " + info->name + "\nTopicId: " + info->topic_id +
          "\nPartitions: " + Num(info->partitions) + "\nConfigs: " + JoinConfigs(info->configs) +
          "\n";
    if (human) out += "\n";
    out += t.Render(human);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

int Delete(const GlobalOptions& g, const TopicArgs& a) {
  auto dir = OpenDataDir(g, true);
  if (!dir.ok()) return Fail(dir.status());
  Status st = (*dir)->DeleteTopic(a.name);
  if (st.IsNotFound()) return Fail("topic '" + a.name + "' does not exist");
  if (!st.ok()) return Fail(st);
  st = (*dir)->Close();
  if (!st.ok()) return Fail(st);
  if (client::IsTerminal(1)) std::printf("deleted topic %s\n", a.name.c_str());
  return kExitOk;
}

int AlterConfig(const GlobalOptions& g, const TopicArgs& a) {
  if (a.configs.empty() && a.delete_configs.empty() && a.new_partitions == 0)
    return Fail("alter-config needs at least one --config KEY=VALUE, --delete-config KEY or "
                "--partitions N");
  auto configs = ParseConfigs(a.configs);
  if (!configs.ok()) return Fail(configs.status());
  auto dir = OpenDataDir(g, true);
  if (!dir.ok()) return Fail(dir.status());
  Status st;
  if (a.new_partitions > 0) {
    st = (*dir)->AddPartitions(a.name, a.new_partitions);
    if (st.IsNotFound()) return Fail("topic '" + a.name + "' does not exist");
    if (!st.ok()) return Fail(st);
  }
  if (!a.configs.empty() || !a.delete_configs.empty())
    st = (*dir)->AlterTopicConfig(a.name, *configs, a.delete_configs);
  if (st.IsNotFound()) return Fail("topic '" + a.name + "' does not exist");
  if (!st.ok()) return Fail(st);
  st = (*dir)->Close();
  if (!st.ok()) return Fail(st);
  return kExitOk;
}


// ---- network mode (-b): the same commands as Kafka admin requests ----------------------------

using ClusterPtr = std::unique_ptr<client::Cluster>;

std::string Ints(const std::vector<int32_t>& v) {
  std::string s;
  for (int32_t x : v) {
    if (!s.empty()) s += ",";
    s += std::to_string(x);
  }
  return s;
}

int NetCreate(client::Cluster* c, const TopicArgs& a) {
  auto configs = ParseConfigs(a.configs);
  if (!configs.ok()) return Fail(configs.status());
  if (a.partitions < 1) return Fail("--partitions must be at least 1");
  client::TopicSpec spec;
  spec.name = a.name;
  spec.partitions = a.partitions;
  spec.replication_factor = a.replication_factor;
  spec.configs = *configs;
  Status st = client::CreateTopic(c, spec);
  if (!st.ok()) return Fail(st);
  if (client::IsTerminal(1))
    std::printf("created topic %s with %d partition(s)\n", a.name.c_str(), a.partitions);
  return kExitOk;
}

int NetList(client::Cluster* c, const TopicArgs& a) {
  auto meta = c->FetchMetadata(std::nullopt, false);
  if (!meta.ok()) return Fail(meta.status());
  std::map<std::string, int32_t> topics;
  for (const auto& t : meta->topics)
    if (t.error_code == 0) topics[t.name] = static_cast<int32_t>(t.partitions.size());
  std::string out;
  client::Table t({"TOPIC", "PARTITIONS"});
  for (const auto& [name, n] : topics) {
    if (a.format == "json") {
      out += nlohmann::ordered_json({{"topic", name}, {"partitions", n}}).dump() + "\n";
    } else {
      t.AddRow({name, Num(n)});
    }
  }
  if (a.format != "json") out = t.Render(client::IsTerminal(1));
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

int NetDescribe(client::Cluster* c, const TopicArgs& a) {
  auto meta = c->Topic(a.name, false);
  if (!meta.ok()) {
    if (meta.status().IsNotFound()) return Fail("topic '" + a.name + "' does not exist");
    return Fail(meta.status());
  }
  std::map<int32_t, int64_t> earliest_q, latest_q;
  for (const auto& p : meta->partitions) {
    earliest_q[p.partition] = -2;
    latest_q[p.partition] = -1;
  }
  auto starts = client::ListOffsets(c, a.name, earliest_q);
  if (!starts.ok()) return Fail(starts.status());
  auto ends = client::ListOffsets(c, a.name, latest_q);
  if (!ends.ok()) return Fail(ends.status());
  // Configs are best effort: an old broker may not answer DescribeConfigs.
  std::map<std::string, std::string> overrides, effective;
  auto configs = client::DescribeTopicConfigs(c, a.name);
  if (configs.ok()) {
    for (const auto& e : *configs) {
      std::string v = e.sensitive ? "(sensitive)" : e.value.value_or("");
      effective[e.name] = v;
      if (!e.is_default) overrides[e.name] = v;
    }
  }
  const bool human = client::IsTerminal(1);
  client::Table t({"PARTITION", "LEADER", "REPLICAS", "ISR", "LOG-START", "LOG-END"});
  nlohmann::ordered_json parts = nlohmann::ordered_json::array();
  for (const auto& p : meta->partitions) {
    int64_t s = (*starts)[p.partition], e = (*ends)[p.partition];
    parts.push_back({{"partition", p.partition},
                     {"leader", p.leader},
                     {"replicas", p.replicas},
                     {"isr", p.isr},
                     {"log_start_offset", s},
                     {"log_end_offset", e}});
    t.AddRow({Num(p.partition), Num(p.leader), Ints(p.replicas), Ints(p.isr), Num(s), Num(e)});
  }
  std::string out;
  if (a.format == "json") {
    nlohmann::ordered_json j = {{"topic", a.name},
                                {"partition_count", meta->partitions.size()},
                                {"partitions", parts},
                                {"configs", overrides},
                                {"effective_configs", effective}};
    out = j.dump() + "\n";
  } else {
    out = "Topic: " + a.name + "\nPartitions: " + Num(static_cast<int64_t>(meta->partitions.size())) +
          "\nConfigs: " + JoinConfigs(overrides) + "\n";
    if (human) out += "\n";
    out += t.Render(human);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

int NetDelete(client::Cluster* c, const TopicArgs& a) {
  Status st = client::DeleteTopic(c, a.name);
  if (!st.ok()) return Fail(st);
  if (client::IsTerminal(1)) std::printf("deleted topic %s\n", a.name.c_str());
  return kExitOk;
}

int NetAlterConfig(client::Cluster* c, const TopicArgs& a) {
  if (a.configs.empty() && a.delete_configs.empty() && a.new_partitions == 0)
    return Fail("alter-config needs at least one --config KEY=VALUE, --delete-config KEY or "
                "--partitions N");
  auto configs = ParseConfigs(a.configs);
  if (!configs.ok()) return Fail(configs.status());
  if (a.new_partitions > 0) {
    Status st = client::CreatePartitions(c, a.name, a.new_partitions);
    if (!st.ok()) return Fail(st);
  }
  if (!a.configs.empty() || !a.delete_configs.empty()) {
    Status st = client::AlterTopicConfigs(c, a.name, *configs, a.delete_configs);
    if (!st.ok()) return Fail(st);
  }
  return kExitOk;
}

int RunNet(const GlobalOptions& g, const TopicArgs& a, int (*fn)(client::Cluster*, const TopicArgs&)) {
  auto c = ConnectCluster(g);
  if (!c.ok()) return Fail(c.status());
  return fn(c->get(), a);
}

}  // namespace

RunFn RegisterTopic(CLI::App* sub, GlobalOptions* g) {
  auto a = std::make_shared<TopicArgs>();
  sub->require_subcommand(1);
  AddDataDirOption(sub, g);
  AddBootstrapOption(sub, g);

  CLI::App* create = sub->add_subcommand("create", "create a topic");
  create->add_option("name", a->name, "topic name")->required();
  create->add_option("--partitions", a->partitions, "number of partitions (default 1)");
  create->add_option("--replication-factor", a->replication_factor,
                     "with -b: replicas per partition (default: the broker's default)");
  create->add_option("--config", a->configs, "topic config KEY=VALUE (repeatable)")
      ->allow_extra_args(false);
  AddDataDirOption(create, g);
  AddBootstrapOption(create, g);

  CLI::App* list = sub->add_subcommand("list", "list topics");
  list->add_option("--format", a->format, "output format: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  AddDataDirOption(list, g);
  AddBootstrapOption(list, g);

  CLI::App* describe = sub->add_subcommand("describe", "show partitions, offsets, sizes and configs");
  describe->add_option("name", a->name, "topic name")->required();
  describe->add_option("--format", a->format, "output format: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  AddDataDirOption(describe, g);
  AddBootstrapOption(describe, g);

  CLI::App* del = sub->add_subcommand("delete", "delete a topic and all its data");
  del->add_option("name", a->name, "topic name")->required();
  AddDataDirOption(del, g);
  AddBootstrapOption(del, g);

  CLI::App* alter = sub->add_subcommand("alter-config", "set or remove topic config overrides");
  alter->add_option("name", a->name, "topic name")->required();
  alter->add_option("--config", a->configs, "topic config KEY=VALUE to set (repeatable)")
      ->allow_extra_args(false);
  alter->add_option("--delete-config", a->delete_configs,
                    "topic config KEY to reset to its default (repeatable)")
      ->allow_extra_args(false);
  alter->add_option("--partitions", a->new_partitions,
                    "grow the topic to N partitions (never shrinks)");
  AddDataDirOption(alter, g);
  AddBootstrapOption(alter, g);

  return [=]() {
    if (NetworkMode(*g)) {
      if (create->parsed()) return RunNet(*g, *a, NetCreate);
      if (list->parsed()) return RunNet(*g, *a, NetList);
      if (describe->parsed()) return RunNet(*g, *a, NetDescribe);
      if (del->parsed()) return RunNet(*g, *a, NetDelete);
      if (alter->parsed()) return RunNet(*g, *a, NetAlterConfig);
    }
    if (create->parsed()) return Create(*g, *a);
    if (list->parsed()) return List(*g, *a);
    if (describe->parsed()) return Describe(*g, *a);
    if (del->parsed()) return Delete(*g, *a);
    if (alter->parsed()) return AlterConfig(*g, *a);
    return Fail("topic: expected a subcommand: create, list, describe, delete or alter-config");
  };
}

}  // namespace silt::cmd
