// Java-style properties files, the subset silt reads and writes (meta.properties, topic and
// group files): one "key=value" per line.
//
// Reading: '\n' or "\r\n" line ends; blank lines and lines whose first non-blank character is
// '#' or '!' are comments; the key is what precedes the first '=', without surrounding blanks;
// the value is what follows it, without leading blanks. A line without '=' is skipped. A key
// given twice keeps its last value. No escapes and no continuation lines (silt never writes
// them; Kafka's own files have none).
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "base/status.h"

namespace silt {

using Properties = std::map<std::string, std::string>;

Properties ParseProperties(std::string_view text);

// The text ParseProperties reads back as `props`: an optional "# comment" line (each line of
// `comment` prefixed), then "key=value" lines in key order. InvalidArgument when an entry
// cannot round-trip: an empty key, a key with '=', a line break, or blanks at either end, or
// starting with '#' or '!'; a value with a line break or leading blanks.
Result<std::string> FormatProperties(const Properties& props, std::string_view comment = {});

}  // namespace silt
