// meta.properties and silt-producer-ids: the node's identity and its producer id counter.
#include "base/file.h"
#include "base/properties.h"
#include "base/random.h"
#include "broker/node.h"
#include "broker/producer_ids.h"

namespace silt::broker {
namespace {

constexpr const char* kMetaFile = "meta.properties";
constexpr const char* kProducerIdFile = "silt-producer-ids";
constexpr int64_t kProducerIdBlock = 1000;

}  // namespace

Result<NodeIdentity> NodeIdentity::Load(const std::string& data_dir, NodeId node_id,
                                        const std::string& cluster_id) {
  std::string meta_path = JoinPath(data_dir, kMetaFile);
  std::map<std::string, std::string> meta;
  if (PathExists(meta_path)) {
    SILT_ASSIGN_OR_RETURN(std::string text, ReadFile(meta_path));
    meta = ParseProperties(text);
  }
  std::string stored = meta.count("cluster.id") ? meta["cluster.id"] : "";
  if (!cluster_id.empty() && !stored.empty() && stored != cluster_id) {
    return Status::InvalidArgument("cluster.id " + cluster_id + " does not match " + stored +
                                   " stored in " + meta_path);
  }
  NodeIdentity id;
  id.node_id = node_id;
  id.cluster_id = !stored.empty() ? stored : !cluster_id.empty() ? cluster_id : NewClusterId();
  if (stored.empty() || meta["node.id"] != std::to_string(node_id.value())) {
    std::string text = "#silt broker identity\nversion=1\ncluster.id=" + id.cluster_id +
                       "\nnode.id=" + std::to_string(node_id.value()) + "\n";
    SILT_TRY(WriteFileAtomic(meta_path, text));
  }
  return id;
}

Result<std::unique_ptr<FileProducerIdAllocator>> FileProducerIdAllocator::Open(
    const std::string& data_dir) {
  std::unique_ptr<FileProducerIdAllocator> a(
      new FileProducerIdAllocator(JoinPath(data_dir, kProducerIdFile)));
  if (PathExists(a->path_)) {
    SILT_ASSIGN_OR_RETURN(std::string text, ReadFile(a->path_));
    auto m = ParseProperties(text);
    try {
      a->next_ = std::stoll(m["next.producer.id"]);
    } catch (...) {
      return Status::Corruption(a->path_ + ": no valid next.producer.id");
    }
  }
  a->limit_ = a->next_;
  return a;
}

Result<ProducerId> FileProducerIdAllocator::Allocate() {
  std::lock_guard<std::mutex> lock(mu_);
  if (next_ >= limit_) {
    int64_t limit = next_ + kProducerIdBlock;
    SILT_TRY(WriteFileAtomic(path_, "next.producer.id=" + std::to_string(limit) + "\n"));
    limit_ = limit;
  }
  return ProducerId(next_++);
}

Status FileProducerIdAllocator::ReserveThrough(ProducerId id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (id.value() < next_) return Status::OK();
  if (id.value() >= limit_) {
    int64_t limit = id.value() + 1 + kProducerIdBlock;
    SILT_TRY(WriteFileAtomic(path_, "next.producer.id=" + std::to_string(limit) + "\n"));
    limit_ = limit;
  }
  next_ = id.value() + 1;
  return Status::OK();
}

}  // namespace silt::broker
