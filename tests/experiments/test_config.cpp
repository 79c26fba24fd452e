// Config loading: a good config round-trips through to_toml and resolves into a RunSpec; every class of
// mistake (unknown key, wrong type, out of range, unknown section/encoding/subtable, keys moved to an
// optimizer's subtable, bad sweep, inconsistent model, odd RoPE dims, min_len > train_len, TOML syntax,
// a [cell] that disagrees) gives a message with the right line; overrides; sweep expansion order,
// labels, directory names and [cell] tables; every shipped config loads.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "config_error.hpp"
#include "experiments/config/config.hpp"
#include "experiments/eval/evaluate.hpp"  // eval_positions
#include "experiments/tasks/task.hpp"
#include "test_paths.hpp"

using namespace pelab;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

// The ConfigError message for `text` (as file "quick.toml"), or "(no error)".
std::string error_of(const std::string& text, const std::vector<std::string>& overrides = {}) {
  return test::config_error(text, "quick.toml", overrides);
}

const char* kGood = R"(# a config using most keys with non-default values
[model]
d_model = 48
n_layers = 3
n_heads = 6
d_ff = 100
activation = "relu"
dropout = 0.1
causal = true
tie_embeddings = true
ln_eps = 1e-6
init_std = 0.05

[encoding]
name = "rope"

[encoding.rope]
base = 500
layout = "half"

[encoding.learned]
clamp = true

[task]
name = "addition"
min_len = 2
train_len = 9

[task.addition]
reverse_digits = true

[train]
steps = 700
batch_size = 16
optimizer = "sgd"
lr = 0.0123456789
min_lr = 1e-5
schedule = "linear"
warmup = 10
weight_decay = 0.0
decay_norm_and_bias = true
decay_embeddings = false
grad_clip = 0.0
seed = 7
log_every = 10
eval_every = 100
checkpoint_every = 200
keep_checkpoints = 3
early_stop_metric = "exact_match"
early_stop_target = 0.99
threads = 2

[train.sgd]
momentum = 0.5

[train.adamw]
beta1 = 0.8
beta2 = 0.99
eps = 1e-7

[eval]
lengths = [9, 18, 3]
samples = 100
batch_size = 50
seed = 99

[output]
dir = "runs/good \"quoted\""
)";

}  // namespace

TEST_CASE("config: a good config is read exactly, resolved once and round-trips through to_toml") {
  const LoadedConfig loaded = parse_config(kGood, "good.toml");
  REQUIRE(loaded.runs.size() == 1);
  const RunSpec& run = loaded.runs[0];
  const ExperimentConfig& a = run.config;
  CHECK(a.source == "good.toml");
  CHECK(a.model.d_model == 48);
  CHECK(a.model.n_heads == 6);
  CHECK(a.model.d_ff == 100);
  CHECK(a.model.activation == Activation::relu);
  CHECK(a.model.dropout == Approx(0.1));
  CHECK(a.model.tie_embeddings);
  CHECK(a.model.init_std == 0.05);
  CHECK(a.encoding == "rope");
  // The resolved run: the task built once, the model configured from the settings, task and encoding.
  REQUIRE(run.task != nullptr);
  CHECK(run.model.encoding == "rope");
  CHECK(run.model.d_model == 48);
  CHECK(run.model.vocab == run.task->vocab_size());
  CHECK(run.model.train_seq_len == run.task->sequence_length(9));  // tokens of a 9-digit problem
  CHECK(run.model.train_seq_len > 9);
  REQUIRE(run.model.encoding_params.count("base") == 1);
  CHECK(run.model.encoding_params.at("base") == Value(500.0));  // widened to a number
  CHECK(run.model.encoding_params.at("fraction") == Value(1.0));  // defaults filled in
  CHECK(a.encoding_params.count("learned") == 1);
  CHECK(a.task == "addition");
  CHECK(a.min_len == 2);
  CHECK(a.train_len == 9);
  CHECK(a.task_params.at("addition").at("reverse_digits") == Value(true));
  CHECK(a.train.optimizer == "sgd");
  CHECK(a.train.optimizer_params.at("sgd").at("momentum") == Value(0.5));
  CHECK(a.train.optimizer_params.at("adamw").at("beta1") == Value(0.8));  // kept though not chosen
  CHECK(a.train.lr == 0.0123456789);
  CHECK(a.train.seed == 7);
  CHECK(a.train.early_stop_metric == "exact_match");
  CHECK(a.train.threads == 2);
  CHECK(a.eval.lengths == std::vector<std::size_t>{9, 18, 3});
  CHECK(a.eval.seed == 99);
  CHECK(a.output_dir == "runs/good \"quoted\"");

  const std::string text = to_toml(a);
  const ExperimentConfig b = parse_config(text, "resolved.toml").runs.at(0).config;
  CHECK(to_toml(b) == text);  // the text depends on the settings only (runs compare it)
  CHECK(b.train.optimizer_params == a.train.optimizer_params);
  CHECK(b.eval.lengths == a.eval.lengths);

  // Every key is written, defaults included.
  CHECK_THAT(text, Contains("[train.adamw]\nbeta1 = 0.8\nbeta2 = 0.99\neps = 1e-07\n"));
  CHECK_THAT(text, Contains("[train.sgd]\nmomentum = 0.5\n"));
  CHECK_THAT(text, Contains("fraction = 1.0\n"));
  CHECK_THAT(text, Contains("[encoding.learned]\nclamp = true\nmax_len = 0\n"));
  CHECK_THAT(text, Contains("dropout = 0.1\n"));  // the float field prints as written

  // A differing config is not the same.
  ExperimentConfig c = b;
  c.train.optimizer_params["adamw"]["beta1"] = Value(0.7);
  CHECK(to_toml(c) != text);
}

