// The declared keys of every config section and the plugin subtables (encoding, task, optimizer).
#include "experiments/config/config_schema.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <utility>

#include "experiments/tasks/task.hpp"
#include "layers/positional/encoding.hpp"
#include "layers/positional/variant.hpp"
#include "training/metrics_table.hpp"
#include "training/optimizer_registry.hpp"

// GCC 12 -O3 reports the default ExperimentConfig{} built in make_field as "maybe uninitialized" once
// ModelSettings holds a nested std::string ([attention] scaling): a false positive of its inliner.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace pelab::config_detail {
namespace {

// Shortest decimal text of a float that reads back to the same float, as a double: 0.1f -> 0.1, so
// resolved configs show what the user wrote, not 0.10000000149011612.
double float_as_double(float f) {
  if (!std::isfinite(f)) return double(f);
  char buf[48];
  for (int p = 1; p <= 9; ++p) {
    std::snprintf(buf, sizeof buf, "%.*g", p, double(f));
    if (static_cast<float>(std::strtod(buf, nullptr)) == f) break;
  }
  return std::strtod(buf, nullptr);
}

template <class T>
ValueType type_of() {
  if constexpr (std::is_same_v<T, bool>) return ValueType::boolean;
  else if constexpr (std::is_enum_v<T>) return ValueType::string;
  else if constexpr (std::is_integral_v<T>) return ValueType::integer;
  else if constexpr (std::is_floating_point_v<T>) return ValueType::number;
  else return ValueType::string;  // std::string, Activation, EosMode, InitScheme, PositionMode
}

template <class T>
Value to_value(const T& x) {
  if constexpr (std::is_same_v<T, bool>) return Value(x);
  else if constexpr (std::is_integral_v<T>) return Value(static_cast<std::int64_t>(x));
  else if constexpr (std::is_same_v<T, float>) return Value(float_as_double(x));
  else if constexpr (std::is_floating_point_v<T>) return Value(static_cast<double>(x));
  else if constexpr (std::is_same_v<T, Activation>) return Value(activation_name(x));
  else if constexpr (std::is_same_v<T, EosMode>) return Value(std::string(eos_mode_name(x)));
  else if constexpr (std::is_same_v<T, OutputMode>) return Value(std::string(output_mode_name(x)));
  else if constexpr (std::is_same_v<T, InitScheme>) return Value(std::string(init_scheme_name(x)));
  else if constexpr (std::is_same_v<T, PositionMode>) return Value(std::string(position_mode_name(x)));
  else return Value(x);
}

template <class T>
void from_value(const Value& v, T& x) {
  if constexpr (std::is_same_v<T, bool>) x = std::get<bool>(v);
  else if constexpr (std::is_integral_v<T>) x = static_cast<T>(std::get<std::int64_t>(v));
  else if constexpr (std::is_floating_point_v<T>) x = static_cast<T>(std::get<double>(v));
  else if constexpr (std::is_same_v<T, Activation>) x = parse_activation(std::get<std::string>(v));
  else if constexpr (std::is_same_v<T, EosMode>) x = parse_eos_mode(std::get<std::string>(v));
  else if constexpr (std::is_same_v<T, OutputMode>) x = parse_output_mode(std::get<std::string>(v));
  else if constexpr (std::is_same_v<T, InitScheme>) x = parse_init_scheme(std::get<std::string>(v));
  else if constexpr (std::is_same_v<T, PositionMode>) x = parse_position_mode(std::get<std::string>(v));
  else x = std::get<std::string>(v);
}

template <class T>
Field make_field(std::string key, std::optional<double> lo, std::optional<double> hi, std::string help,
                 std::function<Value(const ExperimentConfig&)> get,
                 std::function<void(ExperimentConfig&, const Value&)> set) {
  Field f;
  f.spec.key = std::move(key);
  f.spec.type = type_of<T>();
  f.spec.default_value = get(ExperimentConfig{});
  f.spec.min = lo;
  f.spec.max = hi;
  f.spec.help = std::move(help);
  f.get = std::move(get);
  f.set = std::move(set);
  return f;
}

Field choices(Field f, std::vector<std::string> c) {
  f.spec.choices = std::move(c);
  return f;
}

Field half_open(Field f) {  // [min, max)
  f.spec.max_exclusive = true;
  return f;
}

constexpr std::nullopt_t none = std::nullopt;

#define PELAB_FIELD(key, expr, lo, hi, help)                                                      \
  make_field<std::decay_t<decltype(std::declval<ExperimentConfig&>().expr)>>(                    \
      key, lo, hi, help, [](const ExperimentConfig& c) { return to_value(c.expr); },             \
      [](ExperimentConfig& c, const Value& v) { from_value(v, c.expr); })

// [attention]: temperature and log-length scaling for every encoding (layers/attention_scaling.hpp).
Section attention_section() {
  return {"attention",
          {choices(PELAB_FIELD("scaling", model.attention.scaling, none, none,
                               "logit scaling on top of 1/sqrt(hs): none; fixed = 1/temperature; log_length = "
                               "max(1, log n / log L)/temperature, n = keys up to the query's own (1-based row; a "
                               "stick_breaking query sees one fewer); learned "
                               "= exp(w) per layer and head, w0 = -ln(temperature); ssmax = s log n, s learned per "
                               "layer and head from 1/(log L temperature) (Nakanishi 2025). Parameter-free ones "
                               "can be set at evaluation only (pelab eval --set)"),
                   attention_scaling_names()),
           PELAB_FIELD("temperature", model.attention.temperature, 1e-3, 1e3,
                       "logits / temperature (fixed, log_length; learned: the initial value); must stay 1 "
                       "with scaling = none"),
           PELAB_FIELD("log_length_clamp", model.attention.log_length_clamp, none, none,
                       "log_length: max(1, log n / log L) (Qwen's logn attention) if true, the plain ratio "
                       "(also < 1 for n < L) if false"),
           PELAB_FIELD("log_length_base", model.attention.log_length_base, 0.0, 1e9,
                       "log_length: L in tokens; 0 = the training sequence length"),
           PELAB_FIELD("window", model.attention.window, none, none,
                       "sliding-window attention: keys per layer, \"64\", or a pattern repeated over the layers, "
                       "\"0,64\" (0 = every earlier key); causal models only"),
           PELAB_FIELD("chunk", model.attention.chunk, none, none,
                       "chunked local attention (Llama 4): keys per chunk, \"8192\", or a pattern repeated over the "
                       "layers, \"8,8,8,none\"; tokens in [kC, (k+1)C) attend causally within their chunk; none = no "
                       "chunk, 0 refused, a chunk past the sequence = full causal; causal models only"),
           PELAB_FIELD("temperature_tuning", model.attention.temperature_tuning, none, none,
                       "Llama 4's attention temperature tuning per layer, \"1\" or a pattern \"0,0,0,1\": q of token "
                       "t times log(floor((t+1)/tuning_floor_scale)+1)*tuning_attn_scale+1; at evaluation only "
                       "unless tuning_in_training"),
           PELAB_FIELD("tuning_floor_scale", model.attention.tuning_floor_scale, 1.0, 1e12,
                       "temperature tuning: F, Meta's floor_scale (8192); rows t + 1 < F are unscaled"),
           PELAB_FIELD("tuning_attn_scale", model.attention.tuning_attn_scale, -1e3, 1e3,
                       "temperature tuning: a, Meta's attn_scale (0.1)"),
           PELAB_FIELD("tuning_in_training", model.attention.tuning_in_training, none, none,
                       "temperature tuning in training too (false: at evaluation only, as Llama 4's inference-time "
                       "tuning)"),
           PELAB_FIELD("qk_norm", model.qk_norm, none, none,
                       "QK-norm: q and k RMS-normalized per head with a learned gain per head dimension, before "
                       "the encoding rotates them; \"on\", \"off\", or a pattern repeated over the layers, "
                       "\"on,on,on,off\" (Llama 4 drops it on its NoPE layers)")},
          {}};
}

// [canon]: Canon layers (layers/canon.hpp; Allen-Zhu, arXiv:2512.17351).
Section canon_section() {
  return {"canon",
          {PELAB_FIELD("points", model.canon.points, none, none,
                       "where Canon layers (a causal depthwise convolution with a residual) sit in every block: "
                       "a subset of \"ABCD\", A before the attention, B on q/k/v, C before the MLP, D on the "
                       "MLP's hidden pre-activation; \"\" = none. One-sided (causal) also with model.causal = false"),
           PELAB_FIELD("kernel", model.canon.kernel, 1.0, 1024.0, "taps of the convolution, the current token included"),
           PELAB_FIELD("residual", model.canon.residual, none, none, "x + conv(x) if true, conv(x) alone if false")},
          {}};
}

// [loop]: depth recurrence, a group of blocks applied N times with shared weights and the group's
// input injected (layers/transformer.hpp LoopSettings; docs/architecture.md#looped-depth).
Section loop_section() {
  return {"loop",
          {PELAB_FIELD("first", model.loop.first, 0.0, 1023.0, "the looped group's first block (0-based)"),
           PELAB_FIELD("blocks", model.loop.blocks, 0.0, 1024.0,
                       "blocks in the looped group; 0 = every block from `first` on"),
           choices(PELAB_FIELD("rule", model.loop.rule, none, none,
                               "N, the group's applications: fixed = `times` at every length; length = "
                               "floor(per_token T) + offset for a sequence of T tokens (grows with the length "
                               "at test time; Fan et al. 2025)"),
                   {"fixed", "length"}),
           PELAB_FIELD("times", model.loop.times, 1.0, 4096.0, "rule fixed: N at every length (1 = no looping)"),
           PELAB_FIELD("per_token", model.loop.per_token, 0.0, 64.0, "rule length: loops per token of the sequence"),
           PELAB_FIELD("offset", model.loop.offset, -1e6, 1e6,
                       "rule length: added to floor(per_token T); N(1) = floor(per_token) + offset must be >= 1")},
          {}};
}

// [encoding]: the model-wide encoding and the per-layer layout (layers/transformer.hpp ModelConfig).
Section encoding_section() {
  return {"encoding",
          {PELAB_FIELD("name", encoding, none, none, "positional encoding (see `pelab list`)"),
           PELAB_FIELD("layers", encoding_layers, none, none,
                       "attention-level encoding of each layer, a pattern repeated over the layers: "
                       "\"none,rope\" = NoPE, RoPE, NoPE, ... (parameters from [encoding.<name>]); a variant "
                       "\"rope.global\" is that encoding with parameters of its own, from [encoding.rope.global] "
                       "(Gemma 3's two RoPE bases); \"\" = name in every layer"),
           PELAB_FIELD("heads", encoding_heads, 0.0, 4096.0,
                       "the attention-level encoding acts in heads 0..heads-1 only, the others are NoPE "
                       "(x-transformers' rotate_num_heads, alibi_num_heads); 0 = every head")},
          {"[encoding.<name>] subtables"}};
}

Section model_section() {
  return {"model",
               {PELAB_FIELD("d_model", model.d_model, 1.0, 65536.0, "residual stream width"),
                PELAB_FIELD("n_layers", model.n_layers, 1.0, 1024.0, "transformer blocks"),
                PELAB_FIELD("n_heads", model.n_heads, 1.0, 4096.0, "attention heads (must divide d_model)"),
                PELAB_FIELD("d_ff", model.d_ff, 0.0, 1e6, "MLP width; 0 = 4 * d_model"),
                choices(PELAB_FIELD("activation", model.activation, none, none, "MLP activation"),
                        {"gelu", "gelu_tanh", "relu"}),
                half_open(PELAB_FIELD("dropout", model.dropout, 0.0, 1.0, "embedding/attention/MLP dropout")),
                PELAB_FIELD("causal", model.causal, none, none, "false: bidirectional attention"),
                PELAB_FIELD("tie_embeddings", model.tie_embeddings, none, none, "LM head shares the embedding"),
                PELAB_FIELD("ln_eps", model.ln_eps, 1e-12, 1.0, "LayerNorm epsilon"),
                choices(PELAB_FIELD("init", model.init, none, none,
                                    "initialization: gpt2 (normal), scaled (gpt2 with residual projections / "
                                    "sqrt(2 n_layers)), pytorch (nn.Linear / nn.Embedding defaults)"),
                        {"gpt2", "scaled", "pytorch"}),
                PELAB_FIELD("init_std", model.init_std, 0.0, 10.0,
                            "std of the normal init of Linear weights (gpt2, scaled; unused by pytorch)"),
                PELAB_FIELD("emb_init_std", model.emb_init_std, 0.0, 10.0,
                            "std of the normal init of token embeddings and learned position tables (gpt2, "
                            "scaled; unused by pytorch)")},
               {}};
}

// [train]: steps, the optimizer and its schedule, the budget policy (training/train_config.hpp).
Section train_section() {
  std::vector<std::string> metrics = metric_names();
  Field early = PELAB_FIELD("early_stop_metric", train.early_stop_metric, none, none,
                       "stop early on this in-distribution metric");
  early.expected_text = "one of: \"\" (off), " + join(metrics);
  metrics.insert(metrics.begin(), "");
  early = choices(early, metrics);
  return {"train",
          {PELAB_FIELD("steps", train.steps, 1.0, 1e9, "optimizer steps"),
           PELAB_FIELD("batch_size", train.batch_size, 1.0, 1e6, "examples per step"),
           choices(PELAB_FIELD("optimizer", train.optimizer, none, none, "optimizer (see `pelab list`)"),
                   OptimizerRegistry::instance().names()),
           PELAB_FIELD("lr", train.lr, 0.0, 10.0, "peak learning rate"),
           PELAB_FIELD("min_lr", train.min_lr, 0.0, 10.0, "floor of the decay schedules"),
           choices(PELAB_FIELD("schedule", train.schedule, none, none, "learning-rate schedule"),
                   {"constant", "cosine", "linear"}),
           PELAB_FIELD("warmup", train.warmup, 0.0, 1e9, "linear warmup steps"),
           PELAB_FIELD("weight_decay", train.weight_decay, 0.0, 10.0, "weight decay (AdamW: decoupled; SGD: L2)"),
           PELAB_FIELD("decay_norm_and_bias", train.decay_norm_and_bias, none, none, "decay LayerNorm/bias"),
           PELAB_FIELD("decay_embeddings", train.decay_embeddings, none, none, "decay embeddings"),
           PELAB_FIELD("grad_clip", train.grad_clip, 0.0, 1e9, "global gradient-norm clip; 0 = off"),
           PELAB_FIELD("seed", train.seed, 0.0, none, "initialization and data seed"),
           choices(PELAB_FIELD("positions", train.positions, none, none,
                               "position ids of training batches: contiguous = 0..T-1; offset = a random "
                               "start per row, s..s+T-1 with s in [0, max_position - T]; randomized = T "
                               "distinct ids per row drawn from [0, max_position), sorted (Ruoss et al. 2023); "
                               "task = the task's own ids (addition's coupled_positions); task_offset = those "
                               "shifted per row by s in [0, max_position - 1 - the largest], 0 kept (Cho et al. 2024)"),
                   position_mode_names()),
           PELAB_FIELD("max_position", train.max_position, 0.0, 2147483647.0,
                       "offset/randomized ids are < max_position; 0 = auto: the longest sequence the run "
                       "trains or evaluates on (in tokens); must be >= the longest training sequence, and "
                       ">= the longest eval sequence when evaluation uses offset/randomized ids"),
           PELAB_FIELD("log_every", train.log_every, 1.0, 1e9, "steps between log lines"),
           PELAB_FIELD("eval_every", train.eval_every, 0.0, 1e9, "steps between evaluations; 0 = end"),
           PELAB_FIELD("checkpoint_every", train.checkpoint_every, 0.0, 1e9, "steps between checkpoints"),
           PELAB_FIELD("keep_checkpoints", train.keep_checkpoints, 1.0, 1e6, "checkpoints kept"),
           early,
           PELAB_FIELD("early_stop_target", train.early_stop_target, none, none, "early-stop threshold"),
           choices(PELAB_FIELD("budget", train.budget, none, none,
                               "budget policy: first_fit (stop when early_stop_metric reaches early_stop_target; "
                               "without a metric, fixed), fixed (train steps), competent (stop once "
                               "early_stop_metric on the validation split passes the competence gate and has "
                               "plateaued; steps is the cap)"),
                   {"first_fit", "fixed", "competent"}),
           PELAB_FIELD("gate", train.gate, 0.0, 1.0,
                       "competent: the gate, chance + gate x (1 - chance) on early_stop_metric at train_len"),
           PELAB_FIELD("plateau_evals", train.plateau_evals, 1.0, 1e6,
                       "competent: a plateau is no improvement > plateau_eps over the last plateau_evals evaluations"),
           PELAB_FIELD("plateau_eps", train.plateau_eps, 0.0, 1e9, "competent: see plateau_evals"),
           PELAB_FIELD("threads", train.threads, 1.0, 1024.0, "threads of a training step (core/parallel.hpp); at most the cores this process may use"),
           choices(PELAB_FIELD("gemm", train.gemm, none, none,
                               "GEMM path (core/blas.hpp; it decides the rounding): libxsmm = libxsmm's JIT "
                               "kernels, about twice OpenBLAS's speed on an AVX-512 CPU; openblas = every GEMM in "
                               "OpenBLAS, the path of the results committed before 2026-11-26. Not given: the "
                               "environment variable PELAB_GEMM, else libxsmm when the build has it, else openblas; "
                               "a config.toml pelab wrote before this key existed means openblas"),
                   {"libxsmm", "openblas"})},
          {"[train.<optimizer>] subtables"}};
}

// [protocol]: settings chosen per group of a sweep on the validation split (experiments/run/selection.hpp).
Section protocol_section() {
  std::vector<std::string> metrics = metric_names();
  Field metric = PELAB_FIELD("metric", protocol.metric, none, none,
                             "the validation metric the selection maximizes (loss: minimizes)");
  metric.expected_text = "one of: \"\" (the headline metric), " + join(metrics);
  metrics.insert(metrics.begin(), "");
  return {"protocol",
          {PELAB_FIELD("select", protocol.select, none, none,
                       "swept keys chosen per group on the in-distribution validation split, comma-separated "
                       "(\"train.lr\"); \"\" = none"),
           choices(metric, metrics),
           PELAB_FIELD("validation_samples", protocol.validation_samples, 0.0, 1e9,
                       "validation examples at train_len; 0 = eval.samples")},
          {}};
}

std::vector<Section> build_schema() {
  std::vector<Section> s;
  s.push_back(model_section());
  s.push_back(encoding_section());
  s.push_back(attention_section());
  s.push_back(canon_section());
  s.push_back(loop_section());
  s.push_back({"task",
               {PELAB_FIELD("name", task, none, none, "task (see `pelab list`)"),
                PELAB_FIELD("min_len", min_len, 1.0, 1e6, "smallest training problem size"),
                PELAB_FIELD("train_len", train_len, 1.0, 1e6, "largest training problem size / LM context"),
                // The sequence format (experiments/tasks/format.hpp); a language model takes only the defaults.
                PELAB_FIELD("bos", format.bos, none, none, "sequence tasks: <BOS> first"),
                choices(PELAB_FIELD("eos", format.eos, none, none,
                                    "sequence tasks: <EOS> after y, counted (scored) or not (unscored), or none"),
                        {"scored", "unscored", "absent"}),
                PELAB_FIELD("sep", format.sep, none, none, "sequence tasks: <SEP> between x and y"),
                PELAB_FIELD("prompt", format.prompt, none, none,
                            "sequence tasks: the task's prompt token (\"Copy:\") before x"),
                choices(PELAB_FIELD("output", format.output, none, none,
                                    "sequence tasks: y teacher forced, or predicted at |y| blank tokens in one pass "
                                    "(blank: Deletang et al. 2023; eos then \"absent\")"),
                        {"teacher_forced", "blank"})},
               {"[task.<name>] subtables"}});
  s.push_back(train_section());
  s.push_back({"eval",
               {PELAB_FIELD("samples", eval.samples, 1.0, 1e9, "held-out examples per length"),
                PELAB_FIELD("beyond_samples", eval.beyond_samples, 0.0, 1e9,
                            "held-out examples per eval length above train_len at every evaluation during "
                            "training ([train] eval_every), into metrics.jsonl's \"beyond\"; 0 = off; more than "
                            "samples counts as samples"),
                PELAB_FIELD("batch_size", eval.batch_size, 1.0, 1e6, "evaluation batch size"),
                PELAB_FIELD("seed", eval.seed, 0.0, none, "seed of the held-out sets"),
                choices(PELAB_FIELD("positions", eval.positions, none, none,
                                    "position ids at evaluation: train = as in training (randomized: fresh "
                                    "random ids, as Ruoss et al. evaluate), or contiguous / offset / randomized; "
                                    "offset and randomized draw from [0, train.max_position) with their own "
                                    "stream seeded by eval.seed (the same ids at every evaluation); task = the "
                                    "task's own ids (train after task_offset training: task, as Cho et al. evaluate), "
                                    "task_offset = shifted as in training"),
                        {"train", "contiguous", "offset", "randomized", "task", "task_offset"})},
               {"lengths", "length_range", "operand_grid"}});
  s.push_back({"probe",
               {PELAB_FIELD("run", probe.run, none, none,
                            "pelab sweep runs `pelab probe run` on every finished cell (like --probe)"),
                PELAB_FIELD("samples", probe.samples, 1.0, 1e5, "held-out samples per probed length")},
               {}});
  s.push_back(protocol_section());
  s.push_back({"output", {PELAB_FIELD("dir", output_dir, none, none, "run or sweep directory")}, {}});
  return s;
}

#undef PELAB_FIELD

}  // namespace

