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
  // The lease guard: held, written through, ended with the core's verdict.
  auto m = fencing::nothrow::Store::open("memory:?clock=manual");
  if (!m) return 7;
  fencing::nothrow::Store manual = std::move(m).value();
  auto started = manual.hold("job", "a", 60000);
  if (!started) return 8;
  fencing::nothrow::LeaseGuard guard = std::move(started).value();
  auto r = guard.put("k", "v");
  if (!r || r.value().token != 1 || !guard.check()) return 9;
  if (manual.hold("job", "b", 60000).status() != fencing::Status::LeaseHeld) return 10;
  if (!guard.finish()) return 11;
  if (guard.check().status() != fencing::Status::NullParameter) return 12;  // finished: holds nothing
  // Lost to a takeover: the verdict names the new lease, and the work's error goes with it.
  auto again = manual.hold("job", "a", 60000);
  if (!again) return 13;
  fencing::nothrow::LeaseGuard lost = std::move(again).value();
  if (fencing_advance_clock(manual.handle(), 60001) != FENCING_OK) return 14;
  auto b = manual.acquire("job", "b", 60000);
  if (!b) return 15;
  auto verdict = lost.finish(true);
  if (verdict || verdict.status() != fencing::Status::LeaseLost) return 16;
  if (verdict.error().current_token != b.value().token || verdict.error().current_holder != "b") return 17;
  if (!verdict.error().work_error_is_cause) return 18;
  if (manual.hold("job", std::string_view("a\0b", 3), 1000).status() != fencing::Status::InvalidArgument) return 19;
  std::printf("fencing.hpp without exceptions: ok\n");
  return 0;
}
