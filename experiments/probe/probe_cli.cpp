// `pelab probe encoding|run|spectrum` and the sweep's --probe pass.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include <CLI/CLI.hpp>

#include "experiments/cli/cli_args.hpp"
#include "experiments/probe/probe.hpp"
#include "experiments/run/run.hpp"

namespace pelab {

namespace {

std::vector<std::size_t> parse_factors(const std::string& csv) {
  return parse_positive_list("--lengths", csv, 1024,
                             "a multiple of the training length in [1, 1024] (e.g. --lengths 1,2,4)");
}

}  // namespace

void add_probe_command(CLI::App& app, ProbeCommand& c) {
  c.app = app.add_subcommand("probe", "look inside an encoding (no training) or a trained run: plots and numbers");
  c.app->require_subcommand(1);
  c.encoding = c.app->add_subcommand("encoding", "similarity of position vectors, remote decay, biases of one encoding");
  c.encoding->add_option("name", c.enc.name, "encoding (see pelab list)")->required();
  c.encoding->add_option("--set", c.enc.sets, "encoding parameter: key=value, e.g. base=500 (repeatable)");
  c.encoding->add_option("--len", c.enc.len, "positions 0..len-1")->check(CLI::Range(2, 4096));
  c.encoding->add_option("--d-model", c.enc.d_model, "model width")->check(CLI::Range(2, 4096));
  c.encoding->add_option("--heads", c.enc.n_heads, "attention heads")->check(CLI::Range(1, 256));
  c.encoding->add_option("--out", c.enc.out_dir, "output directory (default runs/probe-encoding/NAME)");
  c.run = c.app->add_subcommand("run", "attention maps, entropy, per-position accuracy of a trained run (into RUN_DIR/probe)");
  c.run->add_option("run_dir", c.run_args.run_dir, "run directory (holds config.toml and checkpoints/)")
      ->required()->check(CLI::ExistingDirectory);
  c.run->add_option("--lengths", c.factors_csv, "multiples of the training length, comma-separated (default 1,2,4)");
  c.run->add_option("--samples", c.run_args.samples, "held-out samples per length (default: the run's [probe] samples, 32)")
      ->check(CLI::Range(1, 100000));
  c.run->add_option("--seed", c.run_args.seed, "seed of the samples")->check(CLI::Validator(check_unsigned_text, "UINT"));
  c.run->add_option("--out", c.run_args.out_dir, "output directory (default RUN_DIR/probe)");
  c.spectrum = c.app->add_subcommand(
      "spectrum", "singular values, effective rank and Toeplitz-ness of position-position matrices (untrained or trained)");
  SpectrumProbeArgs& s = c.spectrum_args;
  auto* enc = c.spectrum->add_option("--encoding", s.encoding, "an untrained encoding (see pelab list)");
  auto* run = c.spectrum->add_option("--run", s.run_dir, "a trained run directory (holds config.toml and checkpoints/)")
                  ->check(CLI::ExistingDirectory);
  enc->excludes(run);
  c.spectrum->add_option("--set", s.sets, "encoding parameter: key=value (repeatable; with --encoding)")->needs(enc);
  c.spectrum->add_option("--length", s.length, "positions 0..length-1 (with --encoding; default 64)")
      ->check(CLI::Range(2, 1024))->needs(enc);
  c.spectrum->add_option("--d-model", s.d_model, "model width (with --encoding)")->check(CLI::Range(2, 4096))->needs(enc);
  c.spectrum->add_option("--heads", s.n_heads, "attention heads (with --encoding)")->check(CLI::Range(1, 256))->needs(enc);
  c.spectrum->add_option("--factor", s.factor, "length as a multiple of the training length (with --run; default 1)")
      ->check(CLI::Range(1, 64))->needs(run);
  c.spectrum->add_option("--samples", s.samples, "held-out samples for the mean attention (with --run; default: the "
                         "run's [probe] samples)")->check(CLI::Range(1, 100000))->needs(run);
  c.spectrum->add_option("--seed", s.seed, "seed of the samples (with --run)")
      ->check(CLI::Validator(check_unsigned_text, "UINT"))->needs(run);
  c.spectrum->add_option("--out", s.out_dir, "output directory (default runs/probe-encoding/NAME or RUN_DIR/probe)");
}

int run_probe_command(ProbeCommand& c) {
  std::vector<std::string> files;
  if (*c.spectrum) {
    const SpectrumReport r = probe_spectrum(c.spectrum_args);
    std::printf("%s", spectrum_table(r).c_str());
    files = r.files;
  } else if (*c.encoding) {
    files = probe_encoding(c.enc);
  } else {
    if (!c.factors_csv.empty()) c.run_args.factors = parse_factors(c.factors_csv);
    files = probe_run(c.run_args);
  }
  for (const auto& f : files)
    if (f.size() > 4 && f.compare(f.size() - 4, 4, ".png") == 0) std::printf("wrote %s\n", f.c_str());
  std::printf("(%zu files: each plot with its .csv, .json and .gp)\n", files.size());
  return kOk;
}

int probe_sweep_cells(const std::string& sweep_dir, const std::vector<std::string>& cell_dirs,
                      const MemoryLimit& memory) {
  int failed = 0;
  for (const auto& name : cell_dirs) {
    const std::string dir = sweep_dir + "/" + name;
    if (!std::filesystem::exists(dir + "/eval.json")) continue;  // unfinished: nothing to probe
    const auto t0 = std::chrono::steady_clock::now();
    try {
      RunProbeArgs a;
      a.run_dir = dir;
      a.memory = memory;
      probe_run(a);
      std::printf("probe  %-45s %5.1fs\n", name.c_str(),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    } catch (const Error& e) {
      ++failed;
      std::printf("probe  %-45s FAILED: %s\n", name.c_str(), e.what());
    }
    std::fflush(stdout);
  }
  return failed;
}

}  // namespace pelab
