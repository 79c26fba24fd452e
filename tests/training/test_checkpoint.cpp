// Checkpoints: bit-exact round trips, identical continuation after reload, pruning, which directories
// count, and strict loading errors.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/ops/cross_entropy.hpp"
#include "core/rng.hpp"
#include "core/tape.hpp"
#include "layers/transformer.hpp"
#include "training/checkpoint.hpp"
#include "training/checksum.hpp"
#include "training/optimizer_registry.hpp"

using namespace pelab;
namespace fs = std::filesystem;

namespace {

// Same shape and the same bits (xtensor's operator== does not mix with Catch's decomposer).
bool bit_equal(const Array& a, const Array& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size() * sizeof(real)) == 0;
}

struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("pelab_test_ckpt_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string str() const { return path.string(); }
};

// A module with hand-picked parameter names and shapes.
class Tiny : public Module {
 public:
  Tiny(std::size_t n, bool with_extra = false) {
    add_parameter("w", {3, n}, ParamKind::weight);
    add_parameter("b", {n}, ParamKind::bias);
    if (with_extra) add_parameter("extra", {2}, ParamKind::weight);
  }
};

std::unique_ptr<Transformer> small_model(std::uint64_t seed) {
  ModelConfig c;
  c.vocab = 9;
  c.d_model = 8;
  c.n_layers = 1;
  c.n_heads = 2;
  c.encoding = "learned";
  c.train_seq_len = 6;
  auto m = std::make_unique<Transformer>(c);
  Rng rng(seed);
  init_parameters(*m, rng, 0.3);
  return m;
}

// One training step on a fixed random batch drawn from `rng`.
void train_step(Transformer& m, Optimizer& opt, Rng& rng, double lr) {
  const std::size_t B = 2, T = 6;
  IndexArray tokens(Shape{B, T}), positions(Shape{B, T}), targets(Shape{B, T});
  for (std::size_t i = 0; i < B * T; ++i) {
    tokens.data()[i] = std::int32_t(rng.below(9));
    targets.data()[i] = std::int32_t(rng.below(9));
    positions.data()[i] = std::int32_t(i % T);
  }
  opt.zero_grad();
  Tensor loss = cross_entropy(m.forward(tokens, positions), targets);
  loss.backward();
  clip_grad_norm(opt.params(), 1.0);
  opt.step(lr);
}

void fill(const Module& m, real start) {
  for (auto& p : m.parameters()) {
    real* d = p.tensor.mutable_data();
    for (std::size_t i = 0; i < p.tensor.numel(); ++i) d[i] = start + real(i);
  }
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

bool contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

// The optimizers as the trainer builds them, by name (their classes are private to training/optimizers/).
std::unique_ptr<Optimizer> adamw(std::vector<Parameter> params) {
  OptimizerCommon c;
  c.weight_decay = 0.1;
  return make_optimizer("adamw", {}, c, std::move(params));
}
std::unique_ptr<Optimizer> sgd(std::vector<Parameter> params) {
  OptimizerCommon c;
  c.weight_decay = 0;
  return make_optimizer("sgd", {}, c, std::move(params));
}

}  // namespace

TEST_CASE("checkpoint names are zero padded to 9 digits") {
  CHECK(checkpoint_name(123) == "step_000000123");
  CHECK(checkpoint_name(0) == "step_000000000");
  CHECK(checkpoint_name(1234567890) == "step_1234567890");
}

