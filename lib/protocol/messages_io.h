// Internal to lib/protocol: the glue that turns one templated field walk per message into its
// Encode and Decode. Each message has `template <class IO, class M> void Io<Name>(IO&, M&,
// int16_t version)` that names every field once, in wire order, with its version guard; IO is
// Encoder (M const) or Decoder. Not a public header.
#pragma once

#include <string>

#include "protocol/api_table.h"
#include "protocol/messages.h"
#include "protocol/wire.h"

#define SILT_DEFINE_CODEC(Name)                                                            \
  void Name::Encode(ByteWriter& w, int16_t version) const {                                \
    Encoder io(w, IsFlexibleVersion(static_cast<int16_t>(kApiKey), version));             \
    Io##Name(io, *this, version);                                                          \
  }                                                                                        \
  Status Name::Decode(ByteReader& r, int16_t version) {                                    \
    *this = Name{};                                                                        \
    Decoder io(r, IsFlexibleVersion(static_cast<int16_t>(kApiKey), version));             \
    Io##Name(io, *this, version);                                                          \
    if (io.ok()) return Status::OK();                                                      \
    return io.status().WithContext(std::string(#Name " v") + std::to_string(version));     \
  }
