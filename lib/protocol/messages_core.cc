// The hand-written parts of the codec around the generated walks (generated_walks.h): the
// ApiVersions answers and the client's v0 fallback, and the zero-copy Fetch response encoder.
#include "protocol/errors.h"
#include "protocol/generated_walks.h"
#include "protocol/header.h"
#include "protocol/messages.h"
#include "protocol/messages_io.h"

namespace silt::protocol {

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
  walk::IoFetchResponse(io, *this, version);
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
  walk::IoFetchResponse(io, body, version);
  io.FinishPieces();
  w.PatchI32(0, static_cast<int32_t>(out->wire_size() - static_cast<int64_t>(kFrameSizeBytes)));
}

}  // namespace silt::protocol