TEST_CASE("a checkpoint round trips weights and optimizer state bit-exactly") {
  TempDir dir;
  auto a = small_model(1);
  auto opt_a = adamw(a->parameters());
  Rng data(5);
  for (int s = 0; s < 3; ++s) train_step(*a, *opt_a, data, 1e-2);

  CheckpointState st;
  st.step = 3;
  st.extra = {{"config", "[model]\nd_model = 8\n"}, {"rng", {1, 2, 3, 4}}, {"losses", {2.5, 2.25}}};
  const std::string path = save_checkpoint(dir.str(), *a, *opt_a, st, 3);
  CHECK(path == (dir.path / "checkpoints" / "step_000000003").string());
  CHECK(fs::is_regular_file(fs::path(path) / "weights.safetensors"));
  CHECK(fs::is_regular_file(fs::path(path) / "optimizer.safetensors"));
  CHECK(fs::is_regular_file(fs::path(path) / "state.json"));
  REQUIRE(latest_checkpoint(dir.str()) == path);

  auto b = small_model(2);  // different initial values
  auto opt_b = adamw(b->parameters());
  const CheckpointState back = load_checkpoint(path, *b, opt_b.get());
  CHECK(back.step == 3);
  CHECK(back.extra == st.extra);
  CHECK(opt_b->steps() == 3);
  const auto pa = a->parameters(), pb = b->parameters();
  REQUIRE(pa.size() == pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    INFO(pa[i].name);
    CHECK(bit_equal(pa[i].tensor.value(), pb[i].tensor.value()));
  }
  SafeTensors sa, sb;
  opt_a->state_to(sa);
  opt_b->state_to(sb);
  CHECK(sa.metadata == sb.metadata);
  REQUIRE(sa.floats.size() == sb.floats.size());
  for (const auto& [k, v] : sa.floats) {
    INFO(k);
    REQUIRE(sb.floats.count(k) == 1);
    CHECK(bit_equal(sb.floats.at(k), v));
  }

  // Continuing from the reloaded copy is bit-identical to never having stopped.
  Rng data_a(77), data_b(77);
  for (int s = 0; s < 4; ++s) {
    train_step(*a, *opt_a, data_a, 5e-3);
    train_step(*b, *opt_b, data_b, 5e-3);
  }
  for (std::size_t i = 0; i < pa.size(); ++i) {
    INFO(pa[i].name);
    CHECK(bit_equal(pa[i].tensor.value(), pb[i].tensor.value()));
  }
}

TEST_CASE("keep_last prunes older checkpoints but never the new one") {
  TempDir dir;
  Tiny m(3);
  auto opt = sgd(m.parameters());
  auto steps = [&] {
    std::vector<std::size_t> s;
    for (const auto& [step, path] : list_checkpoints(dir.str())) s.push_back(step);
    return s;
  };
  for (std::size_t s = 1; s <= 5; ++s) save_checkpoint(dir.str(), m, *opt, CheckpointState{s * 10, {}}, 2);
  CHECK(steps() == std::vector<std::size_t>{40, 50});
  save_checkpoint(dir.str(), m, *opt, CheckpointState{60, {}}, 1);
  CHECK(steps() == std::vector<std::size_t>{60});
  for (std::size_t s = 7; s <= 9; ++s) save_checkpoint(dir.str(), m, *opt, CheckpointState{s * 10, {}}, 0);
  CHECK(steps() == std::vector<std::size_t>{60, 70, 80, 90});  // keep_last 0 keeps everything
}

TEST_CASE("saving the same step again replaces that checkpoint") {
  TempDir dir;
  Tiny m(3);
  auto opt = sgd(m.parameters());
  fill(m, 1);
  save_checkpoint(dir.str(), m, *opt, CheckpointState{7, {{"v", 1}}}, 2);
  fill(m, 100);
  const std::string path = save_checkpoint(dir.str(), m, *opt, CheckpointState{7, {{"v", 2}}}, 2);
  REQUIRE(list_checkpoints(dir.str()).size() == 1);
  Tiny back(3);
  const auto st = load_checkpoint(path, back, nullptr);
  CHECK(st.extra.at("v") == 2);
  CHECK(back.parameter("w").data()[0] == 100);
  for (const auto& e : fs::directory_iterator(dir.path / "checkpoints"))
    CHECK(e.path().filename().string() == "step_000000007");
}

