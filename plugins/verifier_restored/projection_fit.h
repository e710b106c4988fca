// Fits the `linear` projection: for every layer, KV head, and K and V apart,
// the affine map from the restorer's vectors to the target's over the same
// tokens, by least squares (Eigen, with a small ridge so a head whose inputs
// span less than head_dim + 1 directions still solves).
#pragma once

#include <vector>

#include "plugins/verifier_restored/history_kv.h"
#include "plugins/verifier_restored/linear_projection.h"

namespace tessera {

struct ProjectionFit {
  LinearProjection projection;
  // Per layer, K then V: ||Y - fit(X)||^2 / ||Y - mean(Y)||^2 over the heads
  // (0: exact; 1: no better than the mean), and the same for the identity map.
  std::vector<double> relative_error;
  std::vector<double> identity_error;
};

// `target` and `restorer` hold the K/V of the same tokens (count >= 1).
Result<ProjectionFit> fit_projection(HistoryKV& target, HistoryKV& restorer,
                                     const ProjectionShape& shape, double ridge = 1e-4);

}  // namespace tessera
