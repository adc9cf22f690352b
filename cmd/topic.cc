// `silt topic create|list|describe|delete|alter-config` on a local data directory.
#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <map>
#include <memory>

#include "client/table.h"
#include "cmd/cli_util.h"
#include "cmd/command.h"
#include "storage/data_dir.h"

namespace silt::cmd {
namespace {

struct TopicArgs {
  std::string name;
  int32_t partitions = 1;
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
  auto info = (*dir)->CreateTopic(a.name, a.partitions, *configs);
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
  for (int32_t p = 0; p < info->partitions; ++p) {
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
  if (a.configs.empty() && a.delete_configs.empty())
    return Fail("alter-config needs at least one --config KEY=VALUE or --delete-config KEY");
  auto configs = ParseConfigs(a.configs);
  if (!configs.ok()) return Fail(configs.status());
  auto dir = OpenDataDir(g, true);
  if (!dir.ok()) return Fail(dir.status());
  Status st = (*dir)->AlterTopicConfig(a.name, *configs, a.delete_configs);
  if (st.IsNotFound()) return Fail("topic '" + a.name + "' does not exist");
  if (!st.ok()) return Fail(st);
  st = (*dir)->Close();
  if (!st.ok()) return Fail(st);
  return kExitOk;
}

}  // namespace

RunFn RegisterTopic(CLI::App* sub, GlobalOptions* g) {
  auto a = std::make_shared<TopicArgs>();
  sub->require_subcommand(1);
  AddDataDirOption(sub, g);

  CLI::App* create = sub->add_subcommand("create", "create a topic");
  create->add_option("name", a->name, "topic name")->required();
  create->add_option("--partitions", a->partitions, "number of partitions (default 1)");
  create->add_option("--config", a->configs, "topic config KEY=VALUE (repeatable)")
      ->allow_extra_args(false);
  AddDataDirOption(create, g);

  CLI::App* list = sub->add_subcommand("list", "list topics");
  list->add_option("--format", a->format, "output format: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  AddDataDirOption(list, g);

  CLI::App* describe = sub->add_subcommand("describe", "show partitions, offsets, sizes and configs");
  describe->add_option("name", a->name, "topic name")->required();
  describe->add_option("--format", a->format, "output format: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  AddDataDirOption(describe, g);

  CLI::App* del = sub->add_subcommand("delete", "delete a topic and all its data");
  del->add_option("name", a->name, "topic name")->required();
  AddDataDirOption(del, g);

  CLI::App* alter = sub->add_subcommand("alter-config", "set or remove topic config overrides");
  alter->add_option("name", a->name, "topic name")->required();
  alter->add_option("--config", a->configs, "topic config KEY=VALUE to set (repeatable)")
      ->allow_extra_args(false);
  alter->add_option("--delete-config", a->delete_configs,
                    "topic config KEY to reset to its default (repeatable)")
      ->allow_extra_args(false);
  AddDataDirOption(alter, g);

  return [=]() {
    if (create->parsed()) return Create(*g, *a);
    if (list->parsed()) return List(*g, *a);
    if (describe->parsed()) return Describe(*g, *a);
    if (del->parsed()) return Delete(*g, *a);
    if (alter->parsed()) return AlterConfig(*g, *a);
    return Fail("topic: expected a subcommand: create, list, describe, delete or alter-config");
  };
}

}  // namespace silt::cmd
