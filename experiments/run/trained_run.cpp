#include "experiments/run/trained_run.hpp"

#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/blas.hpp"
#include "core/parallel.hpp"
#include "experiments/eval/eval_named.hpp"
#include "experiments/tasks/task.hpp"
#include "training/checkpoint.hpp"
#include "training/fs.hpp"

namespace pelab {

namespace {

// The directory of checkpoint `step` of run_dir; Error listing the steps there are when it has none.
std::string checkpoint_of_step(const std::string& run_dir, std::size_t step) {
  std::string steps;
  for (const auto& [k, path] : list_checkpoints(run_dir)) {
    if (k == step) return path;
    steps += (steps.empty() ? "" : ", ") + std::to_string(k);
  }
  throw Error("step " + std::to_string(step) + ": " + run_dir + " has no checkpoint of that step (" +
              (steps.empty() ? "it has none" : "it has steps " + steps) + ")");
}


constexpr const char* kCorpusFile = "/corpus.json";

nlohmann::ordered_json record_json(const DataRecord& r) {
  nlohmann::ordered_json j;
  j["key"] = r.key;
  j["path"] = r.path;
  j["bytes"] = r.bytes;
  j["crc32c"] = r.crc32c;
  j["symbols"] = r.symbols;
  j["vocabulary"] = r.vocabulary;
  return j;
}

std::string describe(const nlohmann::json& j) {
  return j.value("path", std::string("?")) + ", " + std::to_string(j.value("bytes", std::uint64_t(0))) +
         " bytes, CRC32C " + j.value("crc32c", std::string("?")) + ", " +
         std::to_string(j.value("symbols", std::size_t(0))) + " distinct bytes";
}

}  // namespace

void write_data_record(const std::string& run_dir, const Task& task) {
  if (const auto r = task.data_record()) write_file_atomic(run_dir + kCorpusFile, record_json(*r).dump(2) + "\n");
}

void check_data_record(const std::string& run_dir, const Task& task) {
  const auto now = task.data_record();
  if (!now) return;
  const std::string path = run_dir + kCorpusFile;
  if (!std::filesystem::exists(path)) {
    std::fprintf(stderr, "note: %s has no corpus record (written before pelab recorded corpora): its corpus %s "
                 "(%s) is not checked against the one it was trained on\n", run_dir.c_str(), now->path.c_str(),
                 now->key.c_str());
    return;
  }
  nlohmann::json was;
  try {
    was = nlohmann::json::parse(read_file(path));
  } catch (const std::exception& e) {
    throw Error(path + " (the corpus the run was trained on) cannot be read: " + e.what());
  }
  const nlohmann::json is = record_json(*now);
  for (const char* k : {"bytes", "crc32c", "vocabulary"})
    if (was.value(k, nlohmann::json()) != is[k])
      throw Error("the corpus (" + now->key + ") changed since " + run_dir + " was trained: it was " + describe(was) +
                  "; it is now " + describe(is) + ". Its ids would be remapped onto a model trained on other text: "
                  "restore the file, or set " + now->key + " to the original in a new run");
}

void load_run_checkpoint(const std::string& run_dir, const std::string& checkpoint, Transformer& model,
                         const Task& task) {
  check_data_record(run_dir, task);
  try {
    load_checkpoint(checkpoint, model, nullptr);
  } catch (const Error& e) {
    const auto r = task.data_record();
    if (!r || std::filesystem::exists(run_dir + kCorpusFile)) throw;
    throw Error(std::string(e.what()) + " (the run has no corpus record: if its corpus " + r->path + " (" + r->key +
                ") changed since training, the vocabulary it gives now, " + std::to_string(r->symbols) +
                " distinct bytes, is not the model's)");
  }
}

TrainedRun load_trained_run(const std::string& run_dir) { return load_trained_run(run_dir, {}, std::nullopt); }

TrainedRun load_trained_run(const std::string& run_dir, const std::vector<std::string>& eval_sets,
                            std::optional<std::size_t> step) {
  const std::string cfg = run_dir + "/config.toml";
  if (!std::filesystem::exists(cfg))
    throw Error(run_dir + " is not a run directory: it has no config.toml (give the directory `pelab train` wrote)");
  TrainedRun r;
  r.dir = run_dir;
  r.spec = load_config(cfg).runs.at(0);
  if (!eval_sets.empty()) {
    check_eval_settings(eval_sets, r.spec.config);
    r.spec = load_eval_config(run_dir, eval_sets);
  }
  use_gemm_path(r.spec.config);
  parallel::set_threads(r.spec.config.train.threads, "train.threads");
  r.model = std::make_unique<Transformer>(r.spec.model);
  if (step) {
    r.checkpoint = checkpoint_of_step(run_dir, *step);
  } else {
    const CheckpointChoice choice = choose_checkpoint(run_dir, false);
    for (const auto& note : checkpoint_notes(choice)) std::fprintf(stderr, "warning: %s\n", note.c_str());
    if (!choice.path) throw Error(no_usable_checkpoint(run_dir, choice) + "; nothing to inspect");
    r.checkpoint = *choice.path;
  }
  load_run_checkpoint(run_dir, r.checkpoint, *r.model, *r.spec.task);
  r.model->set_training(false);
  return r;
}

}  // namespace pelab
