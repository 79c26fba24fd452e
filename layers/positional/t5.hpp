// T5's relative-position buckets, exposed for tests.
#pragma once

#include <cstdint>

namespace pelab {

// The bucket of one (query, key) pair, relative = key id - query id, exactly as T5's
// _relative_position_bucket (Mesh TensorFlow, transformer/attention.py; Hugging Face transformers,
// T5Attention._relative_position_bucket), in float32 as they compute it:
//   bidirectional: half the buckets per side, keys after the query in the upper half;
//   causal: keys after the query share bucket 0 (they are masked anyway);
//   n = |distance| (one side): n < max_exact = buckets/2 (of a side) gets its own bucket; larger n
//   are spaced logarithmically up to max_distance, beyond which all share the last bucket:
//     max_exact + int(log(n / max_exact) / log(max_distance / max_exact) * (buckets - max_exact)).
// Requires max_distance > max_exact (checked when the encoding is built).
std::int32_t t5_bucket(std::int64_t relative, bool bidirectional, std::int32_t num_buckets, std::int32_t max_distance);

}  // namespace pelab
