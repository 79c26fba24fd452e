// Checkpoints: model weights, optimizer state and the trainer's state, saved atomically and checksummed.
//
// Layout under a run directory:
//   checkpoints/step_000000123/weights.safetensors    F32 tensors under the parameter names
//   checkpoints/step_000000123/optimizer.safetensors  Optimizer::state_to
//   checkpoints/step_000000123/state.json             {"format", "version", "step", "extra", "files",
//                                                      "state_crc32c"}
// A checkpoint is written into checkpoints/.tmp-step_X (files fsynced, state.json last), then renamed
// into place, so a crash leaves either the previous set or the new complete checkpoint. A step_
// directory without state.json is incomplete and ignored; .tmp-* directories are leftovers, removed by
// the next save.
//
// Integrity (format version 2): state.json's "files" manifest records each safetensors file's size and
// CRC32C (training/checksum.hpp); "state_crc32c", its last key, is the CRC32C of state.json's own bytes
// with that value's eight hex digits read as "00000000". Loading verifies every file it reads and
// throws an Error naming the file and both checksums on a mismatch. Version 1 checkpoints (before
// checksums) still load; choose_checkpoint marks them unverified so callers can warn.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/safetensors.hpp"
#include "layers/module.hpp"
#include "training/optimizer.hpp"

namespace pelab {

struct CheckpointState {
  std::size_t step = 0;  // optimizer steps completed
  // The trainer's own state (resolved config, RNG states, metrics so far...), stored verbatim.
  nlohmann::json extra = nlohmann::json::object();
};

// "step_000000123" (9 digits, more if the step needs them).
std::string checkpoint_name(std::size_t step);

// Writes checkpoints/step_<st.step> under run_dir (replacing one of the same step), then deletes the
// oldest complete checkpoints with a smaller step so that keep_last remain including the new one
// (keep_last 0 keeps all; later-step checkpoints are never touched). Returns the checkpoint's path.
// Throws Error on any I/O failure, leaving no partial checkpoint behind.
std::string save_checkpoint(const std::string& run_dir, const Module& model, const Optimizer& opt,
                            const CheckpointState& st, std::size_t keep_last);

// Why a checkpoint directory newer than the chosen one was passed over.
struct SkippedCheckpoint {
  std::size_t step = 0;
  std::string path;
  std::string reason;  // "incomplete: ...", or the verification error (checksum mismatch, unreadable file)
};

// The checkpoint that resume or eval should use, and what was skipped on the way.
struct CheckpointChoice {
  std::optional<std::string> path;         // the newest usable checkpoint; none if no step_ directory is usable
  std::size_t step = 0;                    // its step
  bool verified = false;                   // false: a version 1 checkpoint, which has no checksums
  std::vector<SkippedCheckpoint> skipped;  // newer step_ directories passed over, newest first
};

// Walks run_dir's step_ directories from the newest and picks the first that verifies: state.json
// parses and matches its own checksum, and weights.safetensors (plus optimizer.safetensors when
// with_optimizer) exist, match the manifest and parse. Never modifies anything; a model that does not
// fit the checkpoint is load_checkpoint's error, not a reason to fall back.
CheckpointChoice choose_checkpoint(const std::string& run_dir, bool with_optimizer);
// Lines to show the user about a choice: one per skipped checkpoint, one if the chosen one is unverified.
std::vector<std::string> checkpoint_notes(const CheckpointChoice& choice);
// The error text when choice.path is empty: where it looked and why each checkpoint was unusable.
std::string no_usable_checkpoint(const std::string& run_dir, const CheckpointChoice& choice);

// Complete checkpoints (state.json present) of run_dir as (step, path), ascending by step.
std::vector<std::pair<std::size_t, std::string>> list_checkpoints(const std::string& run_dir);
// The complete checkpoint with the highest step, if any.
std::optional<std::string> latest_checkpoint(const std::string& run_dir);

// Restores a checkpoint directory into model (and opt, unless null) and returns its state. Strict:
// every parameter present with its shape, no extra tensors; missing or corrupt files and checksum
// mismatches throw Error naming the file. Everything is checked before anything is modified.
CheckpointState load_checkpoint(const std::string& dir, Module& model, Optimizer* opt);

// The model's parameters as F32 tensors under their names.
SafeTensors model_weights(const Module& model);
void save_weights(const std::string& safetensors_path, const Module& model);
// Strict load of a weights file (as save_weights / save_checkpoint write it) into model.
void load_weights(const std::string& safetensors_path, Module& model);
// Same from tensors already read; `source` names where they came from in error messages.
void load_weights(const SafeTensors& st, Module& model, const std::string& source);

}  // namespace pelab
