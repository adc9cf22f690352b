// Buffered line splitting (see line_reader.h).
#include "client/line_reader.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace silt::client {

LineReader::LineReader(int fd, std::string name, size_t chunk_bytes, size_t max_line_bytes)
    : fd_(fd), name_(std::move(name)), chunk_(chunk_bytes), max_line_(max_line_bytes) {
  // Room for one whole line of the maximum length (plus its newline) and one chunk.
  buf_.resize(max_line_ + 1 + chunk_);
}

Result<LineReader::Event> LineReader::Next(std::string_view* line, int timeout_ms) {
  for (;;) {
    if (scan_ < end_) {
      const void* nl = std::memchr(buf_.data() + scan_, '\n', end_ - scan_);
      if (nl) {
        size_t pos = static_cast<const char*>(nl) - buf_.data();
        ++line_number_;
        if (pos - start_ > max_line_)
          return Status::TooLarge(name_ + ": line " + std::to_string(line_number_) + " is " +
                                  std::to_string(pos - start_) + " bytes, over the limit of " +
                                  std::to_string(max_line_));
        *line = std::string_view(buf_.data() + start_, pos - start_);
        start_ = scan_ = pos + 1;
        return Event::kLine;
      }
      scan_ = end_;
    }
    if (end_ - start_ > max_line_) {
      ++line_number_;
      return Status::TooLarge(name_ + ": line " + std::to_string(line_number_) +
                              " is longer than the limit of " + std::to_string(max_line_) +
                              " bytes");
    }
    if (eof_) {
      if (start_ < end_) {
        ++line_number_;
        *line = std::string_view(buf_.data() + start_, end_ - start_);
        start_ = scan_ = end_;
        return Event::kLine;
      }
      return Event::kEof;
    }
    // Make room: move the partial line to the front.
    if (start_ > 0) {
      std::memmove(buf_.data(), buf_.data() + start_, end_ - start_);
      end_ -= start_;
      scan_ -= start_;
      start_ = 0;
    }
    if (timeout_ms >= 0) {
      pollfd p{fd_, POLLIN, 0};
      int r = ::poll(&p, 1, timeout_ms);
      if (r < 0 && errno != EINTR) return Status::FromErrno("poll " + name_, errno);
      if (r <= 0) return Event::kIdle;
    }
    size_t room = buf_.size() - end_;
    ssize_t n = ::read(fd_, buf_.data() + end_, room);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return Event::kIdle;
      return Status::FromErrno("read " + name_, errno);
    }
    if (n == 0) {
      eof_ = true;
    } else {
      end_ += static_cast<size_t>(n);
      bytes_read_ += n;
    }
  }
}

}  // namespace silt::client
