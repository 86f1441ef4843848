// The C++17 face of fencing: header-only, over the C ABI of fencing.h.
//
//   fencing::Store store = fencing::Store::open("sqlite:app.db");
//   fencing::Lease lease = store.acquire("report", "worker-a", 30000);
//   store.put("report", "body", bytes, fencing::Fence{lease.token});
//     // a newer holder's token was accepted since: throws StaleTokenError
//
// Every rule and verdict is the core's: this header only translates. A
// failed call throws the exception class of its status code (StaleTokenError,
// LeaseLostError, ...), each carrying the details as typed members. Built
// without exceptions (-fno-exceptions), or by choice, fencing::nothrow::Store
// has the same calls returning fencing::Result<T> (a value or an Error).
//
// Tokens are std::uint64_t; strings are taken as std::string_view (copied to
// a NUL-terminated string for the C call; one with a NUL inside is
// INVALID_ARGUMENT, since C would silently cut it there). Values are bytes.
//
// A lease held through work: store.hold(scope, holder, ttl_ms) returns a
// fencing::LeaseGuard that the C keep-alive (fencing_hold) renews in the
// background. Write through it (put, remove, get, claim: the lease's own
// scope and token), call check() before each protected step, and end it with
// finish(): the core's one verdict (docs/semantics.md, "Ending a held
// lease"): released, or the loss (LeaseLostError naming the current lease,
// ClosedError, BackendError), which wins over the work's error and carries
// it as cause(). A guard not finished is released by its destructor, which
// never throws. A loss callback, if given, runs on the keep-alive thread.
//
// Who holds a lease, live: store.watch(scope) returns a fencing::LeaseWatch
// (the C fencing_watch) whose next(timeout_ms) gives the lease as it is, then
// the lease after each change, or nullopt when nothing changed in time.
//
// Fenced objects (docs/objects.md): fencing::Objects::open("file:///srv/out")
// (or memory:, s3://BUCKET[/PREFIX], az://CONTAINER[/PREFIX]) has put, remove
// and get as the store
// has them, with an object path in place of the scope and key; each path
// keeps its own fence.
#ifndef FENCING_HPP
#define FENCING_HPP

#include "fencing.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#define FENCING_HPP_EXCEPTIONS 1
#include <exception>
#include <stdexcept>
#endif

namespace fencing {

/// The C ABI's status codes (fencing_status), with the same numbers.
enum class Status : std::uint32_t {
  Ok = FENCING_OK,
  StaleToken = FENCING_STALE_TOKEN,
  SequenceOutOfOrder = FENCING_SEQUENCE_OUT_OF_ORDER,
  VersionMismatch = FENCING_VERSION_MISMATCH,
  NotFound = FENCING_NOT_FOUND,
  LeaseHeld = FENCING_LEASE_HELD,
  LeaseLost = FENCING_LEASE_LOST,
  TokenExhausted = FENCING_TOKEN_EXHAUSTED,
  InvalidArgument = FENCING_INVALID_ARGUMENT,
  Timeout = FENCING_TIMEOUT,
  Backend = FENCING_BACKEND,
  Closed = FENCING_CLOSED,
  NullParameter = FENCING_NULL_PARAMETER,
  InvalidUtf8 = FENCING_INVALID_UTF8,
  BufferTooSmall = FENCING_BUFFER_TOO_SMALL,
  Panic = FENCING_PANIC,
};

/// The version of the library linked at run time ("0.1.0"); FENCING_VERSION
/// is the header's.
inline std::string_view version() noexcept { return fencing_version(); }

/// The stable name of a status ("STALE_TOKEN", ...), from the library.
inline std::string_view status_name(Status s) noexcept {
  const char *name = fencing_status_name(static_cast<std::uint32_t>(s));
  return name ? std::string_view(name) : std::string_view();
}

/// A failure: the status and every detail the C ABI reports for it (see
/// fencing_error in fencing.h for which fields each status fills; the others
/// are empty or 0). Owns its strings.
struct Error {
  Status status = Status::Ok;
  std::string message;
  std::string scope;
  std::string key;
  std::optional<std::string> holder;  // LEASE_LOST: nullopt when no holder is known
  std::uint64_t presented = 0;
  std::uint64_t current = 0;
  std::uint64_t last = 0;
  std::uint64_t expected = 0;
  std::uint64_t actual = 0;
  std::uint64_t token = 0;
  std::uint64_t remaining_ms = 0;
  // LEASE_LOST: the lease current now (0 and nullopt: none).
  std::uint64_t current_token = 0;
  std::optional<std::string> current_holder;
  // BACKEND: how the backend failed ("busy", "unreachable", "refused",
  // "outcome_unknown", ...: docs/semantics.md, "Errors"); empty otherwise.
  std::string kind;
  // Only from a lease guard's finish: the work failed, and its error goes
  // with this loss as its cause (docs/semantics.md, "Ending a held lease").
  bool work_error_is_cause = false;
};

namespace detail {

inline std::string copy(const char *s) { return s ? std::string(s) : std::string(); }

/// The calling thread's last failure (the C ABI keeps it per thread).
inline Error last_error(fencing_status status) {
  fencing_error e{};
  Error out;
  out.status = static_cast<Status>(status);
  if (fencing_last_error(&e) != FENCING_OK || e.status != status) {
    out.message = std::string(status_name(out.status));
    return out;
  }
  out.message = copy(e.message);
  out.scope = copy(e.scope);
  out.key = copy(e.key);
  if (e.holder) out.holder = std::string(e.holder);
  out.presented = e.presented;
  out.current = e.current;
  out.last = e.last;
  out.expected = e.expected;
  out.actual = e.actual;
  out.token = e.token;
  out.remaining_ms = e.remaining_ms;
  out.current_token = e.current_token;
  if (e.current_holder) out.current_holder = std::string(e.current_holder);
  out.kind = copy(e.kind);
  return out;
}

inline Error invalid_argument(std::string message) {
  Error e;
  e.status = Status::InvalidArgument;
  e.message = std::move(message);
  return e;
}

/// A NUL-terminated copy of `s`, or nullopt when `s` holds a NUL (C would
/// read a shorter string than the caller passed).
inline std::optional<std::string> c_string(std::string_view s) {
  if (s.find('\0') != std::string_view::npos) return std::nullopt;
  return std::string(s);
}

}  // namespace detail

/// A value or the Error that prevented it: what fencing::nothrow returns.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}          // NOLINT: implicit on purpose
  Result(Error error) : v_(std::move(error)) {}      // NOLINT
  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }
  /// The value; only when ok().
  T &value() & { return std::get<0>(v_); }
  const T &value() const & { return std::get<0>(v_); }
  T &&value() && { return std::get<0>(std::move(v_)); }
  /// The failure; only when !ok().
  const Error &error() const & { return std::get<1>(v_); }
  Status status() const noexcept { return ok() ? Status::Ok : std::get<1>(v_).status; }

 private:
  std::variant<T, Error> v_;
};

/// A lease as acquire/renew report it.
struct Lease {
  std::uint64_t token = 0;
  std::uint64_t ttl_ms = 0;
  std::uint64_t remaining_ms = 0;
  std::uint64_t expires_at_ms = 0;
  std::string holder;
  std::string scope;
};

/// What a fenced operation presents: the token, optionally a seq that must be
/// after the last one accepted for this token, and optionally who presents
/// it (recorded with rejections, never trusted). A constructor rather than
/// an aggregate, so that Fence{token} and Fence{token, seq} stay warning-free
/// under -Wextra (missing-field-initializers).
struct Fence {
  std::uint64_t token = 0;
  std::optional<std::uint64_t> seq;
  std::optional<std::string> holder;

  Fence() = default;
  explicit Fence(std::uint64_t token_, std::optional<std::uint64_t> seq_ = std::nullopt,
                 std::optional<std::string> holder_ = std::nullopt)
      : token(token_), seq(seq_), holder(std::move(holder_)) {}
};

struct Receipt {
  std::uint64_t version = 0;
  std::uint64_t token = 0;
};

struct Entry {
  std::vector<std::uint8_t> value;
  std::uint64_t version = 0;
  std::uint64_t token = 0;
};

/// A fenced object as read (Objects::get): its bytes, and the version and
/// token of the write that stored them. Versions grow with every write of
/// the path, deletes included, and never restart.
struct Object {
  std::vector<std::uint8_t> value;
  std::uint64_t version = 0;
  std::uint64_t token = 0;
};

/// One write of a batch (Store::apply) or a conditional write
/// (Store::execute): Op::put(key, value) or Op::remove(key), optionally only
/// when the entry is at `expected_version` (0: it must not exist).
struct Op {
  enum class Kind : std::uint32_t { Put = FENCING_OP_PUT, Delete = FENCING_OP_DELETE };
  Kind kind = Kind::Put;
  std::string key;
  std::string value;  // bytes; Put only
  std::optional<std::uint64_t> expected_version;

  static Op put(std::string key, std::string value, std::optional<std::uint64_t> expected_version = std::nullopt) {
    return Op{Kind::Put, std::move(key), std::move(value), expected_version};
  }
  static Op remove(std::string key, std::optional<std::uint64_t> expected_version = std::nullopt) {
    return Op{Kind::Delete, std::move(key), std::string(), expected_version};
  }
};

/// Everything known about one scope (Store::status).
struct ScopeStatus {
  std::uint64_t counter = 0;  // the greatest token issued (0: none)
  std::uint64_t fence = 0;    // the greatest token accepted (0: none)
  std::uint64_t entries = 0;
  std::optional<Lease> lease;  // the live lease, if any
};

