// Token accuracy: the share of counted targets that the greedy (argmax) prediction gets right.
#include "training/metrics_table.hpp"

namespace pelab {

PELAB_REGISTER_METRIC(token_acc,
    metric("token_acc", "token accuracy (%)", Better::higher, [](const TokenStats& s) { return s.token_acc(); })
        .listed_at(20)
        .in_percent()
        .own_table_for_sequence_tasks());

}  // namespace pelab
