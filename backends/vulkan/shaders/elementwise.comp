// out = op(a, b) element by element over rows of `cols`: add, add_bias (b is
// one row for every row), scale, swiglu and geglu, as cpu_kernels.cpp
// computes them (the same expressions, unfused).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const int OP = 0;  // 0 add, 1 add_bias, 2 scale, 3 swiglu, 4 geglu

layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) buffer Out { float o[]; };

layout(push_constant) uniform Push {
  uint rows, cols;
  uint a_off, a_stride, b_off, b_stride, o_off, o_stride;
  float factor;
} p;

// backends/cpu/dot_order.h's exp_reference, step by step.
float exp_reference(float x) {
  const float kLow = -87.0, kHigh = 88.0, kLog2e = 1.44269504088896341;
  const float kLn2High = 0.693359375, kLn2Low = -2.12194440e-4;
  float c = kLow > x ? kLow : x;
  c = kHigh < c ? kHigh : c;
  precise float n = roundEven(c * kLog2e);
  precise float r = fma(n, -kLn2High, c);
  r = fma(n, -kLn2Low, r);
  precise float y = 1.9875691500e-4;
  y = fma(y, r, 1.3981999507e-3);
  y = fma(y, r, 8.3334519073e-3);
  y = fma(y, r, 4.1665795894e-2);
  y = fma(y, r, 1.6666665459e-1);
  y = fma(y, r, 5.0000001201e-1);
  y = fma(y, r * r, r) + 1.0;
  const int power = isnan(n) ? 0 : int(n);
  const float two_n = intBitsToFloat((power + 127) << 23);
  return x < kLow ? 0.0 : y * two_n;
}

void main() {
  const uint g = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * 256u +
                 gl_LocalInvocationID.x;
  if (g >= p.rows * p.cols) return;
  const uint r = g / p.cols, c = g - r * p.cols;
  const float x = a[p.a_off + r * p.a_stride + c];
  precise float y;
  if (OP == 0) {
    y = x + b[p.b_off + r * p.b_stride + c];
  } else if (OP == 1) {
    y = x + b[p.b_off + c];
  } else if (OP == 2) {
    y = x * p.factor;
  } else if (OP == 3) {
    const float u = b[p.b_off + r * p.b_stride + c];
    y = x * (1.0 / (1.0 + exp_reference(-x))) * u;
  } else {
    const float u = b[p.b_off + r * p.b_stride + c];
    const float kSqrt2OverPi = 0.7978845608028654;
    precise float inner = kSqrt2OverPi * x * (1.0 + 0.044715 * x * x);
    // tanh is exactly +-1 in f32 past |10|; clamped so no driver's tanh
    // overflows to NaN on a large gate.
    const float t = tanh(clamp(inner, -10.0, 10.0));
    precise float gelu = 0.5 * x * (1.0 + t);
    y = gelu * u;
  }
  o[p.o_off + r * p.o_stride + c] = y;
}
