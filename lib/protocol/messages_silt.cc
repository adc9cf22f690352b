// Codecs for silt's own APIs (not Kafka's; see messages.h): SiltAppendBatches.
//
// SiltAppendBatches request v0 (api key 10000), non-flexible, big-endian as Kafka's:
//   topic:string partition:int32 expected_offset:int64 timeout_ms:int32 records:records
// response v0:
//   error_code:int16 error_message:nullable_string log_end_offset:int64 high_watermark:int64
//   log_start_offset:int64
#include "protocol/messages.h"
#include "protocol/messages_io.h"

namespace silt::protocol {

namespace {

template <class IO, class M>
void IoSiltAppendBatchesRequest(IO& io, M& m, int16_t /*v*/) {
  io.String(m.topic);
  io.I32(m.partition);
  io.I64(m.expected_offset);
  io.I32(m.timeout_ms);
  io.Records(m.records);
  io.TaggedFields();
}

template <class IO, class M>
void IoSiltAppendBatchesResponse(IO& io, M& m, int16_t /*v*/) {
  io.I16(m.error_code);
  io.NullableString(m.error_message);
  io.I64(m.log_end_offset);
  io.I64(m.high_watermark);
  io.I64(m.log_start_offset);
  io.TaggedFields();
}

}  // namespace

SILT_DEFINE_CODEC(SiltAppendBatchesRequest)
SILT_DEFINE_CODEC(SiltAppendBatchesResponse)

}  // namespace silt::protocol
