// Kafka's requests and responses as structs (versions served: api_table.h).
//
// The structs themselves are generated (generated_messages.h, from Kafka's JSON message schemas
// and codec_overrides.json; see README.md): one per request and response, fields in wire order
// with Kafka's names in snake_case, each with Kafka's default and, in a comment, the versions it
// is on the wire. In other versions a field is neither written nor read and keeps its default.
// Tagged fields (flexible versions) are plain members too: decoded when their tag is on the
// wire, written only when they differ from their default.
//
// Every message has
//   void Encode(ByteWriter& w, int16_t version) const;  // appends the body (no size, no header)
//   Status Decode(ByteReader& r, int16_t version);      // reads a body, advancing r
// Decode resets the struct first; on error it returns Truncated (input ended early) or
// Corruption (an impossible length or count) and the struct's contents are unspecified. Decode
// never allocates more than the input could describe: counts and lengths are checked against
// the bytes left first. Any version is accepted here, each field guarded by Kafka's range for
// it; which versions are served is the dispatcher's decision (api_table.h).
//
// Wire integers are kept as plain ints here (they mirror the wire); handlers convert to the
// strong ids of base/ids.h at the boundary. Record sets stay opaque: RecordSet (wire.h) is a view
// into the request buffer when decoded, and may name a file slice when a Fetch response is
// encoded for zero-copy sending (see EncodeFetchResponseFrame).
//
// This header adds what is not generated: the ApiVersions answers, the zero-copy Fetch frame,
// shared constants, and silt's own SiltAppendBatches.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "base/coding.h"
#include "base/status.h"
#include "protocol/api_table.h"
#include "protocol/generated_messages.h"
#include "protocol/wire.h"

namespace silt::protocol {

#define SILT_WIRE_MESSAGE(Name, api)                      \
  static constexpr ApiKey kApiKey = api;                  \
  void Encode(ByteWriter& w, int16_t version) const;      \
  Status Decode(ByteReader& r, int16_t version);          \
  bool operator==(const Name&) const = default

// Kafka's "authorized operations not requested" value (INT32_MIN).
constexpr int32_t kAuthorizedOperationsOmitted = std::numeric_limits<int32_t>::min();

// ---- ApiVersions (18) -------------------------------------------------------------------

// The ApiVersions answer built from api_table.h: every supported API with its range.
ApiVersionsResponse MakeApiVersionsResponse();

// The ApiVersions answer to a request whose version silt does not serve: a v0 body with
// UNSUPPORTED_VERSION and the ApiVersions row alone, so the client can retry with a version in
// range. Encode it at version 0 whatever the request's version.
ApiVersionsResponse MakeUnsupportedApiVersionsResponse();

// Client side: decodes an ApiVersions response to a request of `version`, falling back to v0 as
// Kafka's clients do, because a broker that does not serve `version` answers with a v0 body
// (UNSUPPORTED_VERSION). `r` is advanced past whichever body was read.
Status DecodeApiVersionsResponse(ByteReader& r, int16_t version, ApiVersionsResponse* out);

// ---- Fetch (1) --------------------------------------------------------------------------

// A Fetch response frame ready for zero-copy sending: `buffer` holds the size prefix, header and
// every encoded byte except file-backed record sets, and `pieces` lists, in wire order, ranges of
// `buffer` and file slices. The size prefix counts the file bytes too.
struct ResponsePieces {
  std::string buffer;
  std::vector<Piece> pieces;
  // Total bytes on the wire, size prefix included.
  int64_t wire_size() const;
  // The frame as one string, with file pieces filled by `read_file(slice, out)` (tests, and
  // callers that cannot sendfile). Returns the first error `read_file` reports.
  template <typename ReadFile>
  Status Flatten(ReadFile&& read_file, std::string* out) const {
    for (const Piece& p : pieces) {
      if (p.file) {
        Status s = read_file(*p.file, out);
        if (!s.ok()) return s;
      } else {
        out->append(buffer, p.begin, p.end - p.begin);
      }
    }
    return Status::OK();
  }
};

// Builds a Fetch response frame (size, response header v0/v1 per the table, body) in pieces.
void EncodeFetchResponseFrame(int32_t correlation_id, int16_t version, const FetchResponse& body,
                              ResponsePieces* out);

// ---- DescribeConfigs (32), AlterConfigs (33), IncrementalAlterConfigs (44) --------------

// ResourceType of DescribeConfigs, AlterConfigs and IncrementalAlterConfigs (Kafka's
// ConfigResource.Type ids).
constexpr int8_t kConfigResourceTopic = 2;
constexpr int8_t kConfigResourceBroker = 4;

// ---- DescribeQuorum (55) ----------------------------------------------------------------
// KIP-595. The metadata log is Kafka's `__cluster_metadata` partition 0; only the controller
// (the Raft leader) answers it, others answer NOT_LEADER_OR_FOLLOWER for the partition.

inline constexpr const char* kClusterMetadataTopic = "__cluster_metadata";

// ---- SiltAppendBatches (10000, silt's own) ----------------------------------------------
//
// Not a Kafka API: silt's offset-preserving append, used by `silt replicate` to copy batches
// into a mirror topic at their own offsets (see lib/protocol/README.md and silt-serve(1)).
// One partition per request; answered like acks=all, once the high watermark passes the
// appended batches. v0 only, not flexible.

struct SiltAppendBatchesRequest {
  std::string topic;             // Topic
  int32_t partition = 0;         // Partition
  int64_t expected_offset = 0;   // ExpectedOffset: the destination log end the sender believes
  int32_t timeout_ms = 30000;    // TimeoutMs: how long to wait for the high watermark
  RecordSet records;             // Records: whole v2 batches carrying their offsets; empty asks
                                 // for the log end only
  SILT_WIRE_MESSAGE(SiltAppendBatchesRequest, ApiKey::kSiltAppendBatches);
};

struct SiltAppendBatchesResponse {
  int16_t error_code = 0;                     // ErrorCode
  std::optional<std::string> error_message;   // ErrorMessage
  int64_t log_end_offset = -1;                // LogEndOffset: after the call (also on error)
  int64_t high_watermark = -1;                // HighWatermark
  int64_t log_start_offset = -1;              // LogStartOffset
  SILT_WIRE_MESSAGE(SiltAppendBatchesResponse, ApiKey::kSiltAppendBatches);
};

#undef SILT_WIRE_MESSAGE

}  // namespace silt::protocol
