// The memory estimate (experiments/run/resources.hpp) against what the caching allocator actually hands
// out for one training step and one evaluation batch, for every encoding, at short and long lengths;
// the parameter count against the built model; the limit, the eval batch that fits, the refusals.
#include <catch2/catch.hpp>

#include <cstdio>

#include "core/allocator.hpp"
#include "core/ops/cross_entropy.hpp"
#include "core/tape.hpp"
#include "experiments/config/config.hpp"
#include "experiments/eval/evaluate.hpp"
#include "experiments/run/resources.hpp"
#include "layers/positional/encoding.hpp"
#include "training/optimizer_registry.hpp"
#include "training/positions.hpp"
#include "training/trainer.hpp"

using namespace pelab;

namespace {

RunSpec spec_of(const std::string& encoding, std::size_t train_len, std::size_t batch,
                const std::vector<std::string>& extra = {}) {
  std::vector<std::string> sets = {"encoding.name=" + encoding, "task.train_len=" + std::to_string(train_len),
                                   "train.batch_size=" + std::to_string(batch)};
  sets.insert(sets.end(), extra.begin(), extra.end());
  return parse_config("[model]\nd_model = 32\nn_layers = 2\nn_heads = 4\n[task]\nname = \"copy\"\n"
                      "[eval]\nsamples = 16\nbatch_size = 16\n",
                      "res.toml", sets)
      .runs.at(0);
}

// Bytes the caching allocator obtained from the system while building the model and its optimizer
// and running one training step, starting from an emptied cache: the step's high-water mark.
std::size_t measured_training(const RunSpec& spec) {
  memory::release_cache();
  const std::size_t before = memory::stats().system_bytes;
  {
    Transformer m(spec.model);
    Rng rng(1);
    init_parameters(m, rng);
    OptimizerCommon common;
    auto opt = make_optimizer(spec.config.train.optimizer, {}, common, m.parameters());
    Rng data(2), prng(3);
    Batch b = spec.task->sample(data, spec.config.train.batch_size, spec.config.train_len, spec.config.train_len);
    assign_positions(b, {spec.config.train.positions, spec.config.train.max_position}, prng);
    Tensor loss = cross_entropy(m.forward(b.tokens, b.positions), b.targets, &b.mask);
    loss.backward();
    opt->step(1e-3);
  }
  Tape::current().clear();
  return memory::stats().system_bytes - before;
}

std::size_t measured_evaluation(const RunSpec& spec, std::size_t n) {
  memory::release_cache();
  const std::size_t before = memory::stats().system_bytes;
  {
    Transformer m(spec.model);
    Rng rng(1);
    init_parameters(m, rng);
    m.set_training(false);
    EvalConfig ec = spec.config.eval;
    ec.samples = ec.batch_size;  // one batch
    evaluate_length(m, *spec.task, ec, eval_positions(spec.config), n, spec.config.min_len, spec.config.train_len);
  }
  return memory::stats().system_bytes - before;
}

}  // namespace

TEST_CASE("the parameter count without building the model matches the model for every encoding", "[resources]") {
  std::size_t checked = 0;
  for (const auto& enc : EncodingRegistry::instance().names())
    for (const char* tie : {"false", "true"}) {
      RunSpec spec;
      try {
        spec = spec_of(enc, 8, 4, {std::string("model.tie_embeddings=") + tie, "model.d_ff=48"});
      } catch (const Error& e) {  // an encoding may refuse tied embeddings (concat narrows the token table)
        INFO(enc << ": " << e.what());
        CHECK(std::string(tie) == "true");
        continue;
      }
      ++checked;
      const Transformer m(spec.model);
      const ResourceModel rm(spec);
      INFO(enc << " tie " << tie);
      CHECK(rm.parameters() == m.num_parameters());
    }
  CHECK(checked > EncodingRegistry::instance().names().size());
}

TEST_CASE("the memory estimate is within a factor of 2 of the allocator's peak, training and evaluation",
          "[resources]") {
  // Short sequences (the widths dominate) and long ones (attention's T^2 dominates), every encoding,
  // contiguous and randomized ids (per-row biases).
  for (const auto& enc : EncodingRegistry::instance().names())
    for (std::size_t len : {4, 96})
      for (const char* mode : {"contiguous", "randomized"}) {
        const RunSpec spec = spec_of(enc, len, 8, {std::string("train.positions=") + mode});
        const ResourceModel rm(spec);
        const double est_t = double(rm.training().total()), got_t = double(measured_training(spec));
        const double est_e = double(rm.evaluation(len, 16).total()), got_e = double(measured_evaluation(spec, len));
        INFO(enc << " train_len " << len << " " << mode << ": training estimate " << format_bytes(est_t) << " measured "
                 << format_bytes(got_t) << "; evaluation estimate " << format_bytes(est_e) << " measured "
                 << format_bytes(got_e));
        std::printf("%-10s len %3zu %-10s  train est %9s got %9s (%.2f)  eval est %9s got %9s (%.2f)\n", enc.c_str(),
                    len, mode, format_bytes(est_t).c_str(), format_bytes(got_t).c_str(), est_t / got_t,
                    format_bytes(est_e).c_str(), format_bytes(got_e).c_str(), est_e / got_e);
        CHECK(est_t / got_t <= 2.0);
        CHECK(est_t / got_t >= 0.5);
        CHECK(est_e / got_e <= 2.0);
        CHECK(est_e / got_e >= 0.5);
      }
}

TEST_CASE("forward_bytes of a ModelConfig agrees with the run's evaluation estimate and adds the maps", "[resources]") {
  for (const char* enc : {"none", "alibi", "t5"}) {
    const RunSpec spec = spec_of(enc, 48, 8);
    const ResourceModel rm(spec);
    const std::size_t T = spec.task->sequence_length(48);
    INFO(enc);
    CHECK(forward_bytes(spec.model, 16, T) == rm.evaluation(48, 16).total());
    const EncodingCost ec = measure_encoding(spec.model);
    const std::size_t maps = spec.model.n_layers * 16 * spec.model.n_heads * T * T * sizeof(real);
    CHECK(forward_bytes(spec.model, ec, 16, T, true) == forward_bytes(spec.model, ec, 16, T) + maps);
    CHECK(forward_bytes(spec.model, ec, 16, T, true) == rm.probe(48, 16).total());
    // Quadratic in the length: four times the tokens, more than ten times the bytes at long T.
    CHECK(forward_bytes(spec.model, ec, 1, 4096) > 10 * forward_bytes(spec.model, ec, 1, 1024) / 2);
  }
}

TEST_CASE("check_memory(what, bytes, setting) refuses above the limit naming the setting, estimate and limit",
          "[resources]") {
  MemoryLimit limit;
  limit.bytes = 1024 * 1024;
  limit.source = "--memory-limit 1";
  CHECK_NOTHROW(check_memory("probing length 64", 1024 * 1024, "--lengths", limit));
  try {
    check_memory("probing length 4096", 3 * 1024 * 1024, "--lengths", limit);
    FAIL("no error");
  } catch (const Error& e) {
    const std::string m = e.what();
    INFO(m);
    CHECK(m.rfind("--lengths: probing length 4096 needs about 3.00 MiB", 0) == 0);
    CHECK(m.find("the limit is 1.00 MiB (--memory-limit 1;") != std::string::npos);
  }
  limit.bytes = 0;  // no check
  CHECK_NOTHROW(check_memory("anything", std::size_t(1) << 60, "--lengths", limit));
}