TEST_CASE("config: an empty file gives every default and a sweep round-trips") {
  const ExperimentConfig d = parse_config("", "experiments/configs/empty.toml").runs.at(0).config;
  CHECK(d.task == "copy");
  CHECK(d.encoding == "none");
  CHECK(d.train_len == 16);
  CHECK(d.train.steps == TrainConfig{}.steps);
  CHECK(d.output_dir == "runs/empty");
  CHECK(d.eval.lengths == std::vector<std::size_t>{8, 16, 32, 64});  // L/2, L, 2L, 4L for sequence tasks
  CHECK(d.train.optimizer_params.at("adamw").at("eps") == Value(1e-8));  // the chosen optimizer, resolved
  CHECK(to_toml(d) == to_toml(parse_config(to_toml(d), "x.toml").runs.at(0).config));

  const LoadedConfig loaded = parse_config(
      "[sweep]\n\"train.seed\" = [3, 1]\n\"encoding.name\" = [\"rope\", \"none\"]\n\"encoding.rope.base\" = [100, 1e4]\n",
      "s.toml");
  const ExperimentConfig& s = loaded.config;
  CHECK(loaded.runs.size() == 8);
  REQUIRE(s.sweep_order.size() == 3);
  CHECK(s.sweep_order[0] == "train.seed");  // file order, not alphabetical
  CHECK(s.sweep_order[2] == "encoding.rope.base");
  CHECK(s.sweep.at("encoding.rope.base") == std::vector<Value>{Value(100.0), Value(1e4)});
  CHECK(to_toml(s) == to_toml(parse_config(to_toml(s), "s.toml").config));
}

TEST_CASE("config: unknown keys name the nearest valid key with the line") {
  const std::string msg = error_of("[model]\nd_model = 64\n\n[train]\nsteps = 10\nlerning_rate = 0.1\n");
  CHECK_THAT(msg, StartsWith("quick.toml:6: [train] unknown key 'lerning_rate' (did you mean 'lr'?)"));
  CHECK_THAT(error_of("[model]\nn_head = 4\n"),
             StartsWith("quick.toml:2: [model] unknown key 'n_head' (did you mean 'n_heads'?)"));
  CHECK_THAT(error_of("[encoding]\nname = \"rope\"\n[encoding.rope]\nbse = 10\n"),
             StartsWith("quick.toml:4: [encoding.rope] unknown key 'bse' (did you mean 'base'?)"));
  CHECK_THAT(error_of("[encoding]\nbase = 10\n"),
             StartsWith("quick.toml:2: [encoding] unknown key 'base'") &&
                 Contains("its own subtable, e.g. [encoding.") && Contains("] base = ..."));  // the first encoding with a base
  CHECK_THAT(error_of("lr = 1\n"), StartsWith("quick.toml:1: key 'lr' is outside any section (did you mean [train] lr?)"));
}

