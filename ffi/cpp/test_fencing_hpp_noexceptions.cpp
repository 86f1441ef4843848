// fencing.hpp in a codebase built with -fno-exceptions: only fencing::nothrow
// exists there, and every failure comes back as a Result.
#include <fencing.hpp>

#include <cstdio>

#ifdef FENCING_HPP_EXCEPTIONS
#error "built with exceptions: this test must be compiled with -fno-exceptions"
#endif

int main() {
  auto opened = fencing::nothrow::Store::open("memory:");
  if (!opened) return 1;
  fencing::nothrow::Store s = std::move(opened).value();
  auto lease = s.acquire("s", "h", 1000);
  if (!lease || lease.value().token != 1) return 2;
  auto held = s.acquire("s", "other", 1000);
  if (held || held.status() != fencing::Status::LeaseHeld || held.error().holder != "h") return 3;
  if (!s.put("s", "k", "v", fencing::Fence{lease.value().token, std::nullopt})) return 4;
  auto nul = s.get("s", std::string_view("k\0x", 3));
  if (nul || nul.status() != fencing::Status::InvalidArgument) return 5;
  auto got = s.get("s", "k");
  if (!got || !got.value() || got.value()->value.size() != 1) return 6;
  std::printf("fencing.hpp without exceptions: ok\n");
  return 0;
}