/// One page of a scope's keys (Store::list), in byte order.
struct Page {
  std::vector<std::string> keys;
  std::optional<std::string> next;  // `after` for the next page; nullopt on the last
};

/// The handle's counters (Store::metrics): plain numbers, the C struct as is.
using Metrics = fencing_metrics;

/// One rejected fenced operation (StaleToken or SequenceOutOfOrder).
struct Rejection {
  Status code = Status::Ok;
  std::string scope;
  std::optional<std::string> key;     // when the operation named exactly one
  std::optional<std::string> holder;  // when the fence named one
  std::uint64_t presented = 0;
  std::uint64_t current = 0;  // the scope's fence at the time
  std::optional<std::uint64_t> seq;
  std::uint64_t at_ms = 0;  // milliseconds since the Unix epoch
};

/// A rejection as the store recorded it (Store::events).
struct RecordedRejection : Rejection {
  std::uint64_t id = 0;          // increases with every row the store recorded
  std::uint64_t suppressed = 0;  // rejections counted here instead of recorded
};

/// The last accepted write of a scope (Store::events).
struct LastWrite {
  std::string scope;
  std::optional<std::string> holder;
  std::uint64_t token = 0;
  std::uint64_t at_ms = 0;
};

/// The store's record, shared by every process using the store, newest first.
struct Events {
  std::vector<RecordedRejection> rejections;
  std::vector<LastWrite> last_writes;
};

/// A scope's lease as a watch saw it (Store::watch).
struct Holding {
  std::string scope;
  std::optional<Lease> lease;  // nullopt while nobody holds it
};

/// Called once, on the lease guard's own keep-alive thread (not the thread
/// doing the work), when the lease is lost: the status says why (LeaseLost,
/// Closed or Backend). It must return promptly, must not throw (it runs
/// under a noexcept trampoline: a throw ends the process), and must not
/// finish or destroy the guard: set a flag, and let the work's thread call
/// check() or finish(). Never called once finish() or the destructor returned.
using LossCallback = std::function<void(Status)>;

namespace detail {

inline void on_lost_trampoline(fencing_status status, void *user_data) noexcept {
  (*static_cast<LossCallback *>(user_data))(static_cast<Status>(status));
}

inline Entry entry_of(const fencing_entry *e) {
  Entry entry;
  const std::uint8_t *v = fencing_entry_value(e);
  std::size_t n = fencing_entry_value_len(e);
  if (n > 0) entry.value.assign(v, v + n);
  entry.version = fencing_entry_version(e);
  entry.token = fencing_entry_token(e);
  return entry;
}

inline Object object_of(const fencing_object *o) {
  Object object;
  const std::uint8_t *v = fencing_object_value(o);
  std::size_t n = fencing_object_value_len(o);
  if (n > 0) object.value.assign(v, v + n);
  object.version = fencing_object_version(o);
  object.token = fencing_object_token(o);
  return object;
}

/// A C object the caller owns, freed by its `*_free` function.
template <class T, void (*Free)(T *)>
struct Freer {
  void operator()(T *p) const noexcept { Free(p); }
};
template <class T, void (*Free)(T *)>
using Owned = std::unique_ptr<T, Freer<T, Free>>;

inline std::optional<std::string> copy_optional(const char *s) {
  return s ? std::optional<std::string>(s) : std::nullopt;
}

inline bool has_nul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

inline Lease lease_of(const fencing_lease &l) {
  return Lease{l.token, l.ttl_ms, l.remaining_ms, l.expires_at_ms, l.holder, l.scope};
}

/// Copies `text` and a NUL into a C struct's fixed array; false when it does
/// not fit or has a NUL inside.
template <std::size_t N>
bool fill_array(char (&out)[N], std::string_view text) {
  if (text.size() >= N || text.find('\0') != std::string_view::npos) return false;
  text.copy(out, text.size());
  out[text.size()] = '\0';
  return true;
}

/// A C rejection (listed or recorded: the same fields) as a Rejection.
template <class C>
void fill_rejection(Rejection &r, const C &c) {
  r.code = static_cast<Status>(c.code);
  r.scope = copy(c.scope);
  r.key = copy_optional(c.key);
  r.holder = copy_optional(c.holder);
  r.presented = c.presented;
  r.current = c.current;
  if (c.has_seq) r.seq = c.seq;
  r.at_ms = c.at_ms;
}

/// A C recorded rejection (a snapshot's or a watch's) as a RecordedRejection.
inline RecordedRejection recorded_of(const fencing_recorded_rejection &c) {
  RecordedRejection r;
  fill_rejection(r, c);
  r.id = c.id;
  r.suppressed = c.suppressed;
  return r;
}

/// The C fence for `f`, pointing into its holder (refuse one with a NUL first).
inline fencing_fence c_fence(const Fence &f) noexcept {
  fencing_fence c{};
  c.token = f.token;
  c.seq = f.seq.value_or(0);
  c.has_seq = f.seq.has_value();
  c.holder = f.holder ? f.holder->c_str() : nullptr;
  return c;
}

/// The C ops for `ops`, pointing into them; nullopt when a key holds a NUL.
inline std::optional<std::vector<fencing_op>> c_ops(const Op *ops, std::size_t n) {
  std::vector<fencing_op> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Op &op = ops[i];
    if (has_nul(op.key)) return std::nullopt;
    out[i].kind = static_cast<std::uint32_t>(op.kind);
    out[i].key = op.key.c_str();
    if (op.kind == Op::Kind::Put) {
      out[i].value = reinterpret_cast<const std::uint8_t *>(op.value.data());
      out[i].value_len = op.value.size();
    }
    out[i].has_expected_version = op.expected_version.has_value();
    out[i].expected_version = op.expected_version.value_or(0);
  }
  return out;
}

inline std::vector<Receipt> receipts_of(const std::vector<fencing_receipt> &rs) {
  std::vector<Receipt> out;
  for (const fencing_receipt &r : rs) out.push_back(Receipt{r.version, r.token});
  return out;
}

}  // namespace detail

/// A flag another thread fires to end a wait (`fencing_cancel`): an
/// `acquire_wait` given it ends within about 20 ms with Timeout and takes no
/// lease. It stays fired; one flag may serve many waits.
class Cancel {
 public:
  Cancel() : c_(fencing_cancel_new()) {}
  ~Cancel() { fencing_cancel_free(c_); }
  Cancel(const Cancel &) = delete;
  Cancel &operator=(const Cancel &) = delete;

  /// From any thread, any number of times.
  void fire() const noexcept { fencing_cancel_fire(c_); }
  const fencing_cancel *handle() const noexcept { return c_; }

 private:
  fencing_cancel *c_;  // nullptr only when memory ran out: waits then fail with NullParameter
};

namespace nothrow {

/// A lease held alive in the background by the core's keep-alive (the C
/// fencing_hold), from Store::hold until finish(). Writes through it present
/// the lease's own scope and token. finish() gives the core's one verdict
/// (docs/semantics.md, "Ending a held lease"); the destructor of a guard not
/// finished releases the lease quietly. Movable, not copyable; a moved-from
/// or finished guard holds nothing, and every call on it is NullParameter.
/// Any thread may call check() and lease() at once (as fencing_hold_check).
class LeaseGuard {
 public:
  static Result<LeaseGuard> start(const fencing_store *store, std::string_view scope, std::string_view holder,
                                  std::uint64_t ttl_ms, std::uint64_t timeout_ms = 0,
                                  LossCallback on_lost = nullptr) {
    auto s = detail::c_string(scope);
    auto h = detail::c_string(holder);
    if (!s) return detail::invalid_argument("scope contains a NUL byte");
    if (!h) return detail::invalid_argument("holder contains a NUL byte");
    std::unique_ptr<LossCallback> callback;
    if (on_lost) callback = std::make_unique<LossCallback>(std::move(on_lost));
    fencing_hold *hold = nullptr;
    fencing_status st = fencing_hold_start(store, s->c_str(), h->c_str(), ttl_ms, timeout_ms,
                                           callback ? detail::on_lost_trampoline : nullptr, callback.get(), &hold);
    if (st != FENCING_OK) return detail::last_error(st);
    return LeaseGuard(hold, std::move(callback));
  }

  /// start() whose wait another thread can end with `cancel.fire()`
  /// (Timeout, no lease taken).
  static Result<LeaseGuard> start(const fencing_store *store, std::string_view scope, std::string_view holder,
                                  std::uint64_t ttl_ms, std::uint64_t timeout_ms, const Cancel &cancel,
                                  LossCallback on_lost = nullptr) {
    auto s = detail::c_string(scope);
    auto h = detail::c_string(holder);
    if (!s) return detail::invalid_argument("scope contains a NUL byte");
    if (!h) return detail::invalid_argument("holder contains a NUL byte");
    std::unique_ptr<LossCallback> callback;
    if (on_lost) callback = std::make_unique<LossCallback>(std::move(on_lost));
    fencing_hold *hold = nullptr;
    fencing_status st =
        fencing_hold_start_cancellable(store, s->c_str(), h->c_str(), ttl_ms, timeout_ms, cancel.handle(),
                                       callback ? detail::on_lost_trampoline : nullptr, callback.get(), &hold);
    if (st != FENCING_OK) return detail::last_error(st);
    return LeaseGuard(hold, std::move(callback));
  }