TEST_CASE("latest_checkpoint ignores temp and incomplete directories") {
  TempDir dir;
  CHECK_FALSE(latest_checkpoint(dir.str()).has_value());  // no checkpoints/ at all
  Tiny m(3);
  auto opt = sgd(m.parameters());
  const std::string good = save_checkpoint(dir.str(), m, *opt, CheckpointState{5, {}}, 0);
  const fs::path ck = dir.path / "checkpoints";
  // A crash mid-save leaves a temp dir (possibly complete-looking); one without state.json is incomplete.
  fs::create_directories(ck / ".tmp-step_000000009");
  std::ofstream(ck / ".tmp-step_000000009" / "state.json") << "{\"step\": 9}";
  fs::create_directories(ck / "step_000000010");
  std::ofstream(ck / "step_000000010" / "weights.safetensors") << "partial";
  fs::create_directories(ck / "step_abc");
  std::ofstream(ck / "step_abc" / "state.json") << "{\"step\": 99}";
  std::ofstream(ck / "step_000000011") << "a file, not a directory";
  CHECK(latest_checkpoint(dir.str()) == good);
  REQUIRE(list_checkpoints(dir.str()).size() == 1);

  // The next save removes the leftover temp dir.
  save_checkpoint(dir.str(), m, *opt, CheckpointState{6, {}}, 0);
  CHECK_FALSE(fs::exists(ck / ".tmp-step_000000009"));
  CHECK(latest_checkpoint(dir.str()) == (ck / "step_000000006").string());
}

TEST_CASE("weights loading is strict about names and shapes") {
  TempDir dir;
  Tiny m(3);
  fill(m, 0.5);
  const std::string path = (dir.path / "w.safetensors").string();
  save_weights(path, m);

  Tiny ok(3);
  load_weights(path, ok);
  CHECK(bit_equal(ok.parameter("w").value(), m.parameter("w").value()));

  Tiny wrong_shape(4);
  fill(wrong_shape, 9);
  std::string msg = error_of([&] { load_weights(path, wrong_shape); });
  INFO(msg);
  CHECK(contains(msg, "'w'"));
  CHECK(contains(msg, "(3, 3)"));
  CHECK(contains(msg, "(3, 4)"));
  CHECK(contains(msg, path));
  CHECK(wrong_shape.parameter("w").data()[0] == 9);  // untouched

  Tiny missing(3, true);
  msg = error_of([&] { load_weights(path, missing); });
  CHECK(contains(msg, "missing parameter 'extra'"));

  Tiny bigger(3, true);
  save_weights(path, bigger);
  msg = error_of([&] { load_weights(path, ok); });
  CHECK(contains(msg, "unexpected tensor 'extra'"));

  SafeTensors st = model_weights(m);
  st.ints["w"] = IndexArray(Shape{3, 3});
  st.floats.erase("w");
  msg = error_of([&] { load_weights(st, ok, "somewhere"); });
  CHECK(contains(msg, "somewhere"));
  CHECK(contains(msg, "integer"));
}

TEST_CASE("load_checkpoint reports missing and corrupt files by name") {
  TempDir dir;
  Tiny m(3);
  auto opt = adamw(m.parameters());
  fill(m, 2);
  const std::string path = save_checkpoint(dir.str(), m, *opt, CheckpointState{1, {}}, 0);
  const fs::path p(path);

  Tiny target(3);
  fill(target, -1);
  auto topt = adamw(target.parameters());
  auto untouched = [&] {
    CHECK(target.parameter("w").data()[0] == -1);
    CHECK(topt->steps() == 0);
  };

  SECTION("wrong model shape names the key and both shapes") {
    Tiny other(5);
    auto oopt = adamw(other.parameters());
    const std::string msg = error_of([&] { load_checkpoint(path, other, oopt.get()); });
    INFO(msg);
    CHECK(contains(msg, "weights.safetensors"));
    CHECK(contains(msg, "'w'"));
    CHECK(contains(msg, "(3, 3)"));
    CHECK(contains(msg, "(3, 5)"));
  }
  SECTION("corrupt weights file") {
    fs::resize_file(p / "weights.safetensors", 20);
    const std::string msg = error_of([&] { load_checkpoint(path, target, topt.get()); });
    CHECK(contains(msg, (p / "weights.safetensors").string()));
    untouched();
  }
  SECTION("corrupt optimizer file") {
    std::ofstream(p / "optimizer.safetensors", std::ios::trunc) << "garbage";
    const std::string msg = error_of([&] { load_checkpoint(path, target, topt.get()); });
    CHECK(contains(msg, (p / "optimizer.safetensors").string()));
    untouched();
    CHECK_NOTHROW(load_checkpoint(path, target, nullptr));  // weights alone still load
    CHECK(target.parameter("w").data()[0] == 2);
  }
  SECTION("optimizer of another kind") {
    auto sgd_opt = sgd(target.parameters());
    const std::string msg = error_of([&] { load_checkpoint(path, target, sgd_opt.get()); });
    CHECK(contains(msg, "optimizer.safetensors"));
    CHECK(contains(msg, "'adamw'"));
    untouched();
  }
  SECTION("missing state.json") {
    fs::remove(p / "state.json");
    const std::string msg = error_of([&] { load_checkpoint(path, target, topt.get()); });
    CHECK(contains(msg, "state.json"));
    untouched();
  }
  SECTION("corrupt state.json") {
    std::ofstream(p / "state.json", std::ios::trunc) << "{\"step\": ";
    const std::string msg = error_of([&] { load_checkpoint(path, target, topt.get()); });
    CHECK(contains(msg, "state.json"));
    untouched();
  }
  SECTION("not a directory") {
    const std::string msg = error_of([&] { load_checkpoint(path + "-nope", target, topt.get()); });
    CHECK(contains(msg, "-nope"));
  }
}

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
void spit(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary | std::ios::trunc) << s; }

