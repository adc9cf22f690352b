// Codecs for the data-path APIs: ApiVersions, Metadata, Produce, Fetch, ListOffsets.
// Field layouts: Kafka's message schemas of the same names.
#include <type_traits>

#include "protocol/errors.h"
#include "protocol/header.h"
#include "protocol/messages.h"
#include "protocol/messages_io.h"

namespace silt::protocol {

namespace {

// ---- ApiVersions ------------------------------------------------------------------------

template <class IO, class M>
void IoApiVersionsRequest(IO& io, M& m, int16_t v) {
  if (v >= 3) {
    io.String(m.client_software_name);
    io.String(m.client_software_version);
  }
  io.TaggedFields();
}

template <class IO, class M>
void IoApiVersionsResponse(IO& io, M& m, int16_t v) {
  io.I16(m.error_code);
  io.Array(
      m.api_keys,
      [&](auto& k) {
        io.I16(k.api_key);
        io.I16(k.min_version);
        io.I16(k.max_version);
        io.TaggedFields();
      },
      6);
  if (v >= 1) io.I32(m.throttle_time_ms);
  io.TaggedFields();
}

// ---- Metadata ---------------------------------------------------------------------------

template <class IO, class M>
void IoMetadataRequest(IO& io, M& m, int16_t v) {
  auto topic = [&](auto& t) {
    if (v >= 10) {
      io.Uuid(t.topic_id);
      io.NullableAsEmptyString(t.name);
    } else {
      io.String(t.name);
    }
    io.TaggedFields();
  };
  if (v >= 1) {
    io.NullableArray(m.topics, topic);
  } else {
    // v0 has no null: an empty array asks for all topics, and reads back as "all" (null).
    io.NullableArray(m.topics, topic, 1, /*null_as_empty=*/true);
    if constexpr (std::is_same_v<IO, Decoder>) {
      if (m.topics && m.topics->empty()) m.topics.reset();
    }
  }
  if (v >= 4) io.Bool(m.allow_auto_topic_creation);
  if (v >= 8 && v <= 10) io.Bool(m.include_cluster_authorized_operations);
  if (v >= 8) io.Bool(m.include_topic_authorized_operations);
  io.TaggedFields();
}

template <class IO, class M>
void IoMetadataResponse(IO& io, M& m, int16_t v) {
  if (v >= 3) io.I32(m.throttle_time_ms);
  io.Array(m.brokers, [&](auto& b) {
    io.I32(b.node_id);
    io.String(b.host);
    io.I32(b.port);
    if (v >= 1) io.NullableString(b.rack);
    io.TaggedFields();
  });
  if (v >= 2) io.NullableString(m.cluster_id);
  if (v >= 1) io.I32(m.controller_id);
  io.Array(m.topics, [&](auto& t) {
    io.I16(t.error_code);
    if (v >= 12) {
      io.NullableAsEmptyString(t.name);
    } else {
      io.String(t.name);
    }
    if (v >= 10) io.Uuid(t.topic_id);
    if (v >= 1) io.Bool(t.is_internal);
    io.Array(t.partitions, [&](auto& p) {
      io.I16(p.error_code);
      io.I32(p.partition_index);
      io.I32(p.leader_id);
      if (v >= 7) io.I32(p.leader_epoch);
      io.Array(p.replica_nodes, [&](auto& n) { io.I32(n); }, 4);
      io.Array(p.isr_nodes, [&](auto& n) { io.I32(n); }, 4);
      if (v >= 5) io.Array(p.offline_replicas, [&](auto& n) { io.I32(n); }, 4);
      io.TaggedFields();
    });
    if (v >= 8) io.I32(t.topic_authorized_operations);
    io.TaggedFields();
  });
  if (v >= 8 && v <= 10) io.I32(m.cluster_authorized_operations);
  io.TaggedFields();
}

// ---- Produce ----------------------------------------------------------------------------

template <class IO, class M>
void IoProduceRequest(IO& io, M& m, int16_t v) {
  if (v >= 3) io.NullableString(m.transactional_id);
  io.I16(m.acks);
  io.I32(m.timeout_ms);
  io.Array(m.topic_data, [&](auto& t) {
    io.String(t.name);
    io.Array(t.partition_data, [&](auto& p) {
      io.I32(p.index);
      io.Records(p.records);
      io.TaggedFields();
    });
    io.TaggedFields();
  });
  io.TaggedFields();
}

template <class IO, class M>
void IoProduceResponse(IO& io, M& m, int16_t v) {
  io.Array(m.responses, [&](auto& t) {
    io.String(t.name);
    io.Array(t.partition_responses, [&](auto& p) {
      io.I32(p.index);
      io.I16(p.error_code);
      io.I64(p.base_offset);
      if (v >= 2) io.I64(p.log_append_time_ms);
      if (v >= 5) io.I64(p.log_start_offset);
      if (v >= 8) {
        io.Array(p.record_errors, [&](auto& e) {
          io.I32(e.batch_index);
          io.NullableString(e.batch_index_error_message);
          io.TaggedFields();
        });
        io.NullableString(p.error_message);
      }
      io.TaggedFields();
    });
    io.TaggedFields();
  });
  if (v >= 1) io.I32(m.throttle_time_ms);
  io.TaggedFields();
}

// ---- Fetch ------------------------------------------------------------------------------

template <class IO, class M>
void IoFetchRequest(IO& io, M& m, int16_t v) {
  if (v <= 14) io.I32(m.replica_id);
  io.I32(m.max_wait_ms);
  io.I32(m.min_bytes);
  if (v >= 3) io.I32(m.max_bytes);
  if (v >= 4) io.I8(m.isolation_level);
  if (v >= 7) {
    io.I32(m.session_id);
    io.I32(m.session_epoch);
  }
  io.Array(m.topics, [&](auto& t) {
    io.String(t.topic);
    io.Array(t.partitions, [&](auto& p) {
      io.I32(p.partition);
      if (v >= 9) io.I32(p.current_leader_epoch);
      io.I64(p.fetch_offset);
      if (v >= 5) io.I64(p.log_start_offset);
      io.I32(p.partition_max_bytes);
      io.TaggedFields();
    });
    io.TaggedFields();
  });
  if (v >= 7) {
    io.Array(m.forgotten_topics_data, [&](auto& t) {
      io.String(t.topic);
      io.Array(t.partitions, [&](auto& p) { io.I32(p); }, 4);
      io.TaggedFields();
    });
  }
  if (v >= 11) io.String(m.rack_id);
  io.TaggedFields();
}

template <class IO, class M>
void IoFetchResponse(IO& io, M& m, int16_t v) {
  if (v >= 1) io.I32(m.throttle_time_ms);
  if (v >= 7) {
    io.I16(m.error_code);
    io.I32(m.session_id);
  }
  io.Array(m.responses, [&](auto& t) {
    io.String(t.topic);
    io.Array(t.partitions, [&](auto& p) {
      io.I32(p.partition_index);
      io.I16(p.error_code);
      io.I64(p.high_watermark);
      if (v >= 4) io.I64(p.last_stable_offset);
      if (v >= 5) io.I64(p.log_start_offset);
      if (v >= 4) {
        io.NullableArray(
            p.aborted_transactions,
            [&](auto& a) {
              io.I64(a.producer_id);
              io.I64(a.first_offset);
              io.TaggedFields();
            },
            16);
      }
      if (v >= 11) io.I32(p.preferred_read_replica);
      io.Records(p.records);
      io.TaggedFields();
    });
    io.TaggedFields();
  });
  io.TaggedFields();
}

// ---- ListOffsets ------------------------------------------------------------------------

template <class IO, class M>
void IoListOffsetsRequest(IO& io, M& m, int16_t v) {
  io.I32(m.replica_id);
  if (v >= 2) io.I8(m.isolation_level);
  io.Array(m.topics, [&](auto& t) {
    io.String(t.name);
    io.Array(t.partitions, [&](auto& p) {
      io.I32(p.partition_index);
      if (v >= 4) io.I32(p.current_leader_epoch);
      io.I64(p.timestamp);
      if (v == 0) io.I32(p.max_num_offsets);
      io.TaggedFields();
    });
    io.TaggedFields();
  });
  io.TaggedFields();
}

template <class IO, class M>
void IoListOffsetsResponse(IO& io, M& m, int16_t v) {
  if (v >= 2) io.I32(m.throttle_time_ms);
  io.Array(m.topics, [&](auto& t) {
    io.String(t.name);
    io.Array(t.partitions, [&](auto& p) {
      io.I32(p.partition_index);
      io.I16(p.error_code);
      if (v == 0) io.Array(p.old_style_offsets, [&](auto& o) { io.I64(o); }, 8);
      if (v >= 1) {
        io.I64(p.timestamp);
        io.I64(p.offset);
      }
      if (v >= 4) io.I32(p.leader_epoch);
      io.TaggedFields();
    });
    io.TaggedFields();
  });
  io.TaggedFields();
}

}  // namespace

SILT_DEFINE_CODEC(ApiVersionsRequest)
SILT_DEFINE_CODEC(ApiVersionsResponse)
SILT_DEFINE_CODEC(MetadataRequest)
SILT_DEFINE_CODEC(MetadataResponse)
SILT_DEFINE_CODEC(ProduceRequest)
SILT_DEFINE_CODEC(ProduceResponse)
SILT_DEFINE_CODEC(FetchRequest)
SILT_DEFINE_CODEC(FetchResponse)
SILT_DEFINE_CODEC(ListOffsetsRequest)
SILT_DEFINE_CODEC(ListOffsetsResponse)

ApiVersionsResponse MakeApiVersionsResponse() {
  ApiVersionsResponse r;
  for (const ApiInfo& a : SupportedApis()) {
    r.api_keys.push_back({static_cast<int16_t>(a.key), a.min_version, a.max_version});
  }
  return r;
}

ApiVersionsResponse MakeUnsupportedApiVersionsResponse() {
  ApiVersionsResponse r;
  r.error_code = ToWire(ErrorCode::UNSUPPORTED_VERSION);
  const ApiInfo* self = FindApi(ApiKey::kApiVersions);
  r.api_keys.push_back({static_cast<int16_t>(self->key), self->min_version, self->max_version});
  return r;
}

Status DecodeApiVersionsResponse(ByteReader& r, int16_t version, ApiVersionsResponse* out) {
  ByteReader attempt = r;
  Status s = out->Decode(attempt, version);
  if (version == 0) {
    r = attempt;
    return s;
  }
  if (s.ok() && out->error_code != ToWire(ErrorCode::UNSUPPORTED_VERSION)) {
    r = attempt;
    return s;
  }
  // Either the body did not parse at `version` or it says UNSUPPORTED_VERSION: both mean the
  // broker answered in v0.
  ByteReader v0 = r;
  Status s0 = out->Decode(v0, 0);
  if (!s0.ok()) return s.ok() ? s0 : s;
  r = v0;
  return Status::OK();
}

void FetchResponse::EncodePieces(ByteWriter& w, int16_t version,
                                 std::vector<Piece>* pieces) const {
  Encoder io(w, IsFlexibleVersion(static_cast<int16_t>(kApiKey), version));
  io.set_pieces(pieces, w.position());
  IoFetchResponse(io, *this, version);
  io.FinishPieces();
}

int64_t ResponsePieces::wire_size() const {
  int64_t n = 0;
  for (const Piece& p : pieces) {
    n += p.file ? p.file->size : static_cast<int64_t>(p.end - p.begin);
  }
  return n;
}

void EncodeFetchResponseFrame(int32_t correlation_id, int16_t version, const FetchResponse& body,
                              ResponsePieces* out) {
  out->buffer.clear();
  out->pieces.clear();
  ByteWriter w(&out->buffer);
  w.I32(0);  // size, patched below once the file pieces are known
  ResponseHeader{correlation_id}.Encode(
      w, ResponseHeaderVersion(static_cast<int16_t>(ApiKey::kFetch), version));
  Encoder io(w, IsFlexibleVersion(static_cast<int16_t>(ApiKey::kFetch), version));
  io.set_pieces(&out->pieces, 0);
  IoFetchResponse(io, body, version);
  io.FinishPieces();
  w.PatchI32(0, static_cast<int32_t>(out->wire_size() - static_cast<int64_t>(kFrameSizeBytes)));
}

}  // namespace silt::protocol
