// The allreduce of data-parallel training alone: one in-place sum of a float buffer the size of the
// gradients of bench configs a-c, timed after a barrier so that waiting for a slower rank is not
// counted (the trainer's figure in train.log includes that wait). Rank 0 prints min and median.
//   mpirun -np 2 build/bench/bench_allreduce [--reps N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "training/distributed.hpp"

using namespace pelab;

int main(int argc, char** argv) {
  const dist::Session session(&argc, &argv);
  int reps = 50;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::max(1, std::stoi(argv[i + 1]));
  if (!dist::active()) {
    std::fprintf(stderr, "bench_allreduce: run it under mpirun (and build with MPI)\n");
    return 2;
  }
  struct Cfg {
    const char* name;
    std::size_t d, layers, vocab;
  };
  // Parameters of the bench model: per layer 12 d^2 + 13 d (qkv, out projection, MLP of width 4d with
  // biases, two LayerNorms), plus embedding and untied head (vocab x d each) and the final LayerNorm.
  // (c) gives 3,169,792 = 12.68 MB, what pelab train's train.log reports for it.
  const Cfg cfgs[] = {{"a", 64, 2, 20}, {"b", 128, 4, 20}, {"c", 256, 4, 20}};
  if (dist::rank() == 0)
    std::printf("allreduce (sum, float32, in place) over %d ranks, %d reps after 3 warm-up, a barrier before each\n"
                "cfg  parameters        MB    min ms  median ms   GB/s (algorithm bandwidth, median)\n",
                dist::size(), reps);
  for (const Cfg& c : cfgs) {
    const std::size_t n = c.layers * (12 * c.d * c.d + 13 * c.d) + 2 * c.vocab * c.d + 2 * c.d;
    std::vector<float> buf(n, 1.0f);
    std::vector<double> ms;
    for (int r = 0; r < reps + 3; ++r) {
      dist::barrier();
      const auto t0 = std::chrono::steady_clock::now();
      dist::allreduce_sum(buf.data(), buf.size());
      const double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (r >= 3) ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    const double med = ms[ms.size() / 2], mb = double(n) * 4 / 1e6;
    if (dist::rank() == 0)
      std::printf("%-4s %10zu  %8.2f  %8.3f  %9.3f  %6.2f\n", c.name, n, mb, ms.front(), med, mb / 1e3 / (med / 1e3));
  }
  return 0;
}
