#include "tests/backend/conformance/summary.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>

#include "tests/backend/conformance/tolerances.h"

namespace tessera::conformance {
namespace {

struct Entry {
  int cases = 0;
  int failed = 0;
  int64_t non_finite = 0;
  double worst = 0.0;
  std::string skipped;
};

using Key = std::tuple<std::string, int, int>;  // backend, op, dtype

std::mutex& lock() {
  static std::mutex m;
  return m;
}
std::map<Key, Entry>& entries() {
  static std::map<Key, Entry> e;
  return e;
}

Key key(std::string_view backend, BackendOp op, DType dtype) {
  return {std::string(backend), static_cast<int>(op), static_cast<int>(dtype)};
}

}  // namespace

void record_case(std::string_view backend, BackendOp op, DType dtype, double nmse,
                 int64_t non_finite, bool passed) {
  std::lock_guard<std::mutex> guard(lock());
  Entry& e = entries()[key(backend, op, dtype)];
  ++e.cases;
  if (!passed) ++e.failed;
  e.non_finite += non_finite;
  e.worst = std::max(e.worst, nmse);
}

void record_skip(std::string_view backend, BackendOp op, DType dtype, std::string_view why) {
  std::lock_guard<std::mutex> guard(lock());
  entries()[key(backend, op, dtype)].skipped = std::string(why);
}

std::vector<std::string> unrecorded(const std::vector<std::string>& backends) {
  std::lock_guard<std::mutex> guard(lock());
  std::vector<std::string> missing;
  for (const std::string& backend : backends)
    for (const BackendOp op : kAllBackendOps) {
      const bool weights = op == BackendOp::kEmbedding || op == BackendOp::kMatmul;
      for (const DType dtype : kAllDTypes) {
        if (!weights && dtype != DType::kF32) continue;
        if (entries().count(key(backend, op, dtype)) == 0)
          missing.push_back(backend + " " + std::string(backend_op_name(op)) + " " +
                            std::string(dtype_name(dtype)));
      }
    }
  return missing;
}

void print_summary(std::FILE* out) {
  std::lock_guard<std::mutex> guard(lock());
  if (entries().empty()) return;
  std::fprintf(out, "\nConformance summary (NMSE against the cpu reference)\n");
  std::fprintf(out, "%-10s %-17s %-5s %5s %6s %7s %10s %9s  %s\n", "backend", "op", "dtype",
               "cases", "failed", "NaN/Inf", "worst", "tolerance", "skipped");
  for (const auto& [k, e] : entries()) {
    const auto op = static_cast<BackendOp>(std::get<1>(k));
    const auto dtype = static_cast<DType>(std::get<2>(k));
    std::fprintf(out, "%-10s %-17s %-5s %5d %6d %7lld %10.2e %9.0e  %s\n", std::get<0>(k).c_str(),
                 std::string(backend_op_name(op)).c_str(), std::string(dtype_name(dtype)).c_str(),
                 e.cases, e.failed, static_cast<long long>(e.non_finite), e.worst,
                 tolerance(op, dtype).max_nmse, e.skipped.empty() ? "-" : e.skipped.c_str());
  }
  std::fflush(out);
}

}  // namespace tessera::conformance