  /// Keeps alive a lease already acquired (fencing_keep_alive): right after
  /// the acquire, since its remaining time counts from this call.
  static Result<LeaseGuard> keep(const fencing_store *store, const Lease &lease, LossCallback on_lost = nullptr) {
    fencing_lease c{};
    c.token = lease.token;
    c.ttl_ms = lease.ttl_ms;
    c.remaining_ms = lease.remaining_ms;
    c.expires_at_ms = lease.expires_at_ms;
    if (!detail::fill_array(c.scope, lease.scope)) return detail::invalid_argument("lease scope too long or has a NUL");
    if (!detail::fill_array(c.holder, lease.holder)) {
      return detail::invalid_argument("lease holder too long or has a NUL");
    }
    std::unique_ptr<LossCallback> callback;
    if (on_lost) callback = std::make_unique<LossCallback>(std::move(on_lost));
    fencing_hold *hold = nullptr;
    fencing_status st =
        fencing_keep_alive(store, &c, callback ? detail::on_lost_trampoline : nullptr, callback.get(), &hold);
    if (st != FENCING_OK) return detail::last_error(st);
    return LeaseGuard(hold, std::move(callback));
  }

  LeaseGuard(LeaseGuard &&other) noexcept
      : h_(std::exchange(other.h_, nullptr)), on_lost_(std::move(other.on_lost_)) {}
  LeaseGuard &operator=(LeaseGuard &&other) noexcept {
    if (this != &other) {
      end_quietly();
      h_ = std::exchange(other.h_, nullptr);
      on_lost_ = std::move(other.on_lost_);
    }
    return *this;
  }
  LeaseGuard(const LeaseGuard &) = delete;
  LeaseGuard &operator=(const LeaseGuard &) = delete;
  /// Stops renewing and releases the lease if it is still held; no verdict.
  /// Returns at once: the release runs in the background (fencing_hold_free).
  ~LeaseGuard() { end_quietly(); }

  /// Ok while the lease is held; once it is lost, the loss. Call it before
  /// each protected step.
  Result<std::monostate> check() const { return status_of(fencing_hold_check(h_)); }

  /// The lease as last renewed.
  Result<Lease> lease() const {
    fencing_lease l{};
    fencing_status st = fencing_hold_lease(h_, &l);
    if (st != FENCING_OK) return detail::last_error(st);
    return detail::lease_of(l);
  }

  /// The lease's token (the one every write through the guard presents).
  Result<std::uint64_t> token() const {
    Result<Lease> l = lease();
    if (!l) return l.error();
    return l.value().token;
  }

  Result<Receipt> put(std::string_view key, const void *value, std::size_t len) const {
    auto k = detail::c_string(key);
    if (!k) return detail::invalid_argument("key contains a NUL byte");
    fencing_receipt r{};
    fencing_status st = fencing_hold_put(h_, k->c_str(), static_cast<const std::uint8_t *>(value), len, &r);
    if (st != FENCING_OK) return detail::last_error(st);
    return Receipt{r.version, r.token};
  }
  Result<Receipt> put(std::string_view key, std::string_view value) const {
    return put(key, value.data(), value.size());
  }

  /// Deletes `key` (NotFound when it does not exist).
  Result<Receipt> remove(std::string_view key) const {
    auto k = detail::c_string(key);
    if (!k) return detail::invalid_argument("key contains a NUL byte");
    fencing_receipt r{};
    fencing_status st = fencing_hold_delete(h_, k->c_str(), &r);
    if (st != FENCING_OK) return detail::last_error(st);
    return Receipt{r.version, r.token};
  }

  /// The checked read: StaleToken once a newer token was accepted.
  Result<std::optional<Entry>> get(std::string_view key) const {
    auto k = detail::c_string(key);
    if (!k) return detail::invalid_argument("key contains a NUL byte");
    fencing_entry *raw = nullptr;
    fencing_status st = fencing_hold_get(h_, k->c_str(), &raw);
    if (st != FENCING_OK) return detail::last_error(st);
    detail::Owned<fencing_entry, fencing_entry_free> e(raw);
    if (!e) return std::optional<Entry>();
    return std::optional<Entry>(detail::entry_of(e.get()));
  }

  /// Raises the scope's fence to the lease's token.
  Result<std::monostate> claim() const { return status_of(fencing_hold_claim(h_)); }

  /// One put or delete with its condition (VersionMismatch when the entry is
  /// not at op.expected_version).
  Result<Receipt> execute(const Op &op) const {
    auto c = detail::c_ops(&op, 1);
    if (!c) return detail::invalid_argument("key contains a NUL byte");
    fencing_receipt r{};
    fencing_status st = fencing_hold_execute(h_, c->data(), &r);
    if (st != FENCING_OK) return detail::last_error(st);
    return Receipt{r.version, r.token};
  }

  /// Puts and deletes (1..=1000) under one check, in order, all or nothing:
  /// one receipt per op.
  Result<std::vector<Receipt>> apply(const std::vector<Op> &ops) const {
    auto c = detail::c_ops(ops.data(), ops.size());
    if (!c) return detail::invalid_argument("a key contains a NUL byte");
    std::vector<fencing_receipt> rs(ops.size());
    fencing_status st = fencing_hold_apply(h_, c->data(), c->size(), rs.data());
    if (st != FENCING_OK) return detail::last_error(st);
    return detail::receipts_of(rs);
  }

  /// Ends the hold with the work's outcome and the core's verdict: Ok when
  /// the lease was held to the end and released; otherwise the loss
  /// (LeaseLost with current_token/current_holder, Closed, Backend), with
  /// work_error_is_cause set when the work failed: the loss wins, and the
  /// caller's own error goes with it. The guard holds nothing afterwards.
  Result<std::monostate> finish(bool work_failed = false) {
    bool attach = false;
    fencing_status st = fencing_hold_finish(h_, work_failed, &attach);
    if (st == FENCING_NULL_PARAMETER && !h_) return detail::last_error(st);
    h_ = nullptr;  // freed by finish, whatever the verdict
    on_lost_.reset();
    if (st == FENCING_OK) return std::monostate{};
    Error e = detail::last_error(st);
    e.work_error_is_cause = attach;
    return e;
  }

  /// The C handle, for C code that takes one (still owned here).
  const fencing_hold *handle() const noexcept { return h_; }

 private:
  LeaseGuard(fencing_hold *h, std::unique_ptr<LossCallback> on_lost) noexcept
      : h_(h), on_lost_(std::move(on_lost)) {}

  static Result<std::monostate> status_of(fencing_status st) {
    if (st != FENCING_OK) return detail::last_error(st);
    return std::monostate{};
  }

  // The callback is freed only after the hold: the keep-alive thread may be
  // running it until fencing_hold_free returns.
  void end_quietly() noexcept {
    fencing_hold_free(std::exchange(h_, nullptr));
    on_lost_.reset();
  }

  fencing_hold *h_ = nullptr;
  std::unique_ptr<LossCallback> on_lost_;
};

/// Who holds one scope's lease, live (the C fencing_watch, from
/// Store::watch): next() gives the lease as it is, then the lease after each
/// change (taken, renewed, released, expired), in order. Movable, not
/// copyable; freed by its destructor. It keeps the store open for itself.
/// Calls take turns (one made while another waits waits for its turn within
/// its own timeout); a moved-from watch holds nothing, and next() on it is
/// NullParameter.
class LeaseWatch {
 public:
  static Result<LeaseWatch> open(const fencing_store *store, std::string_view scope) {
    auto s = detail::c_string(scope);
    if (!s) return detail::invalid_argument("scope contains a NUL byte");
    fencing_watch *w = nullptr;
    fencing_status st = fencing_watch_open(store, s->c_str(), &w);
    if (st != FENCING_OK) return detail::last_error(st);
    return LeaseWatch(w);
  }

  /// The next state, waiting up to `timeout_ms` of real time: nullopt when
  /// nothing changed by then (not a failure; call again). A store out of
  /// reach for the whole wait is Backend, and the watch carries on at the
  /// next call.
  Result<std::optional<Holding>> next(std::uint64_t timeout_ms) const {
    return take(
        [&](fencing_holding *h, bool *changed) { return fencing_watch_next(w_.get(), timeout_ms, h, changed); });
  }

  /// next() that another thread can end with `cancel.fire()`: nullopt, as
  /// when the timeout passes.
  Result<std::optional<Holding>> next(std::uint64_t timeout_ms, const Cancel &cancel) const {
    return take([&](fencing_holding *h, bool *changed) {
      return fencing_watch_next_cancellable(w_.get(), timeout_ms, cancel.handle(), h, changed);
    });
  }

  /// The C handle, for C code that takes one (still owned here).
  const fencing_watch *handle() const noexcept { return w_.get(); }

 private:
  explicit LeaseWatch(fencing_watch *w) noexcept : w_(w) {}

  template <class F>
  static Result<std::optional<Holding>> take(F &&c_call) {
    fencing_holding h{};
    bool changed = false;
    fencing_status st = c_call(&h, &changed);
    if (st != FENCING_OK) return detail::last_error(st);
    if (!changed) return std::optional<Holding>();
    Holding out;
    out.scope = h.scope;
    if (h.has_lease) out.lease = detail::lease_of(h.lease);
    return std::optional<Holding>(std::move(out));
  }

  detail::Owned<fencing_watch, fencing_watch_free> w_;  // movable, not copyable; freed once
};

/// The store's record, live (the C fencing_rejection_watch, from
/// Store::watch_rejections): each stale-token rejection recorded after the
/// watch began, oldest first, one per next(). Movable, not copyable; freed
/// by its destructor. It keeps the store open for itself.
class RejectionWatch {
 public:
  static Result<RejectionWatch> open(const fencing_store *store, std::optional<std::string_view> scope) {
    std::optional<std::string> s;
    if (scope) {
      s = detail::c_string(*scope);
      if (!s) return detail::invalid_argument("scope contains a NUL byte");
    }
    fencing_rejection_watch *w = nullptr;
    fencing_status st = fencing_rejection_watch_open(store, s ? s->c_str() : nullptr, &w);
    if (st != FENCING_OK) return detail::last_error(st);
    return RejectionWatch(w);
  }

