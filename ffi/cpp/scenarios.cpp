// Replays every shared scenario (tests/scenarios/*.json) through the C++17
// face (include/fencing.hpp), on one backend:
//
//   scenarios memory|sqlite|postgres|etcd SCENARIO_DIR
//
// (sqlite: a fresh database file per scenario; postgres: a fresh schema per
// scenario on FENCING_TEST_PG_URL's server; etcd: a fresh key prefix per
// scenario on FENCING_TEST_ETCD_CLUSTER's members). It follows ffi/tests/scenarios.c
// and the Rust runner (tests/runner/src/lib.rs): the same argument decoding,
// result rendering and subset comparison. The object_* steps run on one
// `memory:` fencing::nothrow::Objects per scenario, opened by the first of them.
//
// Every step runs through fencing::nothrow::Store, fencing::nothrow::LeaseGuard
// and fencing::nothrow::Objects,
// so a string with a NUL inside reaches the face and is refused there; failures
// are rendered from the face's fencing::Error. Decimal text is read and written
// through the face too (fencing::nothrow::token_parse, token_format).
#include <fencing.hpp>

#include <jansson.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace {

using fencing::Error;
namespace nothrow = fencing::nothrow;

// ----- outcomes -----

// A malformed scenario file: the runner's failure, not the step's.
struct Malformed {
  std::string why;
};
// An argument no call can take (a JSON number where decimal text is
// required, ...): INVALID_ARGUMENT, as the Rust runner reports it.
struct Invalid {};

struct Outcome {
  bool ok;
  json_t *value;  // the result (ok) or the rendered error; owned
};

json_t *text_of_token(std::uint64_t v) {
  auto text = nothrow::token_format(v);
  return text ? json_stringn(text.value().data(), text.value().size()) : json_string("(token_format failed)");
}

json_t *text_or_null(const std::string &s) { return s.empty() ? json_null() : json_stringn(s.data(), s.size()); }
json_t *text_or_null(const std::optional<std::string> &s) { return s ? text_or_null(*s) : json_null(); }

// An Error as the scenario files spell it.
json_t *render_error(const Error &e) {
  json_t *v = json_object();
  json_object_set_new(v, "code", json_string(std::string(fencing::status_name(e.status)).c_str()));
  switch (e.status) {
    case fencing::Status::StaleToken:
      json_object_set_new(v, "scope", text_or_null(e.scope));
      json_object_set_new(v, "presented", text_of_token(e.presented));
      json_object_set_new(v, "current", text_of_token(e.current));
      break;
    case fencing::Status::SequenceOutOfOrder:
      json_object_set_new(v, "presented", text_of_token(e.presented));
      json_object_set_new(v, "last", text_of_token(e.last));
      break;
    case fencing::Status::VersionMismatch:
      json_object_set_new(v, "expected", text_of_token(e.expected));
      json_object_set_new(v, "actual", text_of_token(e.actual));
      break;
    case fencing::Status::NotFound:
      json_object_set_new(v, "scope", text_or_null(e.scope));
      json_object_set_new(v, "key", text_or_null(e.key));
      break;
    case fencing::Status::LeaseHeld:
      json_object_set_new(v, "scope", text_or_null(e.scope));
      json_object_set_new(v, "holder", text_or_null(e.holder));
      json_object_set_new(v, "token", text_of_token(e.token));
      json_object_set_new(v, "remaining_ms", json_integer(static_cast<json_int_t>(e.remaining_ms)));
      break;
    case fencing::Status::LeaseLost:
      json_object_set_new(v, "scope", text_or_null(e.scope));
      json_object_set_new(v, "current_token", e.current_token ? text_of_token(e.current_token) : json_null());
      json_object_set_new(v, "current_holder", text_or_null(e.current_holder));
      break;
    case fencing::Status::Backend:
      json_object_set_new(v, "kind", text_or_null(e.kind));
      break;
    default:
      break;
  }
  return v;
}

