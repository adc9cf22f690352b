// A range of bytes in an open file, for sendfile(2) or pread: what a log read hands to the
// network layer without copying. `file` keeps the descriptor open (and a deleted segment
// readable) for as long as the slice is held.
#pragma once

#include <cstdint>
#include <memory>

#include "base/file.h"

namespace silt {

struct FileSlice {
  std::shared_ptr<const File> file;
  int64_t position = 0;
  int64_t length = 0;
};

}  // namespace silt