TEST_CASE("config: wrong types and out-of-range values say what is allowed") {
  CHECK_THAT(error_of("\n[model]\nd_model = 64\n\nn_heads = \"4\"\n"),
             StartsWith("quick.toml:5: [model] key 'n_heads' has value \"4\"; expected an integer"));
  CHECK_THAT(error_of("[model]\ndropout = 1.0\n"),
             StartsWith("quick.toml:2: [model] key 'dropout' has value 1.0; expected a number in [0, 1)"));
  CHECK_THAT(error_of("[train]\nsteps = 0\n"),
             StartsWith("quick.toml:2: [train] key 'steps' has value 0; expected an integer in [1, "));
  CHECK_THAT(error_of("[train]\nlr = 0.1\nschedule = \"cosin\"\n"),
             StartsWith("quick.toml:3: [train] key 'schedule' has value \"cosin\"; expected one of: constant, cosine, linear"));
  CHECK_THAT(error_of("[train]\nseed = [1, 2]\n"), StartsWith("quick.toml:2: [train] key 'seed' has value [ 1, 2 ]"));
  CHECK_THAT(error_of("[train]\nlr = 1\n"), Contains("(no error)"));  // an integer is a fine number
  CHECK_THAT(error_of("[eval]\nlengths = [8, 0]\n"),
             StartsWith("quick.toml:2: [eval] key 'lengths' has value [ 8, 0 ]; expected an array of positive integers"));
  CHECK_THAT(error_of("[encoding]\nname = \"rope\"\n[encoding.rope]\nlayout = \"diagonal\"\n"),
             StartsWith("quick.toml:4: [encoding.rope] key 'layout' has value \"diagonal\"; expected one of: interleaved, half"));
}

TEST_CASE("config: unknown sections encodings tasks and subtables") {
  CHECK_THAT(error_of("[model]\nd_model = 64\n[trian]\nsteps = 1\n"),
             StartsWith("quick.toml:3: unknown section [trian] (did you mean [train]?)"));
  CHECK_THAT(error_of("[encoding]\n\nname = \"ropee\"\n"),
             StartsWith("quick.toml:3: [encoding] key 'name': unknown positional encoding 'ropee' (did you mean 'rope'?)"));
  CHECK_THAT(error_of("[encoding]\nname = \"rope\"\n\n[encoding.ropee]\nbase = 10\n"),
             StartsWith("quick.toml:4: [encoding] unknown encoding subtable [encoding.ropee] (did you mean [encoding.rope]?)"));
  CHECK_THAT(error_of("[task]\nname = \"cpy\"\n"),
             StartsWith("quick.toml:2: [task] key 'name': unknown task 'cpy' (did you mean 'copy'?)"));
  CHECK_THAT(error_of("[task]\nname = \"copy\"\n[task.adition]\n"),
             StartsWith("quick.toml:3: [task] unknown task subtable [task.adition] (did you mean [task.addition]?)"));
  CHECK_THAT(error_of("[[model]]\nd_model = 4\n"), StartsWith("quick.toml:1: [model] must be a table"));
}

TEST_CASE("config: cross-key errors point at one of the keys involved") {
  CHECK_THAT(error_of("[model]\nn_heads = 4\nd_model = 30\n"),
             StartsWith("quick.toml:3: [model] d_model 30 is not divisible by n_heads 4"));
  // head_dim 6 with fraction 0.5: 3 rotated dims -> the fraction line.
  CHECK_THAT(error_of("[model]\nd_model = 24\nn_heads = 4\n[encoding]\nname = \"rope\"\n[encoding.rope]\nbase = 100\nfraction = 0.5\n"),
             StartsWith("quick.toml:8: [encoding.rope] ") && Contains("even"));
  // head_dim 3 with the default fraction -> the encoding name line.
  CHECK_THAT(error_of("[model]\nd_model = 12\nn_heads = 4\n[encoding]\nname = \"rope\"\n"),
             StartsWith("quick.toml:5: [encoding.rope] ") && Contains("even"));
  CHECK_THAT(error_of("[task]\ntrain_len = 8\nmin_len = 9\n"),
             StartsWith("quick.toml:3: [task] min_len 9 is greater than train_len 8"));
  CHECK_THAT(error_of("[train]\nlr = 1e-3\nmin_lr = 1e-2\n"),
             StartsWith("quick.toml:3: [train] min_lr 0.01 is greater than lr 0.001"));
  // A task's own check points at the parameter it names.
  CHECK_THAT(error_of("[task]\nname = \"assoc_recall\"\ntrain_len = 20\n[task.assoc_recall]\nvalues = 5\nkeys = 16\n"),
             StartsWith("quick.toml:6: [task.assoc_recall] "));
  // An eval length the task cannot produce fails at load, not after training.
  CHECK_THAT(error_of("[task]\nname = \"assoc_recall\"\ntrain_len = 8\n[eval]\nlengths = [8, 64]\n"),
             StartsWith("quick.toml:5: [eval] length 64 is not possible for task 'assoc_recall'"));
}

