// asio types shared by the network code and the few handlers that finish asynchronously.
// Internal to lib/broker: include only from .cc files, never from a public header.
#pragma once

#include <asio.hpp>

#include "broker/request.h"

namespace silt::broker {

using Strand = asio::strand<asio::io_context::executor_type>;

// A connection's serial executor: everything about one connection (reads, dispatch, writes,
// its pending fetches' timers) runs on this strand, so none of it needs a lock.
struct ConnExecutor {
  explicit ConnExecutor(Strand s) : strand(std::move(s)) {}
  Strand strand;
};

}  // namespace silt::broker
