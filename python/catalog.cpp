// pelab.encodings(), pelab.tasks(), pelab.optimizers(): what `pelab list` prints, as Python data.
#include <pybind11/stl.h>

#include <cstdlib>

#include "core/blas.hpp"
#include "core/blas_coretype.hpp"
#include "core/params/param_spec.hpp"
#include "experiments/tasks/task.hpp"
#include "layers/positional/encoding.hpp"
#include "python/bindings.hpp"
#include "python/convert.hpp"
#include "training/optimizer_registry.hpp"

namespace pelab::python {

namespace {

// One parameter: key, type, default, allowed range or choices (as `pelab list` words them too), help.
py::dict param_dict(const ParamSpec& p) {
  py::dict d;
  d["key"] = p.key;
  d["type"] = type_name(p.type);
  d["default"] = to_python(p.default_value);
  d["min"] = p.min ? py::object(py::float_(*p.min)) : py::none();
  d["max"] = p.max ? py::object(py::float_(*p.max)) : py::none();
  d["max_exclusive"] = p.max_exclusive;
  d["choices"] = p.choices;
  d["allowed"] = p.allowed();
  d["help"] = p.help;
  return d;
}

template <class Registry, class Extra>
py::list catalog(const Registry& r, Extra extra) {
  py::list out;
  for (const auto& name : r.names()) {
    const auto& spec = r.get(name);
    py::dict d;
    d["name"] = spec.name;
    d["summary"] = spec.summary;
    extra(spec, d);
    py::list params;
    for (const auto& p : spec.params) params.append(param_dict(p));
    d["params"] = params;
    out.append(d);
  }
  return out;
}

}  // namespace

void bind_catalog(py::module_& m) {
  m.def("encodings", [] {
    return catalog(EncodingRegistry::instance(), [](const EncodingSpec& s, py::dict& d) { d["relative"] = s.relative; });
  }, "The positional encodings: name, summary, relative (a shift of every id leaves the logits unchanged), "
     "params ([encoding.NAME] keys: key, type, default, min, max, choices, allowed, help).");
  m.def("tasks", [] {
    return catalog(TaskRegistry::instance(), [](const TaskSpec& s, py::dict& d) { d["format"] = s.format; });
  }, "The tasks: name, summary, format (vocabulary and sequence format), params ([task.NAME] keys).");
  m.def("optimizers", [] {
    return catalog(OptimizerRegistry::instance(), [](const OptimizerSpec&, py::dict&) {});
  }, "The optimizers: name, summary, params ([train.NAME] keys).");
  m.def("openblas_advice", [] {
    const blas::CoretypeDecision d = blas::decide_coretype(std::getenv("OPENBLAS_CORETYPE"), std::getenv(blas::kReexecMarker),
                                                           blas::core_name(), blas::cpu_features());
    if (!d.reexec) return std::string();
    return "OpenBLAS picked its " + blas::core_name() + " kernels on this CPU, where the pelab executable runs " +
           d.coretype + " (core/blas_coretype.hpp): set OPENBLAS_CORETYPE=" + d.coretype +
           " before starting Python for the same kernels, speed and bits";
  }, "Why this process's OpenBLAS kernels differ from the pelab executable's, or \"\".");
}

}  // namespace pelab::python
