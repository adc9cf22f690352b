// The describe APIs that admin tools use: DescribeLogDirs (35), OffsetDelete (47),
// DescribeCluster (60) and DescribeProducers (61). Their structs are generated with the rest
// (generated_messages.h, through messages.h); this header is kept for the callers that name
// only these.
#pragma once

#include "protocol/messages.h"