TEST_CASE("config: TOML syntax errors carry the line") {
  const std::string msg = error_of("[model]\nd_model = 64\nn_heads = = 4\n");
  CHECK_THAT(msg, StartsWith("quick.toml:3:") && Contains("TOML syntax error"));
  CHECK_THAT(error_of("[model]\nd_model = 64\nd_model = 32\n"), StartsWith("quick.toml:3:"));
}

TEST_CASE("config: sweep keys and values are checked") {
  CHECK_THAT(error_of("[sweep]\n\"train.sed\" = [1, 2]\n"),
             StartsWith("quick.toml:2: [sweep] key 'train.sed' names no setting: [train] unknown key 'sed' (did you mean 'seed'?)"));
  CHECK_THAT(error_of("[sweep]\n\"trian.seed\" = [1, 2]\n"), StartsWith("quick.toml:2:") && Contains("did you mean [train]?"));
  CHECK_THAT(error_of("[sweep]\nseed = [1, 2]\n"), StartsWith("quick.toml:2:") && Contains("\"section.key\""));
  CHECK_THAT(error_of("[sweep]\n\"encoding.rope.bse\" = [1, 2]\n"),
             StartsWith("quick.toml:2:") && Contains("(did you mean 'base'?)"));
  CHECK_THAT(error_of("[sweep]\n\"eval.lengths\" = [1, 2]\n"), StartsWith("quick.toml:2:") && Contains("cannot be swept"));
  CHECK_THAT(error_of("[sweep]\n\n\"train.lr\" = [0.1, \"fast\"]\n"),
             StartsWith("quick.toml:3: [sweep] key 'train.lr' has value \"fast\"; expected a number"));
  CHECK_THAT(error_of("[sweep]\n\"model.n_heads\" = [4, 0]\n"),
             StartsWith("quick.toml:2: [sweep] key 'model.n_heads' has value 0; expected an integer"));
  CHECK_THAT(error_of("[sweep]\n\"encoding.name\" = [\"rope\", \"alibii\"]\n"),
             StartsWith("quick.toml:2: [sweep] key 'encoding.name' has value \"alibii\": unknown positional encoding"));
  CHECK_THAT(error_of("[sweep]\n\"train.seed\" = 3\n"), StartsWith("quick.toml:2: [sweep] key 'train.seed' has value 3; expected a non-empty array"));
  CHECK_THAT(error_of("[sweep]\n\"train.seed\" = []\n"), StartsWith("quick.toml:2:") && Contains("non-empty array"));
  CHECK_THAT(error_of("[sweep]\n\"train.seed\" = [1, 1]\n"), StartsWith("quick.toml:2:") && Contains("twice"));
  // Each value alone is fine, but one combination is not: the error names the cell.
  CHECK_THAT(error_of("[model]\nd_model = 64\n[sweep]\n\"model.n_heads\" = [4, 5]\n"),
             StartsWith("quick.toml:4: [model] d_model 64 is not divisible by n_heads 5") &&
                 Contains("(sweep cell model.n_heads=5)"));
  // The base alone need not be runnable when the sweep fixes it.
  CHECK_THAT(error_of("[model]\nd_model = 60\nn_heads = 7\n[sweep]\n\"model.n_heads\" = [4, 6]\n"), Contains("(no error)"));
}

TEST_CASE("config: optimizer parameters live in [train.<optimizer>] and moved keys say where") {
  CHECK_THAT(error_of("[train]\nlr = 0.1\nbeta1 = 0.8\n"),
             StartsWith("quick.toml:3: [train] key 'beta1' moved to [train.adamw]") &&
                 Contains("write [train.adamw] beta1 = ..."));
  CHECK_THAT(error_of("[train]\nmomentum = 0.5\n"), StartsWith("quick.toml:2: [train] key 'momentum' moved to [train.sgd]"));
  CHECK_THAT(error_of("[sweep]\n\"train.beta2\" = [0.9, 0.99]\n"),
             StartsWith("quick.toml:2: [sweep] key 'train.beta2' names no setting: [train] key 'beta2' moved to [train.adamw]"));
  CHECK_THAT(error_of("", {"train.eps=1e-6"}), StartsWith("--set train.eps=1e-6: [train] key 'eps' moved to [train.adamw]"));
  CHECK_THAT(error_of("[train.adamw]\nbeta1 = 1.0\n"),
             StartsWith("quick.toml:2: [train.adamw] key 'beta1' has value 1.0; expected a number in [0, 1)"));
  CHECK_THAT(error_of("[train.adamw]\nmomentum = 0.5\n"),
             StartsWith("quick.toml:2: [train.adamw] unknown key 'momentum'; allowed keys: beta1, beta2, eps"));
  CHECK_THAT(error_of("[train.adam]\nbeta1 = 0.8\n"),
             StartsWith("quick.toml:1: [train] unknown optimizer subtable [train.adam] (did you mean [train.adamw]?)"));
  // The lists name every registered optimizer and metric: the built-ins among them.
  CHECK_THAT(error_of("[train]\noptimizer = \"adam\"\n"),
             StartsWith("quick.toml:2: [train] key 'optimizer' has value \"adam\"; expected one of: ") &&
                 Contains("adamw") && Contains("sgd"));
  CHECK_THAT(error_of("[train]\nearly_stop_metric = \"acc\"\n"),
             StartsWith("quick.toml:2: [train] key 'early_stop_metric' has value \"acc\"; expected one of: \"\" (off), ") &&
                 Contains("loss, token_acc") && Contains("exact_match"));

  // Swept like any other parameter; each cell resolves the chosen optimizer's subtable.
  const auto cells = expand_sweep(parse_config(
      "[train]\noptimizer = \"sgd\"\n[sweep]\n\"train.sgd.momentum\" = [0.0, 0.5]\n", "quick.toml").config);
  REQUIRE(cells.size() == 2);
  CHECK(cells[1].config.train.optimizer_params.at("sgd").at("momentum") == Value(0.5));
  CHECK(cells[1].config.cell.label == "train.sgd.momentum=0.5");
  CHECK(cells[0].config.train.optimizer_params.count("adamw") == 0);  // only what was chosen or given
}

