// The one test file that holds absolute paths (tests/test_paths.hpp says why); CMake defines them here.
#include "test_paths.hpp"

namespace pelab::test {
const char* source_dir() { return PELAB_TEST_SOURCE_DIR; }
const char* fixtures_dir() { return PELAB_TEST_SOURCE_DIR "/tests/fixtures"; }
const char* pelab_binary() { return PELAB_TEST_PELAB_BINARY; }
const char* reexec_child() { return PELAB_TEST_REEXEC_CHILD; }
}  // namespace pelab::test
