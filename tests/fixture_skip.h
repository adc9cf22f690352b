// Visible skips for doctest cases whose inputs under ../shared/fixtures are absent.
//
// A case that cannot run its checks calls SILT_SKIP_MISSING_FIXTURE(message) and returns. The
// message is printed (doctest's MESSAGE, shown in every run), and where SILT_REQUIRE_FIXTURES=1
// is set in the environment (as .ci/run does) the case fails instead, so a missing fixture can
// never pass silently in CI.
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>

namespace silt::testing {

inline bool FixturesRequired() {
  const char* v = std::getenv("SILT_REQUIRE_FIXTURES");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

}  // namespace silt::testing

#define SILT_SKIP_MISSING_FIXTURE(message)                                            \
  do {                                                                                \
    if (::silt::testing::FixturesRequired()) {                                        \
      FAIL_CHECK("SILT_REQUIRE_FIXTURES=1 but a fixture is missing: " << message);    \
    } else {                                                                          \
      MESSAGE("SKIPPED: " << message);                                                \
    }                                                                                 \
  } while (0)
