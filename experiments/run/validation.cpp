#include "experiments/run/validation.hpp"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "experiments/tasks/task.hpp"
#include "training/fs.hpp"
#include "training/metrics_table.hpp"

namespace pelab {

bool needs_validation(const ExperimentConfig& cfg) {
  return !cfg.protocol.select.empty() || cfg.train.budget == "competent";
}

std::string validation_metric(const ExperimentConfig& cfg, const Task& task) {
  if (!cfg.protocol.metric.empty()) return cfg.protocol.metric;
  return headline_metric(task.is_language_model(), !task.is_language_model()).name;
}

LengthResult evaluate_validation(Transformer& model, const Task& task, const ExperimentConfig& cfg,
                                 const EvalOptions& opt) {
  EvalConfig split = cfg.eval;
  split.seed ^= kValidationSeed;
  if (cfg.protocol.validation_samples) split.samples = cfg.protocol.validation_samples;
  return evaluate_length(model, task, split, eval_positions(cfg), cfg.train_len, cfg.min_len, cfg.train_len, opt);
}

std::optional<double> gate_threshold(const ExperimentConfig& cfg, const Task& task) {
  const std::string& m = cfg.train.early_stop_metric;
  const auto chance = task.chance(cfg.train_len);
  if (!chance || (m != "token_acc" && m != "exact_match")) return std::nullopt;
  const double c = m == "token_acc" ? chance->token_acc : chance->exact_match;
  return c + cfg.train.gate * (1 - c);
}

void write_validation(const std::string& run_dir, const ExperimentConfig& cfg, const Task& task,
                      const LengthResult& r, std::size_t steps, const std::string& status) {
  nlohmann::ordered_json j;
  j["split"] = "validation";
  j["length"] = r.length;
  j["samples"] = r.samples;
  j["seed"] = cfg.eval.seed ^ kValidationSeed;
  const std::string metric = validation_metric(cfg, task);
  j["metric"] = metric;
  const auto v = r.metric(metric);
  j["value"] = v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json();
  j["metrics"] = r.metrics;
  j["steps"] = steps;
  j["status"] = status;
  j["budget"] = cfg.train.budget;
  write_file_atomic(run_dir + "/validation.json", j.dump(2) + "\n");
}

std::optional<ValidationRecord> read_validation(const std::string& run_dir) {
  const std::string path = run_dir + "/validation.json";
  if (!std::filesystem::exists(path)) return std::nullopt;
  try {
    const nlohmann::json j = nlohmann::json::parse(read_file(path));
    ValidationRecord r;
    r.metric = j.at("metric").get<std::string>();
    if (!j.at("value").is_null()) r.value = j.at("value").get<double>();
    r.steps = j.at("steps").get<std::size_t>();
    r.status = j.value("status", std::string());
    return r;
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + " cannot be read: " + e.what());
  }
}

}  // namespace pelab
