// Calls to a function that is not inlined (a .func with a parameter block
// and NVRTC's `{ .param ... call.uni ... }` sequence), dynamic shared memory
// (extern __shared__), a constant table, and float math on the special
// function unit. Launch with any blockDim.x and
// dynamic shared memory of blockDim.x * sizeof(float) bytes.
//
//   extern "C" __global__ void device_calls(const float* in, float* out, int n)
//
// out[i] = poly(in[i]) + fast_math(in[i]) + the neighbour's in value
// (threadIdx.x + 1 within the block, wrapping), where
//   poly(x)      = kCoefficients[0] + x * (kCoefficients[1] + x * (...)),  Horner over 4 terms,
//   fast_math(x) = __expf(x) * 0.25 + rsqrtf(|x| + 1) + tanhf(x).
__constant__ float kCoefficients[4] = {1.0f, -0.5f, 0.25f, -0.125f};

__device__ __noinline__ float poly(float x) {
  float acc = kCoefficients[3];
  for (int k = 2; k >= 0; --k) acc = acc * x + kCoefficients[k];
  return acc;
}

__device__ __noinline__ float fast_math(float x) {
  return __expf(x) * 0.25f + rsqrtf(fabsf(x) + 1.0f) + tanhf(x);
}

extern "C" __global__ void device_calls(const float* __restrict__ in, float* __restrict__ out, int n) {
  extern __shared__ float neighbours[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float x = i < n ? in[i] : 0.0f;
  neighbours[threadIdx.x] = x;
  __syncthreads();
  float next = neighbours[(threadIdx.x + 1) % blockDim.x];
  if (i < n) out[i] = poly(x) + fast_math(x) + next;
}
