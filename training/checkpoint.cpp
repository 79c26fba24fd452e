#include "training/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/params/param_spec.hpp"
#include "training/checksum.hpp"
#include "training/fs.hpp"

namespace pelab {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

namespace {

constexpr const char* kWeights = "weights.safetensors";
constexpr const char* kOptimizer = "optimizer.safetensors";
constexpr const char* kState = "state.json";
constexpr const char* kTmpPrefix = ".tmp-";
constexpr const char* kStateCrcKey = "state_crc32c";
constexpr int kVersion = 2;        // 2: checksums ("files" manifest and "state_crc32c")
constexpr int kOldestVersion = 1;  // 1: no checksums; still loaded, reported unverified
constexpr int kMaxStateDepth = 64;  // pelab writes 4 levels

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

// One entry of the "files" manifest.
struct FileSum {
  std::uint64_t bytes = 0;
  std::uint32_t crc = 0;
};

// A parsed and self-verified state.json.
struct ParsedState {
  CheckpointState st;
  bool has_manifest = false;         // false only for version 1 checkpoints
  std::map<std::string, FileSum> files;
};

bool parse_hex32(const json& j, std::uint32_t& out) {
  if (!j.is_string()) return false;
  const std::string& h = j.get_ref<const std::string&>();
  if (h.size() != 8) return false;
  out = 0;
  for (char c : h) {
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else return false;
    out = out << 4 | std::uint32_t(d);
  }
  return true;
}

// The CRC32C of state.json's text with the recorded checksum's digits read as "00000000". The recorded
// value is the last string in the file (the writer puts the key last), so rfind finds it even when the
// trainer's "extra" holds the same text earlier.
std::uint32_t state_crc(std::string text, const std::string& recorded) {
  const std::size_t at = text.rfind('"' + recorded + '"');
  if (at != std::string::npos) text.replace(at + 1, recorded.size(), std::string(recorded.size(), '0'));
  return crc32c(text);
}

ParsedState parse_state(const fs::path& path) {
  const std::string text = read_text(path);
  const std::string where = "checkpoint: " + path.string();
  json j;
  try {
    // Copying and destroying nlohmann values recurses: a deeply nested file would overflow the stack.
    j = json::parse(text, [&](int depth, json::parse_event_t, json&) {
      if (depth > kMaxStateDepth)
        throw Error(where + " is nested more than " + std::to_string(kMaxStateDepth) +
                    " levels deep: not a pelab state file");
      return true;
    });
  } catch (const json::exception& e) {
    throw Error(where + " is not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw Error(where + " is not a JSON object");
  ParsedState ps;
  int version = kOldestVersion;
  if (j.contains("version")) {
    const json& v = j["version"];
    if (!v.is_number_integer() || v.get<std::int64_t>() < kOldestVersion || v.get<std::int64_t>() > kVersion)
      throw Error(where + " has format version " + v.dump() + "; this build reads versions " +
                  std::to_string(kOldestVersion) + " to " + std::to_string(kVersion));
    version = static_cast<int>(v.get<std::int64_t>());
  }
  // Any manifest key is verified whatever the version says, so damage to "version" cannot skip the check.
  ps.has_manifest = version >= 2 || j.contains(kStateCrcKey) || j.contains("files");
  if (ps.has_manifest) {
    std::uint32_t recorded = 0;
    if (!j.contains(kStateCrcKey) || !parse_hex32(j[kStateCrcKey], recorded))
      throw Error(where + " has no valid \"" + kStateCrcKey + "\" (8 lowercase hex digits): damaged state file");
    const std::uint32_t actual = state_crc(text, j[kStateCrcKey].get<std::string>());
    if (actual != recorded)
      throw Error("checkpoint: checksum mismatch in " + path.string() + ": it records crc32c " +
                  crc32c_hex(recorded) + " but its content has crc32c " + crc32c_hex(actual) +
                  ": the file is corrupted");
    if (!j.contains("files") || !j["files"].is_object())
      throw Error(where + " has no \"files\" manifest object");
    for (const auto& [name, e] : j["files"].items()) {
      if (name != kWeights && name != kOptimizer)
        throw Error(where + ": the manifest lists an unknown file '" + name + "' (expected " + kWeights + " and " +
                    kOptimizer + ")");
      FileSum f;
      if (!e.is_object() || !e.contains("bytes") || !e["bytes"].is_number_unsigned() || !e.contains("crc32c") ||
          !parse_hex32(e["crc32c"], f.crc))
        throw Error(where + ": the manifest entry of " + name +
                    " is not {\"bytes\": <size>, \"crc32c\": <8 lowercase hex digits>}");
      f.bytes = e["bytes"].get<std::uint64_t>();
      ps.files[name] = f;
    }
    for (const char* name : {kWeights, kOptimizer})
      if (!ps.files.count(name)) throw Error(where + ": the manifest has no entry for " + name);
  }
  if (!j.contains("step") || !j["step"].is_number_unsigned())
    throw Error(where + " has no non-negative integer \"step\"");
  ps.st.step = j["step"].get<std::size_t>();
  if (j.contains("extra")) ps.st.extra = j["extra"];
  return ps;
}

// Reads a checkpoint file whole and checks it against the manifest (if the checkpoint has one).
std::vector<char> read_verified(const fs::path& dir, const char* name, const ParsedState& ps) {
  const fs::path path = dir / name;
  const std::string text = read_text(path);
  std::vector<char> bytes(text.begin(), text.end());
  if (!ps.has_manifest) return bytes;
  const FileSum& want = ps.files.at(name);
  if (bytes.size() != want.bytes)
    throw Error("checkpoint: " + path.string() + " is " + std::to_string(bytes.size()) + " bytes but " + kState +
                " records " + std::to_string(want.bytes) + ": the file is truncated or was replaced");
  const std::uint32_t actual = crc32c(bytes.data(), bytes.size());
  if (actual != want.crc)
    throw Error("checkpoint: checksum mismatch in " + path.string() + ": " + kState + " records crc32c " +
                crc32c_hex(want.crc) + " but the file has crc32c " + crc32c_hex(actual) + ": the file is corrupted");
  return bytes;
}

SafeTensors read_tensors(const fs::path& dir, const char* name, const ParsedState& ps) {
  const std::vector<char> bytes = read_verified(dir, name, ps);
  return parse_safetensors(bytes.data(), bytes.size(), (dir / name).string());
}

FileSum file_sum(const fs::path& path) {
  const std::string text = read_text(path);
  return {text.size(), crc32c(text)};
}

// state.json's text: the keys in a fixed order with the self-checksum last (see state_crc).
std::string state_text(const CheckpointState& st, const FileSum& weights, const FileSum& optimizer) {
  ordered_json files = ordered_json::object();
  files[kWeights] = {{"bytes", weights.bytes}, {"crc32c", crc32c_hex(weights.crc)}};
  files[kOptimizer] = {{"bytes", optimizer.bytes}, {"crc32c", crc32c_hex(optimizer.crc)}};
  ordered_json j = ordered_json::object();
  j["format"] = "pelab-checkpoint";
  j["version"] = kVersion;
  j["step"] = st.step;
  j["extra"] = st.extra;
  j["files"] = files;
  const std::string zeros(8, '0');
  j[kStateCrcKey] = zeros;
  std::string text;
  try {
    text = j.dump(2) + "\n";
  } catch (const json::exception& e) {
    throw Error("checkpoint: cannot serialize the trainer state: " + std::string(e.what()));
  }
  const std::size_t at = text.rfind('"' + zeros + '"');
  text.replace(at + 1, zeros.size(), crc32c_hex(crc32c(text)));
  return text;
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
    // Checksums of the bytes as written (read back from the page cache).
    const std::string text = state_text(st, file_sum(tmp / kWeights), file_sum(tmp / kOptimizer));
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
  const ParsedState ps = parse_state(d / kState);

  const SafeTensors weights = read_tensors(d, kWeights, ps);
  check_weights(weights, model, (d / kWeights).string());
  if (opt) {
    const std::string opath = (d / kOptimizer).string();
    const SafeTensors os = read_tensors(d, kOptimizer, ps);
    try {
      opt->state_from(os);  // validates before modifying
    } catch (const Error& e) {
      throw Error(opath + ": " + e.what());
    }
  }
  assign_weights(weights, model);
  return ps.st;
}

CheckpointChoice choose_checkpoint(const std::string& run_dir, bool with_optimizer) {
  CheckpointChoice choice;
  const fs::path ck_dir = fs::path(run_dir) / "checkpoints";
  std::vector<std::pair<std::size_t, fs::path>> dirs;  // every step_ directory, complete or not
  std::error_code ec;
  if (!fs::is_directory(ck_dir, ec)) return choice;
  try {
    for (const auto& e : fs::directory_iterator(ck_dir))
      if (const auto step = parse_step_name(e.path().filename().string()))
        dirs.emplace_back(*step, e.path());  // a file in a checkpoint's place too: it gets a note below
  } catch (const fs::filesystem_error& e) {
    throw Error("checkpoint: cannot list " + ck_dir.string() + ": " + e.what());
  }
  std::sort(dirs.begin(), dirs.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [step, dir] : dirs) {
    if (!fs::is_directory(dir, ec)) {
      choice.skipped.push_back({step, dir.string(), "not a directory (something replaced the checkpoint directory)"});
      continue;
    }
    if (!fs::exists(dir / kState, ec)) {
      choice.skipped.push_back({step, dir.string(), std::string("incomplete: no ") + kState +
                                                        " (an interrupted save, or files were deleted)"});
      continue;
    }
    try {
      const ParsedState ps = parse_state(dir / kState);
      read_tensors(dir, kWeights, ps);
      if (with_optimizer) read_tensors(dir, kOptimizer, ps);
      choice.path = dir.string();
      choice.step = step;
      choice.verified = ps.has_manifest;
      return choice;
    } catch (const Error& e) {
      choice.skipped.push_back({step, dir.string(), e.what()});
    }
  }
  return choice;
}

std::vector<std::string> checkpoint_notes(const CheckpointChoice& choice) {
  std::vector<std::string> out;
  for (const auto& s : choice.skipped)
    out.push_back("skipped checkpoint " + s.path + (choice.path ? " (newer than the one used)" : "") + ": " +
                  s.reason);
  if (choice.path && !choice.verified)
    out.push_back("checkpoint " + *choice.path + " has no checksums (written before checkpoint format " +
                  std::to_string(kVersion) + "): its data cannot be verified");
  return out;
}

std::string no_usable_checkpoint(const std::string& run_dir, const CheckpointChoice& choice) {
  const std::string ck_dir = (fs::path(run_dir) / "checkpoints").string();
  if (choice.skipped.empty()) return "no checkpoint in " + ck_dir;
  std::string msg = "no usable checkpoint in " + ck_dir + ":";
  for (const auto& s : choice.skipped) msg += "\n  " + fs::path(s.path).filename().string() + ": " + s.reason;
  return msg;
}

}  // namespace pelab
