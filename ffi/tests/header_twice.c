/* The header compiles on its own as strict C11 (-Wall -Wextra -Wpedantic
 * -Werror) and can be included twice. Built as part of every test build. */
#include "fencing.h"
#include "fencing.h"

/* Every type and macro is usable from a translation unit that includes
 * nothing else. */
_Static_assert(FENCING_OK == 0, "FENCING_OK is 0");
_Static_assert(FENCING_HOLDER_CAPACITY == FENCING_MAX_HOLDER_BYTES + 1, "holder capacity");
_Static_assert(sizeof(fencing_status) == 4, "fencing_status is 32 bits");
_Static_assert(sizeof(((fencing_lease *)0)->holder) == FENCING_HOLDER_CAPACITY, "holder array");
_Static_assert(sizeof(((fencing_lease *)0)->scope) == FENCING_SCOPE_CAPACITY, "scope array");

int fencing_header_twice(void);
int fencing_header_twice(void) {
  fencing_fence f = {.token = 1};
  fencing_status (*put)(const fencing_store *, const char *, const char *, const uint8_t *, size_t,
                        const fencing_fence *, fencing_receipt *) = fencing_put;
  return (int)f.token + (put != 0) + (int)sizeof(FENCING_VERSION);
}

/* The token limits are unsigned 64-bit constants: arithmetic on them in a
 * user's C neither overflows a (signed) long nor changes type. */
_Static_assert(FENCING_MAX_TOKEN + 1 == UINT64_C(9223372036854775808), "MAX_TOKEN + 1 fits");
_Static_assert(FENCING_MAX_TOKEN - FENCING_MAX_TOKEN - 1 > 0, "MAX_TOKEN is unsigned");
_Static_assert(sizeof(FENCING_MAX_TOKEN) == sizeof(uint64_t), "MAX_TOKEN is 64 bits");
_Static_assert(FENCING_FAILOVER_STEP - FENCING_FAILOVER_STEP - 1 > 0, "FAILOVER_STEP is unsigned");
