// `silt topic create|list|describe|delete|alter-config`, on a local data directory or (with -b)
// a cluster, through one client::Admin and one output format for both.
#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <memory>

#include "base/clock.h"
#include "client/admin.h"
#include "client/cluster.h"
#include "client/table.h"
#include "cmd/cli_util.h"
#include "cmd/command.h"
#include "cmd/net_util.h"
#include "cmd/usage.h"
#include "storage/data_dir.h"
#include "storage/log_config.h"

namespace silt::cmd {
namespace {

// Most partitions a topic of a data directory may have. Kafka's guidance is a few thousand
// partitions per broker (4000, with each partition a directory of open files); a data directory
// is one broker.
constexpr int32_t kMaxLocalPartitions = 4000;

struct TopicArgs {
  std::string name;
  int32_t partitions = 1;
  int16_t replication_factor = -1;
  int32_t new_partitions = 0;
  std::vector<std::string> configs;
  std::vector<std::string> delete_configs;
  std::string format = "text";
};

// A topic config key this build does not know, with the nearest one it does. Only offline: a
// cluster may know keys silt does not, and says so itself.
Status CheckConfigKey(const GlobalOptions& g, const std::string& key) {
  if (NetworkMode(g) || storage::LogConfig::IsKnownKey(key)) return Status::OK();
  std::vector<std::string> known;
  for (const auto& [k, v] : storage::LogConfig().ToMap()) known.push_back(k);
  return Status::InvalidArgument("unknown topic config '" + key + "'" + DidYouMean(key, known));
}

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

std::string Ints(const std::vector<int32_t>& v) {
  std::string s;
  for (int32_t x : v) {
    if (!s.empty()) s += ",";
    s += std::to_string(x);
  }
  return s.empty() ? "-" : s;
}

using Json = nlohmann::ordered_json;

template <typename T>
Json OrNull(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

// Runs `fn` on the admin of the data dir (writable when `writable`) or of the cluster, closing
// a data dir after a change so its lock goes and the next open finds it clean.
int WithAdmin(const GlobalOptions& g, bool writable,
              const std::function<int(client::Admin*)>& fn) {
  auto admin = OpenAdmin(g, writable);
  if (!admin.ok()) return Fail(admin.status());
  int rc = fn(admin->get());
  Status st = (*admin)->Close();
  if (rc == kExitOk && !st.ok()) return Fail(st);
  return rc;
}

int Create(client::Admin* admin, const TopicArgs& a) {
  auto configs = ParseConfigs(a.configs);
  if (!configs.ok()) return Fail(configs.status());
  if (a.partitions < 1) return Fail("--partitions must be at least 1");
  client::TopicSpec spec;
  spec.name = a.name;
  spec.partitions = a.partitions;
  spec.replication_factor = a.replication_factor;
  spec.configs = *configs;
  Status st = admin->CreateTopic(spec);
  if (!st.ok()) return Fail(st);
  if (client::IsTerminal(1))
    std::printf("created topic %s with %d partition(s)\n", a.name.c_str(), a.partitions);
  return kExitOk;
}

int List(client::Admin* admin, const TopicArgs& a) {
  auto topics = admin->ListTopics();
  if (!topics.ok()) return Fail(topics.status());
  std::string out;
  client::Table t({"TOPIC", "PARTITIONS"});
  for (const client::TopicListing& tl : *topics) {
    if (a.format == "json")
      out += Json({{"topic", tl.name}, {"partitions", tl.partitions}, {"internal", tl.internal}})
                 .dump() +
             "\n";
    else
      t.AddRow({tl.name, Num(tl.partitions)});
  }
  if (a.format != "json") out = t.Render(client::IsTerminal(1));
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

// One schema in both modes (see man/silt-topic.1): what a mode cannot know is null.
int Describe(client::Admin* admin, const TopicArgs& a) {
  auto d = admin->DescribeTopic(a.name);
  if (!d.ok()) return Fail(d.status());
  const bool human = client::IsTerminal(1);
  // Over the network the replication state follows the ISR: offline (no leader),
  // under-replicated (ISR smaller than the replicas) or ok; a data directory knows no replicas.
  const bool replicated = !d->partitions.empty() && !d->partitions.front().replicas.empty();
  std::vector<std::string> head = {"PARTITION", "LEADER", "REPLICAS", "ISR", "LOG-START",
                                   "LOG-END",   "SIZE",   "SEGMENTS"};
  if (replicated) {
    head.push_back("OFFLINE");
    head.push_back("STATUS");
  }
  client::Table t(head);
  Json parts = Json::array();
  auto cell = [](const std::optional<int64_t>& v) { return v ? Num(*v) : std::string("-"); };
  for (const client::PartitionDescription& p : d->partitions) {
    parts.push_back({{"partition", p.partition},
                     {"leader", OrNull(p.leader)},
                     {"replicas", p.replicas},
                     {"isr", p.isr},
                     {"log_start_offset", p.log_start_offset},
                     {"log_end_offset", p.log_end_offset},
                     {"size", OrNull(p.size_bytes)},
                     {"segments", OrNull(p.segments)}});
    const bool offline = replicated && !p.leader;
    const bool under = replicated && p.isr.size() < p.replicas.size();
    if (replicated) {
      parts.back()["offline_replicas"] = p.offline_replicas;
      parts.back()["under_replicated"] = under;
      parts.back()["offline"] = offline;
    } else {
      parts.back()["offline_replicas"] = nullptr;
      parts.back()["under_replicated"] = nullptr;
      parts.back()["offline"] = nullptr;
    }
    std::string size = p.size_bytes ? (human ? client::HumanBytes(*p.size_bytes)
                                             : Num(*p.size_bytes))
                                    : "-";
    std::vector<std::string> row = {Num(p.partition),        p.leader ? Num(*p.leader) : "-",
                                    Ints(p.replicas),        Ints(p.isr),
                                    Num(p.log_start_offset), Num(p.log_end_offset),
                                    size,                    cell(p.segments)};
    if (replicated) {
      row.push_back(Ints(p.offline_replicas));
      row.push_back(offline ? "offline" : under ? "under-replicated" : "ok");
    }
    t.AddRow(row);
  }
  std::string out;
  if (a.format == "json") {
    Json j = {{"topic", d->name},
              {"topic_id", OrNull(d->topic_id)},
              {"internal", d->internal},
              {"partition_count", d->partition_count},
              {"partitions", parts},
              {"configs", d->configs},
              {"effective_configs", d->effective_configs}};
    out = j.dump() + "\n";
  } else {
    out = "Topic: " + d->name + "\nTopicId: " + d->topic_id.value_or("-") +
          "\nPartitions: " + Num(d->partition_count) + "\nConfigs: " + JoinConfigs(d->configs) +
          "\n";
    if (human) out += "\n";
    out += t.Render(human);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

int Delete(client::Admin* admin, const TopicArgs& a) {
  // Removing thousands of partition directories takes a while: say how far it is, on a
  // terminal, once it has taken a second (as verify-crc and produce do).
  bool shown = false;
  if (client::IsTerminal(2)) {
    const int64_t start = MonotonicMs();
    admin->SetProgress([&, start](int64_t done, int64_t total) {
      if (MonotonicMs() - start < client::ProgressDelayMs()) return;
      std::fprintf(stderr, "\r\033[Kdeleting topic %s: %lld of %lld partitions removed",
                   a.name.c_str(), static_cast<long long>(done), static_cast<long long>(total));
      shown = true;
    });
  }
  Status st = admin->DeleteTopic(a.name);
  admin->SetProgress(nullptr);
  if (shown) std::fprintf(stderr, "\r\033[K");
  if (!st.ok()) return Fail(st);
  if (client::IsTerminal(1)) std::printf("deleted topic %s\n", a.name.c_str());
  return kExitOk;
}

int AlterConfig(client::Admin* admin, const TopicArgs& a) {
  auto configs = ParseConfigs(a.configs);
  if (!configs.ok()) return Fail(configs.status());
  if (a.new_partitions > 0) {
    Status st = admin->CreatePartitions(a.name, a.new_partitions);
    if (!st.ok()) return Fail(st);
  }
  if (!a.configs.empty() || !a.delete_configs.empty()) {
    Status st = admin->AlterTopicConfigs(a.name, *configs, a.delete_configs);
    if (!st.ok()) return Fail(st);
  }
  // What changed, for a person; a pipe gets nothing (the exit status says it worked).
  if (client::IsTerminal(1)) {
    std::vector<std::string> parts;
    if (a.new_partitions > 0)
      parts.push_back("grown to " + std::to_string(a.new_partitions) + " partitions");
    if (!configs->empty()) parts.push_back("set " + JoinConfigs(*configs));
    if (!a.delete_configs.empty()) {
      std::string reset;
      for (const auto& k : a.delete_configs) reset += (reset.empty() ? "" : ", ") + k;
      parts.push_back("reset " + reset + " to the default");
    }
    std::string line;
    for (size_t i = 0; i < parts.size(); ++i) line += (i ? "; " : "") + parts[i];
    std::printf("altered topic %s: %s\n", a.name.c_str(), line.c_str());
  }
  return kExitOk;
}

}  // namespace

RunFn RegisterTopicReassign(CLI::App* cmd, GlobalOptions* g);  // topic_reassign.cc

RunFn RegisterTopic(CLI::App* sub, GlobalOptions* g) {
  auto a = std::make_shared<TopicArgs>();
  sub->require_subcommand(1);
  AddDataDirOption(sub, g);
  AddBootstrapOption(sub, g);

  CLI::App* create = sub->add_subcommand("create", "create a topic");
  create->add_option("name", a->name, "topic name")->required()->type_name("NAME");
  create->add_option("--partitions", a->partitions, "number of partitions (default 1)");
  create->add_option("--replication-factor", a->replication_factor,
                     "with -b: replicas per partition (default: the broker's default)");
  create->add_option("--config", a->configs, "topic config KEY=VALUE (repeatable)")
      ->allow_extra_args(false);
  AddDataDirOption(create, g);
  AddBootstrapOption(create, g);

  CLI::App* list = sub->add_subcommand("list", "list topics");
  list->add_option("--format", a->format, "output format: text or json")
      ->check(OneOf({"text", "json"}));
  AddDataDirOption(list, g);
  AddBootstrapOption(list, g);

  CLI::App* describe = sub->add_subcommand("describe", "show partitions, offsets, sizes and configs");
  describe->add_option("name", a->name, "topic name")->required()->type_name("TOPIC");
  describe->add_option("--format", a->format, "output format: text or json")
      ->check(OneOf({"text", "json"}));
  AddDataDirOption(describe, g);
  AddBootstrapOption(describe, g);

  CLI::App* del = sub->add_subcommand("delete", "delete a topic and all its data");
  del->add_option("name", a->name, "topic name")->required()->type_name("TOPIC");
  AddDataDirOption(del, g);
  AddBootstrapOption(del, g);

  CLI::App* alter = sub->add_subcommand("alter-config", "set or remove topic config overrides");
  alter->add_option("name", a->name, "topic name")->required()->type_name("TOPIC");
  alter->add_option("--config", a->configs, "topic config KEY=VALUE to set (repeatable)")
      ->allow_extra_args(false);
  alter->add_option("--delete-config", a->delete_configs,
                    "topic config KEY to reset to its default (repeatable)")
      ->allow_extra_args(false);
  alter->add_option("--partitions", a->new_partitions,
                    "grow the topic to N partitions (never shrinks)");
  AddDataDirOption(alter, g);
  AddBootstrapOption(alter, g);

  CLI::App* reassign = sub->add_subcommand(
      "reassign", "move partitions' replicas to other brokers (a kafka-reassign-partitions plan)");
  RunFn run_reassign = RegisterTopicReassign(reassign, g);

  return [=]() {
    using Fn = int (*)(client::Admin*, const TopicArgs&);
    // Config keys are checked before anything is opened, so a typo changes nothing.
    for (const auto& kv : a->configs) {
      size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) continue;  // ParseConfigs says what is wrong
      if (Status st = CheckConfigKey(*g, kv.substr(0, eq)); !st.ok()) return Fail(st);
    }
    for (const auto& k : a->delete_configs)
      if (Status st = CheckConfigKey(*g, k); !st.ok()) return Fail(st);
    // One data directory is one broker: keep it within what a Kafka broker handles well.
    if (!NetworkMode(*g)) {
      const int32_t asked = create->parsed() ? a->partitions : a->new_partitions;
      if ((create->parsed() || alter->parsed()) && asked > kMaxLocalPartitions)
        return Fail("--partitions " + std::to_string(asked) + " is more than a data directory "
                    "takes (at most " + std::to_string(kMaxLocalPartitions) +
                    " per topic, as for one Kafka broker)");
    }
    auto run = [&](Fn fn, bool writable) {
      return WithAdmin(*g, writable, [&](client::Admin* admin) { return fn(admin, *a); });
    };
    if (reassign->parsed()) return run_reassign();
    if (create->parsed()) return run(Create, true);
    if (list->parsed()) return run(List, false);
    if (describe->parsed()) return run(Describe, false);
    if (del->parsed()) return run(Delete, true);
    if (alter->parsed()) {
      if (a->configs.empty() && a->delete_configs.empty() && a->new_partitions == 0)
        return Fail("alter-config needs at least one --config KEY=VALUE, --delete-config KEY or "
                    "--partitions N");
      return run(AlterConfig, true);
    }
    return Fail("topic: expected a subcommand: create, list, describe, delete, alter-config or "
                "reassign");
  };
}

}  // namespace silt::cmd
