#include "cluster/cluster_node.h"

#include <doctest/doctest.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <optional>
#include <set>

#include "base/file.h"
#include "broker/dynamic_config.h"
#include "broker/local_metadata_store.h"
#include "broker/node.h"
#include "broker/logging.h"
#include "broker/partition_manager.h"
#include "cluster/controller_channel.h"
#include "cluster/node_directory.h"
#include "cluster/placement.h"
#include "cluster/quorum_harness.h"
#include "storage/partition_log.h"

using namespace silt;
using namespace silt::cluster;
using namespace std::chrono_literals;

namespace {

std::string ScratchDir() {
  char tmpl[] = "/tmp/silt-cluster-node-XXXXXX";
  return ::mkdtemp(tmpl);
}

MetadataImage Brokers(std::initializer_list<int> live, std::initializer_list<int> fenced = {}) {
  std::vector<MetadataRecord> r;
  for (int b : live) {
    r.push_back(RegisterBrokerRecord{NodeId(b), RandomUuid(), "h", 9092});
    r.push_back(UnfenceBrokerRecord{NodeId(b)});
  }
  for (int b : fenced) r.push_back(RegisterBrokerRecord{NodeId(b), RandomUuid(), "h", 9092});
  auto img = MetadataImage().Apply(r);
  REQUIRE(img.ok());
  return std::move(img).value();
}

}  // namespace

TEST_CASE("a forwarded proposal and its answer round-trip through their encodings") {
  ForwardRequest req{RandomUuid(), std::string("\x00\x01command", 9)};
  std::string frame = EncodeForwardRequest(req);
  REQUIRE(frame.size() == 4 + 2 + 1 + 16 + 9);
  auto back = DecodeForwardRequest(std::string_view(frame).substr(4));
  REQUIRE(back.ok());
  CHECK(back->id == req.id);
  CHECK(back->command == req.command);
  CHECK(back->kind == ForwardKind::kPropose);
  ForwardRequest beat{Uuid(), "", ForwardKind::kHeartbeat};
  std::string beat_frame = EncodeForwardRequest(beat);
  auto beat_back = DecodeForwardRequest(std::string_view(beat_frame).substr(4));
  REQUIRE(beat_back.ok());
  CHECK(beat_back->kind == ForwardKind::kHeartbeat);
  std::string read_frame =
      EncodeForwardRequest(ForwardRequest{Uuid(), "", ForwardKind::kReadIndex});
  auto read_back = DecodeForwardRequest(std::string_view(read_frame).substr(4));
  REQUIRE(read_back.ok());
  CHECK(read_back->kind == ForwardKind::kReadIndex);
  ForwardRequest bye{RandomUuid(), std::string(16, 'i'), ForwardKind::kShutdown};
  std::string bye_frame = EncodeForwardRequest(bye);
  auto bye_back = DecodeForwardRequest(std::string_view(bye_frame).substr(4));
  REQUIRE(bye_back.ok());
  CHECK(bye_back->kind == ForwardKind::kShutdown);
  CHECK(bye_back->command == bye.command);
  std::string await_frame = EncodeForwardRequest(
      ForwardRequest{Uuid(), EncodeAwaitApplied(RaftIndex(5), 100), ForwardKind::kAwaitApplied});
  auto await_back = DecodeForwardRequest(std::string_view(await_frame).substr(4));
  REQUIRE(await_back.ok());
  CHECK(await_back->kind == ForwardKind::kAwaitApplied);
  std::string bad_kind = beat_frame.substr(4);
  bad_kind[2] = 6;
  CHECK(DecodeForwardRequest(bad_kind).status().code() == Status::Code::kCorruption);

  ProposeResult r;
  r.outcome = ProposeOutcome::kNotLeader;
  r.index = RaftIndex(42);
  r.leader_hint = NodeId(3);
  r.message = "ask node 3";
  r.result = "bytes";
  std::string resp = EncodeForwardResponse(r);
  auto rb = DecodeForwardResponse(std::string_view(resp).substr(4));
  REQUIRE(rb.ok());
  CHECK(rb->outcome == ProposeOutcome::kNotLeader);
  CHECK(rb->index == RaftIndex(42));
  CHECK(rb->leader_hint == NodeId(3));
  CHECK(rb->message == "ask node 3");
  CHECK(rb->result == "bytes");

  CHECK(DecodeForwardRequest("\x00").status().code() == Status::Code::kCorruption);
  CHECK(DecodeForwardRequest(std::string("\x00\x02", 2) + std::string(16, 'x')).status().code() ==
        Status::Code::kUnsupported);
  std::string bad = resp.substr(4);
  bad[2] = 9;  // an outcome that does not exist
  CHECK(DecodeForwardResponse(bad).status().code() == Status::Code::kCorruption);
  CHECK(DecodeForwardResponse(resp.substr(4, 8)).status().code() == Status::Code::kCorruption);
}

