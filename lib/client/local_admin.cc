// LocalAdmin: topics and groups of a data directory behind the Admin interface.
#include "client/local_admin.h"

#include <algorithm>

#include "base/random.h"
#include "offsets/local.h"
#include "protocol/consumer_offsets.h"
#include "storage/data_dir.h"

namespace silt::client {
namespace {

Status NoTopic(const std::string& topic) {
  return Status::NotFound("topic '" + topic + "' does not exist");
}

class LocalAdmin : public Admin {
 public:
  LocalAdmin(std::unique_ptr<storage::DataDir> dir, std::unique_ptr<offsets::LocalOffsets> groups)
      : dir_(std::move(dir)), groups_(std::move(groups)) {}

  Result<std::vector<TopicListing>> ListTopics() override {
    std::vector<TopicListing> out;
    for (const storage::TopicInfo& t : dir_->ListTopics())
      out.push_back({t.name, t.partitions, t.name == protocol::kConsumerOffsetsTopic});
    return out;
  }

  Result<TopicDescription> DescribeTopic(const std::string& topic) override {
    auto info = dir_->GetTopic(topic);
    if (!info.ok()) return info.status().IsNotFound() ? NoTopic(topic) : info.status();
    SILT_ASSIGN_OR_RETURN(storage::LogConfig config, dir_->TopicConfig(topic));
    TopicDescription d;
    d.name = info->name;
    if (!info->topic_id.empty()) d.topic_id = info->topic_id;
    d.internal = protocol::IsInternalTopic(topic);
    d.partition_count = info->partitions;
    d.configs = info->configs;
    d.effective_configs = config.ToMap();
    for (int32_t p : info->partition_ids) {
      SILT_ASSIGN_OR_RETURN(storage::PartitionLog * log, dir_->Partition(topic, p));
      PartitionDescription pd;
      pd.partition = p;
      pd.log_start_offset = log->log_start_offset().value();
      pd.log_end_offset = log->log_end_offset().value();
      pd.size_bytes = log->size_bytes();
      pd.segments = static_cast<int64_t>(log->Segments().size());
      d.partitions.push_back(std::move(pd));
    }
    return d;
  }

  Status CreateTopic(const TopicSpec& spec) override {
    return dir_->CreateTopic(spec.name, NewTopicId(), spec.partitions, spec.configs).status();
  }
  Status DeleteTopic(const std::string& topic) override {
    int64_t total = 0;
    if (progress_) {
      auto info = dir_->GetTopic(topic);
      if (info.ok()) total = static_cast<int64_t>(info->partition_ids.size());
    }
    Status s = dir_->DeleteTopic(topic);
    if (s.IsNotFound()) return NoTopic(topic);
    // A command exits with the files gone, not merely renamed for the background thread (which
    // the data dir's close would stop, leaving them to the next open).
    if (s.ok()) {
      std::function<void(size_t)> report;
      if (progress_ && total > 0) {
        progress_(0, total);  // the work as it starts (shown when the delay is 0)
        report = [this, total](size_t left) {
          progress_(std::max<int64_t>(0, total - static_cast<int64_t>(left)), total);
        };
      }
      dir_->WaitForDeletions(report);
    }
    return s;
  }
  void SetProgress(ProgressFn fn) override { progress_ = std::move(fn); }
  Status CreatePartitions(const std::string& topic, int32_t total) override {
    Status s = dir_->AddPartitions(topic, total);
    return s.IsNotFound() ? NoTopic(topic) : s;
  }
  Status AlterTopicConfigs(const std::string& topic, const std::map<std::string, std::string>& set,
                           const std::vector<std::string>& remove) override {
    Status s = dir_->AlterTopicConfig(topic, set, remove);
    return s.IsNotFound() ? NoTopic(topic) : s;
  }

  Result<std::map<int32_t, int64_t>> ListOffsets(
      const std::string& topic, const std::map<int32_t, int64_t>& timestamps) override {
    auto info = dir_->GetTopic(topic);
    if (!info.ok()) return info.status().IsNotFound() ? NoTopic(topic) : info.status();
    std::map<int32_t, int64_t> out;
    for (const auto& [p, ts] : timestamps) {
      SILT_ASSIGN_OR_RETURN(storage::PartitionLog * log, dir_->Partition(topic, p));
      if (ts == -2) {
        out[p] = log->log_start_offset().value();
      } else if (ts == -1) {
        out[p] = log->log_end_offset().value();
      } else {
        auto r = log->OffsetForTimestamp(ts);
        if (r.ok()) out[p] = r->value();
        else if (r.status().IsNotFound()) out[p] = -1;
        else return r.status();
      }
    }
    return out;
  }

  Result<std::vector<GroupListing>> ListGroups() override {
    SILT_ASSIGN_OR_RETURN(offsets::GroupsView all, groups_->Load());
    std::vector<GroupListing> out;
    for (const auto& [name, g] : all)
      out.push_back({name, g.metadata ? g.metadata->protocol_type : std::string()});
    return out;
  }

  Result<GroupDescription> DescribeGroup(const std::string& group) override {
    SILT_ASSIGN_OR_RETURN(std::optional<offsets::GroupState> g, groups_->Group(group));
    GroupDescription d;
    d.group_id = group;
    // Offline nobody is connected: a group that exists is Empty (its stored members, if a
    // broker left any, rejoin only through a broker).
    d.state = g ? "Empty" : "Dead";
    if (g && g->metadata) {
      d.protocol_type = g->metadata->protocol_type;
      d.protocol = g->metadata->protocol.value_or("");
    }
    return d;
  }

  Result<CommittedOffsets> FetchCommitted(
      const std::string& group, const std::optional<std::vector<std::string>>& topics) override {
    SILT_ASSIGN_OR_RETURN(std::optional<offsets::GroupState> g, groups_->Group(group));
    CommittedOffsets out;
    if (!g) return out;
    for (const auto& [t, parts] : g->offsets) {
      if (topics && std::find(topics->begin(), topics->end(), t) == topics->end()) continue;
      for (const auto& [p, c] : parts) out[t][p] = c.offset;
    }
    return out;
  }

  Status CommitOffsets(const std::string& group, const CommittedOffsets& offsets) override {
    offsets::GroupOffsets o;
    for (const auto& [t, parts] : offsets)
      for (const auto& [p, off] : parts) o[t][p].offset = off;
    return groups_->Commit(group, o);
  }

  Status DeleteGroup(const std::string& group) override {
    if (dir_->read_only()) return Status::InvalidArgument(dir_->path() + " is open read-only");
    return groups_->DeleteGroup(group);
  }

  Status Close() override { return dir_->Close(); }

 private:
  std::unique_ptr<storage::DataDir> dir_;
  ProgressFn progress_;
  std::unique_ptr<offsets::LocalOffsets> groups_;
};

}  // namespace

Result<std::unique_ptr<Admin>> NewLocalAdmin(std::unique_ptr<storage::DataDir> dir) {
  SILT_ASSIGN_OR_RETURN(std::unique_ptr<offsets::LocalOffsets> groups,
                        offsets::LocalOffsets::Open(dir.get()));
  return std::unique_ptr<Admin>(new LocalAdmin(std::move(dir), std::move(groups)));
}

}  // namespace silt::client
