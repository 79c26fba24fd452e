// [protocol] select (docs/usage.md, "Protocol: selection on a validation split"): per group of a finished
// sweep (the cells that share every swept key but train.seed and the selected keys), the selected keys'
// values whose runs have the best mean validation metric over their seeds (RUN/validation.json,
// experiments/run/validation.hpp: in distribution, never a length beyond training): the highest, or the
// lowest for a metric where lower is better; a tie goes to the first value in grid order. A value with a
// run that has no validation.json (unfinished) is listed with its missing runs and never chosen.
// The tables and pages show every value of the grid, the chosen one marked; python/pelab/reproduce/protocol.py
// applies the same rule to a recipe's committed results (tests/python/test_protocol.py checks they agree).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "experiments/config/config.hpp"

namespace pelab {

struct SelectionRow {
  std::string group;   // "encoding.name=rope,task.name=copy" ("" for a grid of selected keys and seeds only)
  std::string choice;  // "train.lr=0.001"
  std::string metric;  // the validation metric
  std::size_t seeds = 0, missing = 0;  // runs with a validation value; runs without one
  std::optional<double> mean, sd;      // over the seeds (sd: sample, from 2 seeds)
  double steps = 0;                    // mean steps used over the runs with a record
  bool selected = false;
};

// The grid's rows in grid order (groups in order of first cell, choices within a group likewise).
// Throws Error naming a validation.json that cannot be read.
std::vector<SelectionRow> select_settings(const std::vector<RunSpec>& cells, const std::string& root,
                                          const std::vector<std::string>& selected);

// SWEEP/selection.csv: group, choice, metric, seeds, missing, validation_mean, validation_sd, steps_mean, selected.
std::string selection_csv(const std::vector<SelectionRow>& rows);
// The same as a markdown table for the console, the chosen rows marked "**selected**".
std::string selection_markdown(const std::vector<SelectionRow>& rows);

// After a sweep: writes SWEEP/selection.csv and prints the table, when the config has [protocol] select.
void write_selection(const LoadedConfig& loaded, const std::string& root);

}  // namespace pelab
