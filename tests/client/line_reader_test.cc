#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "client/line_reader.h"

using namespace silt;
using namespace silt::client;

namespace {

// Returns a pipe's read end after writing `data` and closing the write end.
int PipeWith(const std::string& data, bool close_writer = true, int* writer = nullptr) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  REQUIRE(::write(fds[1], data.data(), data.size()) == static_cast<ssize_t>(data.size()));
  if (close_writer) ::close(fds[1]);
  else *writer = fds[1];
  return fds[0];
}

std::vector<std::string> ReadAll(LineReader& r) {
  std::vector<std::string> lines;
  for (;;) {
    std::string_view line;
    auto ev = r.Next(&line);
    REQUIRE(ev.ok());
    if (*ev == LineReader::Event::kEof) break;
    lines.emplace_back(line);
  }
  return lines;
}

}  // namespace

TEST_CASE("lines are split at newlines across small chunks, a last unterminated line included") {
  int fd = PipeWith("one\n\ntwo three\nlast");
  LineReader r(fd, "input", 3, 64);
  auto lines = ReadAll(r);
  CHECK(lines == std::vector<std::string>{"one", "", "two three", "last"});
  CHECK(r.line_number() == 4);
  CHECK(r.bytes_read() == 19);
  ::close(fd);
}

TEST_CASE("an over-long line is reported with its number before the rest of it is read") {
  std::string data = "ok\nfine\n" + std::string(100, 'x') + "\nafter\n";
  int fd = PipeWith(data);
  LineReader r(fd, "big.txt", 8, 16);
  std::string_view line;
  REQUIRE(*r.Next(&line) == LineReader::Event::kLine);
  REQUIRE(*r.Next(&line) == LineReader::Event::kLine);
  auto ev = r.Next(&line);
  REQUIRE_FALSE(ev.ok());
  CHECK(ev.status().IsTooLarge());
  CHECK(ev.status().message().find("big.txt: line 3") != std::string::npos);
  CHECK(r.bytes_read() < static_cast<int64_t>(data.size()));
  ::close(fd);
}

TEST_CASE("a line of exactly the limit is accepted") {
  int fd = PipeWith(std::string(16, 'y') + "\n");
  LineReader r(fd, "in", 4, 16);
  auto lines = ReadAll(r);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].size() == 16);
  ::close(fd);
}

TEST_CASE("a pause in a pipe is reported as idle, and reading resumes after it") {
  int writer = -1;
  int fd = PipeWith("first\npart", false, &writer);
  LineReader r(fd, "pipe", 1024, 1024);
  std::string_view line;
  REQUIRE(*r.Next(&line, 10) == LineReader::Event::kLine);
  CHECK(line == "first");
  CHECK(*r.Next(&line, 10) == LineReader::Event::kIdle);
  REQUIRE(::write(writer, "ial\n", 4) == 4);
  ::close(writer);
  REQUIRE(*r.Next(&line, 10) == LineReader::Event::kLine);
  CHECK(line == "partial");
  CHECK(*r.Next(&line, 10) == LineReader::Event::kEof);
  ::close(fd);
}