TEST_CASE("placement spreads leaders evenly over unfenced brokers, counting existing leaders") {
  MetadataImage img = Brokers({1, 2, 3}, {4});
  auto p = PlaceReplicas(img, 6, 1);
  REQUIRE(p.ok());
  std::map<int, int> led;
  for (const auto& r : *p) {
    REQUIRE(r.size() == 1);
    ++led[r[0].value()];
  }
  CHECK(led == std::map<int, int>{{1, 2}, {2, 2}, {3, 2}});

  // Broker 1 already leads two partitions: the next three go to 2, 3, then 2 or 3 first.
  Uuid t = RandomUuid();
  auto busy = img.Apply(
      {TopicRecord{"t", t},
       PartitionRecord{PartitionId(0), t, {NodeId(1)}, {NodeId(1)}, NodeId(1), LeaderEpoch(0), 0},
       PartitionRecord{PartitionId(1), t, {NodeId(1)}, {NodeId(1)}, NodeId(1), LeaderEpoch(0), 0}});
  REQUIRE(busy.ok());
  auto q = PlaceReplicas(*busy, 4, 1);
  REQUIRE(q.ok());
  led.clear();
  for (const auto& r : *q) ++led[r[0].value()];
  CHECK(led == std::map<int, int>{{2, 2}, {3, 2}});

  auto three = PlaceReplicas(img, 2, 3);
  REQUIRE(three.ok());
  for (const auto& r : *three) {
    CHECK(std::set<NodeId>(r.begin(), r.end()).size() == 3);
  }
  CHECK(PlaceReplicas(img, 1, 4).status().code() == Status::Code::kInvalidArgument);
  CHECK(PlaceReplicas(img, 1, 0).status().code() == Status::Code::kInvalidArgument);
  CHECK(PlaceReplicas(Brokers({}, {1}), 1, 1).status().IsBusy());
}

TEST_CASE("a node's data dir refuses another node id, another cluster id and a lost Raft dir") {
  std::string dir = ScratchDir();
  // A new node needs a cluster id.
  CHECK(CheckNodeDirectory(dir, NodeId(1), "").status().code() == Status::Code::kInvalidArgument);
  auto fresh = CheckNodeDirectory(dir, NodeId(1), "c1");
  REQUIRE(fresh.ok());
  CHECK(*fresh == "c1");

  REQUIRE(WriteFileAtomic(JoinPath(dir, "meta.properties"),
                          "version=1\ncluster.id=c1\nnode.id=1\nsome.key=kept\n")
              .ok());
  auto again = CheckNodeDirectory(dir, NodeId(1), "");
  REQUIRE(again.ok());
  CHECK(*again == "c1");  // taken from meta.properties
  auto other_node = CheckNodeDirectory(dir, NodeId(2), "c1");
  CHECK(other_node.status().message().find("belongs to node 1, not node 2") != std::string::npos);
  auto other_cluster = CheckNodeDirectory(dir, NodeId(1), "c2");
  CHECK(other_cluster.status().message().find("c2 does not match c1") != std::string::npos);

  // Once a voter, the Raft directory must be there.
  REQUIRE(MarkVoter(dir, NodeId(1), "c1").ok());
  auto text = ReadFile(JoinPath(dir, "meta.properties"));
  REQUIRE(text.ok());
  CHECK(text->find("silt.quorum.voter=true") != std::string::npos);
  CHECK(text->find("some.key=kept") != std::string::npos);
  auto lost = CheckNodeDirectory(dir, NodeId(1), "c1");
  CHECK(lost.status().message().find("Raft directory") != std::string::npos);
  REQUIRE(CreateDirs(RaftDirectory(dir)).ok());
  CHECK(CheckNodeDirectory(dir, NodeId(1), "c1").ok());
  std::filesystem::remove_all(dir);
}

