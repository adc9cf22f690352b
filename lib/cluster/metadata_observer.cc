// The broker-only node's view of the metadata quorum (metadata_observer.h).
#include "cluster/metadata_observer.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "base/coding.h"
#include "broker/logging.h"
#include "cluster/controller_channel.h"

namespace silt::cluster {

using broker::LogWarn;

std::string EncodeMetadataFetch(RaftIndex have) {
  std::string out(8, '\0');
  EncodeBE64(out.data(), have.value());
  return out;
}

Result<RaftIndex> DecodeMetadataFetch(std::string_view command) {
  if (command.size() != 8) {
    return Status::Corruption("a metadata fetch carries the 8-byte applied index");
  }
  return RaftIndex(DecodeBE64(command.data()));
}

std::string EncodeMetadataSnapshotResult(RaftTerm term, const std::string& snapshot) {
  std::string out(8, '\0');
  EncodeBE64(out.data(), term.value());
  return out + snapshot;
}

struct MetadataObserver::Impl {
  MetadataObserverOptions o;
  std::thread thread;
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  std::atomic<uint64_t> applied{0};
  std::atomic<uint64_t> term{0};
  std::atomic<int32_t> leader{-1};
  size_t next_voter = 0;

  void Run() {
    std::string last_error;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu);
        if (stopping) return;
      }
      const bool caught_up = PollOnce(&last_error);
      std::unique_lock<std::mutex> lock(mu);
      cv.wait_for(lock, std::chrono::milliseconds(caught_up ? o.poll_interval_ms : 200),
                  [this] { return stopping; });
      if (stopping) return;
    }
  }

  // One fetch from the controller (or the next voter while it is unknown). True when the
  // answer came from the controller.
  bool PollOnce(std::string* last_error) {
    std::optional<Voter> to;
    const int32_t l = leader.load();
    if (l >= 0) to = FindVoter(o.voters, NodeId(l));
    if (!to) to = o.voters[next_voter++ % o.voters.size()];
    ForwardRequest req{Uuid(), EncodeMetadataFetch(RaftIndex(applied.load())),
                       ForwardKind::kFetchMetadata};
    auto r = ForwardPropose(*to, o.node_id, req, o.request_timeout_ms);
    if (!r.ok()) {
      leader = -1;
      if (r.status().ToString() != *last_error) {
        *last_error = r.status().ToString();
        LogWarn("metadata fetch from node " + std::to_string(to->id.value()) + ": " + *last_error);
      }
      return false;
    }
    if (r->outcome != ProposeOutcome::kApplied) {
      leader = r->leader_hint ? r->leader_hint->value() : -1;
      return false;
    }
    last_error->clear();
    leader = to->id.value();
    if (r->result.size() < 8) return true;
    const uint64_t t = DecodeBE64(r->result.data());
    if (t > term.load()) term = t;
    if (r->result.size() > 8 && r->index.value() > applied.load()) {
      Status s = o.state_machine->Restore(std::string_view(r->result).substr(8));
      if (!s.ok()) {
        LogWarn("metadata snapshot from node " + std::to_string(to->id.value()) + ": " +
                s.ToString());
        return false;
      }
      applied = r->index.value();
      if (o.on_applied) o.on_applied();
    }
    return true;
  }
};

Result<std::unique_ptr<MetadataObserver>> MetadataObserver::Start(MetadataObserverOptions options) {
  if (options.voters.empty()) return Status::InvalidArgument("no voters to follow");
  if (FindVoter(options.voters, options.node_id)) {
    return Status::InvalidArgument("node " + std::to_string(options.node_id.value()) +
                                   " is a voter, not a broker-only node");
  }
  if (options.state_machine == nullptr) return Status::InvalidArgument("no state machine");
  auto impl = std::make_unique<Impl>();
  impl->o = std::move(options);
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->Run(); });
  return std::unique_ptr<MetadataObserver>(new MetadataObserver(std::move(impl)));
}

MetadataObserver::MetadataObserver(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
MetadataObserver::~MetadataObserver() { Stop(); }

void MetadataObserver::Propose(RequestId, std::string, ProposeCallback done) {
  ProposeResult r;
  r.outcome = ProposeOutcome::kNotLeader;
  r.leader_hint = leader();
  r.message = "a broker-only node does not append to the metadata log";
  done(std::move(r));
}

NodeId MetadataObserver::node_id() const { return impl_->o.node_id; }
RaftIndex MetadataObserver::committed_index() const { return RaftIndex(impl_->applied.load()); }
RaftIndex MetadataObserver::applied_index() const { return RaftIndex(impl_->applied.load()); }
RaftTerm MetadataObserver::term() const { return RaftTerm(impl_->term.load()); }
std::optional<NodeId> MetadataObserver::leader() const {
  const int32_t l = impl_->leader.load();
  if (l < 0) return std::nullopt;
  return NodeId(l);
}

void MetadataObserver::Stop() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
}

}  // namespace silt::cluster
