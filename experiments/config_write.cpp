// The resolved config as TOML (every key, defaults filled in), and config equality.
#include <sstream>
#include <tuple>

#include "experiments/config_schema.hpp"

namespace pelab {

using namespace config_detail;

std::string to_toml(const ExperimentConfig& cfg) {
  std::ostringstream os;
  // No file name or date in here: the text depends on the settings only, so runs can compare it.
  os << "# Resolved configuration: every setting, defaults included.\n";
  auto subtables = [&](const std::string& sec, const std::map<std::string, std::map<std::string, Value>>& all) {
    for (const auto& [name, params] : all) {
      os << "\n[" << sec << "." << toml_key(name) << "]\n";
      for (const auto& [k, v] : params) os << toml_key(k) << " = " << toml_value(v) << "\n";
    }
  };
  for (const auto& s : schema()) {
    if (s.name == "output" && !cfg.sweep_order.empty()) {
      os << "\n[sweep]\n";
      for (const auto& k : cfg.sweep_order) {
        os << toml_value(Value(k)) << " = [";
        const auto it = cfg.sweep.find(k);
        if (it != cfg.sweep.end())
          for (std::size_t i = 0; i < it->second.size(); ++i) os << (i ? ", " : "") << toml_value(it->second[i]);
        os << "]\n";
      }
    }
    os << "\n[" << s.name << "]\n";
    if (s.name == "eval") {
      os << "lengths = [";
      for (std::size_t i = 0; i < cfg.eval.lengths.size(); ++i) os << (i ? ", " : "") << cfg.eval.lengths[i];
      os << "]\n";
    }
    for (const auto& f : s.fields) os << toml_key(f.spec.key) << " = " << toml_value(f.get(cfg)) << "\n";
    if (s.name == "encoding") subtables("encoding", cfg.encoding_params);
    if (s.name == "task") subtables("task", cfg.task_params);
  }
  return os.str();
}

bool same_settings(const ExperimentConfig& a, const ExperimentConfig& b) {
  auto model = [](const ModelConfig& m) {
    return std::tie(m.vocab, m.d_model, m.n_layers, m.n_heads, m.d_ff, m.activation, m.dropout, m.causal,
                    m.tie_embeddings, m.ln_eps, m.init_std, m.emb_init_std, m.encoding, m.encoding_params, m.train_len);
  };
  auto train = [](const TrainConfig& t) {
    return std::tie(t.steps, t.batch_size, t.optimizer, t.lr, t.min_lr, t.schedule, t.warmup, t.weight_decay,
                    t.decay_norm_and_bias, t.decay_embeddings, t.beta1, t.beta2, t.eps, t.momentum, t.grad_clip,
                    t.seed, t.log_every, t.eval_every, t.checkpoint_every, t.keep_checkpoints, t.early_stop_metric,
                    t.early_stop_target, t.threads);
  };
  auto eval = [](const EvalConfig& e) { return std::tie(e.lengths, e.samples, e.batch_size, e.seed); };
  auto rest = [](const ExperimentConfig& c) {
    return std::tie(c.encoding, c.encoding_params, c.task, c.min_len, c.train_len, c.task_params, c.sweep,
                    c.sweep_order, c.output_dir);
  };
  return model(a.model) == model(b.model) && train(a.train) == train(b.train) && eval(a.eval) == eval(b.eval) &&
         rest(a) == rest(b);
}

}  // namespace pelab
