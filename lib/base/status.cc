#include "base/status.h"

#include <cerrno>
#include <cstring>

namespace silt {

const std::string& Status::message() const {
  static const std::string kEmpty;
  return state_ ? state_->msg : kEmpty;
}

const char* Status::CodeName(Code c) {
  switch (c) {
    case Code::kOk: return "OK";
    case Code::kNotFound: return "not found";
    case Code::kCorruption: return "corruption";
    case Code::kTruncated: return "truncated";
    case Code::kInvalidArgument: return "invalid argument";
    case Code::kIOError: return "I/O error";
    case Code::kNoSpace: return "no space";
    case Code::kAlreadyExists: return "already exists";
    case Code::kBusy: return "busy";
    case Code::kUnsupported: return "unsupported";
    case Code::kOutOfRange: return "out of range";
    case Code::kTooLarge: return "too large";
    case Code::kInternal: return "internal error";
    case Code::kNotLeader: return "not leader";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s = CodeName(state_->code);
  s += ": ";
  s += state_->msg;
  return s;
}

Status Status::WithContext(std::string_view prefix) const {
  if (ok()) return Status();
  std::string m(prefix);
  m += ": ";
  m += state_->msg;
  return Status(state_->code, m);
}

Status Status::FromErrno(std::string_view context, int err) {
  std::string m(context);
  m += ": ";
  m += std::strerror(err);
  if (err == ENOSPC || err == EDQUOT) return NoSpace(m);
  if (err == ENOENT) return NotFound(m);
  if (err == EEXIST) return AlreadyExists(m);
  return IOError(m);
}

}  // namespace silt