  /// The next rejection, waiting up to `timeout_ms` of real time: nullopt
  /// when none came by then (not a failure; call again).
  Result<std::optional<RecordedRejection>> next(std::uint64_t timeout_ms) const {
    return take([&](fencing_events **out) { return fencing_rejection_watch_next(w_.get(), timeout_ms, out); });
  }

  /// next() that another thread can end with `cancel.fire()`: nullopt, as
  /// when the timeout passes.
  Result<std::optional<RecordedRejection>> next(std::uint64_t timeout_ms, const Cancel &cancel) const {
    return take([&](fencing_events **out) {
      return fencing_rejection_watch_next_cancellable(w_.get(), timeout_ms, cancel.handle(), out);
    });
  }

  /// The C handle, for C code that takes one (still owned here).
  const fencing_rejection_watch *handle() const noexcept { return w_.get(); }

 private:
  explicit RejectionWatch(fencing_rejection_watch *w) noexcept : w_(w) {}

  template <class F>
  static Result<std::optional<RecordedRejection>> take(F &&c_call) {
    fencing_events *raw = nullptr;
    fencing_status st = c_call(&raw);
    detail::Owned<fencing_events, fencing_events_free> events(raw);
    if (st != FENCING_OK) return detail::last_error(st);
    if (!events) return std::optional<RecordedRejection>();
    fencing_recorded_rejection c{};
    st = fencing_events_rejection(events.get(), 0, &c);
    if (st != FENCING_OK) return detail::last_error(st);
    return std::optional<RecordedRejection>(detail::recorded_of(c));
  }

  detail::Owned<fencing_rejection_watch, fencing_rejection_watch_free> w_;  // movable, not copyable; freed once
};

/// A store handle that never throws (beyond std::bad_alloc): every call
/// returns Result<T>. Movable, not copyable; freed by its destructor.
class Store {
 public:
  static Result<Store> open(std::string_view url) {
    auto u = detail::c_string(url);
    if (!u) return detail::invalid_argument("url contains a NUL byte");
    fencing_store *s = nullptr;
    fencing_status st = fencing_store_open(u->c_str(), &s);
    if (st != FENCING_OK) return detail::last_error(st);
    return Store(s);
  }

  Store(Store &&other) noexcept : s_(std::exchange(other.s_, nullptr)) {}
  Store &operator=(Store &&other) noexcept {
    if (this != &other) {
      fencing_store_free(s_);
      s_ = std::exchange(other.s_, nullptr);
    }
    return *this;
  }
  Store(const Store &) = delete;
  Store &operator=(const Store &) = delete;
  ~Store() { fencing_store_free(s_); }

  /// The C handle, for C code that takes one (still owned here).
  const fencing_store *handle() const noexcept { return s_; }

  /// Where the store is (`fencing_store_location`): `memory:`, `sqlite:` and
  /// the file's absolute path, or the PostgreSQL URL without its password.
  Result<std::string> location() const { return text(fencing_store_location); }

  /// The kind of store: "memory", "sqlite", "postgres" or "etcd".
  Result<std::string> backend_kind() const { return text(fencing_store_backend_kind); }

  /// Whether the store was closed (by this handle or another).
  Result<bool> is_closed() const {
    return call<bool>({}, [&](const std::string *, bool *out) { return fencing_store_is_closed(s_, out); });
  }

  Result<std::uint64_t> next_token(std::string_view scope) const {
    return call<std::uint64_t>({scope}, [&](const std::string *a, std::uint64_t *out) {
      return fencing_next_token(s_, a[0].c_str(), out);
    });
  }

  Result<std::uint64_t> fence_of(std::string_view scope) const {
    return call<std::uint64_t>({scope}, [&](const std::string *a, std::uint64_t *out) {
      return fencing_fence_of(s_, a[0].c_str(), out);
    });
  }

  Result<Lease> acquire(std::string_view scope, std::string_view holder, std::uint64_t ttl_ms) const {
    return lease_call({scope, holder}, [&](const std::string *a, fencing_lease *out) {
      return fencing_acquire(s_, a[0].c_str(), a[1].c_str(), ttl_ms, out);
    });
  }

  Result<Lease> renew(std::string_view scope, std::uint64_t token, std::uint64_t ttl_ms) const {
    return lease_call({scope}, [&](const std::string *a, fencing_lease *out) {
      return fencing_renew(s_, a[0].c_str(), token, ttl_ms, out);
    });
  }

  /// Whether the lease with `token` was still live (and is now ended).
  Result<bool> release(std::string_view scope, std::uint64_t token) const {
    return call<bool>({scope}, [&](const std::string *a, bool *out) {
      return fencing_release(s_, a[0].c_str(), token, out);
    });
  }

  /// Acquires, blocking the calling thread (without spinning) until the lease
  /// is free or `timeout_ms` of real time passed (Timeout).
  Result<Lease> acquire_wait(std::string_view scope, std::string_view holder, std::uint64_t ttl_ms,
                             std::uint64_t timeout_ms) const {
    return lease_call({scope, holder}, [&](const std::string *a, fencing_lease *out) {
      return fencing_acquire_wait(s_, a[0].c_str(), a[1].c_str(), ttl_ms, timeout_ms, out);
    });
  }

  /// acquire_wait that another thread can end with `cancel.fire()` (Timeout).
  Result<Lease> acquire_wait(std::string_view scope, std::string_view holder, std::uint64_t ttl_ms,
                             std::uint64_t timeout_ms, const Cancel &cancel) const {
    return lease_call({scope, holder}, [&](const std::string *a, fencing_lease *out) {
      return fencing_acquire_wait_cancellable(s_, a[0].c_str(), a[1].c_str(), ttl_ms, timeout_ms, cancel.handle(),
                                              out);
    });
  }

  /// Raises the scope's counter to at least `floor` (never lowers it); the counter.
  Result<std::uint64_t> advance_counter(std::string_view scope, std::uint64_t floor) const {
    return call<std::uint64_t>({scope}, [&](const std::string *a, std::uint64_t *out) {
      return fencing_advance_counter(s_, a[0].c_str(), floor, out);
    });
  }

  Result<Receipt> put(std::string_view scope, std::string_view key, const void *value, std::size_t len,
                      const Fence &fence) const {
    return fenced<Receipt>(&fence, {scope, key}, [&](const std::string *a, const fencing_fence *f, Receipt *out) {
      fencing_receipt r{};
      fencing_status st =
          fencing_put(s_, a[0].c_str(), a[1].c_str(), static_cast<const std::uint8_t *>(value), len, f, &r);
      *out = Receipt{r.version, r.token};
      return st;
    });
  }
  Result<Receipt> put(std::string_view scope, std::string_view key, std::string_view value,
                      const Fence &fence) const {
    return put(scope, key, value.data(), value.size(), fence);
  }

  /// Deletes `key` (`delete` is a keyword); NotFound when it does not exist.
  /// The receipt's version is 0.
  Result<Receipt> remove(std::string_view scope, std::string_view key, const Fence &fence) const {
    return fenced<Receipt>(&fence, {scope, key}, [&](const std::string *a, const fencing_fence *f, Receipt *out) {
      fencing_receipt r{};
      fencing_status st = fencing_delete(s_, a[0].c_str(), a[1].c_str(), f, &r);
      *out = Receipt{r.version, r.token};
      return st;
    });
  }

  /// One put or delete with its condition (VersionMismatch when the entry is
  /// not at op.expected_version).
  Result<Receipt> execute(std::string_view scope, const Fence &fence, const Op &op) const {
    auto c = detail::c_ops(&op, 1);
    if (!c) return detail::invalid_argument("key contains a NUL byte");
    return fenced<Receipt>(&fence, {scope}, [&](const std::string *a, const fencing_fence *f, Receipt *out) {
      fencing_receipt r{};
      fencing_status st = fencing_execute(s_, a[0].c_str(), f, c->data(), &r);
      *out = Receipt{r.version, r.token};
      return st;
    });
  }

  /// Puts and deletes (1..=1000) under one check of the fence, in order, all
  /// or nothing: one receipt per op.
  Result<std::vector<Receipt>> apply(std::string_view scope, const Fence &fence, const std::vector<Op> &ops) const {
    auto c = detail::c_ops(ops.data(), ops.size());
    if (!c) return detail::invalid_argument("a key contains a NUL byte");
    return fenced<std::vector<Receipt>>(
        &fence, {scope}, [&](const std::string *a, const fencing_fence *f, std::vector<Receipt> *out) {
          std::vector<fencing_receipt> rs(ops.size());
          fencing_status st = fencing_apply(s_, a[0].c_str(), f, c->data(), c->size(), rs.data());
          *out = detail::receipts_of(rs);
          return st;
        });
  }

  /// Raises the scope's fence to fence.token without writing (checked as a
  /// write), so a new holder shuts out older ones before it reads.
  Result<std::monostate> claim(std::string_view scope, const Fence &fence) const {
    return fenced<std::monostate>(&fence, {scope}, [&](const std::string *a, const fencing_fence *f, std::monostate *) {
      return fencing_claim(s_, a[0].c_str(), f);
    });
  }

