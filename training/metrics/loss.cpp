// The loss: mean negative log-likelihood per counted target. A training record reports the mean of the
// log interval's step losses instead (what the optimizer saw), as the console line does.
#include "training/metrics_table.hpp"

namespace pelab {

PELAB_REGISTER_METRIC(loss,
    metric("loss", "loss", Better::lower,
           [](const TokenStats& s) { return s.counted ? s.loss_sum / double(s.counted) : 0.0; })
        .listed_at(10)
        .own_table_for_language_models()
        .in_training_records([](const TokenStats&, double mean_step_loss) { return mean_step_loss; }));

}  // namespace pelab
