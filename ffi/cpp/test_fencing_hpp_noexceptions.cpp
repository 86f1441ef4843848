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
  if (!manual.advance_clock(60001)) return 14;
  auto b = manual.acquire("job", "b", 60000);
  if (!b) return 15;
  auto verdict = lost.finish(true);
  if (verdict || verdict.status() != fencing::Status::LeaseLost) return 16;
  if (verdict.error().current_token != b.value().token || verdict.error().current_holder != "b") return 17;
  if (!verdict.error().work_error_is_cause) return 18;
  if (manual.hold("job", std::string_view("a\0b", 3), 1000).status() != fencing::Status::InvalidArgument) return 19;
  // The rest of the contract, each failure as a Result.
  using fencing::Op;
  const fencing::Fence f{b.value().token, std::nullopt, "b"};
  auto batch = manual.apply("job", f, {Op::put("x", "1"), Op::put("y", "2")});
  if (!batch || batch.value().size() != 2 || batch.value()[1].version != 1) return 20;
  auto mismatch = manual.execute("job", f, Op::remove("x", 7));
  if (mismatch.status() != fencing::Status::VersionMismatch || mismatch.error().actual != 1) return 21;
  if (!manual.remove("job", "x", f) || manual.remove("job", "x", f).status() != fencing::Status::NotFound) return 22;
  auto page = manual.list("job", std::nullopt, 10);
  if (!page || page.value().keys.size() != 2 || page.value().next) return 23;  // k (the guard's) and y
  auto st = manual.status("job");
  if (!st || st.value().entries != 2 || !st.value().lease || st.value().lease->holder != "b") return 24;
  if (manual.acquire_wait("job", "c", 1000, 10).status() != fencing::Status::Timeout) return 25;
  if (manual.retire("job").status() != fencing::Status::LeaseHeld) return 26;
  if (!manual.advance_clock(60001) || !manual.claim("job", fencing::Fence{b.value().token + 5})) return 27;
  if (manual.put("job", "y", "late", f).status() != fencing::Status::StaleToken) return 28;
  auto rejected = manual.rejections();
  if (!rejected || rejected.value().size() != 1 || rejected.value()[0].holder != "b") return 29;
  auto metrics = manual.metrics();
  if (!metrics || metrics.value().stale_rejections != 1 || !manual.metrics_text()) return 30;
  auto events = manual.events(std::nullopt, 5);
  if (!events || events.value().rejections.empty()) return 31;
  auto counter = manual.advance_counter("other", 3);
  if (!counter || counter.value() != 3 || !manual.retire("other").value()) return 32;
  if (!manual.failover() || !fencing::nothrow::migrate("memory:")) return 33;
  if (fencing::nothrow::token_parse("-1").status() != fencing::Status::InvalidArgument) return 34;
  if (fencing::nothrow::token_format(7).value() != "7") return 35;
  auto mapped = fencing::nothrow::error_from_sqlite("SEQUENCE_OUT_OF_ORDER: x");
  if (!mapped || !mapped.value() || mapped.value()->status != fencing::Status::SequenceOutOfOrder) return 36;
  if (manual.claim("job", fencing::Fence{1, std::nullopt, std::string("a\0b", 3)}).status() !=
      fencing::Status::InvalidArgument)
    return 37;
  // Who holds a lease, live: the lease as it is, then each change; nullopt
  // when nothing changed in time.
  auto opened_watch = s.watch("w");
  if (!opened_watch) return 38;
  fencing::nothrow::LeaseWatch watch = std::move(opened_watch).value();
  auto seen = watch.next(60000);
  if (!seen || !seen.value() || seen.value()->lease) return 39;
  auto quiet = watch.next(20);
  if (!quiet || quiet.value()) return 40;
  auto taken = s.acquire("w", "h", 60000);
  if (!taken) return 41;
  seen = watch.next(60000);
  if (!seen || !seen.value() || !seen.value()->lease || seen.value()->lease->token != taken.value().token) return 42;
  if (s.watch(std::string_view("w\0x", 3)).status() != fencing::Status::InvalidArgument) return 43;
  // Fenced objects: the paused worker refused at the object, as Results.
  auto opened_objects = fencing::nothrow::Objects::open("memory:");
  if (!opened_objects) return 44;
  fencing::nothrow::Objects objects = std::move(opened_objects).value();
  auto written = objects.put("r/7.csv", "B", fencing::Fence{2});
  if (!written || written.value().version != 1 || written.value().token != 2) return 45;
  auto late = objects.put("r/7.csv", "A", fencing::Fence{1});
  if (late || late.status() != fencing::Status::StaleToken || late.error().scope != "r/7.csv") return 46;
  auto object = objects.get("r/7.csv");
  if (!object || !object.value() || object.value()->value.size() != 1 || object.value()->token != 2) return 47;
  if (objects.put("r/7.csv", "B", fencing::Fence{2}, 7).status() != fencing::Status::VersionMismatch) return 48;
  if (!objects.remove("r/7.csv", fencing::Fence{2}, 1)) return 49;
  if (objects.remove("r/7.csv", fencing::Fence{2}).status() != fencing::Status::NotFound) return 50;
  if (objects.get(std::string_view("r\0x", 3)).status() != fencing::Status::InvalidArgument) return 51;
  if (fencing::nothrow::Objects::open("nosuch:").status() != fencing::Status::InvalidArgument) return 52;
  std::printf("fencing.hpp without exceptions: ok\n");
  return 0;
}
