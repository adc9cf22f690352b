// libFuzzer target: one input line of `silt produce --format json` (client::ParseJsonRecord).
// A line that parses is printed back in the JSON form `silt consume` writes and parsed again;
// the second parse must give the same record, since printing then reading copies every byte.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "client/record_format.h"
#include "format/record_batch.h"

using namespace silt;
using namespace silt::client;

namespace {

format::RecordView AsView(const InputRecord& in) {
  format::RecordView v;
  v.timestamp = in.timestamp;
  v.key_null = !in.key.has_value();
  if (in.key) v.key = *in.key;
  v.value_null = !in.value.has_value();
  if (in.value) v.value = *in.value;
  for (const auto& [k, val] : in.headers) {
    v.headers.emplace_back(k, val ? std::optional<std::string_view>(*val) : std::nullopt);
  }
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view line(reinterpret_cast<const char*>(data), size);
  InputRecord first;
  if (!ParseJsonRecord(line, &first).ok()) return 0;

  static const RecordFormatter json = [] {
    auto f = RecordFormatter::Parse("json");
    if (!f.ok()) __builtin_trap();
    return *f;
  }();
  std::string printed;
  json.Append("t", 0, AsView(first), &printed);
  if (!printed.empty() && printed.back() == '\n') printed.pop_back();

  InputRecord second;
  if (!ParseJsonRecord(printed, &second).ok()) __builtin_trap();
  if (second.key != first.key || second.value != first.value ||
      second.headers != first.headers || second.timestamp != first.timestamp) {
    __builtin_trap();
  }
  return 0;
}
