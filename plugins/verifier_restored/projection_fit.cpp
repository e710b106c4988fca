#include "plugins/verifier_restored/projection_fit.h"

#include <Eigen/Dense>
#include <string>

namespace tessera {
namespace {

using Matrix = Eigen::MatrixXd;

// Rows: the count vectors of head h in `data` (layer base, token-major).
Matrix head_rows(const float* layer, int64_t count, int64_t kv_width, int h, int hd) {
  Matrix m(count, hd);
  for (int64_t e = 0; e < count; ++e)
    for (int d = 0; d < hd; ++d) m(e, d) = layer[e * kv_width + static_cast<int64_t>(h) * hd + d];
  return m;
}

double spread(const Matrix& y) {
  const Eigen::RowVectorXd mean = y.colwise().mean();
  return (y.rowwise() - mean).squaredNorm();
}

}  // namespace

Result<ProjectionFit> fit_projection(HistoryKV& target, HistoryKV& restorer,
                                     const ProjectionShape& shape, double ridge) {
  if (target.count() != restorer.count() || target.count() < 1)
    return invalid_argument("fit_projection: " + std::to_string(target.count()) +
                            " target vectors per head against " + std::to_string(restorer.count()) +
                            " of the restorer");
  const int hd = shape.head_dim;
  const int64_t n = target.count();
  const int64_t kv_width = static_cast<int64_t>(shape.kv_heads) * hd;
  ProjectionFit fit{LinearProjection(shape), {}, {}};
  for (int l = 0; l < shape.layers; ++l)
    for (int kv = 0; kv < 2; ++kv) {
      const float* from = (kv == 0 ? restorer.k() : restorer.v()) + l * restorer.layer_stride();
      const float* to = (kv == 0 ? target.k() : target.v()) + l * target.layer_stride();
      double residual = 0, identity = 0, total = 0;
      for (int h = 0; h < shape.kv_heads; ++h) {
        Matrix x(n, hd + 1);
        x.leftCols(hd) = head_rows(from, n, kv_width, h, hd);
        x.col(hd).setOnes();
        const Matrix y = head_rows(to, n, kv_width, h, hd);
        Matrix gram = x.transpose() * x;
        gram.diagonal().array() += ridge * (1.0 + gram.diagonal().mean());
        const Matrix b = gram.ldlt().solve(x.transpose() * y);  // (hd + 1) x hd
        residual += (y - x * b).squaredNorm();
        identity += (y - x.leftCols(hd)).squaredNorm();
        total += spread(y);
        float* map = fit.projection.map(l, kv, h);
        for (int r = 0; r < hd; ++r) {
          for (int c = 0; c < hd; ++c)
            map[static_cast<int64_t>(r) * hd + c] = static_cast<float>(b(c, r));
          map[static_cast<int64_t>(hd) * hd + r] = static_cast<float>(b(hd, r));
        }
      }
      fit.relative_error.push_back(total > 0 ? residual / total : 0.0);
      fit.identity_error.push_back(total > 0 ? identity / total : 0.0);
    }
  return fit;
}

}  // namespace tessera
