// Exact match: the share of sequences whose whole answer is predicted (training/metrics.hpp's
// token_stats: under teacher forcing this equals greedy decoding). Only sequence tasks have answers.
#include "training/metrics_table.hpp"

namespace pelab {

PELAB_REGISTER_METRIC(exact_match,
    metric("exact_match", "exact match (%)", Better::higher, [](const TokenStats& s) { return s.exact_match(); })
        .listed_at(30)
        .in_percent()
        .sequence_tasks_only()
        .own_table_for_sequence_tasks());

}  // namespace pelab
