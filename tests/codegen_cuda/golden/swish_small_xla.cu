extern "C" __global__ void __launch_bounds__(256) k_swish_small_g0(
    const float* __restrict__ in_x,
    float* __restrict__ out_y) {
  // grid: 3 blocks of 256 threads
  const int64_t blk = blockIdx.x;
  {  // block loop: thread thr of 256
    const int64_t thr = threadIdx.x;
    float part_ld0[4];
    #pragma unroll
    for (int64_t part_ahead = 0; part_ahead < 4; ++part_ahead) {
      int64_t lin_ahead = ((((blk * 4) + part_ahead) * 256) + thr);
      if (lin_ahead < 3001) {
        part_ld0[part_ahead] = in_x[lin_ahead];
      }
    }
    #pragma unroll
    for (int64_t part = 0; part < 4; ++part) {
      int64_t lin = ((((blk * 4) + part) * 256) + thr);
      if (lin < 3001) {
        float e0 = stitch_sigmoid<float>(part_ld0[part]);
        float e1 = stitch_mul<float>(part_ld0[part], e0);
        out_y[lin] = e1;
      }
    }
  }
}
