// Whether this test binary is built with AddressSanitizer (clang: __has_feature; gcc: __SANITIZE_ADDRESS__).
// Under it the caching allocator's counters are not what holds the memory, `ulimit -v` caps ASan's shadow,
// and CPU times run several times longer: the tests that read those skip or relax with this one flag.
#pragma once

namespace pelab::test {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

}  // namespace pelab::test
