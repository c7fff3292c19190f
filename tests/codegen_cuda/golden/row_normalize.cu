extern "C" __global__ void __launch_bounds__(256) row_normalize(
    const float* __restrict__ x,
    float* __restrict__ y,
    const int64_t N) {
  // grid: N blocks of 256 threads
  __shared__ float row[1024];
  __shared__ float partials[8];
  const int64_t b = blockIdx.x;
  {  // block loop: thread t of 256
    const int64_t t = threadIdx.x;
    float acc = float(0e+00);
    for (int64_t i = 0; i < 4; ++i) {
      int64_t c = ((i * 256) + t);
      float v = x[(b) * (1024) + (c)];
      row[c] = v;
      acc = stitch_add<float>(acc, v);
    }
    const float sum = stitch_block_reduce<stitch_op_sum, 8>(acc, partials);
    __syncthreads();
    for (int64_t j = 0; j < 4; ++j) {
      int64_t c2 = int64_t(uint32_t((((j * 256) + t) + 1)) % 1024u);
      y[(b) * (1024) + (c2)] = stitch_div<float>(row[c2], sum);
    }
  }
}
