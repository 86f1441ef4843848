/* Proves the sanitizer runtime is really linked into the test binaries of a
 * sanitizer build (a build that silently dropped -fsanitize would pass every
 * test while checking nothing). `sanitizer_runtime address|thread`. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "fencing.h"

static int has(const char *symbol) {
  void *p = dlsym(RTLD_DEFAULT, symbol);
  printf("%-32s %s\n", symbol, p ? "linked" : "MISSING");
  return p != NULL;
}

int main(int argc, char **argv) {
  int ok = 1;
  if (argc != 2) {
    fprintf(stderr, "usage: %s address|thread\n", argv[0]);
    return 2;
  }
  if (strcmp(argv[1], "address") == 0) {
#ifndef __SANITIZE_ADDRESS__
    puts("__SANITIZE_ADDRESS__ is not defined");
    ok = 0;
#endif
    ok &= has("__asan_init");
    ok &= has("__ubsan_handle_add_overflow");
    ok &= has("__lsan_do_leak_check");
  } else if (strcmp(argv[1], "thread") == 0) {
#ifndef __SANITIZE_THREAD__
    puts("__SANITIZE_THREAD__ is not defined");
    ok = 0;
#endif
    ok &= has("__tsan_init");
  } else {
    return 2;
  }
  /* and the library is there too */
  ok &= fencing_version() != NULL;
  printf("sanitizer runtime (%s): %d passed, %d failed\n", argv[1], ok, !ok);
  return ok ? 0 : 1;
}
