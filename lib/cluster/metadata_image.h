// MetadataImage: the cluster metadata as of one point of the metadata log, immutable once built,
// and MetadataStateMachine, which applies committed commands into a new image and swaps it in.
//
// Readers take the current image (a shared_ptr<const MetadataImage>) and keep it as long as they
// like; an apply never changes an image someone holds, it builds the next one. A command whose
// records do not fit the current image (unknown topic, duplicate name, ISR outside the replicas,
// ...) changes nothing: its result says why. A snapshot is the image written as records, so a
// restored image is what applying those records to an empty image gives.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/metadata_quorum.h"
#include "cluster/metadata_records.h"

namespace silt::cluster {

struct BrokerImage {
  NodeId id;
  Uuid incarnation_id;
  std::string host;
  int32_t port = 0;
  bool fenced = true;  // registered brokers start fenced, as in Kafka
  // A broker-only node's peer address (RegisterBrokerRecord v1); "" and 0 for a voter.
  std::string peer_host = {};
  int32_t peer_port = 0;
  bool operator==(const BrokerImage&) const = default;
};

struct PartitionImage {
  std::vector<NodeId> replicas;
  std::vector<NodeId> isr;
  NodeId leader{kNoLeader};
  LeaderEpoch leader_epoch{0};
  int32_t partition_epoch = 0;
  // A reassignment in progress (KIP-455): `replicas` is the target followed by the replicas
  // being dropped; `adding_replicas` are the target's new members (not all in the ISR yet),
  // `removing_replicas` the ones leaving once every adding replica is in the ISR. Both are
  // subsets of `replicas`, disjoint, and empty when no reassignment is under way.
  std::vector<NodeId> removing_replicas = {};
  std::vector<NodeId> adding_replicas = {};
  bool reassigning() const { return !adding_replicas.empty() || !removing_replicas.empty(); }
  bool operator==(const PartitionImage&) const = default;
};

struct TopicImage {
  std::string name;
  Uuid id;
  std::map<int32_t, PartitionImage> partitions;  // by partition id
  bool operator==(const TopicImage&) const = default;
};

// The topics of an image: shared between an image and the one Apply makes from it, each topic
// copied only when a record changes it (copy on write), so that applying a change to one
// partition costs that topic's copy and a map of pointers, not the whole image. Iterates as a
// map of Uuid to TopicImage.
class TopicsView {
 public:
  using Map = std::map<Uuid, std::shared_ptr<TopicImage>>;
  class iterator {
   public:
    using value_type = std::pair<const Uuid&, const TopicImage&>;
    explicit iterator(Map::const_iterator it) : it_(it) {}
    value_type operator*() const { return {it_->first, *it_->second}; }
    iterator& operator++() {
      ++it_;
      return *this;
    }
    bool operator==(const iterator& o) const { return it_ == o.it_; }
    bool operator!=(const iterator& o) const { return it_ != o.it_; }

   private:
    Map::const_iterator it_;
  };
  explicit TopicsView(const Map& m) : m_(m) {}
  iterator begin() const { return iterator(m_.begin()); }
  iterator end() const { return iterator(m_.end()); }
  size_t size() const { return m_.size(); }
  bool empty() const { return m_.empty(); }

 private:
  const Map& m_;
};

class MetadataImage {
 public:
  using ConfigKey = std::pair<ConfigResource, std::string>;  // (type, resource name)

  const std::map<int32_t, BrokerImage>& brokers() const { return brokers_; }
  TopicsView topics() const { return TopicsView(topics_); }
  // The configs set on a resource (name -> value); empty when none are.
  const std::map<std::string, std::string>& configs(ConfigResource type,
                                                    const std::string& name) const;
  // The cluster id of the log's ClusterIdRecord; empty before it is applied.
  const std::string& cluster_id() const { return cluster_id_; }
  // The first producer id no block has been given out from yet.
  ProducerId next_producer_id() const { return next_producer_id_; }
  // The highest producer id no broker may hand out (the ids carried by batches copied into
  // mirror topics, reserved in whole blocks); -1 when none is reserved.
  ProducerId reserved_producer_id() const { return reserved_producer_id_; }

  const TopicImage* FindTopic(std::string_view name) const;
  const TopicImage* FindTopic(const Uuid& id) const;

  // This image with `records` applied in order, or the first record's reason not to apply
  // (InvalidArgument naming the record); `this` is never changed.
  Result<MetadataImage> Apply(const std::vector<MetadataRecord>& records) const;

  // The records that rebuild this image from an empty one (its snapshot).
  std::vector<MetadataRecord> ToRecords() const;

  // Equal contents (topics compared by value, not by the sharing of their copies).
  bool operator==(const MetadataImage& o) const;

 private:
  Status ApplyOne(const MetadataRecord& r);
  // The topic to change in this image: its own copy, made now if it still shares it with the
  // image it was applied from.
  TopicImage& Mutable(TopicsView::Map::iterator it);

  std::map<int32_t, BrokerImage> brokers_;
  TopicsView::Map topics_;
  std::map<std::string, Uuid> topic_ids_;  // by name
  std::map<ConfigKey, std::map<std::string, std::string>> configs_;
  ProducerId next_producer_id_{0};
  ProducerId reserved_producer_id_{-1};
  std::string cluster_id_;
};

// The result bytes of a metadata command (what ProposeResult::result carries):
//   ApplyResult => error_code int8 (0 applied, 1 undecodable, 2 refused), message string
std::string EncodeApplyResult(const Status& s);
// OK when the command was applied, else InvalidArgument/Unsupported/Corruption with its message.
Status DecodeApplyResult(std::string_view bytes);

class MetadataStateMachine final : public StateMachine {
 public:
  MetadataStateMachine();

  // Thread-safe; the image stays valid as long as the caller holds it.
  std::shared_ptr<const MetadataImage> image() const;

  std::string Apply(std::string_view command) override;
  std::string Snapshot() override;
  Status Restore(std::string_view snapshot) override;

 private:
  mutable std::mutex mu_;  // guards the pointer only; images are immutable
  std::shared_ptr<const MetadataImage> image_;
};

}  // namespace silt::cluster