// Flips one bit of the byte at `offset` (from the end when negative).
void flip_byte(const fs::path& p, long offset) {
  std::string s = slurp(p);
  REQUIRE(!s.empty());
  const std::size_t at = offset >= 0 ? std::size_t(offset) : s.size() - std::size_t(-offset);
  REQUIRE(at < s.size());
  s[at] = static_cast<char>(s[at] ^ 0x04);
  spit(p, s);
}

std::string crc_of(const fs::path& p) {
  const std::string s = slurp(p);
  return crc32c_hex(crc32c_reference(s.data(), s.size()));
}

// Rewrites a checkpoint's state.json the way pelab wrote it before checksums (format version 1).
void make_version_1(const fs::path& dir) {
  auto j = nlohmann::json::parse(slurp(dir / "state.json"));
  j.erase("files");
  j.erase("state_crc32c");
  j["version"] = 1;
  spit(dir / "state.json", j.dump(2));
}

}  // namespace

TEST_CASE("state.json records the size and CRC32C of every file and of itself", "[checkpoint][checksum]") {
  TempDir dir;
  Tiny m(3);
  auto opt = adamw(m.parameters());
  fill(m, 1);
  const fs::path p = save_checkpoint(dir.str(), m, *opt, CheckpointState{4, {{"note", "state_crc32c"}}}, 0);
  const std::string text = slurp(p / "state.json");
  const auto j = nlohmann::json::parse(text);
  CHECK(j.at("version") == 2);
  for (const char* f : {"weights.safetensors", "optimizer.safetensors"}) {
    INFO(f);
    CHECK(j.at("files").at(f).at("bytes") == fs::file_size(p / f));
    CHECK(j.at("files").at(f).at("crc32c") == crc_of(p / f));
  }
  // The self-checksum: the file's bytes with its own eight digits read as zeros.
  const std::string recorded = j.at("state_crc32c");
  std::string zeroed = text;
  const std::size_t at = zeroed.rfind("\"" + recorded + "\"");
  REQUIRE(at != std::string::npos);
  zeroed.replace(at + 1, 8, "00000000");
  CHECK(crc32c_hex(crc32c_reference(zeroed.data(), zeroed.size())) == recorded);
}

