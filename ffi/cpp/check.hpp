// The checks the C++ face's tests share (ffi/cpp): CHECK counts a failure and
// goes on; EXPECT_THROW returns the exception of class E that the statements
// throw, and stops the test when none or another comes (what follows would
// use it); finish() prints the verdict.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>

static int failures = 0;

#define CHECK(cond)                                                          \
  do {                                                                       \
    if (!(cond)) {                                                           \
      std::fprintf(stderr, "%s:%d: FAILED %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                            \
    }                                                                        \
  } while (0)

template <class E, class F>
static E expect_throw(F &&f, int line) {
  try {
    f();
  } catch (const E &e) {
    return e;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "line %d: wrong exception: %s\n", line, e.what());
    std::exit(1);
  }
  std::fprintf(stderr, "line %d: expected an exception, none came\n", line);
  std::exit(1);
}
#define EXPECT_THROW(E, ...) expect_throw<E>([&] { __VA_ARGS__; }, __LINE__)

/// The test's exit status, with `passed` printed when every check held.
static int finish(const char *passed) {
  if (failures) {
    std::fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  std::printf("%s\n", passed);
  return 0;
}
