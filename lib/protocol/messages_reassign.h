// Partition reassignment and leader election: ElectLeaders (43, KIP-460),
// AlterPartitionReassignments (45) and ListPartitionReassignments (46, KIP-455). The structs are
// generated with the rest (generated_messages.h, through messages.h).
#pragma once

#include <cstdint>

#include "protocol/messages.h"

namespace silt::protocol {

// ElectionType: 0 elects the preferred replica, 1 the first live replica when no in-sync one is
// left (an unclean election).
inline constexpr int8_t kElectPreferred = 0;
inline constexpr int8_t kElectUnclean = 1;

}  // namespace silt::protocol
