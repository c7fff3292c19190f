// One long straight-line block: a degree-48 polynomial by Horner's rule,
// fully unrolled into dependent FMAs, so the weaver's adaptive slicing has a
// block to cut (docs/goptx.md, Weaving). Launch with any grid and block.
//
//   extern "C" __global__ void long_polynomial(const float* in, float* out, int n)
//
// out[i] = sum over k of c_k * in[i]^k with c_k = 1 / (k + 1), alternating in sign.
extern "C" __global__ void long_polynomial(const float* __restrict__ in, float* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float x = in[i];
  float acc = 0.0f;
#pragma unroll
  for (int k = 48; k >= 0; --k) acc = fmaf(acc, x, (k % 2 ? -1.0f : 1.0f) / static_cast<float>(k + 1));
  out[i] = acc;
}
