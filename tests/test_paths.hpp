// Where the tests find the source tree, the fixtures and the programs they run. The paths are compiled
// into one file (tests/helpers/test_paths.cpp, given them by tests/CMakeLists.txt), not into every test:
// a test's object file then does not depend on where the tree was cloned or built, so ccache serves it
// to any clone (.ci/run).
#pragma once

namespace pelab::test {
const char* source_dir();    // the source tree
const char* fixtures_dir();  // tests/fixtures
const char* pelab_binary();  // the `pelab` command of this build
const char* reexec_child();  // tests/helpers/blas_reexec_child of this build
}  // namespace pelab::test

#define PELAB_SOURCE_DIR (::pelab::test::source_dir())
#define PELAB_FIXTURES_DIR (::pelab::test::fixtures_dir())
#define PELAB_BINARY (::pelab::test::pelab_binary())
#define PELAB_REEXEC_CHILD (::pelab::test::reexec_child())
