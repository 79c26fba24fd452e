// Sizes an encoding takes from the model when its config gives 0 ("0 = the ids training uses"): binary's
// bits, the rows of a learned table. Each such encoding registers its rule in its own file, beside its
// factory and with the same arithmetic, so that a run's config.toml can record the size it used rather
// than 0 (experiments/config/config_validate.cpp). The model built is the same either way.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "layers/positional/encoding.hpp"

namespace pelab {

// The size `key` = 0 stands for, for these dims; nullopt keeps 0 (e.g. no table under these params).
using AutoSizeRule = std::function<std::optional<std::int64_t>(const Params&, const ModelDims&)>;

void register_auto_size(const std::string& encoding, const std::string& key, AutoSizeRule rule);

// `given` with every registered size of `encoding` that is 0 replaced by its resolved value. A value the
// parameter's range would refuse stays 0 (the model is the same; the file must load again).
std::map<std::string, Value> resolve_auto_sizes(const std::string& encoding, std::map<std::string, Value> given,
                                                const ModelDims& dims);

}  // namespace pelab

#define PELAB_REGISTER_AUTO_SIZE(ident, encoding, key, rule) \
  static const bool pelab_auto_size_##ident = (::pelab::register_auto_size(encoding, key, rule), true)
