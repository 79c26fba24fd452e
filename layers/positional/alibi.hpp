// ALiBi's head slopes, for any encoding that starts from them (alibi.cpp; a bias that adds to ALiBi's).
#pragma once

#include <cstddef>
#include <vector>

namespace pelab {

// The slopes m_h of H heads as Press et al. 2022 (their code, ofirpress/attention_with_linear_biases,
// get_slopes): for H a power of two 2^(-8/H), 2^(-16/H), ..., 2^(-8); otherwise the slopes of the next
// lower power of two followed by every other slope of the next higher one.
std::vector<double> alibi_slopes(std::size_t n_heads);

}  // namespace pelab
