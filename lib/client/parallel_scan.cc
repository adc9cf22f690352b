// Two-thread formatting of a segment stretch (see parallel_scan.h).
#include "client/parallel_scan.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "base/coding.h"
#include "format/layout.h"

namespace silt::client {
namespace {

// Smallest batchLength a v2 batch can have: the header after the length field.
constexpr int64_t kMinBatchLength = format::kBatchHeaderSize - format::kLogOverhead;

bool ReadFully(int fd, char* dst, size_t n, int64_t position) {
  while (n > 0) {
    ssize_t r = ::pread(fd, dst, n, position);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    dst += r;
    n -= static_cast<size_t>(r);
    position += r;
  }
  return true;
}

class Scan {
 public:
  Scan(const ScanRange& r, const ScanFormatFn& format, const ScanEmitFn& emit,
       const std::atomic<bool>* stop)
      : r_(r), format_(format), emit_(emit), stop_(stop), cursor_(r.start) {
    result_.position = r.start;
    result_.next_offset = r.min_offset;
  }

  ScanResult Run() {
    std::thread helper([this] { Work(); });
    Work();
    helper.join();
    result_.stopped = stopped_.load();
    return result_;
  }

 private:
  // Claims the next chunk: whole batches from the cursor, about chunk_bytes of them. The
  // walk reads only batch headers (baseOffset, batchLength), a small window at a time.
  bool Claim(uint64_t* seq, int64_t* start, int64_t* end) {
    std::lock_guard<std::mutex> lock(claim_mu_);
    if (walk_done_ || halted_.load()) return false;
    if (stop_ && stop_->load(std::memory_order_relaxed)) {
      stopped_.store(true);
      halted_.store(true);
      { std::lock_guard<std::mutex> emit_lock(emit_mu_); }  // no waiter misses the news
      emit_cv_.notify_all();
      return false;
    }
    int64_t pos = cursor_;
    while (pos - cursor_ < static_cast<int64_t>(r_.chunk_bytes)) {
      const char* h = Header(pos);
      if (!h) {
        walk_done_ = true;
        break;
      }
      const int64_t base = static_cast<int64_t>(DecodeBE64(h + format::kBaseOffsetOffset));
      const int64_t length = static_cast<int32_t>(DecodeBE32(h + format::kBatchLengthOffset));
      if (length < kMinBatchLength || pos + format::kLogOverhead + length > r_.limit ||
          base >= r_.stop_offset) {
        walk_done_ = true;  // damaged, unfinished, or past the end: the sequential reader's job
        break;
      }
      pos += format::kLogOverhead + length;
    }
    if (pos == cursor_) return false;
    *seq = next_seq_++;
    *start = cursor_;
    *end = pos;
    cursor_ = pos;
    return true;
  }

  // The 12 bytes of batch header at `pos`, or null when the range ends first.
  const char* Header(int64_t pos) {
    if (pos + format::kLogOverhead > r_.limit) return nullptr;
    if (pos < window_pos_ || pos + format::kLogOverhead > window_pos_ + window_len_) {
      const int64_t want = std::min<int64_t>(sizeof window_, r_.limit - pos);
      if (!ReadFully(r_.fd, window_, static_cast<size_t>(want), pos)) return nullptr;
      window_pos_ = pos;
      window_len_ = want;
    }
    return window_ + (pos - window_pos_);
  }

  void Work() {
    std::unique_ptr<char[]> buf;
    size_t capacity = 0;
    std::string out;
    uint64_t seq;
    int64_t start, end;
    while (Claim(&seq, &start, &end)) {
      const size_t n = static_cast<size_t>(end - start);
      if (n > capacity) {
        buf.reset(new char[n]);
        capacity = n;
      }
      out.clear();
      int64_t next = -1, records = 0;
      bool ok = ReadFully(r_.fd, buf.get(), n, start) &&
                FormatChunk(std::string_view(buf.get(), n), &out, &next, &records);
      if (!WaitTurn(seq)) return;
      bool go_on = ok && emit_(out);
      std::lock_guard<std::mutex> lock(emit_mu_);
      if (ok) {
        result_.position = end;
        result_.next_offset = std::max(result_.next_offset, next);
        result_.records += records;
      }
      ++turn_;
      if (!go_on) Halt(/*stopped=*/ok);
      emit_cv_.notify_all();
      if (!go_on) return;
    }
  }

  // Checks and formats the batches of one chunk. False at the first fault of any kind.
  bool FormatChunk(std::string_view data, std::string* out, int64_t* next, int64_t* records) {
    size_t used = 0;
    while (used < data.size()) {
      auto view = format::RecordBatchView::Parse(data.substr(used));
      if (!view.ok()) return false;
      const format::BatchHeader& h = view->header();
      if (!h.control()) {
        Status st = view->ForEachRecord([&](const format::RecordView& rec) {
          if (rec.offset < r_.min_offset) return true;
          format_(r_.partition, rec, out);
          ++*records;
          return true;
        });
        if (!st.ok()) return false;
      }
      *next = std::max(*next, h.next().value());
      used += static_cast<size_t>(h.size());
    }
    return true;
  }

  // Waits until every earlier chunk is emitted. False when the scan was halted first.
  bool WaitTurn(uint64_t seq) {
    std::unique_lock<std::mutex> lock(emit_mu_);
    emit_cv_.wait(lock, [&] { return turn_ == seq || halted_.load(); });
    return turn_ == seq && !halted_.load();
  }

  // Called with emit_mu_ held.
  void Halt(bool stopped) {
    if (stopped) stopped_.store(true);
    halted_.store(true);
    emit_cv_.notify_all();
  }

  const ScanRange& r_;
  const ScanFormatFn& format_;
  const ScanEmitFn& emit_;
  const std::atomic<bool>* stop_;

  std::mutex claim_mu_;
  int64_t cursor_;
  bool walk_done_ = false;
  uint64_t next_seq_ = 0;
  char window_[4096];
  int64_t window_pos_ = -1;
  int64_t window_len_ = 0;

  std::mutex emit_mu_;
  std::condition_variable emit_cv_;
  uint64_t turn_ = 0;
  std::atomic<bool> halted_{false};   // no more claims or emits
  std::atomic<bool> stopped_{false};  // halted by the caller's wish, not by a fault
  ScanResult result_;                 // under emit_mu_
};

}  // namespace

ScanResult ParallelScan(const ScanRange& range, const ScanFormatFn& format, const ScanEmitFn& emit,
                        const std::atomic<bool>* stop) {
  Scan scan(range, format, emit, stop);
  return scan.Run();
}

}  // namespace silt::client
