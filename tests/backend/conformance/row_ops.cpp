// The f32 row ops: rms_norm, add, add_bias, scale, swiglu, geglu (odd
// widths, single rows, into a fresh output and in place where the contract
// allows it) and rope (every RopeSpec form, head sizes 64/128/256).
#include <functional>
#include <vector>

#include "tests/backend/conformance/cases.h"
#include "tests/backend/conformance/device_io.h"
#include "tests/backend/conformance/fixture.h"

namespace tessera::conformance {
namespace {

// One op over `inputs` (all [rows, width] unless shapes says otherwise),
// writing an f32 [rows, width] output: `in_place` names the input the output
// aliases (-1: a fresh output).
struct RowOp {
  BackendOp op;
  std::vector<Shape> shapes;  // of each input
  // Runs the op on tensors of one backend.
  std::function<void(Backend&, const std::vector<Tensor>&, const Tensor&)> call;
};

void row_case(Conformance& t, const RowOp& op, const RowsCase& c, int in_place, uint64_t seed) {
  const std::string label = c.label() + (in_place >= 0 ? " in place" : "");
  SCOPED_TRACE(label);
  Backend& b = t.backend();
  const Shape out_shape = {c.rows, c.width};
  std::vector<std::vector<float>> inputs;
  for (const Shape& shape : op.shapes) {
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    inputs.push_back(random_values(static_cast<std::size_t>(count), seed++, 3.0f));
  }
  std::vector<float> want(static_cast<std::size_t>(c.rows * c.width));
  {
    std::vector<std::vector<float>> copies = inputs;  // in place rewrites its input
    std::vector<Tensor> ref;
    for (std::size_t i = 0; i < copies.size(); ++i)
      ref.push_back(host_tensor(copies[i].data(), DType::kF32, op.shapes[i]));
    const Tensor out = in_place >= 0 ? ref[static_cast<std::size_t>(in_place)]
                                     : host_tensor(want.data(), DType::kF32, out_shape);
    op.call(t.reference(), ref, out);
    if (in_place >= 0) want = copies[static_cast<std::size_t>(in_place)];
  }

  std::vector<DeviceTensor> device;
  std::vector<Tensor> tensors;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    CONFORMANCE_ASSIGN_OR_FAIL(DeviceTensor d,
                               upload_f32(b, BufferUsage::kActivations, op.shapes[i], inputs[i]));
    tensors.push_back(d.tensor);
    device.push_back(std::move(d));
  }
  DeviceTensor fresh;
  if (in_place < 0) {
    CONFORMANCE_ASSIGN_OR_FAIL(
        fresh, allocate_tensor(b, BufferUsage::kActivations, DType::kF32, out_shape));
  }
  const Tensor out = in_place >= 0 ? tensors[static_cast<std::size_t>(in_place)] : fresh.tensor;
  op.call(b, tensors, out);
  CONFORMANCE_SYNC(b);
  CONFORMANCE_ASSIGN_OR_FAIL(std::vector<float> got, download_f32(b, out));
  t.expect_conforms(op.op, DType::kF32, label, got, want);
}

// Every rows case, into a fresh output and (aliasing input `alias`) in place.
void run_rows(Conformance& t, const std::function<RowOp(const RowsCase&)>& make, int alias) {
  uint64_t seed = 3000;
  for (const RowsCase& c : rows_cases()) {
    const RowOp op = make(c);
    row_case(t, op, c, -1, seed += 8);
    if (alias >= 0) row_case(t, op, c, alias, seed += 8);
  }
}

void rope_case(Conformance& t, const RopeCase& c, uint64_t seed) {
  SCOPED_TRACE(c.label());
  Backend& b = t.backend();
  const Shape shape = {c.n, c.heads, c.head_dim};
  const std::vector<float> x =
      random_values(static_cast<std::size_t>(c.n * c.heads * c.head_dim), seed, 2.0f);
  const RopeSpec spec = c.spec();
  std::vector<float> want = x;
  t.reference().rope(host_tensor(want.data(), DType::kF32, shape), c.positions, spec);

  CONFORMANCE_ASSIGN_OR_FAIL(DeviceTensor dx, upload_f32(b, BufferUsage::kActivations, shape, x));
  b.rope(dx.tensor, c.positions, spec);
  CONFORMANCE_SYNC(b);
  CONFORMANCE_ASSIGN_OR_FAIL(std::vector<float> got, download_f32(b, dx.tensor));
  t.expect_conforms(BackendOp::kRope, DType::kF32, c.label(), got, want);
}

}  // namespace

