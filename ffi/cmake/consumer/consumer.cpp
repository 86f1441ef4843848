// The C header from C++17, linked through the same CMake targets.
#include <fencing.h>

#include <cstdint>
#include <cstdio>
#include <string_view>

int main() {
  if (std::string_view(fencing_version()) != FENCING_VERSION) return 1;
  fencing_store *s = nullptr;
  if (fencing_store_open("memory:", &s) != FENCING_OK) return 2;
  fencing_lease l{};
  if (fencing_acquire(s, "report", "cpp", 1000, &l) != FENCING_OK) return 3;
  fencing_fence f{};
  f.token = l.token;
  fencing_receipt r{};
  const std::uint8_t v[] = {'x'};
  if (fencing_put(s, "report", "body", v, sizeof v, &f, &r) != FENCING_OK) return 4;
  fencing_store_free(s);
  std::printf("C++ consumer: libfencing %s, token %llu wrote version %llu\n", fencing_version(),
              static_cast<unsigned long long>(l.token), static_cast<unsigned long long>(r.version));
  return 0;
}
