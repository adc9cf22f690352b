// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of Kafka's RecordBatch v2.
//
// Three implementations, chosen once at start-up: ISA-L's folding kernel (when built with
// libisal), the SSE4.2 `crc32` instruction, and a portable slicing-by-8 table. All three are
// exposed so tests can check each against the same vectors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace silt::crc32c {

// Returns the CRC-32C of data[0,n) appended to bytes whose CRC-32C is `crc` (0 to start).
uint32_t Extend(uint32_t crc, const char* data, size_t n);
inline uint32_t Value(const char* data, size_t n) { return Extend(0, data, n); }
inline uint32_t Value(std::string_view s) { return Extend(0, s.data(), s.size()); }

uint32_t ExtendPortable(uint32_t crc, const char* data, size_t n);
// Only valid when HaveSse42() is true.
uint32_t ExtendSse42(uint32_t crc, const char* data, size_t n);
bool HaveSse42();
// Only valid when HaveIsal() is true.
uint32_t ExtendIsal(uint32_t crc, const char* data, size_t n);
bool HaveIsal();

// "isa-l", "sse4.2" or "portable": what Extend() uses on this machine.
const char* ImplementationName();

}  // namespace silt::crc32c