TEST_P(Conformance, RmsNorm) {
  CONFORMANCE_REQUIRE(BackendOp::kRmsNorm, DType::kF32);
  run_rows(
      *this,
      [](const RowsCase& c) {
        return RowOp{BackendOp::kRmsNorm,
                     {{c.rows, c.width}, {c.width}},
                     [](Backend& b, const std::vector<Tensor>& in, const Tensor& out) {
                       b.rms_norm(in[0], in[1], 1e-5f, out);
                     }};
      },
      0);
}

TEST_P(Conformance, Add) {
  CONFORMANCE_REQUIRE(BackendOp::kAdd, DType::kF32);
  run_rows(
      *this,
      [](const RowsCase& c) {
        return RowOp{BackendOp::kAdd,
                     {{c.rows, c.width}, {c.rows, c.width}},
                     [](Backend& b, const std::vector<Tensor>& in, const Tensor& out) {
                       b.add(in[0], in[1], out);
                     }};
      },
      0);
}

TEST_P(Conformance, AddBias) {
  CONFORMANCE_REQUIRE(BackendOp::kAddBias, DType::kF32);
  run_rows(
      *this,
      [](const RowsCase& c) {
        return RowOp{BackendOp::kAddBias,
                     {{c.rows, c.width}, {c.width}},
                     [](Backend& b, const std::vector<Tensor>& in, const Tensor& out) {
                       b.add_bias(in[0], in[1], out);
                     }};
      },
      0);
}

TEST_P(Conformance, Scale) {
  CONFORMANCE_REQUIRE(BackendOp::kScale, DType::kF32);
  run_rows(
      *this,
      [](const RowsCase& c) {
        return RowOp{BackendOp::kScale,
                     {{c.rows, c.width}},
                     [](Backend& b, const std::vector<Tensor>& in, const Tensor& out) {
                       b.scale(in[0], 0.37f, out);
                     }};
      },
      0);
}

TEST_P(Conformance, Swiglu) {
  CONFORMANCE_REQUIRE(BackendOp::kSwiglu, DType::kF32);
  run_rows(
      *this,
      [](const RowsCase& c) {
        return RowOp{BackendOp::kSwiglu,
                     {{c.rows, c.width}, {c.rows, c.width}},
                     [](Backend& b, const std::vector<Tensor>& in, const Tensor& out) {
                       b.swiglu(in[0], in[1], out);
                     }};
      },
      0);
}

TEST_P(Conformance, Geglu) {
  CONFORMANCE_REQUIRE(BackendOp::kGeglu, DType::kF32);
  run_rows(
      *this,
      [](const RowsCase& c) {
        return RowOp{BackendOp::kGeglu,
                     {{c.rows, c.width}, {c.rows, c.width}},
                     [](Backend& b, const std::vector<Tensor>& in, const Tensor& out) {
                       b.geglu(in[0], in[1], out);
                     }};
      },
      0);
}

TEST_P(Conformance, Rope) {
  CONFORMANCE_REQUIRE(BackendOp::kRope, DType::kF32);
  uint64_t seed = 4000;
  for (const RopeCase& c : rope_cases()) rope_case(*this, c, seed++);
}

}  // namespace tessera::conformance
