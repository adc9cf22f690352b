// Segment read-ahead on a second thread (see read_ahead.h).
#include "client/read_ahead.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/coding.h"
#include "format/layout.h"
#include "format/record_batch.h"

namespace silt::client {

ReadAhead::ReadAhead(int fd, int64_t start, size_t chunk_bytes, int depth)
    : fd_(fd), chunk_(chunk_bytes), slots_(static_cast<size_t>(depth < 2 ? 2 : depth)) {
  end_position_ = start;
  thread_ = std::thread([this, start] {
    next_read_ = start;
    Run();
  });
}

ReadAhead::~ReadAhead() {
  stop_.store(true);
  {
    std::lock_guard<std::mutex> lock(mu_);
  }
  cv_.notify_all();
  thread_.join();
}

// Waits until pred() holds: spinning briefly first, since the other side usually delivers
// within microseconds and a sleep and wake-up costs far more than that (in a virtual machine,
// tens of microseconds), then blocking. `waiting` tells the other side to notify.
template <typename Pred>
void ReadAhead::Await(std::atomic<bool>* waiting, Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
  for (int i = 0; !pred(); ++i) {
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline) {
      std::unique_lock<std::mutex> lock(mu_);
      waiting->store(true);
      cv_.wait(lock, pred);
      waiting->store(false);
      return;
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
}

void ReadAhead::Wake(const std::atomic<bool>& waiting) {
  if (!waiting.load()) return;
  { std::lock_guard<std::mutex> lock(mu_); }
  cv_.notify_all();
}

ReadAhead::Chunk ReadAhead::Next() {
  Release();
  Await(&consumer_waiting_, [this] {
    return produced_.load() > consumed_.load(std::memory_order_relaxed) || ended_.load();
  });
  const size_t c = consumed_.load(std::memory_order_relaxed);
  if (produced_.load() == c) return Chunk{end_position_, {}};
  const Slot& s = slots_[c % slots_.size()];
  handed_out_ = true;
  return Chunk{s.position, std::string_view(s.buf.get(), s.length), s.checked};
}

void ReadAhead::Release() {
  if (!handed_out_) return;
  handed_out_ = false;
  consumed_.fetch_add(1);
  Wake(reader_waiting_);
}

void ReadAhead::Run() {
  for (;;) {
    Await(&reader_waiting_, [this] {
      return stop_.load() || produced_.load(std::memory_order_relaxed) - consumed_.load() < slots_.size();
    });
    if (stop_.load()) return;
    Slot& s = slots_[produced_.load(std::memory_order_relaxed) % slots_.size()];
    if (!Fill(&s)) {
      end_position_ = next_read_;
      ended_.store(true);
      Wake(consumer_waiting_);
      return;
    }
    produced_.fetch_add(1);
    Wake(consumer_waiting_);
  }
}

bool ReadAhead::Fill(Slot* s) {
  // Bytes already read past the last whole batch of the previous chunk start this one, so no
  // byte is read from the file twice. The previous slot is not refilled before this one is.
  // The CRC work is split with the consumer, a chunk each, which keeps the two threads about
  // equally busy (the reader's share of the rest is the copy out of the page cache).
  format::ValidateLimits limits;
  limits.verify_crc = (fills_++ & 1) == 0;
  s->checked = limits.verify_crc;
  const size_t carried = tail_len_;
  size_t want = chunk_ > carried ? chunk_ : carried + chunk_;
  if (s->capacity < want) {
    s->buf.reset(new char[want]);
    s->capacity = want;
  }
  if (carried > 0) std::memmove(s->buf.get(), tail_, carried);
  tail_ = nullptr;
  tail_len_ = 0;
  size_t have = carried;
  const int64_t position = next_read_;
  for (;;) {
    // Top up the buffer from the file.
    while (have < s->capacity) {
      ssize_t n = ::pread(fd_, s->buf.get() + have, s->capacity - have,
                          position + static_cast<int64_t>(have));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // end of file (or an error the consumer's own read will report)
      have += static_cast<size_t>(n);
    }
    size_t used = 0;
    while (used < have) {
      auto view =
          format::RecordBatchView::Parse(std::string_view(s->buf.get() + used, have - used), limits);
      if (!view.ok()) break;  // not yet whole, or damaged: stop before it
      used += static_cast<size_t>(view->header().size());
    }
    if (used > 0) {
      s->position = position;
      s->length = used;
      tail_ = s->buf.get() + used;
      tail_len_ = have - used;
      next_read_ = position + static_cast<int64_t>(used);
      return true;
    }
    // No whole batch. If the first one is larger than the buffer and the file holds all of it,
    // grow the buffer to fit it; otherwise this is as far as reading ahead goes.
    if (have < s->capacity || have < static_cast<size_t>(format::kLogOverhead)) return false;
    const int64_t need = format::kLogOverhead +
                         static_cast<int32_t>(DecodeBE32(s->buf.get() + format::kBatchLengthOffset));
    struct stat st;
    if (need <= static_cast<int64_t>(s->capacity) || ::fstat(fd_, &st) != 0 ||
        position + need > st.st_size)
      return false;
    std::unique_ptr<char[]> bigger(new char[static_cast<size_t>(need)]);
    std::memcpy(bigger.get(), s->buf.get(), have);
    s->buf = std::move(bigger);
    s->capacity = static_cast<size_t>(need);
  }
}

}  // namespace silt::client
