// Codecs for the admin and replication APIs: CreateTopics, DeleteTopics, DescribeConfigs,
// AlterConfigs, IncrementalAlterConfigs, CreatePartitions, DeleteRecords, OffsetForLeaderEpoch,
// DeleteGroups, DescribeQuorum.
// Field layouts: Kafka's message schemas of the same names.
#include "protocol/messages.h"
#include "protocol/messages_io.h"

namespace silt::protocol {

namespace {

// ---- CreateTopics -----------------------------------------------------------------------

template <class IO, class M>
void IoCreateTopicsRequest(IO& io, M& m, int16_t v) {
  io.Array(m.topics, [&](auto& t) {
    io.String(t.name);
    io.I32(t.num_partitions);
    io.I16(t.replication_factor);
    io.Array(t.assignments, [&](auto& a) {
      io.I32(a.partition_index);
      io.Array(a.broker_ids, [&](auto& b) { io.I32(b); }, 4);
      io.TaggedFields();
    });
    io.Array(t.configs, [&](auto& c) {
      io.String(c.name);
      io.NullableString(c.value);
      io.TaggedFields();
    });
    io.TaggedFields();
  });
  io.I32(m.timeout_ms);
  if (v >= 1) io.Bool(m.validate_only);
  io.TaggedFields();
}

template <class IO, class M>
void IoCreateTopicsResponse(IO& io, M& m, int16_t v) {
  if (v >= 2) io.I32(m.throttle_time_ms);
  io.Array(m.topics, [&](auto& t) {
    io.String(t.name);
    io.I16(t.error_code);
    if (v >= 1) io.NullableString(t.error_message);
    io.TaggedFields();
  });
  io.TaggedFields();
}

// ---- DeleteTopics -----------------------------------------------------------------------

template <class IO, class M>
void IoDeleteTopicsRequest(IO& io, M& m, int16_t v) {
  io.Array(m.topic_names, [&](auto& n) { io.String(n); });
  io.I32(m.timeout_ms);
  io.TaggedFields();
}

template <class IO, class M>
void IoDeleteTopicsResponse(IO& io, M& m, int16_t v) {
  if (v >= 1) io.I32(m.throttle_time_ms);
  io.Array(m.responses, [&](auto& r) {
    io.String(r.name);
    io.I16(r.error_code);
    io.TaggedFields();
  });
  io.TaggedFields();
}

// ---- DescribeConfigs --------------------------------------------------------------------

template <class IO, class M>
void IoDescribeConfigsRequest(IO& io, M& m, int16_t v) {
  io.Array(m.resources, [&](auto& r) {
    io.I8(r.resource_type);
    io.String(r.resource_name);
    io.NullableArray(r.configuration_keys, [&](auto& k) { io.String(k); });
    io.TaggedFields();
  });
  if (v >= 1) io.Bool(m.include_synonyms);
  if (v >= 3) io.Bool(m.include_documentation);
  io.TaggedFields();
}

template <class IO, class M>
void IoDescribeConfigsResponse(IO& io, M& m, int16_t v) {
  io.I32(m.throttle_time_ms);
  io.Array(m.results, [&](auto& r) {
    io.I16(r.error_code);
    io.NullableString(r.error_message);
    io.I8(r.resource_type);
    io.String(r.resource_name);
    io.Array(r.configs, [&](auto& c) {
      io.String(c.name);
      io.NullableString(c.value);
      io.Bool(c.read_only);
      if (v == 0) io.Bool(c.is_default);
      if (v >= 1) io.I8(c.config_source);
      io.Bool(c.is_sensitive);
      if (v >= 1) {
        io.Array(c.synonyms, [&](auto& s) {
          io.String(s.name);
          io.NullableString(s.value);
          io.I8(s.source);
          io.TaggedFields();
        });
      }
      if (v >= 3) {
        io.I8(c.config_type);
        io.NullableString(c.documentation);
      }
      io.TaggedFields();
    });
    io.TaggedFields();
  });
  io.TaggedFields();
}

// ---- AlterConfigs -----------------------------------------------------------------------

template <class IO, class M>
void IoAlterConfigsRequest(IO& io, M& m, int16_t v) {
  io.Array(m.resources, [&](auto& r) {
    io.I8(r.resource_type);
    io.String(r.resource_name);
    io.Array(r.configs, [&](auto& c) {
      io.String(c.name);
      io.NullableString(c.value);
      io.TaggedFields();
    });
    io.TaggedFields();
  });
  io.Bool(m.validate_only);
  io.TaggedFields();
}

template <class IO, class M>
void IoAlterConfigsResponse(IO& io, M& m, int16_t v) {
  io.I32(m.throttle_time_ms);
  io.Array(m.responses, [&](auto& r) {
    io.I16(r.error_code);
    io.NullableString(r.error_message);
    io.I8(r.resource_type);
    io.String(r.resource_name);
    io.TaggedFields();
  });
  io.TaggedFields();
}

// ---- CreatePartitions -------------------------------------------------------------------

template <class IO, class M>
void IoCreatePartitionsRequest(IO& io, M& m, int16_t v) {
  io.Array(m.topics, [&](auto& t) {
    io.String(t.name);
    io.I32(t.count);
    io.NullableArray(t.assignments, [&](auto& a) {
      io.Array(a.broker_ids, [&](auto& b) { io.I32(b); }, 4);
      io.TaggedFields();
    });
    io.TaggedFields();
  });
  io.I32(m.timeout_ms);
  io.Bool(m.validate_only);
  io.TaggedFields();
}

template <class IO, class M>
void IoCreatePartitionsResponse(IO& io, M& m, int16_t v) {
  io.I32(m.throttle_time_ms);
  io.Array(m.results, [&](auto& r) {
    io.String(r.name);
    io.I16(r.error_code);
    io.NullableString(r.error_message);
    io.TaggedFields();
  });
  io.TaggedFields();
}

// ---- DeleteRecords ----------------------------------------------------------------------

template <class IO, class M>
void IoDeleteRecordsRequest(IO& io, M& m, int16_t v) {
  io.Array(m.topics, [&](auto& t) {
    io.String(t.name);
    io.Array(
        t.partitions,
        [&](auto& p) {
          io.I32(p.partition_index);
          io.I64(p.offset);
          io.TaggedFields();
        },
        12);
    io.TaggedFields();
  });
  io.I32(m.timeout_ms);
  io.TaggedFields();
}

template <class IO, class M>
void IoDeleteRecordsResponse(IO& io, M& m, int16_t v) {
  io.I32(m.throttle_time_ms);
  io.Array(m.topics, [&](auto& t) {
    io.String(t.name);
    io.Array(
        t.partitions,
        [&](auto& p) {
          io.I32(p.partition_index);
          io.I64(p.low_watermark);
          io.I16(p.error_code);
          io.TaggedFields();
        },
        14);
    io.TaggedFields();
  });
  io.TaggedFields();
}

// ---- OffsetForLeaderEpoch ---------------------------------------------------------------

template <class IO, class M>
void IoOffsetForLeaderEpochRequest(IO& io, M& m, int16_t v) {
  if (v >= 3) io.I32(m.replica_id);
  io.Array(m.topics, [&](auto& t) {
    io.String(t.topic);
    io.Array(t.partitions, [&](auto& p) {
      io.I32(p.partition);
      if (v >= 2) io.I32(p.current_leader_epoch);
      io.I32(p.leader_epoch);
      io.TaggedFields();
    });
    io.TaggedFields();
  });
  io.TaggedFields();
}

template <class IO, class M>
void IoOffsetForLeaderEpochResponse(IO& io, M& m, int16_t v) {
  if (v >= 2) io.I32(m.throttle_time_ms);
  io.Array(m.topics, [&](auto& t) {
    io.String(t.topic);
    io.Array(t.partitions, [&](auto& p) {
      io.I16(p.error_code);
      io.I32(p.partition);
      if (v >= 1) io.I32(p.leader_epoch);
      io.I64(p.end_offset);
      io.TaggedFields();
    });
    io.TaggedFields();
  });
  io.TaggedFields();
}

// ---- DeleteGroups -----------------------------------------------------------------------

template <class IO, class M>
void IoDeleteGroupsRequest(IO& io, M& m, int16_t v) {
  io.Array(m.groups_names, [&](auto& g) { io.String(g); });
  io.TaggedFields();
}

template <class IO, class M>
void IoDeleteGroupsResponse(IO& io, M& m, int16_t v) {
  io.I32(m.throttle_time_ms);
  io.Array(m.results, [&](auto& r) {
    io.String(r.group_id);
    io.I16(r.error_code);
    io.TaggedFields();
  });
  io.TaggedFields();
}

// ---- IncrementalAlterConfigs ------------------------------------------------------------

template <class IO, class M>
void IoIncrementalAlterConfigsRequest(IO& io, M& m, int16_t v) {
  io.Array(m.resources, [&](auto& r) {
    io.I8(r.resource_type);
    io.String(r.resource_name);
    io.Array(r.configs, [&](auto& c) {
      io.String(c.name);
      io.I8(c.config_operation);
      io.NullableString(c.value);
      io.TaggedFields();
    });
    io.TaggedFields();
  });
  io.Bool(m.validate_only);
  io.TaggedFields();
}

template <class IO, class M>
void IoIncrementalAlterConfigsResponse(IO& io, M& m, int16_t v) {
  io.I32(m.throttle_time_ms);
  io.Array(m.responses, [&](auto& r) {
    io.I16(r.error_code);
    io.NullableString(r.error_message);
    io.I8(r.resource_type);
    io.String(r.resource_name);
    io.TaggedFields();
  });
  io.TaggedFields();
}

// ---- DescribeQuorum (flexible from v0) ----------------------------------------------------

template <class IO, class M>
void IoDescribeQuorumRequest(IO& io, M& m, int16_t) {
  io.Array(m.topics, [&](auto& t) {
    io.String(t.topic_name);
    io.Array(t.partitions, [&](auto& p) {
      io.I32(p.partition_index);
      io.TaggedFields();
    }, 4);
    io.TaggedFields();
  });
  io.TaggedFields();
}

template <class IO, class R>
void IoReplicaState(IO& io, R& r, int16_t v) {
  io.I32(r.replica_id);
  io.I64(r.log_end_offset);
  if (v >= 1) {
    io.I64(r.last_fetch_timestamp);
    io.I64(r.last_caught_up_timestamp);
  }
  io.TaggedFields();
}

template <class IO, class M>
void IoDescribeQuorumResponse(IO& io, M& m, int16_t v) {
  const size_t replica_bytes = 4 + 8 + (v >= 1 ? 16 : 0) + 1;
  io.I16(m.error_code);
  io.Array(m.topics, [&](auto& t) {
    io.String(t.topic_name);
    io.Array(t.partitions, [&](auto& p) {
      io.I32(p.partition_index);
      io.I16(p.error_code);
      io.I32(p.leader_id);
      io.I32(p.leader_epoch);
      io.I64(p.high_watermark);
      io.Array(p.current_voters, [&](auto& r) { IoReplicaState(io, r, v); }, replica_bytes);
      io.Array(p.observers, [&](auto& r) { IoReplicaState(io, r, v); }, replica_bytes);
      io.TaggedFields();
    });
    io.TaggedFields();
  });
  io.TaggedFields();
}

}  // namespace

SILT_DEFINE_CODEC(CreateTopicsRequest)
SILT_DEFINE_CODEC(CreateTopicsResponse)
SILT_DEFINE_CODEC(DeleteTopicsRequest)
SILT_DEFINE_CODEC(DeleteTopicsResponse)
SILT_DEFINE_CODEC(DescribeConfigsRequest)
SILT_DEFINE_CODEC(DescribeConfigsResponse)
SILT_DEFINE_CODEC(AlterConfigsRequest)
SILT_DEFINE_CODEC(AlterConfigsResponse)
SILT_DEFINE_CODEC(CreatePartitionsRequest)
SILT_DEFINE_CODEC(CreatePartitionsResponse)
SILT_DEFINE_CODEC(DeleteRecordsRequest)
SILT_DEFINE_CODEC(DeleteRecordsResponse)
SILT_DEFINE_CODEC(OffsetForLeaderEpochRequest)
SILT_DEFINE_CODEC(OffsetForLeaderEpochResponse)
SILT_DEFINE_CODEC(DeleteGroupsRequest)
SILT_DEFINE_CODEC(DeleteGroupsResponse)
SILT_DEFINE_CODEC(IncrementalAlterConfigsRequest)
SILT_DEFINE_CODEC(IncrementalAlterConfigsResponse)
SILT_DEFINE_CODEC(DescribeQuorumRequest)
SILT_DEFINE_CODEC(DescribeQuorumResponse)

}  // namespace silt::protocol
