/* A test's SQLite store, deleted whole: shared by the C tests. */
#ifndef FENCING_TEST_STORE_FILES_H
#define FENCING_TEST_STORE_FILES_H

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Deletes the SQLite store at `path`: the file, its -wal, -shm and -journal,
 * and its sidecar (DIR/.NAME-fencing; docs/sqlite.md, "The file is the
 * store"). All of it: the next store made at that path is then a new one,
 * not a file made anew under an old store's sidecar (which takes the
 * failover step), and the test's directory can be removed. */
static inline void remove_store(const char *path) {
  static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
  char buf[4200];
  for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes; i++) {
    snprintf(buf, sizeof buf, "%s%s", path, suffixes[i]);
    unlink(buf);
  }
  const char *name = path;
  for (const char *c = path; *c != '\0'; c++) {
    if (*c == '/' || *c == '\\') {
      name = c + 1;
    }
  }
  snprintf(buf, sizeof buf, "%.*s.%s-fencing", (int)(name - path), path, name);
  unlink(buf);
}

#endif
