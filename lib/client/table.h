// Tables for command output: aligned columns with a header on a terminal, tab-separated rows
// without a header in a pipe (stable for cut/awk), and human-readable byte sizes.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace silt::client {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  bool empty() const { return rows_.empty(); }
  // Aligned with the header when `human`, else tab-separated rows only.
  std::string Render(bool human) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// "1.5 MiB"; plain bytes below 1 KiB ("512 B").
std::string HumanBytes(int64_t bytes);

// True if `fd` is a terminal.
bool IsTerminal(int fd);

// How long work runs before a progress line appears on a terminal: 1000 ms, or
// $SILT_PROGRESS_DELAY_MS (0 shows it at once; tests use that).
int64_t ProgressDelayMs();

}  // namespace silt::client
