// Codecs for the consumer-group and producer-id APIs: FindCoordinator, JoinGroup, SyncGroup,
// Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, DescribeGroups, ListGroups, InitProducerId.
// Field layouts: Kafka's message schemas of the same names.
#include "protocol/messages.h"
#include "protocol/messages_io.h"

namespace silt::protocol {

namespace {

// ---- FindCoordinator --------------------------------------------------------------------

template <class IO, class M>
void IoFindCoordinatorRequest(IO& io, M& m, int16_t v) {
  if (v <= 3) io.String(m.key);
  if (v >= 1) io.I8(m.key_type);
  if (v >= 4) io.Array(m.coordinator_keys, [&](auto& k) { io.String(k); });
  io.TaggedFields();
}

template <class IO, class M>
void IoFindCoordinatorResponse(IO& io, M& m, int16_t v) {
  if (v >= 1) io.I32(m.throttle_time_ms);
  if (v <= 3) {
    io.I16(m.error_code);
    if (v >= 1) io.NullableString(m.error_message);
    io.I32(m.node_id);
    io.String(m.host);
    io.I32(m.port);
  } else {
    io.Array(m.coordinators, [&](auto& c) {
      io.String(c.key);
      io.I32(c.node_id);
      io.String(c.host);
      io.I32(c.port);
      io.I16(c.error_code);
      io.NullableString(c.error_message);
      io.TaggedFields();
    });
  }
  io.TaggedFields();
}

// ---- JoinGroup --------------------------------------------------------------------------

template <class IO, class M>
void IoJoinGroupRequest(IO& io, M& m, int16_t v) {
  io.String(m.group_id);
  io.I32(m.session_timeout_ms);
  if (v >= 1) io.I32(m.rebalance_timeout_ms);
  io.String(m.member_id);
  if (v >= 5) io.NullableString(m.group_instance_id);
  io.String(m.protocol_type);
  io.Array(m.protocols, [&](auto& p) {
    io.String(p.name);
    io.Bytes(p.metadata);
    io.TaggedFields();
  });
  io.TaggedFields();
}

template <class IO, class M>
void IoJoinGroupResponse(IO& io, M& m, int16_t v) {
  if (v >= 2) io.I32(m.throttle_time_ms);
  io.I16(m.error_code);
  io.I32(m.generation_id);
  io.String(m.protocol_name);
  io.String(m.leader);
  io.String(m.member_id);
  io.Array(m.members, [&](auto& e) {
    io.String(e.member_id);
    if (v >= 5) io.NullableString(e.group_instance_id);
    io.Bytes(e.metadata);
    io.TaggedFields();
  });
  io.TaggedFields();
}

// ---- SyncGroup --------------------------------------------------------------------------

template <class IO, class M>
void IoSyncGroupRequest(IO& io, M& m, int16_t v) {
  io.String(m.group_id);
  io.I32(m.generation_id);
  io.String(m.member_id);
  if (v >= 3) io.NullableString(m.group_instance_id);
  io.Array(m.assignments, [&](auto& a) {
    io.String(a.member_id);
    io.Bytes(a.assignment);
    io.TaggedFields();
  });
  io.TaggedFields();
}

template <class IO, class M>
void IoSyncGroupResponse(IO& io, M& m, int16_t v) {
  if (v >= 1) io.I32(m.throttle_time_ms);
  io.I16(m.error_code);
  io.Bytes(m.assignment);
  io.TaggedFields();
}

// ---- Heartbeat --------------------------------------------------------------------------

template <class IO, class M>
void IoHeartbeatRequest(IO& io, M& m, int16_t v) {
  io.String(m.group_id);
  io.I32(m.generation_id);
  io.String(m.member_id);
  if (v >= 3) io.NullableString(m.group_instance_id);
  io.TaggedFields();
}

template <class IO, class M>
void IoHeartbeatResponse(IO& io, M& m, int16_t v) {
  if (v >= 1) io.I32(m.throttle_time_ms);
  io.I16(m.error_code);
  io.TaggedFields();
}

// ---- LeaveGroup -------------------------------------------------------------------------

template <class IO, class M>
void IoLeaveGroupRequest(IO& io, M& m, int16_t v) {
  io.String(m.group_id);
  if (v <= 2) io.String(m.member_id);
  if (v >= 3) {
    io.Array(m.members, [&](auto& e) {
      io.String(e.member_id);
      io.NullableString(e.group_instance_id);
      io.TaggedFields();
    });
  }
  io.TaggedFields();
}

template <class IO, class M>
void IoLeaveGroupResponse(IO& io, M& m, int16_t v) {
  if (v >= 1) io.I32(m.throttle_time_ms);
  io.I16(m.error_code);
  if (v >= 3) {
    io.Array(m.members, [&](auto& e) {
      io.String(e.member_id);
      io.NullableString(e.group_instance_id);
      io.I16(e.error_code);
      io.TaggedFields();
    });
  }
  io.TaggedFields();
}

// ---- OffsetCommit -----------------------------------------------------------------------

template <class IO, class M>
void IoOffsetCommitRequest(IO& io, M& m, int16_t v) {
  io.String(m.group_id);
  if (v >= 1) {
    io.I32(m.generation_id_or_member_epoch);
    io.String(m.member_id);
  }
  if (v >= 7) io.NullableString(m.group_instance_id);
  if (v >= 2 && v <= 4) io.I64(m.retention_time_ms);
  io.Array(m.topics, [&](auto& t) {
    io.String(t.name);
    io.Array(t.partitions, [&](auto& p) {
      io.I32(p.partition_index);
      io.I64(p.committed_offset);
      if (v >= 6) io.I32(p.committed_leader_epoch);
      if (v == 1) io.I64(p.commit_timestamp);
      io.NullableString(p.committed_metadata);
      io.TaggedFields();
    });
    io.TaggedFields();
  });
  io.TaggedFields();
}

template <class IO, class M>
void IoOffsetCommitResponse(IO& io, M& m, int16_t v) {
  if (v >= 3) io.I32(m.throttle_time_ms);
  io.Array(m.topics, [&](auto& t) {
    io.String(t.name);
    io.Array(
        t.partitions,
        [&](auto& p) {
          io.I32(p.partition_index);
          io.I16(p.error_code);
          io.TaggedFields();
        },
        6);
    io.TaggedFields();
  });
  io.TaggedFields();
}

// ---- OffsetFetch ------------------------------------------------------------------------

template <class IO, class M>
void IoOffsetFetchRequest(IO& io, M& m, int16_t v) {
  io.String(m.group_id);
  io.NullableArray(
      m.topics,
      [&](auto& t) {
        io.String(t.name);
        io.Array(t.partition_indexes, [&](auto& p) { io.I32(p); }, 4);
        io.TaggedFields();
      },
      1, /*null_as_empty=*/v < 2);
  io.TaggedFields();
}

template <class IO, class M>
void IoOffsetFetchResponse(IO& io, M& m, int16_t v) {
  if (v >= 3) io.I32(m.throttle_time_ms);
  io.Array(m.topics, [&](auto& t) {
    io.String(t.name);
    io.Array(t.partitions, [&](auto& p) {
      io.I32(p.partition_index);
      io.I64(p.committed_offset);
      if (v >= 5) io.I32(p.committed_leader_epoch);
      io.NullableString(p.metadata);
      io.I16(p.error_code);
      io.TaggedFields();
    });
    io.TaggedFields();
  });
  if (v >= 2) io.I16(m.error_code);
  io.TaggedFields();
}

// ---- DescribeGroups ---------------------------------------------------------------------

template <class IO, class M>
void IoDescribeGroupsRequest(IO& io, M& m, int16_t v) {
  io.Array(m.groups, [&](auto& g) { io.String(g); });
  if (v >= 3) io.Bool(m.include_authorized_operations);
  io.TaggedFields();
}

template <class IO, class M>
void IoDescribeGroupsResponse(IO& io, M& m, int16_t v) {
  if (v >= 1) io.I32(m.throttle_time_ms);
  io.Array(m.groups, [&](auto& g) {
    io.I16(g.error_code);
    io.String(g.group_id);
    io.String(g.group_state);
    io.String(g.protocol_type);
    io.String(g.protocol_data);
    io.Array(g.members, [&](auto& e) {
      io.String(e.member_id);
      if (v >= 4) io.NullableString(e.group_instance_id);
      io.String(e.client_id);
      io.String(e.client_host);
      io.Bytes(e.member_metadata);
      io.Bytes(e.member_assignment);
      io.TaggedFields();
    });
    if (v >= 3) io.I32(g.authorized_operations);
    io.TaggedFields();
  });
  io.TaggedFields();
}

// ---- ListGroups -------------------------------------------------------------------------

template <class IO, class M>
void IoListGroupsRequest(IO& io, M& m, int16_t v) {
  io.TaggedFields();
}

template <class IO, class M>
void IoListGroupsResponse(IO& io, M& m, int16_t v) {
  if (v >= 1) io.I32(m.throttle_time_ms);
  io.I16(m.error_code);
  io.Array(m.groups, [&](auto& g) {
    io.String(g.group_id);
    io.String(g.protocol_type);
    io.TaggedFields();
  });
  io.TaggedFields();
}

// ---- InitProducerId ---------------------------------------------------------------------

template <class IO, class M>
void IoInitProducerIdRequest(IO& io, M& m, int16_t v) {
  io.NullableString(m.transactional_id);
  io.I32(m.transaction_timeout_ms);
  io.TaggedFields();
}

template <class IO, class M>
void IoInitProducerIdResponse(IO& io, M& m, int16_t v) {
  io.I32(m.throttle_time_ms);
  io.I16(m.error_code);
  io.I64(m.producer_id);
  io.I16(m.producer_epoch);
  io.TaggedFields();
}

}  // namespace

SILT_DEFINE_CODEC(FindCoordinatorRequest)
SILT_DEFINE_CODEC(FindCoordinatorResponse)
SILT_DEFINE_CODEC(JoinGroupRequest)
SILT_DEFINE_CODEC(JoinGroupResponse)
SILT_DEFINE_CODEC(SyncGroupRequest)
SILT_DEFINE_CODEC(SyncGroupResponse)
SILT_DEFINE_CODEC(HeartbeatRequest)
SILT_DEFINE_CODEC(HeartbeatResponse)
SILT_DEFINE_CODEC(LeaveGroupRequest)
SILT_DEFINE_CODEC(LeaveGroupResponse)
SILT_DEFINE_CODEC(OffsetCommitRequest)
SILT_DEFINE_CODEC(OffsetCommitResponse)
SILT_DEFINE_CODEC(OffsetFetchRequest)
SILT_DEFINE_CODEC(OffsetFetchResponse)
SILT_DEFINE_CODEC(DescribeGroupsRequest)
SILT_DEFINE_CODEC(DescribeGroupsResponse)
SILT_DEFINE_CODEC(ListGroupsRequest)
SILT_DEFINE_CODEC(ListGroupsResponse)
SILT_DEFINE_CODEC(InitProducerIdRequest)
SILT_DEFINE_CODEC(InitProducerIdResponse)

}  // namespace silt::protocol