Outcome success(json_t *v) { return Outcome{true, v}; }
Outcome failure(const Error &e) { return Outcome{false, render_error(e)}; }

// ----- argument decoding (tests/runner/src/lib.rs, `Args`) -----

// A string field: literal text or {"repeat": "ab", "count": 3}.
std::optional<std::string> text_value(json_t *v) {
  if (json_is_string(v)) return std::string(json_string_value(v), json_string_length(v));
  if (json_is_object(v)) {
    json_t *unit = json_object_get(v, "repeat");
    json_t *count = json_object_get(v, "count");
    if (!json_is_string(unit) || !json_is_integer(count) || json_integer_value(count) < 0) return std::nullopt;
    std::string u(json_string_value(unit), json_string_length(unit)), out;
    for (json_int_t i = 0; i < json_integer_value(count); ++i) out += u;
    return out;
  }
  return std::nullopt;
}

// A required string argument (it may hold a NUL: the face refuses it).
std::string arg_string(json_t *step, const char *name) {
  auto t = text_value(json_object_get(step, name));
  if (!t) throw Malformed{std::string("missing string \"") + name + "\""};
  return *t;
}

bool present(json_t *step, const char *name) {
  json_t *v = json_object_get(step, name);
  return v != nullptr && !json_is_null(v);
}

// An optional string: nullopt when absent or null; not a string is invalid.
std::optional<std::string> arg_optional_string(json_t *step, const char *name) {
  if (!present(step, name)) return std::nullopt;
  auto t = text_value(json_object_get(step, name));
  if (!t) throw Invalid{};
  return t;
}

// Decimal text through the binding's parser ("0" parses; calls refuse it).
std::uint64_t parse_decimal(json_t *v) {
  if (!json_is_string(v)) throw Invalid{};
  auto n = nothrow::token_parse(std::string_view(json_string_value(v), json_string_length(v)));
  if (!n) throw Invalid{};
  return n.value();
}

std::uint64_t arg_token(json_t *step, const char *name) { return parse_decimal(json_object_get(step, name)); }

std::optional<std::uint64_t> arg_optional_decimal(json_t *step, const char *name) {
  if (!present(step, name)) return std::nullopt;
  return parse_decimal(json_object_get(step, name));
}

// A non-negative JSON integer (durations, limit).
std::optional<std::uint64_t> arg_optional_u64(json_t *step, const char *name) {
  if (!present(step, name)) return std::nullopt;
  json_t *v = json_object_get(step, name);
  if (!json_is_integer(v) || json_integer_value(v) < 0) throw Invalid{};
  return static_cast<std::uint64_t>(json_integer_value(v));
}

