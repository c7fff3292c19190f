extern "C" __global__ void __launch_bounds__(256) row_max(
    const float* __restrict__ x,
    float* __restrict__ y,
    const int64_t M) {
  // grid: (stitch_add<int64_t>(M, 7) / 8) blocks of 256 threads
  const int64_t b = blockIdx.x;
  {  // block loop: warp w of 8, lane l
    const int64_t w = threadIdx.x / 32;
    const int64_t l = threadIdx.x % 32;
    int64_t row = stitch_add<int64_t>(stitch_mul<int64_t>(b, 8), w);
    float acc = -stitch_inf<float>();
    if (row < M) {
      #pragma unroll
      for (int64_t i = 0; i < 4; ++i) {
        acc = stitch_max<float>(acc, x[(row) * (128) + (((i * 32) + l))]);
      }
    }
    const float best = stitch_warp_reduce<stitch_op_max>(acc);
    if ((row < M) && (l == 0)) {
      y[row] = best;
    }
  }
}