TEST_CASE("a one-voter cluster node serves topics from the image and keeps their logs locally") {
  using namespace silt::cluster::testing;
  std::string dir = ScratchDir();
  broker::BrokerConfig config;
  config.data_dir = dir;
  config.num_partitions = 2;
  Voter self{NodeId(1), "127.0.0.1", FreePort()};
  ClusterNodeOptions o;
  o.node_id = NodeId(1);
  o.voters = {self};
  o.cluster_id = "unit-cluster";
  o.config = config;
  o.election_timeout_ms = 200;
  o.heartbeat_timeout_ms = 20;
  o.proposal_timeout_ms = 10000;
  auto created = ClusterNode::Create(o);
  REQUIRE_MESSAGE(created.ok(), created.status().ToString());
  std::unique_ptr<ClusterNode> node = std::move(created).value();
  auto local = broker::LocalMetadataStore::Open(config, NodeId(1));
  REQUIRE(local.ok());
  auto identity = broker::NodeIdentity::Load(dir, NodeId(1), "unit-cluster");
  REQUIRE(identity.ok());
  identity->advertised_host = "127.0.0.1";
  identity->advertised_port = 19999;
  REQUIRE(node->Start(local->get(), &*identity).ok());
  node->Serving({});
  broker::MetadataStore& md = node->metadata();
  REQUIRE(WaitUntil([&] { return md.Brokers().size() == 1; }, kElectionLimit));
  CHECK(md.Brokers()[0].port == 19999);
  CHECK(md.Controller() == NodeId(1));

  auto t = md.CreateTopic("orders", 3, {{"retention.ms", "60000"}});
  REQUIRE_MESSAGE(t.ok(), t.status().ToString());
  CHECK(t->partition_count == 3);
  for (const auto& a : t->partitions) CHECK(a.leader == NodeId(1));
  CHECK(md.CreateTopic("orders", 1, {}).status().code() == Status::Code::kAlreadyExists);
  CHECK(md.CreateTopic("bad", 1, {{"no.such.key", "1"}}).status().code() ==
        Status::Code::kInvalidArgument);
  auto cfg = md.TopicConfig("orders");
  REQUIRE(cfg.ok());
  CHECK(cfg->retention_ms == 60000);

  // The log is opened in the data dir, under the image's topic id.
  auto log = node->logs().OpenLog("orders", PartitionId(2));
  REQUIRE_MESSAGE(log.ok(), log.status().ToString());
  auto there = (*local)->GetTopic("orders");
  REQUIRE(there.ok());
  CHECK(there->topic_id == t->topic_id);
  CHECK(node->logs().OpenLog("orders", PartitionId(3)).status().IsNotFound());

  REQUIRE(md.AddPartitions("orders", 5).ok());
  CHECK(md.GetTopic("orders")->partition_count == 5);
  CHECK(md.AddPartitions("orders", 4).code() == Status::Code::kInvalidArgument);

  REQUIRE(md.AlterTopicConfig(
                "orders",
                [](std::map<std::string, std::string>* c) {
                  c->erase("retention.ms");
                  (*c)["cleanup.policy"] = "compact";
                  return Status::OK();
                },
                false)
              .ok());
  CHECK(md.GetTopic("orders")->configs ==
        std::map<std::string, std::string>{{"cleanup.policy", "compact"}});
  CHECK((*local)->GetTopic("orders")->configs.count("cleanup.policy") == 1);

  // A proposal forwarded over the peer address is applied by the controller.
  Uuid id = RandomUuid();
  auto fr = ForwardPropose(
      self, NodeId(1), ForwardRequest{RandomUuid(), EncodeCommand({TopicRecord{"fwd", id}})}, 5000);
  REQUIRE_MESSAGE(fr.ok(), fr.status().ToString());
  CHECK(fr->outcome == ProposeOutcome::kApplied);
  CHECK(DecodeApplyResult(fr->result).ok());
  REQUIRE(WaitUntil([&] { return md.GetTopic("fwd").ok(); }, 5000ms));
  // A heartbeat is answered with the controller's applied index (at least that proposal's):
  // the node counts the answer only once its own image has caught up with it, so that a node
  // back from a pause does not lead on from its stale image.
  auto hb = ForwardPropose(self, NodeId(1), ForwardRequest{Uuid(), "", ForwardKind::kHeartbeat},
                           5000);
  REQUIRE_MESSAGE(hb.ok(), hb.status().ToString());
  CHECK(hb->outcome == ProposeOutcome::kApplied);
  CHECK(hb->index >= fr->index);
  CHECK(hb->index.value() > 0);
  // A read index: the controller confirms it still leads (a barrier entry of its term
  // committed) and answers an index at or above everything committed before it was asked.
  auto ri = ForwardPropose(self, NodeId(1), ForwardRequest{Uuid(), "", ForwardKind::kReadIndex},
                           5000);
  REQUIRE_MESSAGE(ri.ok(), ri.status().ToString());
  CHECK(ri->outcome == ProposeOutcome::kApplied);
  CHECK(ri->index > hb->index);

  // Producer ids come in blocks from the metadata log.
  broker::ProducerIdAllocator* pids = node->producer_ids();
  REQUIRE(pids != nullptr);
  auto first = pids->Allocate();
  REQUIRE(first.ok());
  CHECK(first->value() == 0);
  CHECK(pids->Allocate()->value() == 1);
  // Producer ids copied into a mirror topic are reserved through the metadata log: no node
  // hands them out afterwards, not even from the block it already holds.
  REQUIRE(pids->ReserveThrough(ProducerId(1500)).ok());
  auto after = pids->Allocate();
  REQUIRE(after.ok());
  CHECK(after->value() > 1500);  // the block [0, 1000) held is skipped
  CHECK(pids->Allocate()->value() == after->value() + 1);
  REQUIRE(pids->ReserveThrough(ProducerId(7)).ok());  // already reserved: nothing changes
  CHECK(pids->Allocate()->value() == after->value() + 2);

  REQUIRE(md.DeleteTopic("orders").ok());
  CHECK(md.GetTopic("orders").status().IsNotFound());
  CHECK((*local)->GetTopic("orders").status().IsNotFound());
  // "fwd", and __consumer_offsets, which the ready controller made.
  CHECK(md.ListTopics().size() == 2);
  CHECK(md.GetTopic("__consumer_offsets").ok());
  // The Raft directory is not a topic of the data dir, and survives the topic upkeep.
  CHECK(IsDirectory(RaftDirectory(dir)));
  for (const auto& t : (*local)->ListTopics()) CHECK(t.name.rfind("silt", 0) != 0);

  node->Stop();
  CHECK(md.CreateTopic("late", 1, {}).status().IsBusy());
  CHECK(md.GetTopic("fwd").ok());  // reads still answer from the last image
  node.reset();
  REQUIRE((*local)->Close().ok());

  // Restarted on the same directory: the image comes back from the node's own Raft log, and
  // the Raft directory is neither taken for a topic of the data dir nor removed by the upkeep.
  o.voters[0].port = FreePort();
  auto again = ClusterNode::Create(o);
  REQUIRE_MESSAGE(again.ok(), again.status().ToString());
  auto local2 = broker::LocalMetadataStore::Open(config, NodeId(1));
  REQUIRE(local2.ok());
  REQUIRE((*again)->Start(local2->get(), &*identity).ok());
  (*again)->Serving({});
  REQUIRE(WaitUntil([&] { return (*again)->metadata().GetTopic("fwd").ok(); }, kElectionLimit));
  CHECK((*again)->metadata().GetTopic("orders").status().IsNotFound());
  REQUIRE(WaitUntil([&] { return (*again)->metadata().Brokers().size() == 1; }, kElectionLimit));
  std::this_thread::sleep_for(300ms);  // a pass of the upkeep thread
  CHECK(IsDirectory(RaftDirectory(dir)));
  for (const auto& t : (*local2)->ListTopics()) CHECK(t.name.find("metadata") == std::string::npos);
  again->reset();
  REQUIRE((*local2)->Close().ok());
  std::filesystem::remove_all(dir);
}

