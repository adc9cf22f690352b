/* LD_PRELOAD shim for whole-process disk-failure tests: once the file named by
 * SILT_EIO_TRIGGER exists, fsync(2) and fdatasync(2) of any file whose path contains
 * SILT_EIO_MATCH fail with EIO, as a disk whose writeback failed reports it. Nothing else
 * changes; without both variables the shim does nothing. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int should_fail(int fd) {
  const char* trigger = getenv("SILT_EIO_TRIGGER");
  const char* match = getenv("SILT_EIO_MATCH");
  if (trigger == NULL || match == NULL || access(trigger, F_OK) != 0) return 0;
  char link[64], path[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0) return 0;
  path[n] = '\0';
  return strstr(path, match) != NULL;
}

/* The call to the real function, or EIO. */
static int call(const char* name, int fd) {
  int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, name);
  if (should_fail(fd)) {
    errno = EIO;
    return -1;
  }
  return real(fd);
}

int fsync(int fd) { return call("fsync", fd); }

int fdatasync(int fd) { return call("fdatasync", fd); }
