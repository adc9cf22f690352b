// A Sink into a cluster that cannot take batches at their own offsets (Apache Kafka, or any
// broker without silt's offset-preserving append): each source batch is produced anew, whole,
// and an exact offset map (offset_map.h) records where its records landed.
//
// Producing. One idempotent producer per sink (InitProducerId), acks=all, the partition's own
// sequence numbers, up to kMaxInFlight batches in flight per partition, in order; a batch that
// fails with a retriable error is sent again with the same bytes, together with every later one
// of its partition, after a metadata refresh (the broker drops duplicates). A source batch keeps
// its records block byte for byte (records, timestamps, headers, codec); only its header
// changes: the producer's id, epoch and base sequence, baseOffset 0, partitionLeaderEpoch -1, the
// transactional bit cleared, and a new CRC (format::ResealBatch). Batches a broker would refuse
// from a producer are rebuilt from their records instead, with the same codec: those with gaps in
// their offset deltas (a compacted batch), LogAppendTime batches (written as CreateTime with the
// timestamps a consumer of the source sees), and batches carrying a delete horizon.
//
// Transactions. Control batches are never produced (no client may write them) and become holes
// in the map. A transactional batch waits in memory, with every batch after it, until its
// producer's marker arrives: on COMMIT it is produced as ordinary idempotent data (a read_committed
// consumer of the source saw it, so the destination has it outside any transaction), on ABORT it
// becomes a hole. At most kMaxHeldBytes may wait; past that Append fails (an open transaction
// holding back too much). Checkpoints never pass the first waiting batch, so a restart reads it
// again.
//
// State at the destination. The compacted topic `__silt_replicate_offsets` (one partition) holds
// the offset map, one record per partition per Flush() with the runs added since (key
// "m" NUL topic NUL partition NUL from, value PartitionOffsetMap's chunk), and the checkpoint of
// each source (key "c" NUL source id, value version:int8 count:varint, then per entry
// topic_len:varint topic partition:varint source_next:varlong). Chunk keys never repeat, so
// compaction keeps them all; every 64 chunks the partition's whole map is stored under
// "s" NUL topic NUL partition and the chunks it replaces get tombstones, so the topic stays small
// however long a copy runs. Reading the topic in order rebuilds every map: a snapshot replaces
// the map, a chunk extends it (one already covered is ignored).
//
// Resume with no duplicate. After a kill between a batch's acknowledgement and the map record
// that names it, the destination partition holds records the map does not. On the first Append
// of a partition the sink reads the destination from the map's dest end to its log end and
// compares those records, in order, with the source records it is given (timestamp, key, value
// and headers, byte for byte): each match is entered in the map instead of being produced again;
// a record that differs stops the copy (InvalidArgument naming both offsets: something else
// wrote to the destination). Nothing is added to the records to find them (no source offset
// header), so the destination's records stay exactly the source's.
//
// Limits. A source batch larger than the destination's max.message.bytes is refused by it, and
// the copy stops with MESSAGE_TOO_LARGE. Batches waiting for a transaction are not durable:
// Flush() does not produce them (the checkpoint stays before them).
//
// Offsets in this sink's Append: `expected` is the source offset the batches start at; source
// offsets already in the map (or waiting) are skipped; a jump forward is a hole. AppendOutcome is
// always appended=true with log_end = the source offset after the last batch taken.
//
// Thread-safety: none.
#pragma once

#include <memory>

#include "base/status.h"
#include "replicate/endpoint.h"

namespace silt::replicate {

// The name of the topic holding offset maps and checkpoints at a reproducing destination.
inline constexpr const char* kOffsetsTopic = "__silt_replicate_offsets";

// Connects to the cluster of `spec` (kCluster only: InvalidArgument otherwise), creates the
// offsets topic if missing, loads the maps and checkpoints stored there and gets a producer id.
Result<std::unique_ptr<Sink>> MakeReproducingSink(const EndpointSpec& spec,
                                                  const OpenOptions& options);

}  // namespace silt::replicate
