// Helpers shared by the format tests: fixture loading and hand-made byte strings.
#pragma once

#include <doctest/doctest.h>

#include <optional>
#include <string>

#include "base/file.h"
#include "fixture_skip.h"

namespace silt::format::testing {

// The shared fixtures folder, or nullopt (after a visible MESSAGE) when it is absent.
inline std::optional<std::string> FixturesDir() {
  std::string dir = SILT_FIXTURES_DIR;
  if (!IsDirectory(dir)) {
    SILT_SKIP_MISSING_FIXTURE("fixtures folder " << dir
                                                  << " is absent; fixture checks did not run");
    return std::nullopt;
  }
  return dir;
}

// Reads <fixtures>/<rel>; fails the test when the fixtures folder exists but the file does not.
inline std::optional<std::string> ReadFixture(const std::string& rel) {
  auto dir = FixturesDir();
  if (!dir) return std::nullopt;
  auto r = ReadFile(*dir + "/" + rel);
  REQUIRE_MESSAGE(r.ok(), rel << ": " << r.status().ToString());
  return std::move(r).value();
}

inline std::string Hex(std::string_view b) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (unsigned char c : b) {
    s.push_back(d[c >> 4]);
    s.push_back(d[c & 15]);
  }
  return s;
}

inline std::string Unhex(std::string_view h) {
  std::string out;
  int hi = -1;
  for (char c : h) {
    int v;
    if (c >= '0' && c <= '9') v = c - '0';
    else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
    else continue;  // whitespace and newlines in dumps
    if (hi < 0) {
      hi = v;
    } else {
      out.push_back(static_cast<char>(hi << 4 | v));
      hi = -1;
    }
  }
  return out;
}

}  // namespace silt::format::testing
