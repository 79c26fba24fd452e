// What run and sweep directories hold, read by the library's own readers (python/pelab/__init__.py builds
// pelab.Run and pelab.results on these).
#include <filesystem>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "experiments/config/config.hpp"
#include "experiments/eval/eval_result.hpp"
#include "experiments/report/report.hpp"
#include "python/bindings.hpp"
#include "python/convert.hpp"
#include "training/checkpoint.hpp"
#include "training/fs.hpp"

namespace pelab::python {

namespace {

namespace fs = std::filesystem;

// A run directory's config.toml, checked as `pelab eval` checks it; FileNotFoundError naming `argument`
// when `dir` is not a run directory.
std::string run_config(const std::string& dir, const std::string& argument) {
  if (!fs::is_directory(dir)) not_found(argument, "no such directory: " + dir);
  const std::string path = dir + "/config.toml";
  if (!fs::is_regular_file(path))
    not_found(argument, dir + " is not a run directory: it has no config.toml (give the directory `pelab train` wrote)");
  load_config(path);  // ConfigError with file:line when it does not load
  return read_file(path);
}

// results.csv's table as columns: name -> list (None where the CSV field is empty).
py::dict results_columns(const std::string& sweep_dir) {
  if (!fs::is_directory(sweep_dir)) not_found("sweep_dir", "no such directory: " + sweep_dir);
  const ResultsTable t = results_table(sweep_dir);
  const auto optional = [](const std::optional<double>& v) { return v ? py::object(py::float_(*v)) : py::none(); };
  py::list run, seed, task, train_len, eval_len, len_a, len_b, in_dist, metric, value, chance, reason;
  const auto operand = [](const std::optional<std::size_t>& v) { return v ? py::object(py::int_(*v)) : py::none(); };
  std::vector<py::list> keys(t.keys.size());
  for (const ResultRow& r : t.rows) {
    run.append(r.run);
    for (std::size_t k = 0; k < keys.size(); ++k) keys[k].append(r.keys[k] ? to_python(*r.keys[k]) : py::none());
    seed.append(r.seed);
    task.append(r.task);
    train_len.append(r.train_len);
    eval_len.append(r.eval_len);
    len_a.append(operand(r.len_a));  // operand_grid rows only
    len_b.append(operand(r.len_b));
    in_dist.append(r.in_distribution);
    metric.append(r.metric);
    value.append(optional(r.value));
    chance.append(optional(r.chance));
    reason.append(r.na_reason);
  }
  py::dict d;  // in results.csv's column order
  d["run"] = run;
  for (std::size_t k = 0; k < keys.size(); ++k) d[py::str(t.keys[k])] = keys[k];
  d["seed"] = seed, d["task"] = task, d["train_len"] = train_len, d["eval_len"] = eval_len;
  d["len_a"] = len_a, d["len_b"] = len_b;
  d["in_distribution"] = in_dist, d["metric"] = metric, d["value"] = value, d["chance"] = chance;
  d["na_reason"] = reason;
  return d;
}

}  // namespace

void bind_runs(py::module_& m) {
  m.def("run_config", &run_config, py::arg("dir"), py::arg("argument") = "dir",
        "A run directory's config.toml (text), checked as `pelab eval` checks it.");
  m.def("checkpoints", &list_checkpoints, py::arg("dir"), "A run's complete checkpoints: (step, path), by step.");
  m.def("read_eval", [](const std::string& path) { return to_json(read_eval_result(path)).dump(); }, py::arg("path"),
        "An eval.json (or eval-NAME.json), checked and normalized, as JSON text.");
  m.def("results_columns", &results_columns, py::arg("sweep_dir"),
        "results.csv's long table as columns (name -> list): pelab.results() builds on it.");
  m.def("results_csv", [](const std::string& sweep_dir) { return results_csv(results_table(sweep_dir)); },
        py::arg("sweep_dir"), "results.csv's text, as `pelab report` writes it.");
  m.def("output_dir", [](const std::string& config, const std::vector<std::string>& sets) {
    const LoadedConfig loaded = load_config(config, sets);
    std::vector<std::string> cells;
    for (const RunSpec& r : loaded.runs) cells.push_back(r.dir_name);
    return py::make_tuple(loaded.config.output_dir, loaded.config.sweep.empty() ? std::vector<std::string>{} : cells);
  }, py::arg("config"), py::arg("sets"), "A config's output.dir and its sweep cells' directory names.");
}

}  // namespace pelab::python