TEST_CASE("config: overrides apply with the same checks and their own location") {
  const ExperimentConfig c = parse_config("[train]\nlr = 0.1\n", "quick.toml",
                                          {"train.lr=0.01", "encoding.name=rope", "encoding.rope.base = 500",
                                           "model.causal=false", "output.dir=runs/x y", "sweep.train.seed=[1, 2]"})
                                   .config;
  CHECK(c.train.lr == 0.01);
  CHECK(c.encoding == "rope");
  CHECK(c.encoding_params.at("rope").at("base") == Value(500.0));
  CHECK_FALSE(c.model.causal);
  CHECK(c.output_dir == "runs/x y");
  CHECK(c.sweep.at("train.seed").size() == 2);

  CHECK_THAT(error_of("", {"train.lerning_rate=0.1"}),
             StartsWith("--set train.lerning_rate=0.1: [train] unknown key 'lerning_rate' (did you mean 'lr'?)"));
  CHECK_THAT(error_of("", {"model.n_heads=four"}),
             StartsWith("--set model.n_heads=four: [model] key 'n_heads' has value \"four\"; expected an integer"));
  CHECK_THAT(error_of("[model]\nd_model = 64\n", {"model.n_heads=5"}),
             StartsWith("--set model.n_heads=5: [model] d_model 64 is not divisible by n_heads 5"));
  CHECK_THAT(error_of("", {"lr=0.1"}), StartsWith("--set lr=0.1: expected section.key=value"));
  CHECK_THAT(error_of("", {"train.lr=[1,"}), StartsWith("--set train.lr=[1,: value is not valid TOML"));
  CHECK_THAT(error_of("", {"eval.lengths=[4, 8]"}), Contains("(no error)"));
  CHECK_THAT(error_of("", {"eval.lengths=[[4]]"}), StartsWith("--set eval.lengths=[[4]]: arrays hold single values"));
  CHECK_THAT(error_of("", {"trian.lr=1"}), StartsWith("--set trian.lr=1: unknown section [trian] (did you mean [train]?)"));
}

