#include "training/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/params/param_spec.hpp"
#include "training/fs.hpp"

namespace pelab {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr const char* kWeights = "weights.safetensors";
constexpr const char* kOptimizer = "optimizer.safetensors";
constexpr const char* kState = "state.json";
constexpr const char* kTmpPrefix = ".tmp-";
constexpr int kVersion = 1;

// Removes a checkpoint directory so that a crash midway leaves it incomplete (state.json goes first).
void remove_checkpoint_dir(const fs::path& dir) {
  std::error_code ec;
  fs::remove(dir / kState, ec);
  fs::remove_all(dir, ec);
}

// The step of a "step_<digits>" name, or nullopt for anything else.
std::optional<std::size_t> parse_step_name(const std::string& name) {
  const std::string prefix = "step_";
  if (name.size() <= prefix.size() || name.size() > prefix.size() + 19 || name.compare(0, prefix.size(), prefix) != 0)
    return std::nullopt;
  for (std::size_t i = prefix.size(); i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
  return static_cast<std::size_t>(std::stoull(name.substr(prefix.size())));
}

// Moves `from` to `to`; if `to` exists it is swapped out atomically and then deleted.
void install_dir(const fs::path& from, const fs::path& to) {
  if (!fs::exists(to)) {
    fs::rename(from, to);
    return;
  }
  // Same step saved again: exchange atomically (the old copy ends up at `from`), then drop it.
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_EXCHANGE) == 0) {
    remove_checkpoint_dir(from);
    return;
  }
  // Filesystems without RENAME_EXCHANGE: invalidate the old copy first, so a crash in between leaves
  // no complete step_X rather than a mixed one.
  fs::path old = from;
  old += "-old";
  fs::remove(to / kState);
  fs::rename(to, old);
  fs::rename(from, to);
  remove_checkpoint_dir(old);
}

void prune(const fs::path& ck_dir, std::size_t new_step, std::size_t keep_last) {
  std::vector<std::size_t> older;  // complete checkpoints before the new one
  for (const auto& e : fs::directory_iterator(ck_dir)) {
    if (!e.is_directory()) continue;
    const auto step = parse_step_name(e.path().filename().string());
    if (!step || *step == new_step) continue;
    if (!fs::exists(e.path() / kState)) {
      if (*step < new_step) remove_checkpoint_dir(e.path());  // debris of an interrupted prune
      continue;
    }
    if (*step < new_step) older.push_back(*step);
  }
  if (keep_last == 0 || older.size() < keep_last) return;
  std::sort(older.begin(), older.end());
  const std::size_t remove = older.size() - (keep_last - 1);
  for (std::size_t i = 0; i < remove; ++i) remove_checkpoint_dir(ck_dir / checkpoint_name(older[i]));
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("checkpoint: cannot read " + path.string() + (fs::exists(path) ? "" : " (file missing)"));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error("checkpoint: error reading " + path.string());
  return ss.str();
}

CheckpointState parse_state(const fs::path& path) {
  const std::string text = read_text(path);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw Error("checkpoint: " + path.string() + " is not valid JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains("step") || !j["step"].is_number_unsigned())
    throw Error("checkpoint: " + path.string() + " has no non-negative integer \"step\"");
  if (j.contains("version") && (!j["version"].is_number_integer() || j["version"].get<int>() != kVersion))
    throw Error("checkpoint: " + path.string() + " has format version " + j["version"].dump() +
                "; this build reads version " + std::to_string(kVersion));
  CheckpointState st;
  st.step = j["step"].get<std::size_t>();
  if (j.contains("extra")) st.extra = j["extra"];
  return st;
}

// Strict comparison of a weights file against the model; throws naming `source`.
void check_weights(const SafeTensors& st, const Module& model, const std::string& source) {
  std::vector<std::string> names;
  for (const auto& p : model.parameters()) {
    names.push_back(p.name);
    auto it = st.floats.find(p.name);
    if (it == st.floats.end()) {
      if (st.ints.count(p.name))
        throw Error(source + ": parameter '" + p.name + "' is stored as an integer tensor, expected F32");
      throw Error(source + ": missing parameter '" + p.name + "' (model shape " + shape_str(p.tensor.shape()) + ")");
    }
    if (it->second.shape() != p.tensor.shape())
      throw Error(source + ": parameter '" + p.name + "' has shape " + shape_str(it->second.shape()) +
                  " in the file but " + shape_str(p.tensor.shape()) + " in the model");
  }
  const std::set<std::string> known(names.begin(), names.end());
  auto unexpected = [&](const std::string& key, const Shape& shape) {
    std::string msg = source + ": unexpected tensor '" + key + "' (shape " + shape_str(shape) +
                      "): the model has no such parameter";
    if (auto n = nearest(key, names)) msg += " (did you mean '" + *n + "'?)";
    throw Error(msg);
  };
  for (const auto& [key, a] : st.floats)
    if (!known.count(key)) unexpected(key, a.shape());
  for (const auto& [key, a] : st.ints)
    if (!known.count(key)) unexpected(key, a.shape());
}

void assign_weights(const SafeTensors& st, Module& model) {
  for (auto& p : model.parameters()) {
    const Array& src = st.floats.at(p.name);
    std::copy(src.data(), src.data() + src.size(), p.tensor.mutable_data());
  }
}

}  // namespace

