// Warp shuffles and votes. Launch with blockDim.x a multiple of 32.
//
//   extern "C" __global__ void warp_reduce(const float* in, float* max_out,
//                                          float* sum_out, unsigned* positive_mask, int n)
//
// For warp w (global index (blockIdx.x * blockDim.x + threadIdx.x) / 32), lane 0 writes:
//   max_out[w]       = max over the warp's 32 elements (butterfly, __shfl_xor_sync),
//   sum_out[w]       = their sum (tree, __shfl_down_sync),
//   positive_mask[w] = __ballot_sync bit per lane whose element is > 0.
// Lanes past n read -inf for the max and 0 for the sum.
extern "C" __global__ void warp_reduce(const float* __restrict__ in, float* __restrict__ max_out,
                                       float* __restrict__ sum_out, unsigned* __restrict__ positive_mask, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? in[i] : 0.0f;
  float m = i < n ? v : -__int_as_float(0x7f800000);
  for (int offset = 16; offset > 0; offset /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
  float s = v;
  for (int offset = 16; offset > 0; offset /= 2) s += __shfl_down_sync(0xffffffffu, s, offset);
  unsigned mask = __ballot_sync(0xffffffffu, v > 0.0f);
  if ((threadIdx.x & 31) == 0) {
    int w = i / 32;
    max_out[w] = m;
    sum_out[w] = s;
    positive_mask[w] = mask;
  }
}