TEST_CASE("config: sweep cells come in file order with labels, safe directory names and [cell] tables") {
  const LoadedConfig c = parse_config(
      "[sweep]\n\"encoding.name\" = [\"none\", \"rope\"]\n\"train.seed\" = [0, 1, 2]\n", "quick.toml");
  const auto& cells = c.runs;
  REQUIRE(cells.size() == 6);
  CHECK(cells[0].config.cell.label == "encoding.name=none,train.seed=0");
  CHECK(cells[1].config.cell.label == "encoding.name=none,train.seed=1");  // the last key varies fastest
  CHECK(cells[3].config.cell.label == "encoding.name=rope,train.seed=0");
  CHECK(cells[5].dir_name == "encoding.name=rope__train.seed=2");
  CHECK(expand_sweep(c.config).size() == 6);
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const RunSpec& cell = cells[i];
    const CellInfo& info = cell.config.cell;
    CHECK(info.index == i);
    CHECK(cell.config.sweep.empty());
    CHECK(cell.config.sweep_order.empty());
    REQUIRE(info.assignment.size() == 2);
    CHECK(info.assignment[0].first == "encoding.name");
    CHECK(cell.config.encoding == std::get<std::string>(info.assignment[0].second));
    CHECK(cell.model.encoding == cell.config.encoding);
    CHECK(cell.config.train.seed == std::uint64_t(std::get<std::int64_t>(info.assignment[1].second)));
    CHECK(cell.task == cells[0].task);  // one task setting: built once, shared
    // The cell file (what `pelab sweep` hands each cell) reads back to the same cell, [cell] included.
    const std::string text = to_toml(cell.config);
    CHECK_THAT(text, Contains("\n[cell]\nindex = " + std::to_string(i) + "\nlabel = \"" + info.label + "\"\n"));
    const LoadedConfig back = parse_config(text, "cell.toml");
    REQUIRE(back.runs.size() == 1);
    const CellInfo& b = back.runs[0].config.cell;
    CHECK(b.index == info.index);
    CHECK(b.label == info.label);
    CHECK(b.assignment == info.assignment);
    CHECK(to_toml(back.runs[0].config) == text);
  }

  // Odd characters become '-', "__" only separates; numbers print as written.
  const auto odd = expand_sweep(parse_config(
      "[sweep]\n\"task.char_lm.path\" = [\"a b/c__d\"]\n\"train.lr\" = [1e-3]\n\"train.early_stop_metric\" = [\"\"]\n",
      "quick.toml").config);
  REQUIRE(odd.size() == 1);
  CHECK(odd[0].config.cell.label == "task.char_lm.path=a b/c__d,train.lr=0.001,train.early_stop_metric=");
  CHECK(odd[0].dir_name == "task.char_lm.path=a-b-c_d__train.lr=0.001__train.early_stop_metric=");

  // No grid: one cell, the config itself.
  const auto one = expand_sweep(parse_config("", "quick.toml").config);
  REQUIRE(one.size() == 1);
  CHECK(one[0].config.cell.empty());
  CHECK(one[0].dir_name.empty());

  // Sweeping the task's length re-derives default eval lengths per cell.
  const auto lens = parse_config("[sweep]\n\"task.train_len\" = [8, 16]\n", "quick.toml").runs;
  REQUIRE(lens.size() == 2);
  CHECK(lens[0].config.eval.lengths == std::vector<std::size_t>{4, 8, 16, 32});
  CHECK(lens[1].config.eval.lengths == std::vector<std::size_t>{8, 16, 32, 64});
}

TEST_CASE("config: files load and a missing file is a clear error") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(PELAB_SOURCE_DIR) / "experiments" / "configs";
  std::size_t n = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".toml") continue;
    INFO(entry.path().string());
    LoadedConfig c;
    REQUIRE_NOTHROW(c = load_config(entry.path().string()));
    CHECK(c.config.source == entry.path().string());
    CHECK_FALSE(c.config.output_dir.empty());
    CHECK_FALSE(c.runs.empty());
    ++n;
  }
  CHECK(n >= 6);
  const LoadedConfig quick = load_config((dir / "quick.toml").string());
  CHECK(quick.config.task == "copy");
  CHECK(quick.runs.size() == 12);

  try {
    load_config("/nonexistent/dir/nothing.toml");
    FAIL("no error for a missing file");
  } catch (const ConfigError& e) {
    CHECK_THAT(std::string(e.what()), StartsWith("/nonexistent/dir/nothing.toml: config file not found"));
  }
}

TEST_CASE("config: a [cell] table must agree with the settings and excludes a grid") {
  const std::string cell = "[encoding]\nname = \"rope\"\n[cell]\nindex = 0\nlabel = \"x\"\n[cell.assignment]\n";
  CHECK_THAT(error_of(cell + "\"encoding.name\" = \"rope\"\n"), Contains("(no error)"));
  CHECK_THAT(error_of(cell + "\"encoding.name\" = \"none\"\n"),
             StartsWith("quick.toml:7: [cell.assignment] 'encoding.name' = \"none\" but the config sets it to \"rope\""));
  CHECK_THAT(error_of(cell + "\"encoding.nme\" = \"rope\"\n"),
             StartsWith("quick.toml:7: [cell.assignment] key 'encoding.nme' names no setting: [encoding] unknown key 'nme'"));
  CHECK_THAT(error_of("[cell]\nindex = -1\n"), StartsWith("quick.toml:2: [cell] key 'index' has value -1; [cell] "));
  CHECK_THAT(error_of("[cell]\nindex = 1\n[sweep]\n\"train.seed\" = [1, 2]\n"),
             StartsWith("quick.toml:1: [cell] describes one cell of a grid"));
}

