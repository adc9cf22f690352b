// Request/response headers and frame parsing. See header.h.
#include "protocol/header.h"

#include <string>

#include "protocol/wire.h"

namespace silt::protocol {

void RequestHeader::Encode(ByteWriter& w, int16_t header_version) const {
  w.I16(request_api_key);
  w.I16(request_api_version);
  w.I32(correlation_id);
  if (header_version >= 1) {
    // ClientId stays an int16-length nullable string even in flexible header v2.
    Encoder classic(w, false);
    classic.NullableString(client_id);
  }
  if (header_version >= 2) Encoder(w, true).TaggedFields();
}

Status RequestHeader::Decode(ByteReader& r, int16_t header_version) {
  *this = RequestHeader{};
  Decoder classic(r, false);
  classic.I16(request_api_key);
  classic.I16(request_api_version);
  classic.I32(correlation_id);
  if (header_version >= 1) classic.NullableString(client_id);
  SILT_TRY(classic.status().WithContext("request header"));
  if (header_version >= 2) {
    Decoder flexible(r, true);
    flexible.TaggedFields();
    SILT_TRY(flexible.status().WithContext("request header"));
  }
  return Status::OK();
}

void ResponseHeader::Encode(ByteWriter& w, int16_t header_version) const {
  w.I32(correlation_id);
  if (header_version >= 1) Encoder(w, true).TaggedFields();
}

Status ResponseHeader::Decode(ByteReader& r, int16_t header_version) {
  Decoder d(r, header_version >= 1);
  d.I32(correlation_id);
  if (header_version >= 1) d.TaggedFields();
  return d.status().WithContext("response header");
}

Result<int32_t> ParseFrameSize(std::string_view prefix, int32_t max_bytes) {
  if (prefix.size() != kFrameSizeBytes) {
    return Status::InvalidArgument("frame size prefix must be 4 bytes");
  }
  int32_t size = static_cast<int32_t>(DecodeBE32(prefix.data()));
  if (size < 0) return Status::Corruption("negative frame size " + std::to_string(size));
  if (size < static_cast<int32_t>(kRequestHeaderFixedBytes)) {
    return Status::Corruption("frame of " + std::to_string(size) +
                              " bytes is too small for a request header");
  }
  if (size > max_bytes) {
    return Status::TooLarge("frame of " + std::to_string(size) +
                            " bytes exceeds socket.request.max.bytes " + std::to_string(max_bytes));
  }
  return size;
}

Result<RequestFrame> ParseRequestFrame(std::string_view frame) {
  if (frame.size() < kRequestHeaderFixedBytes) {
    return Status::Truncated("request frame of " + std::to_string(frame.size()) +
                             " bytes is too short for a header");
  }
  RequestFrame out;
  out.header.request_api_key = static_cast<int16_t>(DecodeBE16(frame.data()));
  out.header.request_api_version = static_cast<int16_t>(DecodeBE16(frame.data() + 2));
  out.header.correlation_id = static_cast<int32_t>(DecodeBE32(frame.data() + 4));
  out.supported = IsVersionSupported(out.header.request_api_key, out.header.request_api_version);
  out.header_version =
      RequestHeaderVersion(out.header.request_api_key, out.header.request_api_version);

  ByteReader r(frame);
  RequestHeader full;
  Status s = full.Decode(r, out.header_version);
  if (!s.ok()) {
    if (out.supported) return s;
    return out;  // the peeked fields are enough to answer an unsupported request
  }
  out.header = std::move(full);
  out.body = r.rest();
  return out;
}

}  // namespace silt::protocol
