// Profiling only the timed steps: with PELAB_PERF_CTL=CTL,ACK (two FIFOs) a benchmark writes "enable" to
// CTL after its warm-up and waits for perf's reply on ACK, so that
//   mkfifo ctl ack; PELAB_PERF_CTL=ctl,ack perf record -D -1 --control fifo:ctl,ack -- build/bench/bench_train ...
// samples the timed steps alone (perf-record(1), --control). Unset: nothing happens.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace pelab::bench {

inline void perf_enable() {
  const char* v = std::getenv("PELAB_PERF_CTL");
  if (!v) return;
  const std::string s = v;
  const auto comma = s.find(',');
  if (comma == std::string::npos) return;
  if (FILE* ctl = std::fopen(s.substr(0, comma).c_str(), "w")) {
    std::fputs("enable\n", ctl);
    std::fclose(ctl);
    if (FILE* ack = std::fopen(s.substr(comma + 1).c_str(), "r")) {
      char buf[16];
      if (!std::fgets(buf, sizeof buf, ack)) buf[0] = 0;
      std::fclose(ack);
    }
  }
}

}  // namespace pelab::bench
