// The group coordinator: Kafka's classic consumer-group protocol (JoinGroup, SyncGroup,
// Heartbeat, LeaveGroup) and committed offsets (OffsetCommit, OffsetFetch), for every group —
// this node coordinates them all.
//
// Group states, as Kafka names them:
//   Empty               no members (offsets may remain)
//   PreparingRebalance  waiting for every known member to (re)join, or the rebalance timeout
//   CompletingRebalance joins answered; waiting for the leader's SyncGroup with assignments
//   Stable              assignments handed out; members heartbeat
//   Dead                removed (offsets expired, or DeleteGroups); about to be forgotten
//
// A rebalance: the first JoinGroup of a generation moves the group to PreparingRebalance; each
// JoinGroup waits (its response is sent later) until all known members rejoined or the largest
// rebalance timeout passed (members that did not rejoin are dropped). Then the generation goes up,
// a protocol is chosen by vote among those every member supports, and each member gets its
// answer — the leader (the earliest member) with every member's metadata. The leader's SyncGroup
// carries the assignments that answer every member's SyncGroup. Heartbeats keep a member alive
// for session.timeout.ms; an expired member is removed and a rebalance starts. A group that was
// Empty waits group.initial.rebalance.delay.ms for more members before its first generation.
// Static members (group.instance.id) keep their place across restarts: rejoining with a known
// instance id takes over the old member id, without a rebalance when nothing changed.
//
// Every change that must survive a restart (offsets, the group after each generation is
// assigned, deletions) is written through an OffsetLog before it is acknowledged; Load()
// replays that log.
//
// Ownership. On a single node the coordinator owns every group (Load). In a cluster a group
// belongs to the leader of its __consumer_offsets partition (protocol::OffsetsPartitionFor):
// after UseOwnedPartitions(n) the coordinator owns only the groups of the partitions it was
// told to load. LoadPartition replays one partition when this node becomes its leader (its
// groups answer COORDINATOR_LOAD_IN_PROGRESS meanwhile); UnloadPartition forgets them when it
// stops leading (waiting joins and syncs, and every later request, get NOT_COORDINATOR, so
// clients look the coordinator up again). Any other group gets NOT_COORDINATOR.
//
// Threads: all methods may be called from any thread; state is guarded by one mutex, and
// response callbacks run after it is released. Deadlines (session, rebalance, initial delay,
// offset expiry) are kept by one timer thread that sleeps until the next one, or by the caller
// through Poll() when options.run_timer_thread is false (tests with a fake clock).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/ids.h"
#include "base/status.h"
#include "broker/offset_store.h"
#include "protocol/messages.h"

namespace silt::broker {

struct GroupCoordinatorOptions {
  int32_t min_session_timeout_ms = 6000;               // group.min.session.timeout.ms
  int32_t max_session_timeout_ms = 1800000;            // group.max.session.timeout.ms
  int32_t initial_rebalance_delay_ms = 3000;           // group.initial.rebalance.delay.ms
  int64_t offsets_retention_ms = 7LL * 24 * 3600 * 1000;  // offsets.retention.minutes
  int64_t offsets_retention_check_interval_ms = 600000;   // offsets.retention.check.interval.ms
  int32_t offset_metadata_max_bytes = 4096;            // offset.metadata.max.bytes
  bool run_timer_thread = true;
};

class GroupCoordinator {
 public:
  // Who sent a request (DescribeGroups shows it).
  struct ClientInfo {
    std::string client_id;
    std::string client_host;  // "/address", as Kafka shows it
  };
  using JoinCallback = std::function<void(protocol::JoinGroupResponse)>;
  using SyncCallback = std::function<void(protocol::SyncGroupResponse)>;

  // `log` must outlive the coordinator.
  GroupCoordinator(const GroupCoordinatorOptions& options, OffsetLog* log);
  ~GroupCoordinator();  // Shutdown()

  // Replays the log: offsets and the last stored state of each group. Groups stored with
  // members come back Stable, their members given a fresh session timeout to heartbeat.
  // Records that do not decode are skipped with a warning; errors reading the log are returned.
  Status Load();
  // Starts the timer thread (when options.run_timer_thread).
  void Start();

