// The one place where Kafka's on-disk and on-wire record format is written down.
// man/silt-format.5 points here. Byte offsets are sums that read as the field list.
//
// RecordBatch v2 (magic 2), all integers big-endian:
//
//   baseOffset: int64            first offset of the batch (the broker patches it on append)
//   batchLength: int32           bytes after this field, i.e. total size - 12
//   partitionLeaderEpoch: int32
//   magic: int8                  = 2
//   crc: uint32                  CRC-32C of everything from attributes to the end
//   attributes: int16            bits 0-2 compression (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)
//                                bit 3 timestampType (0 CreateTime, 1 LogAppendTime)
//                                bit 4 isTransactional, bit 5 isControlBatch,
//                                bit 6 hasDeleteHorizonMs
//   lastOffsetDelta: int32
//   baseTimestamp: int64         (firstTimestamp)
//   maxTimestamp: int64
//   producerId: int64
//   producerEpoch: int16
//   baseSequence: int32
//   recordsCount: int32
//   records: [Record]            the whole array compressed as one block when compression != 0
//
// Record (inside the records block; varint = zigzag int32, varlong = zigzag int64):
//
//   length: varint               bytes after this field
//   attributes: int8             unused, 0
//   timestampDelta: varlong      relative to baseTimestamp
//   offsetDelta: varint          relative to baseOffset
//   keyLength: varint            -1 for a null key
//   key: byte[keyLength]
//   valueLength: varint          -1 for a null value
//   value: byte[valueLength]
//   headersCount: varint
//   headers: [headerKeyLength: varint, headerKey: utf8,
//             headerValueLength: varint (-1 = null), headerValue: byte[]]
//
// The CRC does not cover baseOffset, batchLength, partitionLeaderEpoch or magic, so offsets and
// epochs can be assigned without recomputing it; validation must check those fields itself.
//
// Legacy message sets (magic 0 and 1), never stored; read from old logs and converted to and
// from v2 for old clients (format/legacy_convert.h):
//
//   offset: int64, messageSize: int32, then the message:
//   crc: uint32 (CRC-32, IEEE, of magic..end), magic: int8, attributes: int8 (bits 0-2 codec),
//   timestamp: int64 (magic 1 only), key: bytes (int32 length, -1 null), value: bytes.
//   A compressed message's value holds an inner message set (the wrapper's offset is that of its
//   last inner message; magic 1 inner offsets are relative).
//
// Partition directory <topic>-<partition>/:
//
//   <20-digit base offset>.log        batches, back to back, exactly as on the wire
//   <20-digit base offset>.index      entries {relativeOffset: int32, position: int32}
//   <20-digit base offset>.timeindex  entries {timestamp: int64, relativeOffset: int32}
//   <20-digit offset>.snapshot        Kafka's producer-state snapshot: the idempotent producers'
//                                     state of every batch below that offset (version: int16 = 1,
//                                     crc: uint32 CRC-32C of the rest, entries; see
//                                     broker/producer_state.h)
//   leader-epoch-checkpoint           text: version, count, then "epoch startOffset" lines
//   partition.metadata                text: "version: 0", "topic_id: <base64 uuid>"
#pragma once

#include <cstdint>