// The replica-open gate: once the broker serves, only the replica manager opens a replica, and
// it gives the replica its role first. A request that comes first (here the test thread, as a
// Produce or Fetch would) is refused with NotLeader (NOT_LEADER_OR_FOLLOWER on the wire), also
// in the moment between Serving() and the manager's start, and never opens the partition as a
// single node's (a leader of ISR {this node} that acknowledges acks=all alone).
TEST_CASE("once a cluster node serves, a replica is opened only by the replica manager, with its "
          "role, and a request that comes first is refused as not the leader") {
  using namespace silt::cluster::testing;
  broker::SetLogLevel(broker::LogLevel::kWarn);
  std::string dir = ScratchDir();
  broker::BrokerConfig config;
  config.data_dir = dir;
  ClusterNodeOptions o;
  o.node_id = NodeId(1);
  o.voters = {Voter{NodeId(1), "127.0.0.1", FreePort()}};
  o.cluster_id = "gate-cluster";
  o.config = config;
  o.election_timeout_ms = 200;
  o.heartbeat_timeout_ms = 20;
  o.proposal_timeout_ms = 10000;
  auto identity = broker::NodeIdentity::Load(dir, NodeId(1), "gate-cluster");
  REQUIRE(identity.ok());
  identity->advertised_host = "127.0.0.1";
  identity->advertised_port = 19998;

  // A first life creates the topic (and so a node that restarts with it in its image).
  {
    auto node = ClusterNode::Create(o);
    REQUIRE_MESSAGE(node.ok(), node.status().ToString());
    auto local = broker::LocalMetadataStore::Open(config, NodeId(1));
    REQUIRE(local.ok());
    REQUIRE((*node)->Start(local->get(), &*identity).ok());
    (*node)->Serving({});
    REQUIRE(WaitUntil([&] { return (*node)->metadata().Brokers().size() == 1; }, kElectionLimit));
    REQUIRE((*node)->metadata().CreateTopic("gate", 2, {}).ok());
    (*node)->Stop();
    node->reset();
    REQUIRE((*local)->Close().ok());
  }

  // Restarted: the image has the topic before the node serves; the broker's partitions come
  // with Serving(), the replica manager only once the node has registered again.
  o.voters[0].port = FreePort();
  auto created = ClusterNode::Create(o);
  REQUIRE_MESSAGE(created.ok(), created.status().ToString());
  std::unique_ptr<ClusterNode> node = std::move(created).value();
  auto local = broker::LocalMetadataStore::Open(config, NodeId(1));
  REQUIRE(local.ok());
  REQUIRE(node->Start(local->get(), &*identity).ok());
  REQUIRE(WaitUntil([&] { return node->metadata().GetTopic("gate").ok(); }, kElectionLimit));
  {
    broker::PartitionManager partitions(&node->logs(), NodeId(1));
    node->Serving(broker::BrokerServices{&partitions, nullptr, nullptr});
    auto early = partitions.Get("gate", PartitionId(0));
    const std::string what = early.ok() ? "opened" : early.status().ToString();
    CHECK_MESSAGE(early.status().code() == Status::Code::kNotLeader, what);
    // The manager opens both replicas and makes this node their leader (the image says so);
    // the partition a request gets from then on is that one, its role set.
    REQUIRE(WaitUntil(
        [&] {
          auto p = partitions.Get("gate", PartitionId(0));
          return p.ok() && (*p)->role_set() && (*p)->is_leader();
        },
        kElectionLimit));
    // A partition the image does not have is not opened either.
    CHECK(partitions.Get("gate", PartitionId(2)).status().IsNotFound());
    node->Stop();
    partitions.ShutdownAll();
  }
  node.reset();
  REQUIRE((*local)->Close().ok());
  std::filesystem::remove_all(dir);
}

