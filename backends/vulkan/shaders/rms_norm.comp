// out[t] = x[t] / sqrt(mean(x[t]^2) + eps) * weight: one workgroup per row,
// the sum of squares reduced in shared memory.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 64) in;
layout(constant_id = 0) const int UNUSED = 0;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 2) buffer Out { float o[]; };

layout(push_constant) uniform Push {
  uint rows, d;
  uint x_off, x_stride, w_off, o_off, o_stride;
  float eps;
} p;

shared float partial[WG];

void main() {
  const uint row = flat_group();
  if (row >= p.rows) return;  // uniform across the workgroup
  const uint tid = gl_LocalInvocationID.x;
  const uint xb = p.x_off + row * p.x_stride;
  float s = 0.0;
  for (uint i = tid; i < p.d; i += WG) {
    const float v = x[xb + i];
    s += v * v;
  }
  partial[tid] = s;
  barrier();
  for (uint step = WG / 2u; step > 0u; step >>= 1) {
    if (tid < step) partial[tid] += partial[tid + step];
    barrier();
  }
  const float mean = partial[0] / float(p.d);
  const float scale = 1.0 / sqrt(mean + p.eps);
  const uint ob = p.o_off + row * p.o_stride;
  for (uint i = tid; i < p.d; i += WG) {
    precise float v = w[p.w_off + i] * (scale * x[xb + i]);
    o[ob + i] = v;
  }
}
