#include "experiments/tasks/format.hpp"

#include "core/tensor.hpp"  // Error

namespace pelab {

const char* eos_mode_name(EosMode m) {
  switch (m) {
    case EosMode::scored: return "scored";
    case EosMode::unscored: return "unscored";
    case EosMode::absent: return "absent";
  }
  return "?";
}

EosMode parse_eos_mode(const std::string& name) {
  for (EosMode m : {EosMode::scored, EosMode::unscored, EosMode::absent})
    if (name == eos_mode_name(m)) return m;
  throw Error("unknown eos mode '" + name + "'; allowed: scored, unscored, absent");
}

const char* output_mode_name(OutputMode m) {
  return m == OutputMode::blank ? "blank" : "teacher_forced";
}

OutputMode parse_output_mode(const std::string& name) {
  for (OutputMode m : {OutputMode::teacher_forced, OutputMode::blank})
    if (name == output_mode_name(m)) return m;
  throw Error("unknown output mode '" + name + "'; allowed: teacher_forced, blank");
}

std::string describe(const SequenceFormat& f) {
  auto b = [](bool v) { return v ? "true" : "false"; };
  return std::string("bos = ") + b(f.bos) + ", eos = \"" + eos_mode_name(f.eos) + "\", sep = " + b(f.sep) +
         ", prompt = " + b(f.prompt) + (f.blank() ? ", output = \"blank\"" : "");
}

}  // namespace pelab
