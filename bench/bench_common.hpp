// Small helpers the training benchmarks share (bench_train.cpp, bench_recipe.cpp).
#pragma once

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "core/parallel.hpp"  // parallel::check_threads
#include "core/tensor.hpp"  // pelab::Error

namespace pelab::bench {

// This process's CPU time in seconds (all threads).
inline double cpu_now_s() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// A command-line integer in [lo, 1e6]; Error naming the flag otherwise.
inline int parse_int(const std::string& flag, const char* s, int lo) {
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (end == s || *end || v < lo || v > 1000000)
    throw Error(flag + ": expected an integer >= " + std::to_string(lo) + ", got '" + s + "'");
  return static_cast<int>(v);
}

// --threads N: an integer the thread pool accepts (parallel::check_threads); Error naming the flag otherwise.
inline int parse_threads(const std::string& flag, const char* s) {
  const int n = parse_int(flag, s, 1);
  const std::string why = parallel::check_threads(n, flag);
  if (!why.empty()) throw Error(why);
  return n;
}

}  // namespace pelab::bench