const std::vector<Section>& schema() {
  static const std::vector<Section> s = build_schema();
  return s;
}

const Section* find_section(const std::string& name) {
  for (const auto& s : schema())
    if (s.name == name) return &s;
  return nullptr;
}

const Field* find_field(const std::string& section, const std::string& key) {
  const Section* s = find_section(section);
  if (!s) return nullptr;
  for (const auto& f : s->fields)
    if (f.spec.key == key) return &f;
  return nullptr;
}

std::vector<std::string> section_names() {
  std::vector<std::string> n;
  for (const auto& s : schema()) n.push_back(s.name);
  n.insert(n.end() - 1, "sweep");
  n.push_back("cell");
  return n;
}

std::vector<std::string> section_keys(const Section& s) {
  std::vector<std::string> k;
  for (const auto& f : s.fields) k.push_back(f.spec.key);
  k.insert(k.end(), s.extra.begin(), s.extra.end());
  return k;
}

const std::vector<PluginGroup>& plugin_groups() {
  static const std::vector<PluginGroup> groups = {
      {"encoding", "name", "encoding", "encoding.rope.base", false,
       [] { return EncodingRegistry::instance().names(); },
       [](const std::string& n) -> const std::vector<ParamSpec>& {
         return EncodingRegistry::instance().get(encoding_base_name(n)).params;  // a variant's: its encoding's
       },
       [](ExperimentConfig& c) -> ParamTables& { return c.encoding_params; }},
      {"task", "name", "task", "task.addition.reverse_digits", false,
       [] { return TaskRegistry::instance().names(); },
       [](const std::string& n) -> const std::vector<ParamSpec>& { return TaskRegistry::instance().get(n).params; },
       [](ExperimentConfig& c) -> ParamTables& { return c.task_params; }},
      {"train", "optimizer", "optimizer", "train.adamw.beta1", true,
       [] { return OptimizerRegistry::instance().names(); },
       [](const std::string& n) -> const std::vector<ParamSpec>& { return OptimizerRegistry::instance().get(n).params; },
       [](ExperimentConfig& c) -> ParamTables& { return c.train.optimizer_params; }},
  };
  return groups;
}

const PluginGroup* find_group(const std::string& section) {
  for (const auto& g : plugin_groups())
    if (g.section == section) return &g;
  return nullptr;
}

const ParamTables& tables_of(const PluginGroup& g, const ExperimentConfig& cfg) {
  return g.tables(const_cast<ExperimentConfig&>(cfg));  // the accessor only selects a member
}

std::string chosen(const PluginGroup& g, const ExperimentConfig& cfg) {
  return std::get<std::string>(find_field(g.section, g.selector)->get(cfg));
}

std::optional<std::string> owner_of(const PluginGroup& g, const std::string& key) {
  for (const auto& n : g.names())
    for (const auto& p : g.params(n))
      if (p.key == key) return n;
  return std::nullopt;
}

std::string activation_name(Activation a) {
  switch (a) {
    case Activation::gelu: return "gelu";
    case Activation::gelu_tanh: return "gelu_tanh";
    case Activation::relu: return "relu";
  }
  return "?";
}

}  // namespace pelab::config_detail