std::uint64_t arg_ms(json_t *step, const char *name) {
  auto v = arg_optional_u64(step, name);
  if (!v) throw Invalid{};
  return *v;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string arg_value(json_t *step) {
  if (auto t = text_value(json_object_get(step, "value"))) return *t;
  json_t *hex = json_object_get(step, "value_hex");
  if (!json_is_string(hex)) throw Invalid{};
  const char *h = json_string_value(hex);
  std::size_t n = json_string_length(hex);
  if (n % 2 != 0) throw Invalid{};
  std::string out;
  for (std::size_t i = 0; i < n; i += 2) {
    int hi = hex_digit(h[i]), lo = hex_digit(h[i + 1]);
    if (hi < 0 || lo < 0) throw Invalid{};
    out += static_cast<char>(hi * 16 + lo);
  }
  return out;
}

// The fence a step presents: token, and seq and holder when given.
fencing::Fence step_fence(json_t *step) {
  return fencing::Fence{arg_token(step, "token"), arg_optional_decimal(step, "seq"),
                        arg_optional_string(step, "holder")};
}

// One put or delete of an `apply` (or a put/delete step), with its condition.
fencing::Op step_op(json_t *item, bool is_put, std::string key) {
  auto expected = arg_optional_decimal(item, "expected_version");
  return is_put ? fencing::Op::put(std::move(key), arg_value(item), expected)
                : fencing::Op::remove(std::move(key), expected);
}

// ----- rendering results -----

json_t *render_lease(const std::string &scope, const fencing::Lease &l) {
  json_t *v = json_object();
  json_object_set_new(v, "scope", json_stringn(scope.data(), scope.size()));
  json_object_set_new(v, "holder", json_stringn(l.holder.data(), l.holder.size()));
  json_object_set_new(v, "token", text_of_token(l.token));
  json_object_set_new(v, "ttl_ms", json_integer(static_cast<json_int_t>(l.ttl_ms)));
  json_object_set_new(v, "remaining_ms", json_integer(static_cast<json_int_t>(l.remaining_ms)));
  return v;
}

json_t *render_receipt(std::uint64_t version, std::uint64_t token) {
  return json_pack("{s:o,s:o}", "version", text_of_token(version), "token", text_of_token(token));
}

// What `get` (an Entry) and `object_get` (an Object) answer.
template <class Found>
json_t *render_found(const std::optional<Found> &e) {
  json_t *v = json_object();
  if (!e) {
    json_object_set_new(v, "found", json_false());
    return v;
  }
  std::string hex;
  char byte[3];
  for (std::uint8_t b : e->value) {
    std::snprintf(byte, sizeof byte, "%02x", b);
    hex += byte;
  }
  json_object_set_new(v, "found", json_true());
  json_object_set_new(v, "value_hex", json_string(hex.c_str()));
  json_object_set_new(v, "value_len", json_integer(static_cast<json_int_t>(e->value.size())));
  json_object_set_new(v, "version", text_of_token(e->version));
  json_object_set_new(v, "token", text_of_token(e->token));
  // The text form only when the bytes are UTF-8 (jansson validates).
  const char *bytes = e->value.empty() ? "" : reinterpret_cast<const char *>(e->value.data());
  json_t *as_text = json_stringn(bytes, e->value.size());
  if (as_text) json_object_set_new(v, "value", as_text);
  return v;
}

Outcome metrics(const nothrow::Store &store) {
  auto m = store.metrics();
  if (!m) return failure(m.error());
  auto rejections = store.rejections();
  if (!rejections) return failure(rejections.error());
  json_t *v = json_object();
  auto counter = [&](const char *name, std::uint64_t n) {
    json_object_set_new(v, name, json_string(std::to_string(n).c_str()));
  };
  counter("tokens_issued", m.value().tokens_issued);
  counter("leases_acquired", m.value().leases_acquired);
  counter("acquire_conflicts", m.value().acquire_conflicts);
  counter("renewals", m.value().renewals);
  counter("renewal_failures", m.value().renewal_failures);
  counter("releases", m.value().releases);
  counter("writes_accepted", m.value().writes_accepted);
  counter("stale_rejections", m.value().stale_rejections);
  counter("sequence_rejections", m.value().sequence_rejections);
  counter("version_conflicts", m.value().version_conflicts);
  counter("pauses_detected", m.value().pauses_detected);
  counter("longest_pause_ms", m.value().longest_pause_ms);
  json_t *items = json_array();
  for (const fencing::Rejection &r : rejections.value()) {
    json_array_append_new(items, json_pack("{s:s,s:o,s:o,s:o,s:o,s:o}", "code",
                                           std::string(fencing::status_name(r.code)).c_str(), "scope",
                                           json_stringn(r.scope.data(), r.scope.size()), "key", text_or_null(r.key),
                                           "presented", text_of_token(r.presented), "current",
                                           text_of_token(r.current), "holder", text_or_null(r.holder)));
  }
  json_object_set_new(v, "rejections", items);
  return success(v);
}

// A Result from the face: its value rendered, or its Error.
template <class T, class Render>
Outcome from(fencing::Result<T> r, Render render) {
  if (!r.ok()) return failure(r.error());
  return success(render(r.value()));
}

json_t *empty(const std::monostate &) { return json_object(); }

// ----- one scenario's store and holds -----

// For the summary: steps run through the face, and refused by the runner's
// own decoding (INVALID_ARGUMENT, see above).
std::size_t steps_face = 0, steps_runner = 0;

struct Replay {
  nothrow::Store store;
  // `hold` keeps a lease alive until the scope's `finish` (one per scope);
  // holds no `finish` ended are released by their destructors.
  std::map<std::string, nothrow::LeaseGuard> holds;
  // The scenario's objects (`memory:`), opened by its first object_* step.
  std::optional<nothrow::Objects> objects;

  Outcome object_step(const std::string &op, json_t *step) {
    if (op == "object_open") {
      auto other = nothrow::Objects::open(arg_string(step, "url"));
      return other.ok() ? success(json_object()) : failure(other.error());
    }
    const std::string path = arg_string(step, "path");
    if (!objects) {
      auto opened = nothrow::Objects::open("memory:");
      if (!opened.ok()) return failure(opened.error());
      objects.emplace(std::move(opened).value());
    }
    auto receipt = [](const fencing::Receipt &r) { return render_receipt(r.version, r.token); };
    if (op == "object_put" || op == "object_delete") {
      bool is_put = op == "object_put";
      fencing::Fence fence = step_fence(step);
      fencing::Op one = step_op(step, is_put, path);
      if (is_put) return from(objects->put(path, one.value, fence, one.expected_version), receipt);
      return from(objects->remove(path, fence, one.expected_version), receipt);
    }
    if (op == "object_get") return from(objects->get(path), render_found<fencing::Object>);
    throw Malformed{"unknown op \"" + op + "\""};
  }

  Outcome finish(const std::string &scope, json_t *step) {
    const char *work = json_string_value(json_object_get(step, "work"));
    bool failed = work && std::strcmp(work, "failed") == 0;
    if (!work || (!failed && std::strcmp(work, "ok") != 0)) throw Malformed{"\"work\" must be \"ok\" or \"failed\""};
    auto it = holds.find(scope);
    if (it == holds.end()) throw Malformed{"no hold step holds \"" + scope + "\""};
    nothrow::LeaseGuard guard = std::move(it->second);
    holds.erase(it);
    fencing::Result<std::monostate> verdict = guard.finish(failed);
    if (verdict.ok()) return success(json_pack("{s:b}", "released", 1));
    Outcome o = failure(verdict.error());
    json_object_set_new(o.value, "cause", verdict.error().work_error_is_cause ? json_string("work") : json_null());
    return o;
  }

  Outcome execute(json_t *step) {
    const char *op_text = json_string_value(json_object_get(step, "op"));
    if (!op_text) throw Malformed{"step needs an \"op\""};
    const std::string op = op_text;
    if (op == "open") {
      auto other = nothrow::Store::open(arg_string(step, "url"));
      if (!other.ok()) return failure(other.error());
      (void)other.value().close();
      return success(json_object());
    }
    if (op == "close") return from(store.close(), empty);
    if (op == "advance_clock") return from(store.advance_clock(arg_ms(step, "ms")), empty);
    if (op == "metrics") return metrics(store);
    if (op.rfind("object_", 0) == 0) return object_step(op, step);

    const std::string scope = arg_string(step, "scope");
    auto token_json = [](std::uint64_t t) { return json_pack("{s:o}", "token", text_of_token(t)); };
    auto render = [&](const fencing::Lease &l) { return render_lease(scope, l); };
    if (op == "hold") {
      std::string holder = arg_string(step, "holder");
      std::uint64_t ttl = arg_ms(step, "ttl_ms");
      if (holds.count(scope)) throw Malformed{"\"" + scope + "\" is already held by a hold step"};
      auto guard = store.hold(scope, holder, ttl);
      if (!guard.ok()) return failure(guard.error());
      auto lease = guard.value().lease();
      if (!lease.ok()) return failure(lease.error());
      holds.emplace(scope, std::move(guard).value());
      return success(render(lease.value()));
    }
    if (op == "finish") return finish(scope, step);
    if (op == "next_token") return from(store.next_token(scope), token_json);
    if (op == "fence_of") {
      return from(store.fence_of(scope), [](std::uint64_t f) { return json_pack("{s:o}", "fence", text_of_token(f)); });
    }
    if (op == "acquire") {
      std::string holder = arg_string(step, "holder");
      return from(store.acquire(scope, holder, arg_ms(step, "ttl_ms")), render);
    }
    if (op == "renew") {
      std::uint64_t token = arg_token(step, "token");
      return from(store.renew(scope, token, arg_ms(step, "ttl_ms")), render);
    }
    if (op == "release") {
      return from(store.release(scope, arg_token(step, "token")),
                  [](bool released) { return json_pack("{s:b}", "released", released); });
    }
    if (op == "acquire_wait") {
      std::string holder = arg_string(step, "holder");
      std::uint64_t ttl = arg_ms(step, "ttl_ms"), timeout = arg_ms(step, "timeout_ms");
      return from(store.acquire_wait(scope, holder, ttl, timeout), render);
    }
    if (op == "advance_counter") {
      return from(store.advance_counter(scope, arg_token(step, "floor")),
                  [](std::uint64_t c) { return json_pack("{s:o}", "counter", text_of_token(c)); });
    }
    auto receipt = [](const fencing::Receipt &r) { return render_receipt(r.version, r.token); };
    if (op == "put" || op == "delete") {
      bool is_put = op == "put";
      std::string key = arg_string(step, "key");
      fencing::Fence fence = step_fence(step);
      fencing::Op one = step_op(step, is_put, key);
      if (one.expected_version) return from(store.execute(scope, fence, one), receipt);
      if (is_put) return from(store.put(scope, key, one.value, fence), receipt);
      return from(store.remove(scope, key, fence), receipt);
    }
    if (op == "apply") {
      fencing::Fence fence = step_fence(step);
      json_t *list = json_object_get(step, "ops");
      if (!json_is_array(list)) throw Invalid{};
      std::vector<fencing::Op> ops;
      for (std::size_t i = 0; i < json_array_size(list); i++) {
        json_t *item = json_array_get(list, i);
        if (auto k = text_value(json_object_get(item, "put"))) {
          ops.push_back(step_op(item, true, *k));
        } else if (auto d = text_value(json_object_get(item, "delete"))) {
          ops.push_back(step_op(item, false, *d));
        } else {
          throw Invalid{};
        }
      }
      return from(store.apply(scope, fence, ops), [&](const std::vector<fencing::Receipt> &rs) {
        json_t *items = json_array();
        for (const fencing::Receipt &r : rs) json_array_append_new(items, receipt(r));
        return json_pack("{s:o}", "receipts", items);
      });
    }
    if (op == "claim") return from(store.claim(scope, step_fence(step)), empty);
    if (op == "get") {
      std::string key = arg_string(step, "key");
      std::optional<fencing::Fence> fence;
      if (present(step, "token")) fence = step_fence(step);
      return from(store.get(scope, key, fence), render_found<fencing::Entry>);
    }
    if (op == "list") {
      auto after = arg_optional_string(step, "after");
      std::uint64_t limit = arg_optional_u64(step, "limit").value_or(100);
      return from(store.list(scope, after, static_cast<std::size_t>(limit)), [](const fencing::Page &p) {
        json_t *keys = json_array();
        for (const std::string &k : p.keys) json_array_append_new(keys, json_stringn(k.data(), k.size()));
        return json_pack("{s:o,s:o}", "keys", keys, "next", text_or_null(p.next));
      });
    }
    if (op == "status") {
      return from(store.status(scope), [&](const fencing::ScopeStatus &st) {
        return json_pack("{s:o,s:o,s:o,s:s}", "counter", text_of_token(st.counter), "fence", text_of_token(st.fence),
                         "lease", st.lease ? render(*st.lease) : json_null(), "entries",
                         std::to_string(st.entries).c_str());
      });
    }
    if (op == "retire") {
      return from(store.retire(scope), [](bool retired) { return json_pack("{s:b}", "retired", retired); });
    }
    throw Malformed{"unknown op \"" + op + "\""};
  }
};

// ----- comparison (tests/runner/src/lib.rs, `subset`) -----

std::string dump(json_t *v) {
  char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
  std::string out = s ? s : "?";
  std::free(s);
  return out;
}

// Empty when `got` contains `want`; else where and how it differs.
std::string subset(json_t *want, json_t *got) {
  if (json_is_object(want) && json_is_object(got)) {
    const char *k;
    json_t *wv;
    json_object_foreach(want, k, wv) {
      json_t *gv = json_object_get(got, k);
      if (!gv) {
        if (json_is_null(wv)) continue;
        return std::string(k) + ": missing";
      }
      std::string why = subset(wv, gv);
      if (!why.empty()) return std::string(k) + ": " + why;
    }
    return "";
  }
  if (json_is_array(want) && json_is_array(got) && json_array_size(want) == json_array_size(got)) {
    for (std::size_t i = 0; i < json_array_size(want); i++) {
      std::string why = subset(json_array_get(want, i), json_array_get(got, i));
      if (!why.empty()) return "[" + std::to_string(i) + "]: " + why;
    }
    return "";
  }
  if (json_equal(want, got)) return "";
  return "expected " + dump(want) + ", got " + dump(got);
}

// Runs one step and compares; empty when it passed, else why not.
std::string run_step(Replay &replay, json_t *step) {
  json_t *want_error = json_object_get(step, "error");
  json_t *want = json_object_get(step, "expect");
  Outcome o{false, nullptr};
  try {
    o = replay.execute(step);
    ++steps_face;
  } catch (const Malformed &m) {
    return "malformed step: " + m.why;
  } catch (const Invalid &) {
    ++steps_runner;
    o = Outcome{false, json_pack("{s:s}", "code", "INVALID_ARGUMENT")};
  }
  std::string why;
  if (want_error && !o.ok) {
    why = subset(want_error, o.value);
  } else if (want_error) {
    why = "expected an error, got success " + dump(o.value);
  } else if (!o.ok) {
    why = "unexpected error " + dump(o.value);
  } else if (want) {
    why = subset(want, o.value);
  }
  json_decref(o.value);
  return why;
}

// ----- files -----

// Store options as the URL query: {"clock": "manual", "strict": true}.
std::optional<std::string> options_query(json_t *doc) {
  json_t *options = json_object_get(doc, "options");
  std::string query;
  if (!options) return query;
  if (!json_is_object(options)) return std::nullopt;
  const char *k;
  json_t *v;
  json_object_foreach(options, k, v) {
    const char *value = json_is_string(v) ? json_string_value(v)
                        : json_is_true(v) ? "true"
                        : json_is_false(v) ? "false"
                                           : nullptr;
    if (!value) return std::nullopt;
    query += (query.empty() ? "" : "&") + std::string(k) + "=" + value;
  }
  return query;
}

std::string with_query(const std::string &base, const std::string &query) {
  if (query.empty()) return base;
  return base + (base.find('?') == std::string::npos ? "?" : "&") + query;
}

// Replays one file; returns whether every step passed.
bool run_file(const std::filesystem::path &path, const std::string &backend, const std::string &base) {
  const std::string name = path.filename().string();
  json_error_t jerr;
  json_t *doc = json_load_file(path.c_str(), JSON_ALLOW_NUL, &jerr);
  json_t *steps = doc ? json_object_get(doc, "steps") : nullptr;
  auto query = doc ? options_query(doc) : std::nullopt;
  if (!doc || !json_is_array(steps) || !query) {
    std::fprintf(stderr, "FAIL %s [%s]: cannot read the scenario (%s)\n", name.c_str(), backend.c_str(),
                 doc ? "bad steps or options" : jerr.text);
    json_decref(doc);
    return false;
  }
  const std::string url = with_query(base, *query);
  auto opened = nothrow::Store::open(url);
  if (!opened.ok()) {
    std::fprintf(stderr, "FAIL %s [%s]: open %s: %s\n", name.c_str(), backend.c_str(), url.c_str(),
                 opened.error().message.c_str());
    json_decref(doc);
    return false;
  }
  bool pass = true;
  {
    Replay replay{std::move(opened).value(), {}, std::nullopt};
    for (std::size_t i = 0; i < json_array_size(steps); i++) {
      json_t *step = json_array_get(steps, i);
      std::string why = run_step(replay, step);
      if (!why.empty()) {
        std::fprintf(stderr, "FAIL %s [%s] step %zu %.300s: %s\n", name.c_str(), backend.c_str(), i + 1,
                     dump(step).c_str(), why.c_str());
        pass = false;
        break;
      }
    }
    replay.holds.clear();
    (void)replay.store.close();
  }
  json_decref(doc);
  return pass;
}

}  // namespace