TEST_CASE("config: position ids: modes, the auto max_position, the model's position range", "[positions]") {
  // copy at train_len 16: 34 tokens; default eval lengths up to 64: 130 tokens.
  const RunSpec plain = parse_config("", "p.toml").runs.at(0);
  CHECK(plain.config.train.positions == PositionMode::contiguous);
  CHECK(plain.config.eval.positions == "train");
  CHECK(plain.config.train.max_position == 130);  // auto: the longest sequence the run sees
  CHECK(plain.model.max_position == 0);           // contiguous training: ids < train_seq_len
  CHECK(plain.model.dims().max_position == plain.model.train_seq_len);

  const RunSpec rnd = parse_config("[train]\npositions = \"randomized\"\n", "r.toml").runs.at(0);
  CHECK(rnd.config.train.positions == PositionMode::randomized);
  CHECK(rnd.config.train.max_position == 130);
  CHECK(rnd.model.max_position == 130);  // a learned table would have 130 rows
  const PositionConfig ep = eval_positions(rnd.config);
  CHECK(ep.mode == PositionMode::randomized);  // "train": as in training (Ruoss et al.)
  CHECK(ep.max_position == 130);

  const RunSpec mixed =
      parse_config("[train]\npositions = \"offset\"\nmax_position = 500\n[eval]\npositions = \"contiguous\"\n", "m.toml")
          .runs.at(0);
  CHECK(mixed.config.train.max_position == 500);
  CHECK(mixed.model.max_position == 500);
  CHECK(eval_positions(mixed.config).mode == PositionMode::contiguous);

  // Written resolved, read back the same.
  const std::string text = to_toml(rnd.config);
  CHECK_THAT(text, Contains("positions = \"randomized\"\nmax_position = 130\n"));
  CHECK_THAT(text, Contains("[eval]") && Contains("positions = \"train\"\n"));
  CHECK(to_toml(parse_config(text, "again.toml").runs.at(0).config) == text);
}

TEST_CASE("config: bad position settings name the key, the line and what is allowed", "[positions]") {
  CHECK_THAT(error_of("[train]\nseed = 1\npositions = \"random\"\n"),
             StartsWith("quick.toml:3: [train] key 'positions' has value \"random\"; expected one of: contiguous, "
                        "offset, randomized"));
  CHECK_THAT(error_of("[eval]\npositions = \"shifted\"\n"),
             StartsWith("quick.toml:2: [eval] key 'positions' has value \"shifted\"; expected one of: train, "
                        "contiguous, offset, randomized"));
  CHECK_THAT(error_of("[train]\nmax_position = -3\n"),
             StartsWith("quick.toml:2: [train] key 'max_position' has value -3; expected an integer in [0, "));
  CHECK_THAT(error_of("[train]\nmax_position = 1.5\n"), StartsWith("quick.toml:2: [train] key 'max_position'"));
  // Shorter than a training sequence (34 tokens), whatever the mode.
  CHECK_THAT(error_of("[train]\nlr = 0.001\nmax_position = 33\n"),
             StartsWith("quick.toml:3: [train] max_position 33 is smaller than the longest training sequence, 34 "
                        "tokens (task.train_len 16); expected max_position >= 34, or 0 (auto)"));
  // Long enough for training but not for randomized ids at eval length 64 (130 tokens).
  CHECK_THAT(error_of("[train]\npositions = \"randomized\"\nmax_position = 100\n"),
             StartsWith("quick.toml:3: [train] max_position 100 is smaller than the longest eval sequence, 130 tokens "
                        "(eval length 64), and evaluation draws randomized ids") &&
                 Contains("expected max_position >= 130, or 0 (auto)"));
  CHECK_THAT(error_of("[train]\nmax_position = 100\n[eval]\npositions = \"offset\"\n"),
             StartsWith("quick.toml:2: [train] max_position 100 is smaller than the longest eval sequence"));
  // ... which contiguous evaluation does not need.
  CHECK_THAT(error_of("[train]\npositions = \"randomized\"\nmax_position = 100\n[eval]\npositions = \"contiguous\"\n"),
             Contains("(no error)"));
  // An override points at itself.
  CHECK_THAT(error_of("[train]\npositions = \"offset\"\n", {"train.max_position=40", "eval.lengths=[4, 32]"}),
             StartsWith("--set train.max_position=40: [train] max_position 40 is smaller than the longest eval sequence, "
                        "66 tokens (eval length 32)"));
}