TEST_CASE("forwarding to a peer address where nothing listens is an IOError") {
  Voter nobody{NodeId(2), "127.0.0.1", silt::cluster::testing::FreePort()};
  auto r = ForwardPropose(nobody, NodeId(1), ForwardRequest{RandomUuid(), "x"}, 1000);
  CHECK(r.status().code() == Status::Code::kIOError);
}

TEST_CASE(
    "controller.quorum.voters, node.id and cluster.id in server properties set cluster mode") {
  broker::BrokerConfig c;
  CHECK(c.quorum_voters.empty());
  REQUIRE(
      broker::ApplyServerProperty(&c, "controller.quorum.voters", "1@10.0.0.1:9093,2@10.0.0.2:9093")
          .ok());
  REQUIRE(broker::ApplyServerProperty(&c, "node.id", "2").ok());
  REQUIRE(broker::ApplyServerProperty(&c, "cluster.id", "prod-1").ok());
  auto voters = ParseVoters(c.quorum_voters);
  REQUIRE(voters.ok());
  CHECK(voters->size() == 2);
  CHECK(c.node_id == 2);
  CHECK(c.cluster_id == "prod-1");
  CHECK(c.ignored_keys.empty());
}

TEST_CASE("a cluster node refuses a node id missing from the voter list") {
  ClusterNodeOptions o;
  o.node_id = NodeId(4);
  o.voters = *ParseVoters("1@127.0.0.1:1,2@127.0.0.1:2");
  o.cluster_id = "c";
  o.config.data_dir = ScratchDir();
  auto r = ClusterNode::Create(o);
  CHECK(r.status().message().find("node id 4 is not in the voter list") != std::string::npos);
  std::filesystem::remove_all(o.config.data_dir);
}