TEST_CASE("a flipped byte in any checkpoint file is an error naming the file and both checksums",
          "[checkpoint][checksum]") {
  TempDir dir;
  Tiny m(3);
  auto opt = adamw(m.parameters());
  fill(m, 2);
  const fs::path p = save_checkpoint(dir.str(), m, *opt, CheckpointState{1, {}}, 0);
  Tiny target(3);
  fill(target, -1);
  auto topt = adamw(target.parameters());
  auto untouched = [&] {
    CHECK(target.parameter("w").data()[0] == -1);
    CHECK(topt->steps() == 0);
  };

  for (const char* f : {"weights.safetensors", "optimizer.safetensors"}) {
    DYNAMIC_SECTION("tensor data of " << f) {
      const std::string recorded = crc_of(p / f);
      flip_byte(p / f, -3);  // inside the last tensor's data: the header still parses
      const std::string actual = crc_of(p / f);
      REQUIRE(actual != recorded);
      CHECK_NOTHROW(load_safetensors((p / f).string()));  // what went unnoticed before checksums
      const std::string msg = error_of([&] { load_checkpoint(p.string(), target, topt.get()); });
      INFO(msg);
      CHECK(contains(msg, "checksum mismatch"));
      CHECK(contains(msg, (p / f).string()));
      CHECK(contains(msg, recorded));
      CHECK(contains(msg, actual));
      untouched();
    }
  }
  SECTION("a truncated file names the file and both sizes") {
    const auto size = fs::file_size(p / "weights.safetensors");
    fs::resize_file(p / "weights.safetensors", size - 4);
    const std::string msg = error_of([&] { load_checkpoint(p.string(), target, topt.get()); });
    INFO(msg);
    CHECK(contains(msg, (p / "weights.safetensors").string()));
    CHECK(contains(msg, std::to_string(size)));
    CHECK(contains(msg, std::to_string(size - 4)));
    untouched();
  }
  SECTION("state.json itself") {
    std::string s = slurp(p / "state.json");
    const std::size_t at = s.find("\"step\": 1");
    REQUIRE(at != std::string::npos);
    s[at + 8] = '7';  // still valid JSON, a different step
    spit(p / "state.json", s);
    const std::string msg = error_of([&] { load_checkpoint(p.string(), target, topt.get()); });
    INFO(msg);
    CHECK(contains(msg, "checksum mismatch"));
    CHECK(contains(msg, (p / "state.json").string()));
    untouched();
  }
  SECTION("marking a checksummed state as version 1 does not skip verification") {
    std::string s = slurp(p / "state.json");
    const std::size_t at = s.find("\"version\": 2");
    REQUIRE(at != std::string::npos);
    s[at + 11] = '1';
    spit(p / "state.json", s);
    CHECK(contains(error_of([&] { load_checkpoint(p.string(), target, topt.get()); }), "checksum mismatch"));
    untouched();
  }
  SECTION("a damaged manifest entry") {
    auto j = nlohmann::json::parse(slurp(p / "state.json"));
    j["files"]["weights.safetensors"]["crc32c"] = 12;
    spit(p / "state.json", j.dump(2));  // (the self-checksum no longer matches either)
    CHECK(contains(error_of([&] { load_checkpoint(p.string(), target, topt.get()); }), "state.json"));
    untouched();
  }
  SECTION("the optimizer file is not read, nor verified, for weights only") {
    flip_byte(p / "optimizer.safetensors", -3);
    CHECK_NOTHROW(load_checkpoint(p.string(), target, nullptr));
    CHECK(target.parameter("w").data()[0] == 2);
  }
}

TEST_CASE("version 1 checkpoints (no checksums) still load and are reported unverified", "[checkpoint][checksum]") {
  TempDir dir;
  Tiny m(3);
  auto opt = adamw(m.parameters());
  fill(m, 3);
  const fs::path p = save_checkpoint(dir.str(), m, *opt, CheckpointState{8, {{"k", 1}}}, 0);
  make_version_1(p);
  Tiny target(3);
  auto topt = adamw(target.parameters());
  const auto st = load_checkpoint(p.string(), target, topt.get());
  CHECK(st.step == 8);
  CHECK(st.extra.at("k") == 1);
  CHECK(target.parameter("w").data()[0] == 3);

  const CheckpointChoice c = choose_checkpoint(dir.str(), true);
  REQUIRE(c.path == p.string());
  CHECK_FALSE(c.verified);
  const auto notes = checkpoint_notes(c);
  REQUIRE(notes.size() == 1);
  CHECK(contains(notes[0], p.string()));
  CHECK(contains(notes[0], "no checksums"));
  // A version 1 file that does not even parse is still caught.
  fs::resize_file(p / "weights.safetensors", 20);
  const CheckpointChoice none = choose_checkpoint(dir.str(), false);
  CHECK_FALSE(none.path.has_value());
  REQUIRE(none.skipped.size() == 1);
  CHECK(contains(none.skipped[0].reason, "weights.safetensors"));
}

