// Dynamic broker configs over the wire: IncrementalAlterConfigs and AlterConfigs on BROKER
// resources (this node's id and the cluster default ""), applied at once to topics without an
// override, shown by DescribeConfigs with their source and synonyms, kept across a restart.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "broker/broker_test_util.h"
#include "broker/dynamic_config.h"
#include "broker/local_metadata_store.h"
#include "broker/partition.h"
#include "protocol/errors.h"

namespace silt::broker {
namespace {

using protocol::ErrorCode;
using protocol::kConfigResourceBroker;
using protocol::kConfigResourceTopic;
using testing::Client;
using testing::TestBroker;
using Iac = protocol::IncrementalAlterConfigsRequest;

int16_t E(ErrorCode c) { return protocol::ToWire(c); }

// DescribeConfigs source values.
constexpr int8_t kDynamicBroker = 2;
constexpr int8_t kDynamicDefault = 3;
constexpr int8_t kStatic = 4;
constexpr int8_t kDefault = 5;

protocol::IncrementalAlterConfigsResponse::Result Broker(Client& c, const std::string& name,
                                                         std::vector<Iac::Config> ops,
                                                         bool validate_only = false) {
  Iac req;
  req.resources.push_back({kConfigResourceBroker, name, std::move(ops)});
  req.validate_only = validate_only;
  protocol::IncrementalAlterConfigsResponse resp;
  c.Call(req, 1, &resp);
  REQUIRE(resp.responses.size() == 1);
  return resp.responses[0];
}

std::map<std::string, protocol::DescribeConfigsResponse::Config> Describe(
    Client& c, int8_t type, const std::string& name) {
  protocol::DescribeConfigsRequest req;
  req.resources.push_back({type, name, std::nullopt});
  req.include_synonyms = true;
  protocol::DescribeConfigsResponse resp;
  c.Call(req, 3, &resp);
  REQUIRE(resp.results.size() == 1);
  REQUIRE(resp.results[0].error_code == 0);
  std::map<std::string, protocol::DescribeConfigsResponse::Config> out;
  for (const auto& cfg : resp.results[0].configs) out[cfg.name] = cfg;
  return out;
}

int64_t LiveRetention(TestBroker& b, const std::string& topic) {
  auto p = b.server->broker().partitions().Get(topic, PartitionId(0));
  REQUIRE(p.ok());
  return (*p)->config().retention_ms;
}

std::vector<int8_t> Sources(const protocol::DescribeConfigsResponse::Config& c) {
  std::vector<int8_t> out;
  for (const auto& s : c.synonyms) out.push_back(s.source);
  return out;
}

TEST_CASE("a dynamic broker config applies at once to topics without an override and survives a restart") {
  BrokerConfig cfg;
  cfg.log_defaults.segment_bytes = 4 << 20;  // as set in server.properties
  TestBroker b(cfg);
  Client c(b.port);
  testing::CreateTopic(c, "plain");
  testing::CreateTopic(c, "pinned");
  Iac pin;
  pin.resources.push_back({kConfigResourceTopic, "pinned", {{"retention.ms", Iac::kSet, "5000"}}});
  protocol::IncrementalAlterConfigsResponse pr;
  c.Call(pin, 1, &pr);
  REQUIRE(pr.responses[0].error_code == 0);
  REQUIRE(LiveRetention(b, "plain") == storage::LogConfig{}.retention_ms);

  // Validate-only changes nothing.
  CHECK(Broker(c, "0", {{"log.retention.ms", Iac::kSet, "3600000"}}, true).error_code == 0);
  CHECK(LiveRetention(b, "plain") == storage::LogConfig{}.retention_ms);

  CHECK(Broker(c, "0", {{"log.retention.ms", Iac::kSet, "3600000"}}).error_code == 0);
  CHECK(LiveRetention(b, "plain") == 3600000);
  CHECK(LiveRetention(b, "pinned") == 5000);  // the topic's own override wins
  CHECK(Describe(c, kConfigResourceTopic, "plain")["retention.ms"].value == "3600000");
  // A topic created afterwards starts with it too.
  testing::CreateTopic(c, "later");
  CHECK(LiveRetention(b, "later") == 3600000);

  // The cluster default sits below this node's value.
  CHECK(Broker(c, "", {{"log.retention.ms", Iac::kSet, "7200000"},
                       {"log.cleanup.policy", Iac::kSet, "compact"}}).error_code == 0);
  CHECK(LiveRetention(b, "plain") == 3600000);
  auto d = Describe(c, kConfigResourceBroker, "0");
  CHECK(d["log.retention.ms"].value == "3600000");
  CHECK(d["log.retention.ms"].config_source == kDynamicBroker);
  CHECK_FALSE(d["log.retention.ms"].read_only);
  CHECK(Sources(d["log.retention.ms"]) == std::vector<int8_t>{kDynamicBroker, kDynamicDefault, kDefault});
  CHECK(d["log.retention.ms"].synonyms[1].value == "7200000");
  CHECK(d["log.cleanup.policy"].value == "compact");
  CHECK(d["log.cleanup.policy"].config_source == kDynamicDefault);
  CHECK(d["log.segment.bytes"].config_source == kStatic);
  CHECK(Sources(d["log.segment.bytes"]) == std::vector<int8_t>{kStatic, kDefault});
  CHECK(d["num.partitions"].config_source == kDefault);
  CHECK(d["num.partitions"].read_only);
  // The cluster default resource lists the dynamic defaults only.
  auto dd = Describe(c, kConfigResourceBroker, "");
  CHECK(dd.size() == 2);
  CHECK(dd["log.retention.ms"].config_source == kDynamicDefault);

  // APPEND on the list key starts from the effective value.
  CHECK(Broker(c, "", {{"log.cleanup.policy", Iac::kAppend, "delete"}}).error_code == 0);
  CHECK(Describe(c, kConfigResourceBroker, "")["log.cleanup.policy"].value == "compact,delete");

  // Refusals: read-only keys as Kafka, bad values naming the key, another broker's id.
  auto ro = Broker(c, "0", {{"num.partitions", Iac::kSet, "3"}, {"log.retention.ms", Iac::kSet, "1"}});
  CHECK(ro.error_code == E(ErrorCode::INVALID_REQUEST));
  REQUIRE(ro.error_message.has_value());
  CHECK(ro.error_message->find("Cannot update these configs dynamically: num.partitions") != std::string::npos);
  auto bad = Broker(c, "0", {{"log.retention.ms", Iac::kSet, "soon"}});
  CHECK(bad.error_code == E(ErrorCode::INVALID_CONFIG));
  CHECK(bad.error_message->find("log.retention.ms") != std::string::npos);
  CHECK(Broker(c, "0", {{"log.retention.bytes", Iac::kAppend, "1"}}).error_code ==
        E(ErrorCode::INVALID_CONFIG));
  CHECK(Broker(c, "3", {{"log.retention.ms", Iac::kSet, "1"}}).error_code ==
        E(ErrorCode::INVALID_REQUEST));
  CHECK(LiveRetention(b, "plain") == 3600000);

  // Kept in the data dir, read back at start-up.
  CHECK(std::filesystem::exists(std::filesystem::path(b.data_dir) / "silt-broker-configs" /
                                "0.properties"));
  b.Restart();
  Client c2(b.port);
  CHECK(LiveRetention(b, "plain") == 3600000);
  d = Describe(c2, kConfigResourceBroker, "0");
  CHECK(d["log.retention.ms"].config_source == kDynamicBroker);
  CHECK(d["log.cleanup.policy"].value == "compact,delete");

  // DELETE falls back to the cluster default; the legacy AlterConfigs replaces a whole set.
  CHECK(Broker(c2, "0", {{"log.retention.ms", Iac::kDelete, std::nullopt}}).error_code == 0);
  CHECK(LiveRetention(b, "plain") == 7200000);
  protocol::AlterConfigsRequest legacy;
  legacy.resources.push_back({kConfigResourceBroker, "", {{"log.roll.ms", std::string("600000")}}});
  protocol::AlterConfigsResponse lr;
  c2.Call(legacy, 1, &lr);
  REQUIRE(lr.responses.size() == 1);
  CHECK(lr.responses[0].error_code == 0);
  CHECK(LiveRetention(b, "plain") == storage::LogConfig{}.retention_ms);
  dd = Describe(c2, kConfigResourceBroker, "");
  CHECK(dd.size() == 1);
  CHECK(dd["log.roll.ms"].value == "600000");
}

// A store like the metadata log's: what Load gives can change under the object (another node's
// change), and Store records what it was asked to write.
class FakeStore final : public BrokerConfigStore {
 public:
  Result<Configs> Load(bool cluster_default) override {
    return cluster_default ? defaults : mine;
  }
  Status Store(bool cluster_default, const Configs& current, const Configs& next) override {
    stores.push_back({cluster_default, current, next});
    (cluster_default ? defaults : mine) = next;
    return Status::OK();
  }
  struct Call {
    bool cluster_default;
    Configs current, next;
  };
  Configs defaults, mine;
  std::vector<Call> stores;
};

struct StoreFixture {
  StoreFixture() {
    cfg.data_dir = testing::TempDir();
    auto opened = LocalMetadataStore::Open(cfg, NodeId(cfg.node_id));
    REQUIRE(opened.ok());
    local = std::move(opened).value();
    REQUIRE(local->CreateTopic("t", 1, {}).ok());
  }
  ~StoreFixture() {
    local.reset();
    (void)RemoveAll(cfg.data_dir);
  }
  int64_t Retention() {
    auto c = local->TopicConfig("t");
    REQUIRE(c.ok());
    return c->retention_ms;
  }
  BrokerConfig cfg;
  std::unique_ptr<LocalMetadataStore> local;
};

TEST_CASE("a dynamic broker config kept elsewhere is taken on Reload, this node's over the default") {
  StoreFixture f;
  FakeStore store;
  auto d = DynamicBrokerConfig::OpenWith(f.cfg, &store);
  const int64_t before = f.Retention();
  CHECK(d->Get(true).empty());
  store.defaults = {{"log.retention.ms", "70000"}, {"log.segment.bytes", "2097152"}};
  // Nothing is read until Reload.
  CHECK(d->Get(true).empty());
  CHECK(f.Retention() == before);
  REQUIRE(d->Reload(f.local.get()).ok());
  CHECK(d->Get(true) == store.defaults);
  CHECK(f.Retention() == 70000);
  store.mine = {{"log.retention.ms", "80000"}};
  REQUIRE(d->Reload(f.local.get()).ok());
  CHECK(d->Effective().log_defaults.retention_ms == 80000);
  CHECK(d->Effective().log_defaults.segment_bytes == 2097152);
  CHECK(f.Retention() == 80000);
  store.mine.clear();
  REQUIRE(d->Reload(f.local.get()).ok());
  CHECK(f.Retention() == 70000);
  CHECK(store.stores.empty());
}

TEST_CASE("a stored broker config that is not dynamic or not valid is left out on Reload") {
  StoreFixture f;
  FakeStore store;
  auto d = DynamicBrokerConfig::OpenWith(f.cfg, &store);
  store.defaults = {{"log.retention.ms", "70000"},
                    {"num.partitions", "9"},
                    {"log.segment.bytes", "lots"}};
  REQUIRE(d->Reload(f.local.get()).ok());
  CHECK(d->Get(true) == DynamicBrokerConfig::Configs{{"log.retention.ms", "70000"}});
  CHECK(f.Retention() == 70000);
}

TEST_CASE("an edit starts from the stored set and stores only after its checks pass") {
  StoreFixture f;
  FakeStore store;
  auto d = DynamicBrokerConfig::OpenWith(f.cfg, &store);
  // Another node set a key this object has not reloaded yet: the edit keeps it.
  store.defaults = {{"log.retention.ms", "70000"}};
  auto set_segment = [](DynamicBrokerConfig::Configs* c) {
    (*c)["log.segment.bytes"] = "2097152";
    return Status::OK();
  };
  REQUIRE(d->Edit(true, set_segment, /*validate_only=*/true, f.local.get()).ok());
  CHECK(store.stores.empty());
  CHECK(d->Get(true).empty());
  REQUIRE(d->Edit(true, set_segment, false, f.local.get()).ok());
  REQUIRE(store.stores.size() == 1);
  CHECK(store.stores[0].cluster_default);
  CHECK(store.stores[0].current == DynamicBrokerConfig::Configs{{"log.retention.ms", "70000"}});
  CHECK(store.stores[0].next == DynamicBrokerConfig::Configs{{"log.retention.ms", "70000"},
                                                              {"log.segment.bytes", "2097152"}});
  // Taken at once (reloaded), the other node's key too.
  CHECK(d->Get(true) == store.stores[0].next);
  CHECK(f.Retention() == 70000);
  // An unchanged set is not stored again; a bad value or key is refused before storing.
  REQUIRE(d->Edit(true, set_segment, false, f.local.get()).ok());
  CHECK(store.stores.size() == 1);
  Status bad = d->Edit(
      false,
      [](DynamicBrokerConfig::Configs* c) {
        (*c)["log.retention.ms"] = "soon";
        return Status::OK();
      },
      false, f.local.get());
  CHECK(bad.code() == Status::Code::kInvalidArgument);
  CHECK(bad.message().find("log.retention.ms") != std::string::npos);
  Status fixed = d->Replace(false, {{"num.partitions", "3"}}, false, f.local.get());
  CHECK(fixed.code() == Status::Code::kInvalidArgument);
  CHECK(store.stores.size() == 1);
  CHECK(store.mine.empty());
}

}  // namespace
}  // namespace silt::broker
