// Splits an input stream into lines with big buffered reads and bounded memory: the buffer holds
// at most one chunk plus one partial line, and a line longer than the limit is reported (with
// its line number) as soon as it is seen, without reading the rest of it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace silt::client {

class LineReader {
 public:
  // Reads from `fd` (not owned) in chunks of `chunk_bytes`; lines may be up to `max_line_bytes`
  // long (the newline not counted). `name` is used in error messages.
  LineReader(int fd, std::string name, size_t chunk_bytes, size_t max_line_bytes);

  enum class Event {
    kLine,  // *line holds the next line, without its '\n'; valid until the next call
    kEof,   // no more input (a last line without '\n' is returned as a kLine first)
    kIdle,  // no whole line arrived within the timeout (only for pipes, terminals, sockets)
  };

  // The next line. With timeout_ms >= 0, waits at most that long for input before kIdle;
  // with -1, blocks. TooLarge (naming the line number) for an over-long line; IOError on a
  // read error.
  Result<Event> Next(std::string_view* line, int timeout_ms = -1);

  // 1-based number of the line last returned (or being read when an error occurred).
  int64_t line_number() const { return line_number_; }
  // Bytes consumed from the input so far.
  int64_t bytes_read() const { return bytes_read_; }

 private:
  int fd_;
  std::string name_;
  size_t chunk_;
  size_t max_line_;
  std::string buf_;
  size_t start_ = 0;  // first byte of the current line
  size_t scan_ = 0;   // bytes before this have been searched for '\n'
  size_t end_ = 0;    // end of valid data
  bool eof_ = false;
  int64_t line_number_ = 0;
  int64_t bytes_read_ = 0;
};

}  // namespace silt::client