int main(int argc, char **argv) {
  const std::string backend = argc == 3 ? argv[1] : "";
  if (backend != "memory" && backend != "sqlite" && backend != "postgres" && backend != "etcd") {
    std::fprintf(stderr, "usage: %s memory|sqlite|postgres|etcd SCENARIO_DIR\n", argv[0]);
    return 2;
  }
  const char *pg = std::getenv("FENCING_TEST_PG_URL");
  if (backend == "postgres" && (!pg || !*pg)) {
    std::fprintf(stderr, "postgres: FENCING_TEST_PG_URL is not set\n");
    return 2;
  }
  const char *etcd = std::getenv("FENCING_TEST_ETCD_CLUSTER");
  if (backend == "etcd" && (!etcd || !*etcd)) {
    std::fprintf(stderr, "etcd: FENCING_TEST_ETCD_CLUSTER is not set\n");
    return 2;
  }
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto &ent : std::filesystem::directory_iterator(argv[2], ec)) {
    if (ent.path().extension() == ".json") files.push_back(ent.path());
  }
  if (ec) {
    std::fprintf(stderr, "%s: %s\n", argv[2], ec.message().c_str());
    return 2;
  }
  std::sort(files.begin(), files.end());
  char tmpdir[] = "/tmp/fencing-cpp-scenarios-XXXXXX";
  if (!mkdtemp(tmpdir)) {
    std::perror("mkdtemp");
    return 2;
  }
  // A schema (or key prefix) no earlier run used: runs share one server.
  const std::string run = "t_cpp_" + std::to_string(getpid()) + "_" +
                          std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  int passed = 0, failed = 0;
  for (std::size_t i = 0; i < files.size(); i++) {
    std::string base = "memory:";
    if (backend == "sqlite") base = "sqlite:" + std::string(tmpdir) + "/" + std::to_string(i) + ".db";
    if (backend == "postgres") base = with_query(pg, "schema=" + run + "_" + std::to_string(i));
    if (backend == "etcd") base = "etcd://" + std::string(etcd) + "/" + run + "_" + std::to_string(i);
    (run_file(files[i], backend, base) ? passed : failed)++;
  }
  std::filesystem::remove_all(tmpdir, ec);
  if (files.size() < 30) {
    std::fprintf(stderr, "expected at least 30 scenarios in %s, found %zu\n", argv[2], files.size());
    failed++;
  }
  std::printf("C++ scenarios on %s: %d passed, %d failed (steps: %zu through the face, %zu refused by the runner)\n",
              backend.c_str(), passed, failed, steps_face, steps_runner);
  return failed == 0 ? 0 : 1;
}