// The BROKER configs of the metadata log: what the store proposes is in the image (only the
// keys that changed), the broker is told after the image is reconciled, and a node restarted
// on its data dir finds them again in its replayed log.
TEST_CASE("a cluster node keeps dynamic broker configs in its metadata log, across a restart") {
  using namespace silt::cluster::testing;
  broker::SetLogLevel(broker::LogLevel::kWarn);
  std::string dir = ScratchDir();
  broker::BrokerConfig config;
  config.data_dir = dir;
  config.node_id = 1;
  ClusterNodeOptions o;
  o.node_id = NodeId(1);
  o.voters = {Voter{NodeId(1), "127.0.0.1", FreePort()}};
  o.cluster_id = "dyncfg-cluster";
  o.config = config;
  o.election_timeout_ms = 200;
  o.heartbeat_timeout_ms = 20;
  o.proposal_timeout_ms = 10000;
  auto identity = broker::NodeIdentity::Load(dir, NodeId(1), "dyncfg-cluster");
  REQUIRE(identity.ok());
  identity->advertised_host = "127.0.0.1";
  identity->advertised_port = 19997;
  using Configs = broker::BrokerConfigStore::Configs;
  const Configs defaults{{"log.retention.ms", "70000"}, {"log.segment.bytes", "2097152"}};
  const Configs mine{{"log.retention.ms", "80000"}};

  {
    auto node = ClusterNode::Create(o);
    REQUIRE_MESSAGE(node.ok(), node.status().ToString());
    auto local = broker::LocalMetadataStore::Open(config, NodeId(1));
    REQUIRE(local.ok());
    REQUIRE((*node)->Start(local->get(), &*identity).ok());
    std::atomic<int> reloads{0};
    broker::BrokerServices services;
    services.reload_broker_configs = [&reloads] { reloads++; };
    (*node)->Serving(services);
    REQUIRE(WaitUntil([&] { return (*node)->metadata().Brokers().size() == 1; }, kElectionLimit));
    REQUIRE((*node)->metadata().CreateTopic("plain", 1, {}).ok());
    broker::BrokerConfigStore* store = (*node)->broker_configs();
    REQUIRE(store != nullptr);
    CHECK(store->Load(true)->empty());
    REQUIRE(store->Store(true, {}, defaults).ok());
    REQUIRE(store->Store(false, {}, mine).ok());
    // Load gives them as soon as Store returns.
    CHECK(*store->Load(true) == defaults);
    CHECK(*store->Load(false) == mine);
    // A delete of one key leaves the other. The count is read before the change: the reload
    // that follows it may come before Store returns.
    const int seen = reloads.load();
    REQUIRE(store->Store(true, defaults, {{"log.retention.ms", "70000"}}).ok());
    CHECK(*store->Load(true) == Configs{{"log.retention.ms", "70000"}});
    CHECK(WaitUntil([&] { return reloads.load() > seen; }, kElectionLimit));
    // The topic defaults the broker hands over are what topics without overrides report.
    storage::LogConfig d = config.log_defaults;
    d.retention_ms = 80000;
    REQUIRE((*node)->metadata().SetLogDefaults(d).ok());
    auto tc = (*node)->metadata().TopicConfig("plain");
    REQUIRE(tc.ok());
    CHECK(tc->retention_ms == 80000);
    (*node)->Stop();
    node->reset();
    REQUIRE((*local)->Close().ok());
  }

  o.voters[0].port = FreePort();
  auto node = ClusterNode::Create(o);
  REQUIRE_MESSAGE(node.ok(), node.status().ToString());
  auto local = broker::LocalMetadataStore::Open(config, NodeId(1));
  REQUIRE(local.ok());
  REQUIRE((*node)->Start(local->get(), &*identity).ok());
  // The broker as Broker::Open wires it: its dynamic configs over the node's store, taken on
  // each reconciled image.
  auto dynamic = broker::DynamicBrokerConfig::OpenWith(config, (*node)->broker_configs());
  broker::MetadataStore* metadata = &(*node)->metadata();
  broker::BrokerServices services;
  services.reload_broker_configs = [&] { (void)dynamic->Reload(metadata); };
  (*node)->Serving(services);
  CHECK(WaitUntil([&] { return dynamic->Get(true) == Configs{{"log.retention.ms", "70000"}}; },
                  kElectionLimit));
  CHECK(dynamic->Get(false) == mine);
  CHECK(dynamic->Effective().log_defaults.retention_ms == 80000);
  REQUIRE(WaitUntil([&] { return metadata->TopicConfig("plain").ok(); }, kElectionLimit));
  CHECK(metadata->TopicConfig("plain")->retention_ms == 80000);
  // A change through the broker's object goes to the log and back.
  REQUIRE(dynamic
              ->Edit(
                  false,
                  [](Configs* c) {
                    c->clear();
                    return Status::OK();
                  },
                  false, metadata)
              .ok());
  CHECK(dynamic->Get(false).empty());
  CHECK((*node)->broker_configs()->Load(false)->empty());
  CHECK(metadata->TopicConfig("plain")->retention_ms == 70000);
  (*node)->Stop();
  node->reset();
  REQUIRE((*local)->Close().ok());
  std::filesystem::remove_all(dir);
}

