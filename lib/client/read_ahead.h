// Reads a segment file ahead of its consumer on a second thread: whole batches, their framing
// (and for every other chunk their CRC-32C) already checked, handed over in chunks. The consumer then spends its own core on
// decoding records and formatting output while the next chunk is read and checked, so a
// sequential read of a large segment runs at about the speed of the slower half instead of the
// sum of both.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

namespace silt::client {

class ReadAhead {
 public:
  // Starts reading `fd` (not owned; it must stay open while this object lives) at byte `start`,
  // in chunks of about `chunk_bytes`, keeping at most `depth` chunks read but not yet released.
  ReadAhead(int fd, int64_t start, size_t chunk_bytes = 1 << 20, int depth = 2);
  // Stops the reader thread and waits for it.
  ~ReadAhead();
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  struct Chunk {
    int64_t position = 0;   // file position of data's first byte
    std::string_view data;  // whole batches, framing checked; empty at the end
    bool crc_checked = false;  // their CRCs were checked too (else that is the caller's job)
  };

  // The next chunk, waiting for the reader if needed. Its data stays valid until Release().
  // An empty chunk means the read-ahead has ended: at the end of the file, at a batch not yet
  // completely written, at a damaged batch or a read error. The caller carries on from
  // `position` with its own reads, which report any damage properly.
  Chunk Next();
  // Gives the chunk last returned by Next() back to the reader.
  void Release();

 private:
  struct Slot {
    std::unique_ptr<char[]> buf;
    size_t capacity = 0;
    int64_t position = 0;
    size_t length = 0;  // bytes of whole batches; 0 marks the end
    bool checked = false;  // CRCs checked
  };
  void Run();
  template <typename Pred>
  void Await(std::atomic<bool>* waiting, Pred pred);
  void Wake(const std::atomic<bool>& waiting);
  // Fills `s` from next_read_: whole checked batches, growing the buffer for a batch larger
  // than it. False when nothing more can be read ahead.
  bool Fill(Slot* s);

  const int fd_;
  const size_t chunk_;
  std::vector<Slot> slots_;
  // produced_ counts slots filled by the reader, consumed_ slots released by the consumer
  // (slot = count % size); the reader stays at most size() slots ahead.
  std::atomic<size_t> produced_{0};
  std::atomic<size_t> consumed_{0};
  std::atomic<bool> stop_{false};
  std::atomic<bool> ended_{false};  // the reader has stopped for good; see end_position_
  std::atomic<bool> reader_waiting_{false};
  std::atomic<bool> consumer_waiting_{false};
  std::mutex mu_;  // only for blocking waits
  std::condition_variable cv_;
  bool handed_out_ = false;   // consumer side: a chunk from Next() is not yet released
  int64_t end_position_ = 0;  // where the reader stopped (written before ended_ is set)
  // Reader thread only: the file position after the last whole batch, and the bytes already
  // read beyond it (the start of the next batch, in the previous slot's buffer).
  int64_t next_read_ = 0;
  uint64_t fills_ = 0;
  const char* tail_ = nullptr;
  size_t tail_len_ = 0;
  std::thread thread_;
};

}  // namespace silt::client