  /// On an etcd store: checks the token as claim() does and returns the body
  /// of an etcd transaction (POST /v3/kv/txn on etcd's JSON gateway) that
  /// commits only while the token is current; add your own requests to its
  /// "success" list (docs/etcd.md, "Fence your own etcd keys"). Other
  /// stores: InvalidArgument.
  Result<std::string> etcd_check(std::string_view scope, const Fence &fence) const {
    return fenced<std::string>(&fence, {scope}, [&](const std::string *a, const fencing_fence *f, std::string *out) {
      char *raw = nullptr;
      fencing_status st = fencing_etcd_check(s_, a[0].c_str(), f, &raw);
      detail::Owned<char, fencing_string_free> t(raw);
      if (t) *out = t.get();
      return st;
    });
  }

  /// The entry, or nullopt when there is none. With a fence the read is
  /// checked like a write (STALE_TOKEN) but raises nothing.
  Result<std::optional<Entry>> get(std::string_view scope, std::string_view key,
                                   const std::optional<Fence> &fence = std::nullopt) const {
    const Fence *fp = fence ? &*fence : nullptr;
    return fenced<std::optional<Entry>>(
        fp, {scope, key}, [&](const std::string *a, const fencing_fence *f, std::optional<Entry> *out) {
          fencing_entry *raw = nullptr;
          fencing_status st = fencing_get(s_, a[0].c_str(), a[1].c_str(), f, &raw);
          detail::Owned<fencing_entry, fencing_entry_free> e(raw);
          if (e) *out = detail::entry_of(e.get());
          return st;
        });
  }

  /// Up to `limit` (1..=1000) keys of the scope after `after` (nullopt: from
  /// the start), in byte order.
  Result<Page> list(std::string_view scope, std::optional<std::string_view> after, std::size_t limit) const {
    return call<Page>({scope, after.value_or("")}, [&](const std::string *a, Page *out) {
      fencing_page *raw = nullptr;
      fencing_status st = fencing_list(s_, a[0].c_str(), after ? a[1].c_str() : nullptr, limit, &raw);
      detail::Owned<fencing_page, fencing_page_free> page(raw);
      for (std::size_t i = 0; i < fencing_page_len(page.get()); ++i) {
        out->keys.emplace_back(fencing_page_key(page.get(), i));
      }
      out->next = detail::copy_optional(fencing_page_next(page.get()));
      return st;
    });
  }

  /// The scope's counter, fence, live lease and entry count.
  Result<ScopeStatus> status(std::string_view scope) const {
    return call<ScopeStatus>({scope}, [&](const std::string *a, ScopeStatus *out) {
      fencing_scope_info info{};
      fencing_status st = fencing_scope_status(s_, a[0].c_str(), &info);
      *out = ScopeStatus{info.counter, info.fence, info.entries, std::nullopt};
      if (info.has_lease) out->lease = detail::lease_of(info.lease);
      return st;
    });
  }

  /// Drops the state of a scope with no live lease (else LeaseHeld) and no
  /// entries (else InvalidArgument); whether there was state to drop.
  Result<bool> retire(std::string_view scope) const {
    return call<bool>({scope}, [&](const std::string *a, bool *out) { return fencing_retire(s_, a[0].c_str(), out); });
  }

  /// The failover step on a new primary (see fencing_failover): every token
  /// at or below the returned base is stale.
  Result<std::uint64_t> failover() const {
    return call<std::uint64_t>({}, [&](const std::string *, std::uint64_t *out) { return fencing_failover(s_, out); });
  }

  /// Moves a manual clock (`?clock=manual`) forward; InvalidArgument on any other.
  Result<std::monostate> advance_clock(std::uint64_t ms) const {
    return call<std::monostate>({}, [&](const std::string *, std::monostate *) { return fencing_advance_clock(s_, ms); });
  }

  /// One cheap round trip that changes nothing (see fencing_ping): ok while
  /// the store answers and its schema is this library's; Closed once closed;
  /// Backend when unreachable or its schema is older (run `fencing migrate`)
  /// or newer.
  Result<std::monostate> ping() const {
    return call<std::monostate>({}, [&](const std::string *, std::monostate *) { return fencing_ping(s_); });
  }

  /// The handle's counters.
  Result<Metrics> metrics() const {
    return call<Metrics>({}, [&](const std::string *, Metrics *out) { return fencing_metrics_snapshot(s_, out); });
  }

  /// The handle's last rejections (at most 64), oldest first.
  Result<std::vector<Rejection>> rejections() const {
    return call<std::vector<Rejection>>({}, [&](const std::string *, std::vector<Rejection> *out) {
      fencing_rejection_list *raw = nullptr;
      fencing_status st = fencing_rejections(s_, &raw);
      detail::Owned<fencing_rejection_list, fencing_rejection_list_free> list(raw);
      for (std::size_t i = 0; st == FENCING_OK && i < fencing_rejection_list_len(list.get()); ++i) {
        fencing_rejection c{};
        st = fencing_rejection_list_get(list.get(), i, &c);
        if (st == FENCING_OK) detail::fill_rejection(out->emplace_back(), c);
      }
      return st;
    });
  }

  /// The handle's metrics in the Prometheus text format, every sample labelled `store`.
  Result<std::string> metrics_text() const { return text(fencing_metrics_text); }

  /// The store's record, shared by every process using it: the newest
  /// `limit` (1..=256) rejections and last writes of `scope` (nullopt: of
  /// every scope).
  Result<Events> events(std::optional<std::string_view> scope, std::size_t limit) const {
    return call<Events>({scope.value_or("")}, [&](const std::string *a, Events *out) {
      fencing_events *raw = nullptr;
      fencing_status st = fencing_events_snapshot(s_, scope ? a[0].c_str() : nullptr, limit, &raw);
      detail::Owned<fencing_events, fencing_events_free> events(raw);
      for (std::size_t i = 0; st == FENCING_OK && i < fencing_events_rejection_count(events.get()); ++i) {
        fencing_recorded_rejection c{};
        st = fencing_events_rejection(events.get(), i, &c);
        if (st != FENCING_OK) break;
        out->rejections.push_back(detail::recorded_of(c));
      }
      for (std::size_t i = 0; st == FENCING_OK && i < fencing_events_last_write_count(events.get()); ++i) {
        fencing_last_write c{};
        st = fencing_events_last_write(events.get(), i, &c);
        if (st == FENCING_OK) {
          out->last_writes.push_back(LastWrite{detail::copy(c.scope), detail::copy_optional(c.holder), c.token, c.at_ms});
        }
      }
      return st;
    });
  }

  /// Acquires the scope's lease (waiting up to `timeout_ms` when not 0)
  /// and keeps it alive until the guard's finish(). The guard keeps the
  /// store open for itself: it may outlive this handle.
  Result<LeaseGuard> hold(std::string_view scope, std::string_view holder, std::uint64_t ttl_ms,
                          std::uint64_t timeout_ms = 0, LossCallback on_lost = nullptr) const {
    return LeaseGuard::start(s_, scope, holder, ttl_ms, timeout_ms, std::move(on_lost));
  }

  /// hold() whose wait another thread can end with `cancel.fire()`
  /// (Timeout, no lease taken).
  Result<LeaseGuard> hold(std::string_view scope, std::string_view holder, std::uint64_t ttl_ms,
                          std::uint64_t timeout_ms, const Cancel &cancel, LossCallback on_lost = nullptr) const {
    return LeaseGuard::start(s_, scope, holder, ttl_ms, timeout_ms, cancel, std::move(on_lost));
  }

  /// Keeps alive a lease already acquired (from acquire() and the rest), as
  /// a guard like hold()'s: call it right after the acquire, since the
  /// lease's remaining time counts from this call.
  Result<LeaseGuard> keep_alive(const Lease &lease, LossCallback on_lost = nullptr) const {
    return LeaseGuard::keep(s_, lease, std::move(on_lost));
  }

  /// Who holds the scope's lease, live: a LeaseWatch whose next() gives the
  /// lease as it is, then the lease after each change. It may outlive this
  /// handle.
  Result<LeaseWatch> watch(std::string_view scope) const { return LeaseWatch::open(s_, scope); }

  /// The rejections of `scope` (nullopt: of every scope) recorded from now
  /// on, live: a RejectionWatch whose next() gives each, oldest first. It
  /// may outlive this handle.
  Result<RejectionWatch> watch_rejections(std::optional<std::string_view> scope = std::nullopt) const {
    return RejectionWatch::open(s_, scope);
  }

  /// Closes the store: every later call fails with CLOSED.
  Result<std::monostate> close() const {
    fencing_status st = fencing_store_close(s_);
    if (st != FENCING_OK) return detail::last_error(st);
    return std::monostate{};
  }

 private:
  explicit Store(fencing_store *s) noexcept : s_(s) {}

  // Copies the string arguments NUL-terminated (refusing inner NULs), runs
  // the C call, and turns a failure into the thread's last Error.
  template <class T, class F>
  static Result<T> call(std::initializer_list<std::string_view> args, F &&c_call) {
    std::string copies[2];
    std::size_t i = 0;
    for (std::string_view arg : args) {
      auto s = detail::c_string(arg);
      if (!s) return detail::invalid_argument("argument " + std::to_string(i + 1) + " contains a NUL byte");
      copies[i++] = std::move(*s);
    }
    T out{};
    fencing_status st = c_call(copies, &out);
    if (st != FENCING_OK) return detail::last_error(st);
    return out;
  }

  // `call` with a fence (null: none) passed as the C fence; a holder with a
  // NUL inside is refused like any other string.
  template <class T, class F>
  static Result<T> fenced(const Fence *fence, std::initializer_list<std::string_view> args, F &&c_call) {
    if (fence && fence->holder && detail::has_nul(*fence->holder)) {
      return detail::invalid_argument("holder contains a NUL byte");
    }
    fencing_fence f = fence ? detail::c_fence(*fence) : fencing_fence{};
    return call<T>(args, [&](const std::string *a, T *out) { return c_call(a, fence ? &f : nullptr, out); });
  }

