// Output tables (see table.h).
#include "client/table.h"

#include <cstdlib>
#include <unistd.h>

#include <algorithm>

namespace silt::client {

std::string Table::Render(bool human) const {
  std::string out;
  if (!human) {
    for (const auto& row : rows_) {
      for (size_t i = 0; i < row.size(); ++i) {
        if (i) out.push_back('\t');
        out += row[i];
      }
      out.push_back('\n');
    }
    return out;
  }
  std::vector<size_t> width(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], row[i].size());
  };
  measure(header_);
  for (const auto& row : rows_) measure(row);
  auto emit = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size() && i < width.size()) line.append(width[i] - row[i].size() + 2, ' ');
    }
    out += line;
    out.push_back('\n');
  };
  emit(header_);
  for (const auto& row : rows_) emit(row);
  return out;
}

std::string HumanBytes(int64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[u]);
  return buf;
}

bool IsTerminal(int fd) { return ::isatty(fd) == 1; }

int64_t ProgressDelayMs() {
  static const int64_t delay = [] {
    const char* v = std::getenv("SILT_PROGRESS_DELAY_MS");
    if (v == nullptr || *v == '\0') return int64_t{1000};
    char* end = nullptr;
    long long n = std::strtoll(v, &end, 10);
    return (*end == '\0' && n >= 0) ? static_cast<int64_t>(n) : int64_t{1000};
  }();
  return delay;
}

}  // namespace silt::client
