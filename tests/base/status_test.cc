#include <doctest/doctest.h>

#include <cerrno>

#include "base/status.h"

using namespace silt;

namespace {
Result<int> Half(int x) {
  if (x % 2) return Status::InvalidArgument("odd");
  return x / 2;
}
Result<int> Quarter(int x) {
  SILT_ASSIGN_OR_RETURN(int h, Half(x));
  SILT_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}
Status CheckEven(int x) {
  SILT_TRY(Half(x).status());
  return Status::OK();
}
}  // namespace

TEST_CASE("an OK status is cheap and carries no message") {
  Status s;
  CHECK(s.ok());
  CHECK(s.ToString() == "OK");
  CHECK(s.message().empty());
}

TEST_CASE("torn tails and corruption are different codes") {
  CHECK(Status::Truncated("x").IsTruncated());
  CHECK_FALSE(Status::Truncated("x").IsCorruption());
  CHECK(Status::Corruption("x").IsCorruption());
}

TEST_CASE("ENOSPC maps to NoSpace and the message names the operation") {
  Status s = Status::FromErrno("write /x", ENOSPC);
  CHECK(s.IsNoSpace());
  CHECK(s.message().find("write /x") == 0);
  CHECK(Status::FromErrno("open /y", ENOENT).IsNotFound());
}

TEST_CASE("SILT_ASSIGN_OR_RETURN and SILT_TRY propagate the first failure") {
  CHECK(Quarter(8).value() == 2);
  CHECK(Quarter(6).status().message() == "odd");
  CHECK(CheckEven(4).ok());
  CHECK_FALSE(CheckEven(3).ok());
  CHECK(Status::IOError("disk").WithContext("segment 0").message() == "segment 0: disk");
}