  template <class F>
  static Result<Lease> lease_call(std::initializer_list<std::string_view> args, F &&c_call) {
    return call<Lease>(args, [&](const std::string *a, Lease *out) {
      fencing_lease l{};
      fencing_status st = c_call(a, &l);
      if (st == FENCING_OK) *out = detail::lease_of(l);
      return st;
    });
  }

  // Text the library allocated (fencing_string_free), copied.
  template <class F>
  Result<std::string> text(F &&c_call) const {
    return call<std::string>({}, [&](const std::string *, std::string *out) {
      char *raw = nullptr;
      fencing_status st = c_call(s_, &raw);
      detail::Owned<char, fencing_string_free> t(raw);
      if (t) *out = t.get();
      return st;
    });
  }

  fencing_store *s_ = nullptr;
};

/// Fenced objects (docs/objects.md, the C fencing_objects) that never throw
/// (beyond std::bad_alloc): every call returns Result<T>. Each object path
/// remembers the greatest token accepted for it; a write with a smaller one
/// is StaleToken, naming the path as its scope. Movable, not copyable; freed
/// by its destructor. Any number of threads may call one handle at once.
class Objects {
 public:
  /// `memory:` (this handle's own, empty), `file:///DIR` (an existing
  /// directory), `s3://BUCKET[/PREFIX]` (the AWS_* variables) or
  /// `az://CONTAINER[/PREFIX]` (the AZURE_* variables).
  static Result<Objects> open(std::string_view url) {
    auto u = detail::c_string(url);
    if (!u) return detail::invalid_argument("url contains a NUL byte");
    fencing_objects *o = nullptr;
    fencing_status st = fencing_objects_open(u->c_str(), &o);
    if (st != FENCING_OK) return detail::last_error(st);
    return Objects(o);
  }

  Objects(Objects &&other) noexcept : o_(std::exchange(other.o_, nullptr)) {}
  Objects &operator=(Objects &&other) noexcept {
    if (this != &other) {
      fencing_objects_free(o_);
      o_ = std::exchange(other.o_, nullptr);
    }
    return *this;
  }
  Objects(const Objects &) = delete;
  Objects &operator=(const Objects &) = delete;
  ~Objects() { fencing_objects_free(o_); }

  /// The C handle, for C code that takes one (still owned here).
  const fencing_objects *handle() const noexcept { return o_; }

  /// Writes `len` bytes at `value` as the object at `path` (a relative path,
  /// "a/b.csv"), checked against the path's fence: StaleToken,
  /// SequenceOutOfOrder, and, when `expected_version` is given,
  /// VersionMismatch unless the object is at it (0: it must not exist).
  Result<Receipt> put(std::string_view path, const void *value, std::size_t len, const Fence &fence,
                      std::optional<std::uint64_t> expected_version = std::nullopt) const {
    return write(path, fence, [&](const char *p, const fencing_fence *f, fencing_receipt *r) {
      return fencing_objects_put(o_, p, static_cast<const std::uint8_t *>(value), len, f,
                                 expected_version.has_value(), expected_version.value_or(0), r);
    });
  }
  Result<Receipt> put(std::string_view path, std::string_view value, const Fence &fence,
                      std::optional<std::uint64_t> expected_version = std::nullopt) const {
    return put(path, value.data(), value.size(), fence, expected_version);
  }

  /// Deletes the object at `path` (`delete` is a keyword), checked like a
  /// put; NotFound when there is none. The path keeps its fence; the
  /// receipt's version is 0.
  Result<Receipt> remove(std::string_view path, const Fence &fence,
                         std::optional<std::uint64_t> expected_version = std::nullopt) const {
    return write(path, fence, [&](const char *p, const fencing_fence *f, fencing_receipt *r) {
      return fencing_objects_delete(o_, p, f, expected_version.has_value(), expected_version.value_or(0), r);
    });
  }

  /// The object at `path`, or nullopt when there is none (never written, or
  /// deleted).
  Result<std::optional<Object>> get(std::string_view path) const {
    auto p = detail::c_string(path);
    if (!p) return detail::invalid_argument("path contains a NUL byte");
    fencing_object *raw = nullptr;
    fencing_status st = fencing_objects_get(o_, p->c_str(), &raw);
    if (st != FENCING_OK) return detail::last_error(st);
    detail::Owned<fencing_object, fencing_object_free> object(raw);
    if (!object) return std::optional<Object>();
    return std::optional<Object>(detail::object_of(object.get()));
  }

 private:
  explicit Objects(fencing_objects *o) noexcept : o_(o) {}

  // Refuses a path or holder with a NUL inside, then runs the C write with
  // the C fence.
  template <class F>
  static Result<Receipt> write(std::string_view path, const Fence &fence, F &&c_call) {
    auto p = detail::c_string(path);
    if (!p) return detail::invalid_argument("path contains a NUL byte");
    if (fence.holder && detail::has_nul(*fence.holder)) return detail::invalid_argument("holder contains a NUL byte");
    fencing_fence f = detail::c_fence(fence);
    fencing_receipt r{};
    fencing_status st = c_call(p->c_str(), &f, &r);
    if (st != FENCING_OK) return detail::last_error(st);
    return Receipt{r.version, r.token};
  }

  fencing_objects *o_ = nullptr;
};

/// Creates or upgrades the schema of the store `url` names without opening
/// it (deploy time); idempotent, and nothing to do for `memory:`.
inline Result<std::monostate> migrate(std::string_view url) {
  auto u = detail::c_string(url);
  if (!u) return detail::invalid_argument("url contains a NUL byte");
  fencing_status st = fencing_migrate(u->c_str());
  if (st != FENCING_OK) return detail::last_error(st);
  return std::monostate{};
}

/// Canonical decimal text (`0|[1-9][0-9]*`, at most FENCING_MAX_TOKEN) to a
/// number; anything else is InvalidArgument. "0" parses (calls refuse it).
inline Result<std::uint64_t> token_parse(std::string_view text) {
  auto t = detail::c_string(text);
  if (!t) return detail::invalid_argument("text contains a NUL byte");
  std::uint64_t out = 0;
  fencing_status st = fencing_token_parse(t->c_str(), &out);
  if (st != FENCING_OK) return detail::last_error(st);
  return out;
}

/// `value` as canonical decimal text; InvalidArgument above FENCING_MAX_TOKEN.
inline Result<std::string> token_format(std::uint64_t value) {
  char buf[FENCING_TOKEN_TEXT_CAPACITY];
  std::size_t n = 0;
  fencing_status st = fencing_token_format(value, buf, sizeof buf, &n);
  if (st != FENCING_OK) return detail::last_error(st);
  return std::string(buf, n);
}

/// The rejection an SQLite error message (from the `fencing_check` view)
/// reports, or nullopt when the message is not one of fencing's.
inline Result<std::optional<Error>> error_from_sqlite(std::string_view message) {
  auto m = detail::c_string(message);
  if (!m) return detail::invalid_argument("message contains a NUL byte");
  fencing_status st = fencing_error_from_sqlite(m->c_str());
  if (st == FENCING_OK) return std::optional<Error>();
  if (st == FENCING_INVALID_UTF8) return detail::last_error(st);  // the call failed: nothing was mapped
  return std::optional<Error>(detail::last_error(st));
}

/// The rejection a PostgreSQL error reports (SQLSTATE class FN; `detail_text`
/// is the error's DETAIL), or nullopt when the SQLSTATE is not one of fencing's.
inline Result<std::optional<Error>> error_from_sqlstate(std::string_view sqlstate,
                                                        std::optional<std::string_view> detail_text = std::nullopt) {
  auto code = detail::c_string(sqlstate);
  auto d = detail::c_string(detail_text.value_or(""));
  if (!code || !d) return detail::invalid_argument("sqlstate or detail contains a NUL byte");
  fencing_status st = fencing_error_from_sqlstate(code->c_str(), detail_text ? d->c_str() : nullptr);
  if (st == FENCING_OK) return std::optional<Error>();
  if (st == FENCING_INVALID_UTF8) return detail::last_error(st);
  return std::optional<Error>(detail::last_error(st));
}

/// Receives one of the library's log records: `level` FENCING_LOG_ERROR (1)
/// .. FENCING_LOG_TRACE (5), `message` valid only during the call. Called on
/// the thread that logged (the caller's or a keep-alive's), possibly on
/// several at once; it must return promptly and must not throw (the call
/// is noexcept: an exception ends the program).
using LogCallback = std::function<void(std::uint32_t level, std::string_view message)>;

namespace log_detail {

inline thread_local bool in_log_callback = false;

inline void log_trampoline(std::uint32_t level, const char *message, void *user_data) noexcept {
  in_log_callback = true;
  (*static_cast<LogCallback *>(user_data))(level, message);
  in_log_callback = false;
}

/// The callback the library holds, kept until the library let it go.
inline std::unique_ptr<LogCallback> log_callback;
inline std::mutex log_callback_lock;

}  // namespace log_detail

/// fencing_set_log_callback: records of level `max_level` or more severe
/// to `callback` (empty: off). When it returns, the previous callback is
/// not running and has been freed. InvalidArgument from inside a callback.
inline Result<std::monostate> set_log_callback(LogCallback callback,
                                               std::uint32_t max_level = FENCING_LOG_INFO) {
  // Checked before the lock: a callback waiting for it could wait for ever
  // on a thread that, holding it, waits for the callback to return.
  if (log_detail::in_log_callback) return fencing::detail::invalid_argument("set_log_callback called from inside the log callback");
  std::lock_guard<std::mutex> lock(log_detail::log_callback_lock);
  auto next = callback ? std::make_unique<LogCallback>(std::move(callback)) : nullptr;
  fencing_status st = fencing_set_log_callback(next ? log_detail::log_trampoline : nullptr, max_level, next.get());
  if (st != FENCING_OK) return fencing::detail::last_error(st);
  log_detail::log_callback = std::move(next);
  return std::monostate{};
}

}  // namespace nothrow