namespace silt::format {

// ---- RecordBatch v2 header ----
inline constexpr int kBaseOffsetOffset = 0;
inline constexpr int kBatchLengthOffset = kBaseOffsetOffset + 8;
inline constexpr int kPartitionLeaderEpochOffset = kBatchLengthOffset + 4;
inline constexpr int kMagicOffset = kPartitionLeaderEpochOffset + 4;
inline constexpr int kCrcOffset = kMagicOffset + 1;
inline constexpr int kAttributesOffset = kCrcOffset + 4;
inline constexpr int kLastOffsetDeltaOffset = kAttributesOffset + 2;
inline constexpr int kBaseTimestampOffset = kLastOffsetDeltaOffset + 4;
inline constexpr int kMaxTimestampOffset = kBaseTimestampOffset + 8;
inline constexpr int kProducerIdOffset = kMaxTimestampOffset + 8;
inline constexpr int kProducerEpochOffset = kProducerIdOffset + 8;
inline constexpr int kBaseSequenceOffset = kProducerEpochOffset + 2;
inline constexpr int kRecordsCountOffset = kBaseSequenceOffset + 4;
inline constexpr int kBatchHeaderSize = kRecordsCountOffset + 4;
static_assert(kBatchHeaderSize == 61);

// baseOffset + batchLength: the bytes before what batchLength counts.
inline constexpr int kLogOverhead = 8 + 4;
static_assert(kLogOverhead == kPartitionLeaderEpochOffset);
// The smallest header prefix from which the batch's magic and total size can be read.
inline constexpr int kMagicPrefixSize = kMagicOffset + 1;
static_assert(kMagicPrefixSize == 17);

inline constexpr int8_t kMagicV0 = 0;
inline constexpr int8_t kMagicV1 = 1;
inline constexpr int8_t kMagicV2 = 2;

// attributes
inline constexpr int16_t kCompressionMask = 0x07;
inline constexpr int16_t kTimestampTypeBit = 0x08;
inline constexpr int16_t kTransactionalBit = 0x10;
inline constexpr int16_t kControlBit = 0x20;
inline constexpr int16_t kDeleteHorizonBit = 0x40;

enum class Compression : int8_t { kNone = 0, kGzip = 1, kSnappy = 2, kLz4 = 3, kZstd = 4 };

// ---- legacy message (magic 0/1) ----
// After offset:int64 + messageSize:int32.
inline constexpr int kLegacyLogOverhead = 8 + 4;
inline constexpr int kLegacyCrcOffset = 0;
inline constexpr int kLegacyMagicOffset = kLegacyCrcOffset + 4;
inline constexpr int kLegacyAttributesOffset = kLegacyMagicOffset + 1;
inline constexpr int kLegacyV0KeyOffset = kLegacyAttributesOffset + 1;
inline constexpr int kLegacyV1TimestampOffset = kLegacyAttributesOffset + 1;
inline constexpr int kLegacyV1KeyOffset = kLegacyV1TimestampOffset + 8;
// Smallest valid messages: crc, magic, attributes, [timestamp], key -1, value -1.
inline constexpr int kLegacyV0MinSize = kLegacyV0KeyOffset + 4 + 4;
inline constexpr int kLegacyV1MinSize = kLegacyV1KeyOffset + 4 + 4;
static_assert(kLegacyV0MinSize == 14 && kLegacyV1MinSize == 22);

// ---- partition directory ----
inline constexpr const char* kLogSuffix = ".log";
inline constexpr const char* kIndexSuffix = ".index";
inline constexpr const char* kTimeIndexSuffix = ".timeindex";
// Producer-state snapshot (layout in broker/producer_state.h); written by the broker, kept
// consistent with the log (truncation, retention) by storage/partition_log.h.
inline constexpr const char* kSnapshotSuffix = ".snapshot";
inline constexpr const char* kLeaderEpochCheckpointFile = "leader-epoch-checkpoint";
inline constexpr const char* kPartitionMetadataFile = "partition.metadata";
inline constexpr int kSegmentNameDigits = 20;

// .index entry: relativeOffset:int32, position:int32
inline constexpr int kIndexEntrySize = 4 + 4;
// .timeindex entry: timestamp:int64, relativeOffset:int32
inline constexpr int kTimeIndexEntrySize = 8 + 4;

// Kafka's defaults for the storage configs.
inline constexpr int32_t kDefaultIndexIntervalBytes = 4096;
inline constexpr int32_t kDefaultSegmentIndexBytes = 10 * 1024 * 1024;
inline constexpr int64_t kDefaultSegmentBytes = 1024LL * 1024 * 1024;
inline constexpr int32_t kDefaultMaxMessageBytes = 1048588;

}  // namespace silt::format
