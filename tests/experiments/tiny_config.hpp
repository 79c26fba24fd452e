// A config that trains and evaluates in well under a second, for tests that run real runs and sweeps:
// copy at train_len 4, a one-layer d_model 16 model, eval lengths 2, 4, 8. Append a [sweep] as needed.
#pragma once

#include <string>

namespace pelab::test {

inline std::string tiny_config(int steps) {
  return "[model]\nd_model = 16\nn_layers = 1\nn_heads = 2\n"
         "[task]\nname = \"copy\"\ntrain_len = 4\n"
         "[train]\nsteps = " + std::to_string(steps) + "\nbatch_size = 8\nlog_every = " + std::to_string(steps / 2) +
         "\n[eval]\nlengths = [2, 4, 8]\nsamples = 16\n";
}

}  // namespace pelab::test
