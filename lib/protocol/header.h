// Kafka request/response headers and framing.
//
//   frame            = size:int32 (bytes that follow) header body
//   request header   v0: request_api_key:int16 request_api_version:int16 correlation_id:int32
//                    v1: v0 + client_id:nullable_string (int16 length, never compact)
//                    v2: v1 + tagged_fields
//   response header  v0: correlation_id:int32
//                    v1: v0 + tagged_fields
// Which header version a message uses comes from api_table.h (RequestHeaderVersion /
// ResponseHeaderVersion).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/coding.h"
#include "base/status.h"
#include "protocol/api_table.h"

namespace silt::protocol {

// Kafka's default socket.request.max.bytes (100 MiB).
constexpr int32_t kDefaultMaxRequestBytes = 104857600;
// The size prefix of every frame.
constexpr size_t kFrameSizeBytes = 4;
// api_key + api_version + correlation_id: what must be present to answer at all.
constexpr size_t kRequestHeaderFixedBytes = 2 + 2 + 4;

struct RequestHeader {
  int16_t request_api_key = 0;           // RequestApiKey
  int16_t request_api_version = 0;       // RequestApiVersion
  int32_t correlation_id = 0;            // CorrelationId
  std::optional<std::string> client_id;  // ClientId (v1+)

  // Writes the header in `header_version` (0, 1 or 2).
  void Encode(ByteWriter& w, int16_t header_version) const;
  // Reads a header in `header_version`. Truncated when the input ends early.
  Status Decode(ByteReader& r, int16_t header_version);
  bool operator==(const RequestHeader&) const = default;
};

struct ResponseHeader {
  int32_t correlation_id = 0;  // CorrelationId

  void Encode(ByteWriter& w, int16_t header_version) const;
  Status Decode(ByteReader& r, int16_t header_version);
  bool operator==(const ResponseHeader&) const = default;
};

// Validates a frame's 4-byte size prefix against `max_bytes` (socket.request.max.bytes) before
// anything is allocated for the frame. Returns the size of the frame that follows the prefix.
// Errors: InvalidArgument when `prefix` is not 4 bytes; Corruption for a negative size or one
// too small to hold a request header; TooLarge above `max_bytes`.
Result<int32_t> ParseFrameSize(std::string_view prefix, int32_t max_bytes = kDefaultMaxRequestBytes);

// A request frame split into header and body.
struct RequestFrame {
  RequestHeader header;
  int16_t header_version = 1;
  // True when the api key and version are in the table (IsVersionSupported).
  bool supported = false;
  // The body: what follows the header, a view into the caller's frame.
  std::string_view body;
};

// Parses the header of one request frame (the bytes after the size prefix). api_key, version
// and correlation_id are always returned when the first 8 bytes are present, even for an
// unsupported api or version, so the broker can answer (ApiVersions with a v0 body and
// UNSUPPORTED_VERSION, or close the connection). For unsupported requests a header that cannot
// be parsed further leaves client_id empty and body empty rather than failing.
// Errors: Truncated when fewer than 8 bytes; Corruption when a supported request's header is
// malformed.
Result<RequestFrame> ParseRequestFrame(std::string_view frame);

// Appends a whole response frame (size, header, body) for `api_key`/`api_version` to `*out`.
// Body is any message type with Encode(ByteWriter&, int16_t).
template <typename Body>
void AppendResponseFrame(int16_t api_key, int16_t api_version, int32_t correlation_id,
                         const Body& body, std::string* out) {
  ByteWriter w(out);
  size_t start = w.position();
  w.I32(0);
  ResponseHeader{correlation_id}.Encode(w, ResponseHeaderVersion(api_key, api_version));
  body.Encode(w, api_version);
  w.PatchI32(start, static_cast<int32_t>(w.position() - start - kFrameSizeBytes));
}

// Appends a whole request frame (size, header, body) to `*out`; the header version follows the
// table from header.request_api_key/request_api_version.
template <typename Body>
void AppendRequestFrame(const RequestHeader& header, const Body& body, std::string* out) {
  ByteWriter w(out);
  size_t start = w.position();
  w.I32(0);
  header.Encode(w, RequestHeaderVersion(header.request_api_key, header.request_api_version));
  body.Encode(w, header.request_api_version);
  w.PatchI32(start, static_cast<int32_t>(w.position() - start - kFrameSizeBytes));
}

}  // namespace silt::protocol