TEST_CASE("config: the parameters of t5, kerple and fire are checked at load with the line", "[positions][encodings]") {
  const std::string t5 = "[encoding]\nname = \"t5\"\n[encoding.t5]\nnum_buckets = 32\n";
  CHECK_THAT(error_of(t5 + "max_distance = 16\n"),
             StartsWith("quick.toml:5: [encoding.t5] max_distance 16 must be greater than num_buckets/2 = 16"));
  CHECK_THAT(error_of(t5 + "max_distance = 17\n"), Contains("(no error)"));
  CHECK_THAT(error_of("[model]\ncausal = false\n" + t5 + "max_distance = 8\n"),
             StartsWith("quick.toml:7: [encoding.t5] max_distance 8 must be greater than num_buckets/4 = 8"));
  CHECK_THAT(error_of("[encoding]\nname = \"t5\"\n[encoding.t5]\nnum_buckets = 2\n"),
             StartsWith("quick.toml:4: [encoding.t5] key 'num_buckets' has value 2; expected an integer in [4, 4096]"));
  CHECK_THAT(error_of("[encoding]\nname = \"t5\"\n[encoding.t5]\nshared_layers = 1\n"),
             StartsWith("quick.toml:4: [encoding.t5] key 'shared_layers' has value 1; expected a boolean"));
  CHECK_THAT(error_of("[encoding]\nname = \"kerple\"\n[encoding.kerple]\nvariant = \"exp\"\n"),
             StartsWith("quick.toml:4: [encoding.kerple] key 'variant' has value \"exp\"; expected one of: log, power"));
  CHECK_THAT(error_of("[encoding]\nname = \"fire\"\n[encoding.fire]\ninit_c = 0\n"),
             StartsWith("quick.toml:4: [encoding.fire] key 'init_c' has value 0; expected a number in [1e-06, 1000]"));
  CHECK_THAT(error_of("[encoding]\nname = \"fire\"\n[encoding.fire]\nhidden = 0\n"),
             StartsWith("quick.toml:4: [encoding.fire] key 'hidden' has value 0; expected an integer in [1, 4096]"));
  CHECK_THAT(error_of("[encoding]\nname = \"fire\"\n[encoding.fire]\ninit_L = 0.5\n"),
             StartsWith("quick.toml:4: [encoding.fire] key 'init_L' has value 0.5; expected a number in [1, "));
  CHECK_THAT(error_of("[encoding]\nname = \"fire\"\n[encoding.fire]\nper_head = \"no\"\n"),
             StartsWith("quick.toml:4: [encoding.fire] key 'per_head' has value \"no\"; expected a boolean"));
}

TEST_CASE("config: the parameters of shaw, xpos and cope are checked at load with the line", "[positions][encodings]") {
  CHECK_THAT(error_of("[encoding]\nname = \"shaw\"\n[encoding.shaw]\nclip = 0\n"),
             StartsWith("quick.toml:4: [encoding.shaw] key 'clip' has value 0; expected an integer in [1, 100000]"));
  CHECK_THAT(error_of("[encoding]\nname = \"shaw\"\n[encoding.shaw]\nclip = 5000\nvalues = false\n"),
             Contains("(no error)"));  // a clip beyond every length is fine
  CHECK_THAT(error_of("[encoding]\nname = \"xpos\"\n[encoding.xpos]\ngamma = 0\n"),
             StartsWith("quick.toml:4: [encoding.xpos] key 'gamma' has value 0; expected a number in [0.001, 1000]"));
  CHECK_THAT(error_of("[encoding]\nname = \"xpos\"\n[encoding.xpos]\nscale_base = 0.5\n"),
             StartsWith("quick.toml:4: [encoding.xpos] key 'scale_base' has value 0.5; expected a number in [1, "));
  CHECK_THAT(error_of("[model]\nn_heads = 64\n[encoding]\nname = \"xpos\"\n"),
             StartsWith("quick.toml:2: [encoding.xpos] head_dim 1 (d_model / n_heads) must be even"));
  CHECK_THAT(error_of("[encoding]\nname = \"cope\"\n[encoding.cope]\nnpos = 1\n"),
             StartsWith("quick.toml:4: [encoding.cope] npos 1 gives every pair the same position"));
  CHECK_THAT(error_of("[encoding]\nname = \"cope\"\n[encoding.cope]\nnpos = -1\n"),
             StartsWith("quick.toml:4: [encoding.cope] key 'npos' has value -1; expected an integer in [0, 1000000]"));
  // bidirectional attention: the line of model.causal
  CHECK_THAT(error_of("[model]\ncausal = false\n[encoding]\nname = \"cope\"\n[encoding.cope]\nnpos = 8\n"),
             StartsWith("quick.toml:2: [encoding.cope] needs causal attention (model.causal = true)"));
}
