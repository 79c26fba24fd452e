// A test-only metric, one file as any metric (training/metrics/): the token error rate, listed between
// token accuracy and exact match. Only test_plugins links it (tests/CMakeLists.txt).
#include "training/metrics_table.hpp"

namespace pelab {

PELAB_REGISTER_METRIC(token_err,
    metric("token_err", "token error rate (%)", Better::lower,
           [](const TokenStats& s) { return s.counted ? 1.0 - s.token_acc() : 0.0; })
        .listed_at(25)
        .in_percent());

}  // namespace pelab