std::string checkpoint_name(std::size_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step_%09zu", step);
  return buf;
}

SafeTensors model_weights(const Module& model) {
  SafeTensors st;
  for (const auto& p : model.parameters()) st.floats[p.name] = p.tensor.value();
  st.metadata["format"] = "pelab-weights";
  return st;
}

void save_weights(const std::string& safetensors_path, const Module& model) {
  save_safetensors(safetensors_path, model_weights(model));
}

void load_weights(const SafeTensors& st, Module& model, const std::string& source) {
  check_weights(st, model, source);
  assign_weights(st, model);
}

void load_weights(const std::string& safetensors_path, Module& model) {
  load_weights(load_safetensors(safetensors_path), model, safetensors_path);
}

std::string save_checkpoint(const std::string& run_dir, const Module& model, const Optimizer& opt,
                            const CheckpointState& st, std::size_t keep_last) {
  const fs::path ck_dir = fs::path(run_dir) / "checkpoints";
  const std::string name = checkpoint_name(st.step);
  const fs::path tmp = ck_dir / (kTmpPrefix + name);
  const fs::path final_dir = ck_dir / name;
  try {
    fs::create_directories(ck_dir);
    for (const auto& e : fs::directory_iterator(ck_dir))  // leftovers of an interrupted save
      if (e.path().filename().string().rfind(kTmpPrefix, 0) == 0) fs::remove_all(e.path());
    fs::create_directory(tmp);

    save_safetensors((tmp / kWeights).string(), model_weights(model));
    SafeTensors os;
    opt.state_to(os);
    save_safetensors((tmp / kOptimizer).string(), os);
    json j = {{"format", "pelab-checkpoint"}, {"version", kVersion}, {"step", st.step}, {"extra", st.extra}};
    std::string text;
    try {
      text = j.dump(2) + "\n";
    } catch (const json::exception& e) {
      throw Error("checkpoint: cannot serialize the trainer state: " + std::string(e.what()));
    }
    write_file_synced((tmp / kState).string(), text);  // last: its presence marks a complete checkpoint
    fsync_path(tmp.string(), true);

    install_dir(tmp, final_dir);
    fsync_path(ck_dir.string(), true);
    prune(ck_dir, st.step, keep_last);
  } catch (const fs::filesystem_error& e) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw Error("checkpoint: saving step " + std::to_string(st.step) + " under " + ck_dir.string() +
                " failed: " + e.what());
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  return final_dir.string();
}

std::vector<std::pair<std::size_t, std::string>> list_checkpoints(const std::string& run_dir) {
  std::vector<std::pair<std::size_t, std::string>> out;
  const fs::path ck_dir = fs::path(run_dir) / "checkpoints";
  std::error_code ec;
  if (!fs::is_directory(ck_dir, ec)) return out;
  try {
    for (const auto& e : fs::directory_iterator(ck_dir)) {
      if (!e.is_directory()) continue;
      const auto step = parse_step_name(e.path().filename().string());
      if (step && fs::is_regular_file(e.path() / kState)) out.emplace_back(*step, e.path().string());
    }
  } catch (const fs::filesystem_error& e) {
    throw Error("checkpoint: cannot list " + ck_dir.string() + ": " + e.what());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::string> latest_checkpoint(const std::string& run_dir) {
  auto all = list_checkpoints(run_dir);
  if (all.empty()) return std::nullopt;
  return all.back().second;
}

CheckpointState load_checkpoint(const std::string& dir, Module& model, Optimizer* opt) {
  const fs::path d(dir);
  if (!fs::is_directory(d)) throw Error("checkpoint: " + dir + " is not a directory");
  CheckpointState st = parse_state(d / kState);

  const std::string wpath = (d / kWeights).string();
  const SafeTensors weights = load_safetensors(wpath);
  check_weights(weights, model, wpath);
  if (opt) {
    const std::string opath = (d / kOptimizer).string();
    const SafeTensors os = load_safetensors(opath);
    try {
      opt->state_from(os);  // validates before modifying
    } catch (const Error& e) {
      throw Error(opath + ": " + e.what());
    }
  }
  assign_weights(weights, model);
  return st;
}

}  // namespace pelab
