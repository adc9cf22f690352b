// What `silt produce` writes records through, in either mode: LocalProducer (local_producer.h,
// straight into a data directory) and NetProducer (net_producer.h, Produce requests to a
// cluster). Both batch per partition and place records with Kafka's partitioner.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace silt::client {

using HeaderViews = std::vector<std::pair<std::string_view, std::optional<std::string_view>>>;

class Producer {
 public:
  virtual ~Producer() = default;
  // Queues one record (timestamp -1: now), writing or sending batches as they fill. TooLarge
  // when the record alone exceeds max_message_bytes(); nothing is queued then.
  virtual Status Send(std::optional<std::string_view> key, std::optional<std::string_view> value,
                      const HeaderViews& headers, int64_t timestamp = -1) = 0;
  // The input paused: write (or send) what is waiting now, without waiting for answers.
  virtual Status SendPending() = 0;
  // Everything queued is durable: fsynced in a data dir; acknowledged (or failed, see
  // records_failed) by the cluster. An error means delivery as a whole stopped.
  virtual Status Flush() = 0;

  // The largest record batch the destination takes (max.message.bytes), as far as known.
  virtual int64_t max_message_bytes() const = 0;
  // Records written to the log (data dir) or acknowledged (cluster) so far.
  virtual int64_t records_delivered() const = 0;
  // Records given up on after retries (cluster only), and the first reason.
  virtual int64_t records_failed() const { return 0; }
  virtual std::string first_error() const { return std::string(); }
};

}  // namespace silt::client
