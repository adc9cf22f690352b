// The group APIs over the wire against an in-process broker, at the old versions real clients
// rarely use (v0/v1 bodies, OffsetFetch with null topics), and committed offsets across a
// restart through the __consumer_offsets topic.
#include <doctest/doctest.h>

#include "broker/broker_test_util.h"
#include "protocol/consumer_offsets.h"
#include "protocol/errors.h"
#include "fixture_skip.h"

namespace silt::broker {
namespace {

using protocol::ErrorCode;
using testing::Client;
using testing::TestBroker;

int16_t E(ErrorCode c) { return protocol::ToWire(c); }

BrokerConfig GroupConfig() {
  BrokerConfig c;
  c.group_initial_rebalance_delay_ms = 0;
  c.offsets_topic_num_partitions = 5;
  return c;
}

TEST_CASE("FindCoordinator names this broker for groups and refuses transactions") {
  TestBroker b(GroupConfig());
  Client c(b.port);
  for (int16_t v = 0; v <= 2; ++v) {
    CAPTURE(v);
    protocol::FindCoordinatorRequest req;
    req.key = "g";
    protocol::FindCoordinatorResponse resp;
    c.Call(req, v, &resp);
    CHECK(resp.error_code == 0);
    CHECK(resp.node_id == 0);
    CHECK(resp.host == "127.0.0.1");
    CHECK(resp.port == b.port);
  }
  protocol::FindCoordinatorRequest txn;
  txn.key = "t";
  txn.key_type = 1;
  protocol::FindCoordinatorResponse resp;
  c.Call(txn, 1, &resp);
  CHECK(resp.error_code == E(ErrorCode::COORDINATOR_NOT_AVAILABLE));
}

TEST_CASE("FindCoordinator v4 answers each of a batch of keys; v3 is the flexible v2") {
  TestBroker b(GroupConfig());
  Client c(b.port);
  protocol::FindCoordinatorRequest req;
  req.key = "g";
  protocol::FindCoordinatorResponse resp;
  c.Call(req, 3, &resp);
  CHECK(resp.error_code == 0);
  CHECK(resp.node_id == 0);
  CHECK(resp.port == b.port);

  protocol::FindCoordinatorRequest batch;
  batch.coordinator_keys = {"g1", "g2", "g3"};
  protocol::FindCoordinatorResponse br;
  c.Call(batch, 4, &br);
  REQUIRE(br.coordinators.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(br.coordinators[i].key == batch.coordinator_keys[i]);
    CHECK(br.coordinators[i].error_code == 0);
    CHECK(br.coordinators[i].node_id == 0);
    CHECK(br.coordinators[i].host == "127.0.0.1");
    CHECK(br.coordinators[i].port == b.port);
  }
  batch.key_type = 1;
  c.Call(batch, 4, &br);
  REQUIRE(br.coordinators.size() == 3);
  CHECK(br.coordinators[1].error_code == E(ErrorCode::COORDINATOR_NOT_AVAILABLE));
  CHECK(br.coordinators[1].node_id == -1);
}

TEST_CASE("an offset commit is answered once its __consumer_offsets batch is committed") {
  TestBroker b(GroupConfig());
  Client c(b.port);
  testing::CreateTopic(c, "t");
  auto commit = [](int64_t offset) {
    protocol::OffsetCommitRequest r;
    r.group_id = "hw-group";
    r.generation_id_or_member_epoch = -1;
    r.retention_time_ms = -1;
    r.topics = {{"t", {{0, offset, -1, -1, std::nullopt}}}};
    return r;
  };
  Client reader(b.port);
  auto fetched = [&reader] {
    protocol::OffsetFetchRequest f;
    f.group_id = "hw-group";
    f.topics.emplace();
    f.topics->push_back({"t", {0}});
    protocol::OffsetFetchResponse fr;
    reader.Call(f, 2, &fr);
    REQUIRE(fr.topics.size() == 1);
    return fr.topics[0].partitions[0].committed_offset;
  };
  // On one node the high watermark follows the log end: answered at once.
  protocol::OffsetCommitResponse cr;
  c.Call(commit(1), 2, &cr);
  REQUIRE(cr.topics.size() == 1);
  REQUIRE(cr.topics[0].partitions[0].error_code == 0);
  CHECK(fetched() == 1);

  // A second in-sync replica that has not copied the batch yet holds the answer back.
  int32_t p = protocol::OffsetsPartitionFor("hw-group", 5);
  auto part = b.server->broker().partitions().Get(protocol::kConsumerOffsetsTopic, PartitionId(p));
  REQUIRE(part.ok());
  const NodeId follower(2);
  (*part)->SetIsr({NodeId(b.config.node_id), follower});
  (*part)->RecordFollowerLogEnd(follower, (*part)->log_end_offset());
  c.Send(commit(2), 2, 42);
  CHECK(c.Receive(&cr, 2, 300) == -1);
  // Written but not committed: a failover could still erase it, so OffsetFetch (Kafka's pending
  // offset commits) serves the commit before it.
  CHECK(fetched() == 1);
  (*part)->RecordFollowerLogEnd(follower, (*part)->log_end_offset());
  REQUIRE(c.Receive(&cr, 2, 3000) == 42);
  CHECK(cr.topics[0].partitions[0].error_code == 0);
  CHECK(fetched() == 2);

  // Never copied: after offsets.commit.timeout.ms (5 s) the client is told to retry, and the
  // offset was never served.
  c.Send(commit(3), 2, 43);
  REQUIRE(c.Receive(&cr, 2, 8000) == 43);
  CHECK(cr.topics[0].partitions[0].error_code == E(ErrorCode::COORDINATOR_NOT_AVAILABLE));
  CHECK(fetched() == 2);
  // Copied late: committed after all, and served once the high watermark passes it.
  (*part)->RecordFollowerLogEnd(follower, (*part)->log_end_offset());
  CHECK(fetched() == 3);
  const Offset before = (*part)->log_end_offset();
  c.Send(commit(4), 2, 44);
  for (int i = 0; i < 300 && (*part)->log_end_offset() == before; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  (*part)->RecordFollowerLogEnd(follower, (*part)->log_end_offset());
  REQUIRE(c.Receive(&cr, 2, 3000) == 44);
  CHECK(fetched() == 4);

  // An OffsetDelete while a commit is pending: the pending one must not bring the offset back
  // once it is copied.
  const Offset held = (*part)->log_end_offset();
  c.Send(commit(5), 2, 45);
  for (int i = 0; i < 300 && (*part)->log_end_offset() == held; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE((*part)->log_end_offset() > held);
  protocol::OffsetDeleteRequest del;
  del.group_id = "hw-group";
  del.topics.push_back({"t", {{0}}});
  protocol::OffsetDeleteResponse dr;
  reader.Call(del, 0, &dr);
  REQUIRE(dr.error_code == 0);
  (*part)->RecordFollowerLogEnd(follower, (*part)->log_end_offset());
  REQUIRE(c.Receive(&cr, 2, 3000) == 45);
  CHECK(fetched() == -1);
}

TEST_CASE("a v0 group member joins, syncs, commits, and its offsets survive a restart") {
  TestBroker b(GroupConfig());
  Client c(b.port);
  testing::CreateTopic(c, "t", 2);
  protocol::JoinGroupRequest join;
  join.group_id = "old-client";
  join.session_timeout_ms = 10000;
  join.protocol_type = "consumer";
  join.protocols = {{"range", "subscription"}};
  protocol::JoinGroupResponse jr;
  c.Call(join, 0, &jr);
  REQUIRE(jr.error_code == 0);
  CHECK(jr.generation_id == 1);
  CHECK(jr.leader == jr.member_id);
  REQUIRE(jr.members.size() == 1);
  CHECK(jr.members[0].metadata == "subscription");

  protocol::SyncGroupRequest sync;
  sync.group_id = "old-client";
  sync.generation_id = jr.generation_id;
  sync.member_id = jr.member_id;
  sync.assignments = {{jr.member_id, "assignment"}};
  protocol::SyncGroupResponse sr;
  c.Call(sync, 0, &sr);
  CHECK(sr.error_code == 0);
  CHECK(sr.assignment == "assignment");

  protocol::HeartbeatRequest hb;
  hb.group_id = "old-client";
  hb.generation_id = jr.generation_id;
  hb.member_id = jr.member_id;
  protocol::HeartbeatResponse hr;
  c.Call(hb, 0, &hr);
  CHECK(hr.error_code == 0);
  hb.generation_id = 99;
  c.Call(hb, 0, &hr);
  CHECK(hr.error_code == E(ErrorCode::ILLEGAL_GENERATION));

  protocol::OffsetCommitRequest commit;
  commit.group_id = "old-client";
  commit.generation_id_or_member_epoch = jr.generation_id;
  commit.member_id = jr.member_id;
  commit.retention_time_ms = -1;
  commit.topics = {{"t", {{0, 17, -1, -1, std::string("m0")}, {1, 23, -1, -1, std::nullopt}}}};
  protocol::OffsetCommitResponse cr;
  c.Call(commit, 2, &cr);
  REQUIRE(cr.topics.size() == 1);
  CHECK(cr.topics[0].partitions[0].error_code == 0);
  CHECK(cr.topics[0].partitions[1].error_code == 0);

  protocol::DescribeGroupsRequest dreq;
  dreq.groups = {"old-client"};
  protocol::DescribeGroupsResponse dresp;
  c.Call(dreq, 0, &dresp);
  REQUIRE(dresp.groups.size() == 1);
  CHECK(dresp.groups[0].group_state == "Stable");
  REQUIRE(dresp.groups[0].members.size() == 1);
  CHECK(dresp.groups[0].members[0].client_id == "broker-test");
  CHECK(dresp.groups[0].members[0].client_host == "/127.0.0.1");
  CHECK(dresp.groups[0].members[0].member_assignment == "assignment");

  protocol::ListGroupsResponse lresp;
  c.Call(protocol::ListGroupsRequest{}, 0, &lresp);
  REQUIRE(lresp.groups.size() == 1);
  CHECK(lresp.groups[0].group_id == "old-client");

  // __consumer_offsets exists now, with the configured partition count, marked internal.
  protocol::MetadataRequest mreq;
  mreq.topics.emplace();
  mreq.topics->push_back({.name = protocol::kConsumerOffsetsTopic});
  protocol::MetadataResponse mresp;
  c.Call(mreq, 1, &mresp);
  REQUIRE(mresp.topics.size() == 1);
  CHECK(mresp.topics[0].error_code == 0);
  CHECK(mresp.topics[0].is_internal);
  CHECK(mresp.topics[0].partitions.size() == 5);

  protocol::LeaveGroupRequest leave;
  leave.group_id = "old-client";
  leave.member_id = jr.member_id;
  protocol::LeaveGroupResponse leave_resp;
  c.Call(leave, 0, &leave_resp);
  CHECK(leave_resp.error_code == 0);

  b.Restart();
  Client c2(b.port);
  // v1: topics listed; v3: null topics, every committed partition.
  protocol::OffsetFetchRequest fetch;
  fetch.group_id = "old-client";
  fetch.topics.emplace();
  fetch.topics->push_back({"t", {0, 1, 2}});
  protocol::OffsetFetchResponse fr;
  c2.Call(fetch, 1, &fr);
  REQUIRE(fr.topics.size() == 1);
  REQUIRE(fr.topics[0].partitions.size() == 3);
  CHECK(fr.topics[0].partitions[0].committed_offset == 17);
  CHECK(fr.topics[0].partitions[0].metadata == std::optional<std::string>("m0"));
  CHECK(fr.topics[0].partitions[1].committed_offset == 23);
  CHECK(fr.topics[0].partitions[2].committed_offset == -1);
  fetch.topics.reset();
  c2.Call(fetch, 3, &fr);
  CHECK(fr.error_code == 0);
  REQUIRE(fr.topics.size() == 1);
  CHECK(fr.topics[0].partitions.size() == 2);

  protocol::DescribeGroupsResponse after;
  c2.Call(dreq, 0, &after);
  REQUIRE(after.groups.size() == 1);
  CHECK(after.groups[0].group_state == "Empty");
  CHECK(after.groups[0].members.empty());

  // The group lives in partition abs(hash) % 5 of __consumer_offsets.
  auto state = b.server->broker().partitions().Get(
      protocol::kConsumerOffsetsTopic, PartitionId(protocol::OffsetsPartitionFor("old-client", 5)));
  REQUIRE(state.ok());
  CHECK((*state)->log_end_offset().value() >= 3);
}


TEST_CASE("a Kafka 3.7 broker's __consumer_offsets partition loads: group DEVSmileCDR") {
  std::string fixture = std::string(SILT_FIXTURES_DIR) +
                        "/kafka-data/kafka-3.7-kraft/__consumer_offsets-6/00000000000000000000.log";
  if (!PathExists(fixture)) {
    SILT_SKIP_MISSING_FIXTURE(fixture << " is absent; the Kafka offsets load check did not run");
    return;
  }
  BrokerConfig config = GroupConfig();
  config.offsets_topic_num_partitions = 50;
  TestBroker b(config);
  // Create the topic as the broker would, then put Kafka's partition 6 in place of ours.
  REQUIRE(b.server->broker()
              .metadata()
              .CreateTopic(protocol::kConsumerOffsetsTopic, 50, {{"cleanup.policy", "compact"}})
              .ok());
  REQUIRE(b.server->Shutdown().ok());
  b.server.reset();
  std::string dir = JoinPath(b.data_dir, "__consumer_offsets-6");
  auto files = ListDir(dir);
  REQUIRE(files.ok());
  for (const std::string& f : *files) {
    if (f.find(".index") != std::string::npos || f.find(".log") != std::string::npos) {
      REQUIRE(RemoveFile(JoinPath(dir, f)).ok());
    }
  }
  auto bytes = ReadFile(fixture);
  REQUIRE(bytes.ok());
  REQUIRE(WriteFileAtomic(JoinPath(dir, "00000000000000000000.log"), *bytes).ok());
  b.Start();

  Client c(b.port);
  protocol::OffsetFetchRequest fetch;
  fetch.group_id = "DEVSmileCDR";
  protocol::OffsetFetchResponse fr;
  c.Call(fetch, 5, &fr);
  CHECK(fr.error_code == 0);
  bool found = false;
  for (const auto& t : fr.topics) {
    for (const auto& p : t.partitions) {
      CHECK(p.committed_offset >= 0);
      if (t.name == "TestTopicPatient" && p.partition_index == 0) {
        CHECK(p.committed_offset == 3);
        found = true;
      }
    }
  }
  CHECK(found);
  protocol::DescribeGroupsRequest dreq;
  dreq.groups = {"DEVSmileCDR"};
  protocol::DescribeGroupsResponse dresp;
  c.Call(dreq, 4, &dresp);
  REQUIRE(dresp.groups.size() == 1);
  const auto& g = dresp.groups[0];
  CHECK(g.protocol_type == "consumer");
  CHECK(g.group_state == "Stable");
  CHECK(!g.members.empty());
  for (const auto& m : g.members) CHECK(m.client_host.rfind("/", 0) == 0);
}

}  // namespace
}  // namespace silt::broker
