// Shared-memory tree reduction: out[blockIdx.x] = sum of the block's slice of
// `in`. Launch with blockDim.x == 256 (a power of two) and any gridDim.x;
// block b sums in[b*256 .. b*256+255] (elements past n count as 0).
//
//   extern "C" __global__ void block_reduce_sum(const float* in, float* out, int n)
extern "C" __global__ void block_reduce_sum(const float* __restrict__ in, float* __restrict__ out, int n) {
  __shared__ float partial[256];
  unsigned tid = threadIdx.x;
  unsigned i = blockIdx.x * blockDim.x + tid;
  partial[tid] = i < static_cast<unsigned>(n) ? in[i] : 0.0f;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (tid < stride) partial[tid] += partial[tid + stride];
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = partial[0];
}
