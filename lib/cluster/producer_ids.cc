// Producer ids in blocks from the metadata log (BlockProducerIds).
#include "cluster/cluster_node_impl.h"

namespace silt::cluster {

using broker::LogInfo;
using broker::LogWarn;

Result<ProducerId> BlockProducerIds::Allocate() {
  // First the image must hold every reservation committed before this call (a node learns of
  // one only as its image applies it): a read barrier, shared with the calls made meanwhile.
  SILT_TRY(node_->read_barrier.Wait(node_->options.read_barrier_timeout_ms));
  std::lock_guard<std::mutex> lock(mu_);
  // Ids of the block held that a reservation made since covers are skipped.
  const int64_t reserved = node_->image()->reserved_producer_id().value();
  if (next_ <= reserved) next_ = std::min(reserved + 1, limit_);
  // Every block ends at a multiple of kBlock above the last one: a proposal made from a stale
  // image does not advance the next id, is refused, and is retried from a newer image. A
  // reservation moves the next id to a multiple of kBlock too, so a block granted after it
  // lies wholly above it.
  for (int attempt = 0; next_ >= limit_; ++attempt) {
    int64_t base = node_->image()->next_producer_id().value();
    int64_t end = (base / kBlock + 1) * kBlock;
    auto r = node_->Propose({ProducerIdsRecord{node_->options.node_id, ProducerId(end)}});
    if (r.ok()) {
      next_ = end - kBlock;
      limit_ = end;
      break;
    }
    if (r.status().code() != Status::Code::kInvalidArgument || attempt >= 10) return r.status();
  }
  return ProducerId(next_++);
}

Status BlockProducerIds::ReserveThrough(ProducerId id) {
  if (id.value() < 0) return Status::OK();
  if (id.value() > INT64_MAX - 2 * kBlock)
    return Status::InvalidArgument("producer id " + std::to_string(id.value()) +
                                   " is too large to reserve");
  std::lock_guard<std::mutex> lock(mu_);
  // Whole blocks: a source's producer ids grow one by one, so one proposal covers a
  // thousand of them.
  const int64_t through = (id.value() / kBlock + 1) * kBlock - 1;
  for (int attempt = 0;; ++attempt) {
    auto image = node_->image();
    if (image->reserved_producer_id() >= id) break;
    const int64_t next = std::max(image->next_producer_id().value(), through + 1);
    auto r = node_->Propose(
        {ProducerIdsRecord{node_->options.node_id, ProducerId(next), ProducerId(through)}});
    if (r.ok()) break;
    // Refused: the image changed since it was read (another reservation); look again.
    if (r.status().code() != Status::Code::kInvalidArgument || attempt >= 10) return r.status();
  }
  const int64_t reserved = node_->image()->reserved_producer_id().value();
  if (next_ <= reserved) next_ = std::min(reserved + 1, limit_);
  return Status::OK();
}

}  // namespace silt::cluster