  // From now on only the groups of loaded partitions of the topic's `partition_count` are
  // this coordinator's (cluster mode; call before serving, instead of Load).
  void UseOwnedPartitions(int32_t partition_count);
  // Replays partition `partition` and serves its groups from then on. While it replays, the
  // partition's groups get COORDINATOR_LOAD_IN_PROGRESS. A partition already loaded is
  // replayed again (after a new leader epoch, what it holds may have changed). An
  // UnloadPartition meanwhile wins: the replay's result is dropped. Errors reading the log are
  // returned and leave the partition unloaded.
  Status LoadPartition(int32_t partition);
  // Forgets the groups of `partition` (see above). Nothing when it was not loaded.
  void UnloadPartition(int32_t partition);
  // The partitions loaded (and being loaded), for tests and logs.
  std::vector<int32_t> OwnedPartitions();
  // Answers every waiting JoinGroup/SyncGroup with NOT_COORDINATOR (clients look for the
  // coordinator again), refuses new requests with COORDINATOR_NOT_AVAILABLE and stops the
  // timer thread. Idempotent.
  void Shutdown();

  // Asks the timer thread to get the offset log ready for writes (creating __consumer_offsets)
  // now, so that the first group to store something does not wait for it. Returns at once. A
  // failed attempt is made again at the next call.
  void PrepareStorageSoon();

  // Each request is answered through its callback exactly once, now or later, from any thread.
  void JoinGroup(const protocol::JoinGroupRequest& req, int16_t version, const ClientInfo& client,
                 JoinCallback done);
  void SyncGroup(const protocol::SyncGroupRequest& req, int16_t version, SyncCallback done);
  protocol::HeartbeatResponse Heartbeat(const protocol::HeartbeatRequest& req, int16_t version);
  protocol::LeaveGroupResponse LeaveGroup(const protocol::LeaveGroupRequest& req, int16_t version);
  // Writes the commit and answers it. When `at` is given and something was written, it says
  // where: the caller answers once that offset is committed (the partition's high watermark
  // passes it), and calls PublishCommitted then; until that the offsets are pending, and
  // OffsetFetch serves the ones before them (Kafka's pending offset commits). Without `at`
  // (or for a log with no offsets) they are served from the moment they are written.
  protocol::OffsetCommitResponse CommitOffsets(const protocol::OffsetCommitRequest& req,
                                               int16_t version, AppendedAt* at = nullptr);
  // Makes the commits of `group` written below `high_watermark` of its __consumer_offsets
  // partition visible to OffsetFetch, in log order (the caller of CommitOffsets, once the
  // high watermark passes the `at` it was given). Commits are not visible before: an offset a
  // failover can still erase is never served.
  void PublishCommitted(const std::string& group, Offset high_watermark);
  protocol::OffsetFetchResponse FetchOffsets(const protocol::OffsetFetchRequest& req,
                                             int16_t version);
  protocol::DescribeGroupsResponse DescribeGroups(const protocol::DescribeGroupsRequest& req,
                                                  int16_t version);
  // Every group, or those matching the request's state (v4+) and type (v5+) filters.
  protocol::ListGroupsResponse ListGroups(const protocol::ListGroupsRequest& req = {});
  // Deletes each named group: tombstones for its committed offsets and its metadata go to the
  // offset log as one batch (so the group stays deleted after a restart and compaction drops
  // its records), then the group is forgotten. Per-group errors: INVALID_GROUP_ID for "",
  // GROUP_ID_NOT_FOUND for a group this coordinator does not know, NON_EMPTY_GROUP while it
  // has members (or members joining), COORDINATOR_NOT_AVAILABLE when shutting down or when
  // the tombstones could not be written (the group is then left as it was).
  protocol::DeleteGroupsResponse DeleteGroups(const protocol::DeleteGroupsRequest& req);
  // OffsetDelete (KIP-496): deletes the group's committed offsets of each partition of
  // `partitions` (topic, partition), writing their tombstones as one batch. Returns the group's
  // error, or 0 and one error per partition in `*errors` (same order): 0, or
  // GROUP_SUBSCRIBED_TO_TOPIC when the group is not Empty and a member of its consumer
  // protocol subscribes to the topic (then that offset stays). Group errors: INVALID_GROUP_ID
  // for "", NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS, GROUP_ID_NOT_FOUND for an unknown
  // group, NON_EMPTY_GROUP for a non-empty group of another protocol type,
  // COORDINATOR_NOT_AVAILABLE when shutting down or the tombstones could not be written. An
  // Empty group left without offsets is deleted, as offset expiry does.
  int16_t DeleteOffsets(const std::string& group,
                        const std::vector<std::pair<std::string, int32_t>>& partitions,
                        std::vector<int16_t>* errors);