TEST_CASE("choose_checkpoint falls back past damaged checkpoints and says why", "[checkpoint][resume]") {
  TempDir dir;
  Tiny m(3);
  auto opt = adamw(m.parameters());
  std::vector<fs::path> ck;
  for (std::size_t s : {10, 20, 30}) ck.push_back(save_checkpoint(dir.str(), m, *opt, CheckpointState{s, {}}, 0));

  SECTION("all good: the newest, nothing skipped, verified") {
    const CheckpointChoice c = choose_checkpoint(dir.str(), true);
    CHECK(c.path == ck[2].string());
    CHECK(c.step == 30);
    CHECK(c.verified);
    CHECK(c.skipped.empty());
    CHECK(checkpoint_notes(c).empty());
  }
  SECTION("emptied newest, then a corrupt one, then an optimizer-only problem") {
    for (const auto& e : fs::directory_iterator(ck[2])) fs::remove(e.path());  // step_30 emptied
    CheckpointChoice c = choose_checkpoint(dir.str(), true);
    CHECK(c.path == ck[1].string());
    REQUIRE(c.skipped.size() == 1);
    CHECK(c.skipped[0].step == 30);
    CHECK(c.skipped[0].path == ck[2].string());
    CHECK(contains(c.skipped[0].reason, "incomplete"));
    auto notes = checkpoint_notes(c);
    REQUIRE(notes.size() == 1);
    CHECK(contains(notes[0], ck[2].string()));
    CHECK(contains(notes[0], "incomplete"));

    flip_byte(ck[1] / "weights.safetensors", -1);
    c = choose_checkpoint(dir.str(), true);
    CHECK(c.path == ck[0].string());
    REQUIRE(c.skipped.size() == 2);
    CHECK(c.skipped[1].step == 20);
    CHECK(contains(c.skipped[1].reason, "checksum mismatch"));
    CHECK(contains(c.skipped[1].reason, "weights.safetensors"));

    flip_byte(ck[0] / "optimizer.safetensors", -1);
    CHECK(choose_checkpoint(dir.str(), false).path == ck[0].string());  // eval needs only the weights
    c = choose_checkpoint(dir.str(), true);
    CHECK_FALSE(c.path.has_value());
    REQUIRE(c.skipped.size() == 3);
    const std::string msg = no_usable_checkpoint(dir.str(), c);
    INFO(msg);
    CHECK(contains(msg, "no usable checkpoint"));
    for (const char* name : {"step_000000010", "step_000000020", "step_000000030"}) CHECK(contains(msg, name));
    CHECK(contains(msg, "optimizer.safetensors"));
  }
  SECTION("state.json deleted or unreadable") {
    fs::remove(ck[2] / "state.json");
    spit(ck[1] / "state.json", "{\"step\": ");
    const CheckpointChoice c = choose_checkpoint(dir.str(), true);
    CHECK(c.path == ck[0].string());
    REQUIRE(c.skipped.size() == 2);
    CHECK(contains(c.skipped[0].reason, "incomplete"));
    CHECK(contains(c.skipped[1].reason, "not valid JSON"));
  }
  SECTION("an empty run directory: nothing chosen, nothing skipped") {
    TempDir empty;
    const CheckpointChoice c = choose_checkpoint(empty.str(), true);
    CHECK_FALSE(c.path.has_value());
    CHECK(c.skipped.empty());
    CHECK(contains(no_usable_checkpoint(empty.str(), c), "no checkpoint in"));
  }
}

TEST_CASE("a deeply nested state.json is an error, not a stack overflow", "[checkpoint]") {
  TempDir dir;
  Tiny m(3);
  auto opt = sgd(m.parameters());
  const fs::path p = save_checkpoint(dir.str(), m, *opt, CheckpointState{1, {}}, 0);
  make_version_1(p);  // no checksum to stop it first
  const std::size_t depth = 1000000;
  spit(p / "state.json", "{\"version\": 1, \"step\": 1, \"extra\": " + std::string(depth, '[') + std::string(depth, ']') + "}");
  const std::string msg = error_of([&] { load_checkpoint(p.string(), m, opt.get()); });
  INFO(msg);
  CHECK(contains(msg, (p / "state.json").string()));
  CHECK(contains(msg, "nested"));
}