// The read barrier before a producer id: a node learns of a reservation (producer ids copied
// into a mirror topic) only when its image applies it. A follower whose image is held behind
// the reservation must not answer InitProducerId from the block it holds: it asks the
// controller for its commit index and waits for its image to get there, or, past its timeout,
// answers a retriable error.
TEST_CASE(
    "a follower whose image is held behind a reservation waits for it before handing out a "
    "producer id, and never hands out a reserved one") {
  using namespace silt::cluster::testing;
  broker::SetLogLevel(broker::LogLevel::kError);
  std::vector<Voter> voters;
  for (int i = 1; i <= 3; ++i) voters.push_back(Voter{NodeId(i), "127.0.0.1", FreePort()});
  // The apply gate: while `hold` is set, node `held` applies nothing.
  std::mutex gate_mu;
  std::condition_variable gate_cv;
  bool hold = false;
  std::atomic<int> held{0};
  struct Member {
    std::string dir;
    std::unique_ptr<broker::LocalMetadataStore> local;
    std::optional<broker::NodeIdentity> identity;
    std::unique_ptr<ClusterNode> node;
  };
  std::vector<Member> members(3);
  for (int i = 0; i < 3; ++i) {
    Member& m = members[i];
    m.dir = ScratchDir();
    broker::BrokerConfig config;
    config.data_dir = m.dir;
    config.node_id = i + 1;
    ClusterNodeOptions o;
    o.node_id = NodeId(i + 1);
    o.voters = voters;
    o.cluster_id = "barrier-cluster";
    o.config = config;
    o.election_timeout_ms = 300;
    o.heartbeat_timeout_ms = 30;
    o.proposal_timeout_ms = 10000;
    o.read_barrier_timeout_ms = 1500;
    o.before_apply = [&, id = i + 1] {
      std::unique_lock<std::mutex> l(gate_mu);
      gate_cv.wait(l, [&] { return !hold || held.load() != id; });
    };
    auto created = ClusterNode::Create(o);
    REQUIRE_MESSAGE(created.ok(), created.status().ToString());
    m.node = std::move(created).value();
    auto local = broker::LocalMetadataStore::Open(config, NodeId(i + 1));
    REQUIRE(local.ok());
    m.local = std::move(local).value();
    auto identity = broker::NodeIdentity::Load(m.dir, NodeId(i + 1), "barrier-cluster");
    REQUIRE(identity.ok());
    m.identity = *identity;
    m.identity->advertised_host = "127.0.0.1";
    m.identity->advertised_port = static_cast<uint16_t>(19990 + i);
  }
  for (Member& m : members) {
    REQUIRE(m.node->Start(m.local.get(), &*m.identity).ok());
    m.node->Serving({});
  }
  for (Member& m : members)
    REQUIRE(WaitUntil([&] { return m.node->metadata().Brokers().size() == 3; }, kElectionLimit));
  std::optional<NodeId> controller = members[0].node->metadata().Controller();
  REQUIRE(controller.has_value());
  ClusterNode& leader = *members[controller->value() - 1].node;
  const int f = controller->value() == 1 ? 2 : 1;
  ClusterNode& follower = *members[f - 1].node;
  auto release = [&] {
    {
      std::lock_guard<std::mutex> l(gate_mu);
      hold = false;
    }
    gate_cv.notify_all();
  };

  // The follower takes a block of ids; then its image is held back while the controller
  // reserves the ids of that block (a mirror topic got batches carrying them).
  auto first = follower.producer_ids()->Allocate();
  REQUIRE_MESSAGE(first.ok(), first.status().ToString());
  held = f;
  {
    std::lock_guard<std::mutex> l(gate_mu);
    hold = true;
  }
  REQUIRE(leader.producer_ids()->ReserveThrough(ProducerId(first->value() + 10)).ok());
  const int64_t reserved = (first->value() / 1000 + 1) * 1000 - 1;  // through the block's end
  auto next = std::async(std::launch::async, [&] { return follower.producer_ids()->Allocate(); });
  // Without the barrier it would answer at once, with first + 1, an id now reserved.
  CHECK(next.wait_for(400ms) == std::future_status::timeout);
  release();
  auto got = next.get();
  REQUIRE_MESSAGE(got.ok(), got.status().ToString());
  CHECK(got->value() > reserved);

  // Held back for longer than read_barrier_timeout_ms: a retriable Busy
  // (COORDINATOR_LOAD_IN_PROGRESS on the wire), and an id above the reservation once caught up.
  {
    std::lock_guard<std::mutex> l(gate_mu);
    hold = true;
  }
  REQUIRE(leader.producer_ids()->ReserveThrough(ProducerId(got->value() + 5000)).ok());
  const auto start = std::chrono::steady_clock::now();
  auto late = follower.producer_ids()->Allocate();
  CHECK(late.status().IsBusy());
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  release();
  auto after = follower.producer_ids()->Allocate();
  REQUIRE_MESSAGE(after.ok(), after.status().ToString());
  CHECK(after->value() > got->value() + 5000);
  // Several at once, the image held back meanwhile: each waits, each gets an id of its own
  // above every reservation.
  {
    std::lock_guard<std::mutex> l(gate_mu);
    hold = true;
  }
  REQUIRE(leader.producer_ids()->ReserveThrough(ProducerId(after->value() + 2000)).ok());
  std::vector<std::future<Result<ProducerId>>> many;
  for (int i = 0; i < 8; ++i)
    many.push_back(
        std::async(std::launch::async, [&] { return follower.producer_ids()->Allocate(); }));
  std::this_thread::sleep_for(200ms);
  release();
  std::set<int64_t> ids;
  for (auto& m : many) {
    auto id = m.get();
    REQUIRE_MESSAGE(id.ok(), id.status().ToString());
    CHECK(id->value() > after->value() + 2000);
    ids.insert(id->value());
  }
  CHECK(ids.size() == 8);
  // The controller passes the barrier too (its own quorum confirms it still leads).
  auto own = leader.producer_ids()->Allocate();
  REQUIRE_MESSAGE(own.ok(), own.status().ToString());
  CHECK(own->value() > after->value() + 2000);

  for (Member& m : members) m.node->Stop();
  for (Member& m : members) {
    m.node.reset();
    REQUIRE(m.local->Close().ok());
    std::filesystem::remove_all(m.dir);
  }
}