  // Acts on every deadline that has passed by NowMs(): expired members and pending member ids,
  // rebalance timeouts and initial delays, and (every retention check interval) offset expiry.
  void Poll();
  // Deletes offsets of groups without members older than offsets.retention.ms (counted from
  // when the group became Empty, or from the commit for groups that never had members), writing
  // tombstones; a group left with nothing is deleted. Returns how many offsets expired.
  int ExpireOffsets();

  // The group's state name ("Dead" when unknown), generation and member count (tests, logs).
  std::string GroupState(const std::string& group);
  int32_t GroupGeneration(const std::string& group);
  size_t GroupSize(const std::string& group);

  // A copy of one group for the metrics scrape: its state name, members and committed offsets.
  struct GroupSummary {
    std::string group;
    std::string state;
    size_t members = 0;
    struct Committed {
      std::string topic;
      int32_t partition = 0;
      int64_t offset = -1;
    };
    std::vector<Committed> offsets;
  };
  // Every group this coordinator serves now (Dead ones left out), copied under the
  // coordinator's mutex, which is held only for the copy.
  std::vector<GroupSummary> Summaries();

 private:
  struct Member;
  struct Group;
  class Scope;

  // 0 when this coordinator serves `group` now, else NOT_COORDINATOR or
  // COORDINATOR_LOAD_IN_PROGRESS (cluster mode).
  int16_t OwnershipError(const std::string& group);
  // Answers the waiting requests of `g` with `error` (unload, shutdown).
  void AnswerWaiting(Group& g, int16_t error);
  // Drops groups left with neither metadata nor offsets, and gives stored members a fresh
  // session; for every group, or those of one partition.
  void AfterReplay(std::optional<int32_t> partition);
  Group* FindGroup(const std::string& id);
  Group& GetOrCreateGroup(const std::string& id);
  void JoinLocked(const protocol::JoinGroupRequest& req, int16_t version, const ClientInfo& client,
                  JoinCallback done);
  void AddMemberAndRebalance(Group& g, const protocol::JoinGroupRequest& req,
                             const ClientInfo& client, const std::string& member_id,
                             JoinCallback done);
  void UpdateMemberAndRebalance(Group& g, Member& m, const protocol::JoinGroupRequest& req,
                                JoinCallback done);
  void PrepareRebalance(Group& g, const std::string& reason);
  void MaybeCompleteJoin(Group& g);
  void CompleteJoin(Group& g);
  void RemoveMember(Group& g, const std::string& member_id, const std::string& reason);
  void AnswerJoin(Group& g, Member& m, int16_t error);
  // Answers `m`'s waiting SyncGroup, if any, with `r` (after the lock is released, like every
  // answer), and clears it. The second form answers with an error alone.
  void AnswerSync(Member& m, const protocol::SyncGroupResponse& r);
  void AnswerSync(Member& m, int16_t error);
  static void NameProtocol(const Group& g, protocol::SyncGroupResponse* r);
  Status StoreGroup(Group& g);
  void ApplyStoredRecord(std::string_view key, std::optional<std::string_view> value);
  int64_t NextDeadline();
  void TimerLoop();
  std::string NewMemberId(const std::string& client_id);

  GroupCoordinatorOptions options_;
  OffsetLog* log_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::unique_ptr<Group>> groups_;
  std::vector<std::function<void()>> calls_;  // callbacks to run once mu_ is released
  bool stopping_ = false;
  // Cluster mode: the topic's partition count (0: a single node, every group is ours) and the
  // partitions owned. A load's id tells a replay overtaken by an unload or a newer load.
  struct OwnedPartition {
    uint64_t load_id = 0;
    bool loading = true;
  };
  int32_t owned_count_ = 0;
  std::map<int32_t, OwnedPartition> owned_;
  uint64_t load_seq_ = 0;
  bool prepare_requested_ = false;
  bool prepared_ = false;
  bool prepare_failed_ = false;
  int64_t next_expiry_check_ = 0;
  uint64_t id_counter_ = 0;
  std::thread timer_;
};

}  // namespace silt::broker