#ifdef FENCING_HPP_EXCEPTIONS

/// The root of every fencing exception: what() is the library's message,
/// error() every detail, status() the code. Catch a subclass for one code.
class FencingError : public std::runtime_error {
 public:
  explicit FencingError(Error e, std::exception_ptr cause = nullptr)
      : std::runtime_error(e.message), e_(std::move(e)), cause_(std::move(cause)) {}
  Status status() const noexcept { return e_.status; }
  const Error &error() const noexcept { return e_; }
  /// The work's own exception, when a lease guard's finish reports a loss
  /// under failed work (the loss wins, the work's error goes with it); else
  /// null. std::rethrow_exception(cause()) to inspect it.
  const std::exception_ptr &cause() const noexcept { return cause_; }

 private:
  Error e_;
  std::exception_ptr cause_;
};

/// The token is older than the scope's fence: retrying it can never succeed.
class StaleTokenError : public FencingError {
 public:
  using FencingError::FencingError;
  const std::string &scope() const noexcept { return error().scope; }
  std::uint64_t presented() const noexcept { return error().presented; }
  std::uint64_t current() const noexcept { return error().current; }
};
class SequenceOutOfOrderError : public FencingError {
 public:
  using FencingError::FencingError;
  std::uint64_t presented() const noexcept { return error().presented; }
  std::uint64_t last() const noexcept { return error().last; }
};
class VersionMismatchError : public FencingError {
 public:
  using FencingError::FencingError;
  std::uint64_t expected() const noexcept { return error().expected; }
  std::uint64_t actual() const noexcept { return error().actual; }
};
class NotFoundError : public FencingError {
 public:
  using FencingError::FencingError;
  const std::string &scope() const noexcept { return error().scope; }
  const std::string &key() const noexcept { return error().key; }
};
class LeaseHeldError : public FencingError {
 public:
  using FencingError::FencingError;
  const std::string &scope() const noexcept { return error().scope; }
  const std::string &holder() const { return *error().holder; }
  std::uint64_t token() const noexcept { return error().token; }
  std::uint64_t remaining_ms() const noexcept { return error().remaining_ms; }
};
class LeaseLostError : public FencingError {
 public:
  using FencingError::FencingError;
  const std::string &scope() const noexcept { return error().scope; }
  /// The lease current now: its token and holder; 0 and nullopt when none is.
  std::uint64_t current_token() const noexcept { return error().current_token; }
  const std::optional<std::string> &current_holder() const noexcept { return error().current_holder; }
  /// Deprecated copies of current_holder() and current_token().
  const std::optional<std::string> &holder() const noexcept { return error().holder; }
  std::uint64_t token() const noexcept { return error().token; }
};
class TokenExhaustedError : public FencingError {
  using FencingError::FencingError;
};
class InvalidArgumentError : public FencingError {
  using FencingError::FencingError;
};
class TimeoutError : public FencingError {
  using FencingError::FencingError;
};
class BackendError : public FencingError {
 public:
  using FencingError::FencingError;
  /// How the backend failed: "busy", "unreachable", "refused",
  /// "outcome_unknown", ... (docs/semantics.md, "Errors").
  const std::string &kind() const noexcept { return error().kind; }
};
class ClosedError : public FencingError {
  using FencingError::FencingError;
};
class NullParameterError : public FencingError {
  using FencingError::FencingError;
};
class InvalidUtf8Error : public FencingError {
  using FencingError::FencingError;
};
class BufferTooSmallError : public FencingError {
  using FencingError::FencingError;
};
class PanicError : public FencingError {
  using FencingError::FencingError;
};

/// Throws the exception class of `e.status`, with `cause` (see cause()).
[[noreturn]] inline void throw_error(Error e, std::exception_ptr cause = nullptr) {
  switch (e.status) {
    case Status::StaleToken: throw StaleTokenError(std::move(e), std::move(cause));
    case Status::SequenceOutOfOrder: throw SequenceOutOfOrderError(std::move(e), std::move(cause));
    case Status::VersionMismatch: throw VersionMismatchError(std::move(e), std::move(cause));
    case Status::NotFound: throw NotFoundError(std::move(e), std::move(cause));
    case Status::LeaseHeld: throw LeaseHeldError(std::move(e), std::move(cause));
    case Status::LeaseLost: throw LeaseLostError(std::move(e), std::move(cause));
    case Status::TokenExhausted: throw TokenExhaustedError(std::move(e), std::move(cause));
    case Status::InvalidArgument: throw InvalidArgumentError(std::move(e), std::move(cause));
    case Status::Timeout: throw TimeoutError(std::move(e), std::move(cause));
    case Status::Backend: throw BackendError(std::move(e), std::move(cause));
    case Status::Closed: throw ClosedError(std::move(e), std::move(cause));
    case Status::NullParameter: throw NullParameterError(std::move(e), std::move(cause));
    case Status::InvalidUtf8: throw InvalidUtf8Error(std::move(e), std::move(cause));
    case Status::BufferTooSmall: throw BufferTooSmallError(std::move(e), std::move(cause));
    case Status::Panic: throw PanicError(std::move(e), std::move(cause));
    case Status::Ok: break;
  }
  throw FencingError(std::move(e), std::move(cause));  // a code newer than this header
}

namespace detail {
template <class T>
T value_or_throw(Result<T> &&r) {
  if (!r.ok()) throw_error(r.error());
  return std::move(r).value();
}
}  // namespace detail

/// A lease held alive in the background until finish(), throwing the
/// exception class of each failure's code (see nothrow::LeaseGuard).
///
///   fencing::LeaseGuard lease = store.hold("report", "worker-a", 30000);
///   try {
///     lease.put("body", render());      // presents the lease's scope and token
///   } catch (...) {
///     lease.finish(std::current_exception());  // throws the loss or the work's error
///   }
///   lease.finish();  // throws LeaseLostError, ClosedError, ... when it was lost
///
/// The destructor of a guard not finished releases quietly and never throws.
class LeaseGuard {
 public:
  explicit LeaseGuard(nothrow::LeaseGuard g) noexcept : g_(std::move(g)) {}

  void check() const { detail::value_or_throw(g_.check()); }
  Lease lease() const { return detail::value_or_throw(g_.lease()); }
  std::uint64_t token() const { return detail::value_or_throw(g_.token()); }
  Receipt put(std::string_view key, const void *value, std::size_t len) const {
    return detail::value_or_throw(g_.put(key, value, len));
  }
  Receipt put(std::string_view key, std::string_view value) const { return detail::value_or_throw(g_.put(key, value)); }
  Receipt remove(std::string_view key) const { return detail::value_or_throw(g_.remove(key)); }
  std::optional<Entry> get(std::string_view key) const { return detail::value_or_throw(g_.get(key)); }
  void claim() const { detail::value_or_throw(g_.claim()); }
  Receipt execute(const Op &op) const { return detail::value_or_throw(g_.execute(op)); }
  std::vector<Receipt> apply(const std::vector<Op> &ops) const { return detail::value_or_throw(g_.apply(ops)); }

  /// The work succeeded: returns when the lease was held to the end and
  /// released; otherwise throws the loss.
  void finish() { detail::value_or_throw(g_.finish(false)); }

  /// The work failed with `work_error`: throws the loss, with `work_error`
  /// as its cause(), or, when the lease was released, `work_error` itself.
  [[noreturn]] void finish(std::exception_ptr work_error) {
    Result<std::monostate> verdict = g_.finish(true);
    if (verdict.ok() && work_error) std::rethrow_exception(work_error);
    if (verdict.ok()) throw std::invalid_argument("LeaseGuard::finish: work_error is null");
    throw_error(verdict.error(), verdict.error().work_error_is_cause ? work_error : nullptr);
  }

  /// The non-throwing calls on the same hold.
  const nothrow::LeaseGuard &nothrow() const noexcept { return g_; }
  const fencing_hold *handle() const noexcept { return g_.handle(); }

 private:
  nothrow::LeaseGuard g_;
};

/// Who holds one scope's lease, live, throwing the exception class of each
/// failure's code (see nothrow::LeaseWatch).
///
///   fencing::LeaseWatch watch = store.watch("report");
///   while (auto h = watch.next(1000)) { ... }  // nullopt: nothing changed within 1 s
class LeaseWatch {
 public:
  explicit LeaseWatch(nothrow::LeaseWatch w) noexcept : w_(std::move(w)) {}

  /// The next state, or nullopt when nothing changed within `timeout_ms`.
  std::optional<Holding> next(std::uint64_t timeout_ms) const { return detail::value_or_throw(w_.next(timeout_ms)); }
  std::optional<Holding> next(std::uint64_t timeout_ms, const Cancel &cancel) const {
    return detail::value_or_throw(w_.next(timeout_ms, cancel));
  }

  /// The non-throwing calls on the same watch.
  const nothrow::LeaseWatch &nothrow() const noexcept { return w_; }
  const fencing_watch *handle() const noexcept { return w_.handle(); }

 private:
  nothrow::LeaseWatch w_;
};

