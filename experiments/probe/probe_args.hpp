// What the encoding probes (`pelab probe encoding`, `pelab probe spectrum --encoding`) share in reading
// their arguments: the encoding's `--set` parameters and the one-layer model they build.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/params/value.hpp"
#include "layers/positional/encoding.hpp"

namespace pelab::probe_detail {

// `--set KEY=VALUE` items as the encoding's given parameters; Error naming a malformed one.
std::map<std::string, Value> parse_encoding_sets(const std::vector<std::string>& sets, const std::string& encoding);

// A one-layer model of `len` positions (in [2, max_len]; `len_flag` names the option in errors) and
// d_model a positive multiple of n_heads.
ModelDims probe_model_dims(std::size_t len, std::size_t d_model, std::size_t n_heads, std::size_t max_len,
                           const std::string& len_flag);

// The settings an encoding probe records in its JSON: the encoding, its resolved parameters, the
// positions and the model's width and heads.
nlohmann::ordered_json encoding_probe_settings(const std::string& encoding, const Params& params, std::size_t len,
                                               std::size_t d_model, std::size_t n_heads);

}  // namespace pelab::probe_detail
