// `silt group list|describe|reset-offsets|delete`: consumer groups' committed offsets, in a
// data dir's __consumer_offsets (offsets/local.h) or at a cluster's group coordinator (-b).
#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <set>

#include "client/admin.h"
#include "client/cluster.h"
#include "client/offset_spec.h"
#include "client/table.h"
#include "cmd/cli_util.h"
#include "cmd/command.h"
#include "cmd/net_util.h"
#include "cmd/usage.h"

namespace silt::cmd {
namespace {

struct GroupArgs {
  std::string group;
  std::string topic;
  std::string format = "text";
  bool to_earliest = false;
  bool to_latest = false;
  std::optional<int64_t> to_offset;
  std::string to_datetime;
  std::optional<int64_t> shift_by;
  bool execute = false;
};

void Print(const std::string& s) { std::fwrite(s.data(), 1, s.size(), stdout); }

using Json = nlohmann::ordered_json;

Json OptNum(const std::optional<int64_t>& v) { return v ? Json(*v) : Json(nullptr); }
std::string Cell(const std::optional<int64_t>& v) { return v ? Num(*v) : std::string("-"); }

int List(client::Admin* admin, const GroupArgs& a) {
  auto groups = admin->ListGroups();
  if (!groups.ok()) return Fail(groups.status());
  std::string out;
  for (const auto& gl : *groups) {
    if (a.format == "json")
      out += Json({{"group", gl.group_id}, {"protocol_type", gl.protocol_type}}).dump() + "\n";
    else
      out += gl.group_id + "\n";
  }
  Print(out);
  return kExitOk;
}

// partition -> log end offset of every partition of `topic` (empty when the topic is gone).
std::map<int32_t, int64_t> LogEnds(client::Admin* admin, const std::string& topic) {
  std::map<int32_t, int64_t> out;
  auto d = admin->DescribeTopic(topic);
  if (d.ok())
    for (const auto& p : d->partitions) out[p.partition] = p.log_end_offset;
  return out;
}

// One schema in both modes (man/silt-group.1): a first line for the group, then one per
// partition of every topic it has offsets in or is assigned.
int Describe(client::Admin* admin, const GroupArgs& a) {
  auto desc = admin->DescribeGroup(a.group);
  if (!desc.ok()) return Fail(desc.status());
  auto committed = admin->FetchCommitted(a.group, std::nullopt);
  if (!committed.ok()) return Fail(committed.status());
  if (desc->state == "Dead" && committed->empty())
    return Fail("consumer group '" + a.group + "' does not exist");
  // Who owns each partition now.
  std::map<std::pair<std::string, int32_t>, const client::GroupMember*> owner;
  std::set<std::string> topics;
  for (const auto& m : desc->members)
    for (const auto& [t, parts] : m.assignment) {
      topics.insert(t);
      for (int32_t p : parts) owner[{t, p}] = &m;
    }
  for (const auto& [t, parts] : *committed) topics.insert(t);
  const bool human = client::IsTerminal(1);
  client::Table table({"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                       "CONSUMER-ID", "HOST", "CLIENT-ID"});
  std::string out;
  if (a.format == "json") {
    Json members = Json::array();
    for (const auto& m : desc->members) {
      Json assignment = Json::object();
      for (const auto& [t, parts] : m.assignment) assignment[t] = parts;
      members.push_back({{"member_id", m.member_id},
                         {"client_id", m.client_id},
                         {"host", m.client_host},
                         {"assignment", assignment}});
    }
    out += Json({{"group", a.group},
                 {"state", desc->state},
                 {"protocol_type", desc->protocol_type},
                 {"protocol", desc->protocol},
                 {"members", members}})
               .dump() +
           "\n";
  }
  for (const std::string& topic : topics) {
    std::map<int32_t, int64_t> ends = LogEnds(admin, topic);
    // Every partition of the topic, committed or not, so lag is visible everywhere.
    std::map<int32_t, std::optional<int64_t>> rows;
    for (const auto& [p, e] : ends) rows[p] = std::nullopt;
    auto ct = committed->find(topic);
    if (ct != committed->end())
      for (const auto& [p, o] : ct->second) rows[p] = o;
    for (const auto& [p, o] : rows) {
      std::optional<int64_t> end;
      auto e = ends.find(p);
      if (e != ends.end()) end = e->second;
      std::optional<int64_t> lag;
      if (o && end) lag = *end - *o;
      auto ow = owner.find({topic, p});
      const client::GroupMember* m = ow == owner.end() ? nullptr : ow->second;
      if (a.format == "json") {
        Json j = {{"group", a.group}, {"topic", topic}, {"partition", p}};
        j["committed_offset"] = OptNum(o);
        j["log_end_offset"] = OptNum(end);
        j["lag"] = OptNum(lag);
        j["member_id"] = m ? Json(m->member_id) : Json(nullptr);
        j["host"] = m ? Json(m->client_host) : Json(nullptr);
        j["client_id"] = m ? Json(m->client_id) : Json(nullptr);
        out += j.dump() + "\n";
      } else {
        table.AddRow({a.group, topic, Num(p), Cell(o), Cell(end), Cell(lag),
                      m ? m->member_id : "-", m ? m->client_host : "-", m ? m->client_id : "-"});
      }
    }
  }
  if (a.format != "json") {
    if (human)
      out = "Group: " + a.group + "  State: " + desc->state + "  Members: " +
            std::to_string(desc->members.size()) + "\n\n";
    out += table.Render(human);
  }
  Print(out);
  return kExitOk;
}

// Checks that exactly one reset target was given; for --to-datetime, parses it into *when.
Status CheckResetTarget(const GroupArgs& a, std::optional<int64_t>* when) {
  int modes = a.to_earliest + a.to_latest + a.to_offset.has_value() + !a.to_datetime.empty() +
              a.shift_by.has_value();
  if (modes != 1)
    return Status::InvalidArgument(
        "reset-offsets needs exactly one of --to-earliest, --to-latest, --to-offset, "
        "--to-datetime, --shift-by");
  if (!a.to_datetime.empty()) {
    SILT_ASSIGN_OR_RETURN(int64_t ts, client::ParseTimestampMs(a.to_datetime));
    *when = ts;
  }
  return Status::OK();
}

int ResetOffsets(client::Admin* admin, const GroupArgs& a) {
  std::optional<int64_t> when;
  if (Status st = CheckResetTarget(a, &when); !st.ok()) return Fail(st);
  auto topic = admin->DescribeTopic(a.topic);
  if (!topic.ok()) return Fail(topic.status());
  if (a.execute) {
    // Like Kafka's tool: positions move only while no consumer holds them.
    auto desc = admin->DescribeGroup(a.group);
    if (!desc.ok()) return Fail(desc.status());
    if (!desc->members.empty())
      return Fail("consumer group '" + a.group + "' has " + std::to_string(desc->members.size()) +
                  " active member(s) (state " + desc->state +
                  "); stop its consumers before resetting offsets");
  }
  auto committed = admin->FetchCommitted(a.group, std::vector<std::string>{a.topic});
  if (!committed.ok()) return Fail(committed.status());
  const auto& current = (*committed)[a.topic];
  std::map<int32_t, int64_t> at_time;
  if (when) {
    std::map<int32_t, int64_t> q;
    for (const auto& p : topic->partitions) q[p.partition] = *when;
    auto r = admin->ListOffsets(a.topic, q);
    if (!r.ok()) return Fail(r.status());
    at_time = *r;
  }
  client::Table t({"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"});
  std::string json_out;
  std::map<int32_t, int64_t> plan;
  for (const auto& pd : topic->partitions) {
    const int32_t p = pd.partition;
    const int64_t start = pd.log_start_offset, end = pd.log_end_offset;
    std::optional<int64_t> cur;
    auto it = current.find(p);
    if (it != current.end()) cur = it->second;
    int64_t target;
    if (a.to_earliest) target = start;
    else if (a.to_latest) target = end;
    else if (a.to_offset) target = *a.to_offset;
    else if (when) target = at_time[p] < 0 ? end : at_time[p];
    else target = (cur ? *cur : start) + *a.shift_by;
    // Kafka clamps a reset into the partition's readable range.
    target = std::clamp(target, start, end);
    plan[p] = target;
    if (a.format == "json") {
      Json j = {{"group", a.group}, {"topic", a.topic}, {"partition", p}};
      j["current_offset"] = OptNum(cur);
      j["new_offset"] = target;
      json_out += j.dump() + "\n";
    } else {
      t.AddRow({a.group, a.topic, Num(p), Cell(cur), Num(target)});
    }
  }
  if (a.execute) {
    Status st = admin->CommitOffsets(a.group, {{a.topic, plan}});
    if (!st.ok()) return Fail(st);
  }
  const bool human = client::IsTerminal(1);
  Print(a.format == "json" ? json_out : t.Render(human));
  if (!a.execute && human)
    std::fprintf(stderr, "dry run: nothing changed; add --execute to apply this plan\n");
  if (a.execute && human) {
    size_t moved = 0;
    for (const auto& [p, target] : plan) {
      auto it = current.find(p);
      if (it == current.end() || it->second != target) ++moved;
    }
    std::fprintf(stderr, "reset group %s on topic %s: %zu of %zu partition(s) moved\n",
                 a.group.c_str(), a.topic.c_str(), moved, plan.size());
  }
  return kExitOk;
}

int Delete(client::Admin* admin, const GroupArgs& a) {
  Status st = admin->DeleteGroup(a.group);
  if (!st.ok()) return Fail(st);
  if (client::IsTerminal(1)) std::printf("deleted consumer group %s\n", a.group.c_str());
  return kExitOk;
}

// Runs `fn` on the admin of the cluster or of the data dir (writable when `writable`, then
// closed so its lock goes).
int Run(const GlobalOptions& g, const GroupArgs& a, bool writable,
        int (*fn)(client::Admin*, const GroupArgs&)) {
  auto admin = OpenAdmin(g, writable);
  if (!admin.ok()) return Fail(admin.status());
  int rc = fn(admin->get(), a);
  Status st = (*admin)->Close();
  if (rc == kExitOk && !st.ok()) return Fail(st);
  return rc;
}

}  // namespace

RunFn RegisterGroup(CLI::App* sub, GlobalOptions* g) {
  auto a = std::make_shared<GroupArgs>();
  sub->require_subcommand(1);
  AddDataDirOption(sub, g);
  AddBootstrapOption(sub, g);

  CLI::App* list = sub->add_subcommand("list", "list consumer groups");
  list->add_option("--format", a->format, "output format: text or json")
      ->check(OneOf({"text", "json"}));
  AddDataDirOption(list, g);
  AddBootstrapOption(list, g);

  CLI::App* describe = sub->add_subcommand("describe", "committed offset, log end and lag per partition");
  describe->add_option("group", a->group, "group name")->required()->type_name("GROUP");
  describe->add_option("--format", a->format, "output format: text or json")
      ->check(OneOf({"text", "json"}));
  AddDataDirOption(describe, g);
  AddBootstrapOption(describe, g);

  CLI::App* reset = sub->add_subcommand("reset-offsets", "move a group's positions (dry run unless --execute)");
  reset->add_option("group", a->group, "group name")->required()->type_name("GROUP");
  reset->add_option("--topic", a->topic, "topic whose positions move")
      ->required()
      ->type_name("TOPIC");
  reset->add_flag("--to-earliest", a->to_earliest, "to each partition's log start");
  reset->add_flag("--to-latest", a->to_latest, "to each partition's log end");
  reset->add_option("--to-offset", a->to_offset, "to offset N (clamped into the log)");
  reset->add_option("--to-datetime", a->to_datetime,
                    "to the first record at or after TIME (seconds below 1e11 or ms since the "
                    "epoch, -1h, or ISO-8601)");
  reset->add_option("--shift-by", a->shift_by, "by N (negative: back) from the current position");
  reset->add_flag("--execute", a->execute, "apply the plan (default: only print it)");
  reset->add_option("--format", a->format, "output format: text or json")
      ->check(OneOf({"text", "json"}));
  AddDataDirOption(reset, g);
  AddBootstrapOption(reset, g);

  CLI::App* del = sub->add_subcommand("delete", "forget a consumer group's positions");
  del->add_option("group", a->group, "group name")->required()->type_name("GROUP");
  AddDataDirOption(del, g);
  AddBootstrapOption(del, g);

  return [=]() {
    if (list->parsed()) return Run(*g, *a, false, List);
    if (describe->parsed()) return Run(*g, *a, false, Describe);
    if (reset->parsed()) return Run(*g, *a, a->execute, ResetOffsets);
    if (del->parsed()) return Run(*g, *a, true, Delete);
    return Fail("group: expected a subcommand: list, describe, reset-offsets or delete");
  };
}

}  // namespace silt::cmd