/// The store's record, live (Store::watch_rejections), throwing the
/// exception class of each failure's code.
class RejectionWatch {
 public:
  explicit RejectionWatch(nothrow::RejectionWatch w) noexcept : w_(std::move(w)) {}

  /// The next rejection, or nullopt when none came within `timeout_ms`.
  std::optional<RecordedRejection> next(std::uint64_t timeout_ms) const {
    return detail::value_or_throw(w_.next(timeout_ms));
  }
  std::optional<RecordedRejection> next(std::uint64_t timeout_ms, const Cancel &cancel) const {
    return detail::value_or_throw(w_.next(timeout_ms, cancel));
  }

  /// The non-throwing calls on the same watch.
  const nothrow::RejectionWatch &nothrow() const noexcept { return w_; }
  const fencing_rejection_watch *handle() const noexcept { return w_.handle(); }

 private:
  nothrow::RejectionWatch w_;
};

/// The store, throwing the exception class of each failure's code.
/// Movable, not copyable; freed by its destructor.
class Store {
 public:
  static Store open(std::string_view url) { return Store(detail::value_or_throw(nothrow::Store::open(url))); }

  const fencing_store *handle() const noexcept { return s_.handle(); }
  /// The non-throwing calls on the same handle.
  const nothrow::Store &nothrow() const noexcept { return s_; }
  std::string location() const { return detail::value_or_throw(s_.location()); }
  std::string backend_kind() const { return detail::value_or_throw(s_.backend_kind()); }
  bool is_closed() const { return detail::value_or_throw(s_.is_closed()); }

  std::uint64_t next_token(std::string_view scope) const { return detail::value_or_throw(s_.next_token(scope)); }
  std::uint64_t fence_of(std::string_view scope) const { return detail::value_or_throw(s_.fence_of(scope)); }
  Lease acquire(std::string_view scope, std::string_view holder, std::uint64_t ttl_ms) const {
    return detail::value_or_throw(s_.acquire(scope, holder, ttl_ms));
  }
  Lease renew(std::string_view scope, std::uint64_t token, std::uint64_t ttl_ms) const {
    return detail::value_or_throw(s_.renew(scope, token, ttl_ms));
  }
  bool release(std::string_view scope, std::uint64_t token) const {
    return detail::value_or_throw(s_.release(scope, token));
  }
  Receipt put(std::string_view scope, std::string_view key, const void *value, std::size_t len,
              const Fence &fence) const {
    return detail::value_or_throw(s_.put(scope, key, value, len, fence));
  }
  Receipt put(std::string_view scope, std::string_view key, std::string_view value, const Fence &fence) const {
    return detail::value_or_throw(s_.put(scope, key, value, fence));
  }
  std::optional<Entry> get(std::string_view scope, std::string_view key,
                           const std::optional<Fence> &fence = std::nullopt) const {
    return detail::value_or_throw(s_.get(scope, key, fence));
  }
  Lease acquire_wait(std::string_view scope, std::string_view holder, std::uint64_t ttl_ms,
                     std::uint64_t timeout_ms) const {
    return detail::value_or_throw(s_.acquire_wait(scope, holder, ttl_ms, timeout_ms));
  }
  Lease acquire_wait(std::string_view scope, std::string_view holder, std::uint64_t ttl_ms, std::uint64_t timeout_ms,
                     const Cancel &cancel) const {
    return detail::value_or_throw(s_.acquire_wait(scope, holder, ttl_ms, timeout_ms, cancel));
  }
  std::uint64_t advance_counter(std::string_view scope, std::uint64_t floor) const {
    return detail::value_or_throw(s_.advance_counter(scope, floor));
  }
  Receipt remove(std::string_view scope, std::string_view key, const Fence &fence) const {
    return detail::value_or_throw(s_.remove(scope, key, fence));
  }
  Receipt execute(std::string_view scope, const Fence &fence, const Op &op) const {
    return detail::value_or_throw(s_.execute(scope, fence, op));
  }
  std::vector<Receipt> apply(std::string_view scope, const Fence &fence, const std::vector<Op> &ops) const {
    return detail::value_or_throw(s_.apply(scope, fence, ops));
  }
  void claim(std::string_view scope, const Fence &fence) const { detail::value_or_throw(s_.claim(scope, fence)); }
  std::string etcd_check(std::string_view scope, const Fence &fence) const {
    return detail::value_or_throw(s_.etcd_check(scope, fence));
  }
  Page list(std::string_view scope, std::optional<std::string_view> after, std::size_t limit) const {
    return detail::value_or_throw(s_.list(scope, after, limit));
  }
  ScopeStatus status(std::string_view scope) const { return detail::value_or_throw(s_.status(scope)); }
  bool retire(std::string_view scope) const { return detail::value_or_throw(s_.retire(scope)); }
  std::uint64_t failover() const { return detail::value_or_throw(s_.failover()); }
  void advance_clock(std::uint64_t ms) const { detail::value_or_throw(s_.advance_clock(ms)); }
  void ping() const { detail::value_or_throw(s_.ping()); }
  Metrics metrics() const { return detail::value_or_throw(s_.metrics()); }
  std::vector<Rejection> rejections() const { return detail::value_or_throw(s_.rejections()); }
  std::string metrics_text() const { return detail::value_or_throw(s_.metrics_text()); }
  Events events(std::optional<std::string_view> scope, std::size_t limit) const {
    return detail::value_or_throw(s_.events(scope, limit));
  }
  LeaseGuard hold(std::string_view scope, std::string_view holder, std::uint64_t ttl_ms,
                  std::uint64_t timeout_ms = 0, LossCallback on_lost = nullptr) const {
    return LeaseGuard(detail::value_or_throw(s_.hold(scope, holder, ttl_ms, timeout_ms, std::move(on_lost))));
  }
  LeaseGuard hold(std::string_view scope, std::string_view holder, std::uint64_t ttl_ms, std::uint64_t timeout_ms,
                  const Cancel &cancel, LossCallback on_lost = nullptr) const {
    return LeaseGuard(detail::value_or_throw(s_.hold(scope, holder, ttl_ms, timeout_ms, cancel, std::move(on_lost))));
  }
  LeaseGuard keep_alive(const Lease &lease, LossCallback on_lost = nullptr) const {
    return LeaseGuard(detail::value_or_throw(s_.keep_alive(lease, std::move(on_lost))));
  }
  LeaseWatch watch(std::string_view scope) const { return LeaseWatch(detail::value_or_throw(s_.watch(scope))); }
  RejectionWatch watch_rejections(std::optional<std::string_view> scope = std::nullopt) const {
    return RejectionWatch(detail::value_or_throw(s_.watch_rejections(scope)));
  }
  void close() const { detail::value_or_throw(s_.close()); }

 private:
  explicit Store(nothrow::Store s) noexcept : s_(std::move(s)) {}
  nothrow::Store s_;
};

/// Fenced objects, throwing the exception class of each failure's code (see
/// nothrow::Objects). Movable, not copyable; freed by its destructor.
///
///   fencing::Objects objects = fencing::Objects::open("file:///srv/reports");
///   objects.put("reports/7.csv", csv, fencing::Fence{lease.token});
///     // a newer token was accepted for the path since: throws StaleTokenError
class Objects {
 public:
  static Objects open(std::string_view url) { return Objects(detail::value_or_throw(nothrow::Objects::open(url))); }

  const fencing_objects *handle() const noexcept { return o_.handle(); }
  /// The non-throwing calls on the same handle.
  const nothrow::Objects &nothrow() const noexcept { return o_; }

  Receipt put(std::string_view path, const void *value, std::size_t len, const Fence &fence,
              std::optional<std::uint64_t> expected_version = std::nullopt) const {
    return detail::value_or_throw(o_.put(path, value, len, fence, expected_version));
  }
  Receipt put(std::string_view path, std::string_view value, const Fence &fence,
              std::optional<std::uint64_t> expected_version = std::nullopt) const {
    return detail::value_or_throw(o_.put(path, value, fence, expected_version));
  }
  Receipt remove(std::string_view path, const Fence &fence,
                 std::optional<std::uint64_t> expected_version = std::nullopt) const {
    return detail::value_or_throw(o_.remove(path, fence, expected_version));
  }
  std::optional<Object> get(std::string_view path) const { return detail::value_or_throw(o_.get(path)); }

 private:
  explicit Objects(nothrow::Objects o) noexcept : o_(std::move(o)) {}
  nothrow::Objects o_;
};

inline void migrate(std::string_view url) { detail::value_or_throw(nothrow::migrate(url)); }
using nothrow::LogCallback;
inline void set_log_callback(LogCallback callback, std::uint32_t max_level = FENCING_LOG_INFO) {
  detail::value_or_throw(nothrow::set_log_callback(std::move(callback), max_level));
}
inline std::uint64_t token_parse(std::string_view text) { return detail::value_or_throw(nothrow::token_parse(text)); }
inline std::string token_format(std::uint64_t value) { return detail::value_or_throw(nothrow::token_format(value)); }
/// The rejection as an Error (throw_error(*e) throws its class), or nullopt.
inline std::optional<Error> error_from_sqlite(std::string_view message) {
  return detail::value_or_throw(nothrow::error_from_sqlite(message));
}
inline std::optional<Error> error_from_sqlstate(std::string_view sqlstate,
                                                std::optional<std::string_view> detail_text = std::nullopt) {
  return detail::value_or_throw(nothrow::error_from_sqlstate(sqlstate, detail_text));
}

#endif  // FENCING_HPP_EXCEPTIONS

}  // namespace fencing

#endif  // FENCING_HPP
