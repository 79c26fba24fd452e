// Encoding variants: "<encoding>.<variant>" ("rope.global") is the encoding <encoding> under another
// name, with parameters of its own ([encoding.rope.global] in a config, ModelConfig::layer_encoding_params
// in code): one encoding with two parameter sets in two layers of a layout (Gemma 3's RoPE bases 10 000
// on local layers and 1 000 000 on global ones). The model builds it as "pos_<encoding>.<variant>".
// resolve_encoding_params, make_encoding and encoding_cost take variant names; EncodingRegistry::names()
// lists the encodings only.
#pragma once

#include <string>

namespace pelab {

// "rope" for "rope.global" (and for "rope"); Error for a malformed variant (empty, or not of a-z, 0-9, _).
std::string encoding_base_name(const std::string& name);

}  // namespace pelab
