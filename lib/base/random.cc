// Random identifiers (see random.h).
#include "base/random.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <random>

namespace silt {

void RandomBytes(void* out, size_t n) {
  auto* p = static_cast<unsigned char*>(out);
  while (n > 0) {
    ssize_t got = ::getrandom(p, n, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      // No getrandom (old kernel, seccomp): the C++ library's source, which reads the same pool.
      std::random_device rd;
      for (; n > 0; --n) *p++ = static_cast<unsigned char>(rd());
      return;
    }
    p += got;
    n -= static_cast<size_t>(got);
  }
}

Uuid RandomUuid() {
  while (true) {
    Uuid::Bytes b;
    RandomBytes(b.data(), b.size());
    b[6] = static_cast<uint8_t>((b[6] & 0x0f) | 0x40);  // version 4
    b[8] = static_cast<uint8_t>((b[8] & 0x3f) | 0x80);  // variant 10xx
    Uuid u(b);
    if (!u.is_reserved() && u.ToString()[0] != '-') return u;
  }
}

}  // namespace silt
