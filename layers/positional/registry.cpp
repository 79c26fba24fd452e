#include "layers/positional/encoding.hpp"
#include "layers/positional/variant.hpp"

#include <algorithm>

namespace pelab {

bool ModelDims::runs_in(std::size_t layer) const {
  return layer < n_layers && (every_layer || std::binary_search(layers.begin(), layers.end(), layer));
}

std::size_t ModelDims::layers_run() const { return every_layer ? n_layers : layers.size(); }

EncodingRegistry& EncodingRegistry::instance() {
  static EncodingRegistry r;  // function-local: safe from static-initialization order
  return r;
}

std::string encoding_base_name(const std::string& name) {
  const auto dot = name.find('.');
  if (dot == std::string::npos) return name;
  const std::string variant = name.substr(dot + 1);
  const bool ok = dot > 0 && !variant.empty() && std::all_of(variant.begin(), variant.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
  if (!ok)
    throw Error("encoding variant '" + name + "': expected <encoding>.<variant>, the variant of a-z, 0-9 and _ "
                "(e.g. rope.global)");
  return name.substr(0, dot);
}

Params resolve_encoding_params(const std::string& name, const std::map<std::string, Value>& given,
                               const ModelDims& dims) {
  const EncodingSpec& spec = EncodingRegistry::instance().get(encoding_base_name(name));
  Params p = resolve_params(spec.params, given, "encoding '" + name + "'");
  if (spec.validate) spec.validate(p, dims);
  return p;
}

std::unique_ptr<PositionalEncoding> make_encoding(const std::string& name, const Params& params,
                                                  const ModelDims& dims) {
  const EncodingSpec& spec = EncodingRegistry::instance().get(encoding_base_name(name));
  if (spec.validate) spec.validate(params, dims);
  return spec.make(params, dims);
}

bool rows_share_positions(const IndexArray& positions) {
  const std::size_t B = positions.shape()[0], T = positions.shape()[1];
  const std::int32_t* p = positions.data();
  for (std::size_t b = 1; b < B; ++b)
    if (!std::equal(p, p + T, p + b * T)) return false;
  return true;
}

IndexArray default_positions(std::size_t batch, std::size_t T, std::int32_t offset) {
  IndexArray p(Shape{batch, T});
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t t = 0; t < T; ++t) p(b, t) = offset + static_cast<std::int32_t>(t);
  return p;
}

}  // namespace pelab
