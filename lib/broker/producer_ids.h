// Producer ids for InitProducerId: unique across restarts. On a single node they come from a
// counter in the data dir; in a cluster, from blocks the controller hands out.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "base/ids.h"
#include "base/status.h"

namespace silt::broker {

class ProducerIdAllocator {
 public:
  virtual ~ProducerIdAllocator() = default;
  virtual Result<ProducerId> Allocate() = 0;
  // Makes every later Allocate() answer an id above `id`, durably: batches copied into a
  // mirror topic keep the producer ids of the cluster they came from, and a producer given one
  // of those here after promote would inherit that producer's sequence state. A single node
  // moves its counter file; a cluster node reserves through the metadata log, so that every
  // node of the cluster skips the ids (cluster/cluster_node.h). The default does nothing.
  virtual Status ReserveThrough(ProducerId id) { return Status::OK(); }
};

// `<data-dir>/silt-producer-ids`: "next.producer.id=N". Ids are handed out in blocks so the
// file is rewritten once per block; ids of a block unused at a crash are skipped, never reused.
class FileProducerIdAllocator : public ProducerIdAllocator {
 public:
  static Result<std::unique_ptr<FileProducerIdAllocator>> Open(const std::string& data_dir);
  Result<ProducerId> Allocate() override;
  Status ReserveThrough(ProducerId id) override;

 private:
  explicit FileProducerIdAllocator(std::string path) : path_(std::move(path)) {}
  const std::string path_;
  std::mutex mu_;
  int64_t next_ = 0;
  int64_t limit_ = 0;  // ids below this are covered by the persisted block
};

}  // namespace silt::broker
