// A C++17 translation unit: the header (included twice) declares everything
// extern "C", and the calls link and work from C++.
#include "fencing.h"
#include "fencing.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

static_assert(FENCING_OK == 0, "FENCING_OK is 0");

namespace {

struct StoreFree {
  void operator()(fencing_store *s) const { fencing_store_free(s); }
};
using Store = std::unique_ptr<fencing_store, StoreFree>;

int failures = 0;
int passes = 0;

void check(bool ok, const char *what) {
  if (ok) {
    passes++;
  } else {
    failures++;
    std::fprintf(stderr, "check failed: %s\n", what);
  }
}

}  // namespace

int main() {
  check(std::string(fencing_version()) == FENCING_VERSION, "version");
  fencing_store *raw = nullptr;
  check(fencing_store_open("memory:?clock=manual", &raw) == FENCING_OK, "open");
  Store store(raw);

  fencing_lease a{};
  check(fencing_acquire(store.get(), "report", "worker-a", 1000, &a) == FENCING_OK, "acquire A");
  check(fencing_advance_clock(store.get(), 1001) == FENCING_OK, "advance clock");
  fencing_lease b{};
  check(fencing_acquire(store.get(), "report", "worker-b", 1000, &b) == FENCING_OK, "acquire B");

  fencing_fence fb{};
  fb.token = b.token;
  fencing_receipt r{};
  const std::string body = "B's report";
  check(fencing_put(store.get(), "report", "body", reinterpret_cast<const uint8_t *>(body.data()),
                    body.size(), &fb, &r) == FENCING_OK,
        "B writes");

  fencing_fence fa{};
  fa.token = a.token;
  fencing_status st = fencing_put(store.get(), "report", "body",
                                  reinterpret_cast<const uint8_t *>("A"), 1, &fa, &r);
  check(st == FENCING_STALE_TOKEN, "A is stale");
  fencing_error e{};
  check(fencing_last_error(&e) == FENCING_OK && e.presented == a.token && e.current == b.token,
        "details");
  check(std::strcmp(fencing_status_name(st), "STALE_TOKEN") == 0, "status name");

  char text[FENCING_TOKEN_TEXT_CAPACITY];
  size_t n = 0;
  check(fencing_token_format(FENCING_MAX_TOKEN, text, sizeof text, &n) == FENCING_OK &&
            std::string(text, n) == "9223372036854775807",
        "token text");
  std::printf("c++17: %d passed, %d failed\n", passes, failures);
  return failures == 0 ? 0 : 1;
}
