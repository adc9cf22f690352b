// Request dispatch: one table of {api_key, handler} rows joined with the protocol's API table
// ({key, name, min, max, first_flexible}), so that the ApiVersions answer and dispatch come from
// the same rows. Adding an API is adding a row here (and its handler).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "broker/request.h"

namespace silt::broker {

struct BrokerContext;

// A handler decodes req->body() for req->api_version, does the work and calls `respond` exactly
// once (now or later, from any thread). A non-OK Status (a body that does not decode) means the
// request was malformed: the connection is closed and `respond` must not have been called.
using HandlerFn = Status (*)(BrokerContext& ctx, std::shared_ptr<Request> req, Respond respond);

struct ApiRow {
  int16_t api_key;
  const char* name;
  int16_t min_version;
  int16_t max_version;
  int16_t first_flexible;  // first version using flexible encodings (INT16_MAX: none)
  HandlerFn handler;
  // The handler may wait (on the metadata quorum, another node, a lock held across disk I/O):
  // it runs on the request-handler pool, never on an io thread (broker/handler_pool.h).
  bool pooled = false;
};

// The rows this broker serves, in api_key order.
const std::vector<ApiRow>& ApiRows();
// The row for `api_key`, or nullptr.
const ApiRow* FindApi(int16_t api_key);

class Dispatcher {
 public:
  explicit Dispatcher(BrokerContext* ctx) : ctx_(ctx) {}

  // Decodes the request header at the start of req->frame into req's header fields and
  // body_offset; *flexible_response_header says whether the response header carries tagged
  // fields. Errors (unknown api key, unsupported version other than ApiVersions', truncated
  // header) mean the connection must be closed; the message says why, for the log line.
  Status ParseHeader(Request* req, bool* flexible_response_header) const;
  // Runs the handler of a request whose header ParseHeader accepted, on the calling thread.
  Status Dispatch(std::shared_ptr<Request> req, Respond respond) const;
  // Whether the handler of `api_key` must run on the request-handler pool (ApiRow::pooled).
  bool RunsOnPool(int16_t api_key) const;

 private:
  BrokerContext* ctx_;
};

}  // namespace silt::broker
