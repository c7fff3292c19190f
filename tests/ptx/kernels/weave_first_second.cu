// The GoPTX poster's two example kernels, with their results stored: each
// thread sets two values and swaps them when its input is negative, so a
// woven pair meets all four cases (both conditions true, only the first's,
// only the second's, neither). Launch with any grid and block over n elements.
//
//   extern "C" __global__ void first(const float* x, float* out, int n)
//   extern "C" __global__ void second(const float* y, float* out, int n)
//
// out[2i] and out[2i+1] receive (x1, x2) and (y1, y2) respectively.
extern "C" __global__ void first(const float* __restrict__ x, float* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x1 = 1.0f, x2 = 2.0f;
  if (x[i] < 0.0f) {
    x2 = 1.0f;
    x1 = 2.0f + x[i];
  }
  out[2 * i] = x1;
  out[2 * i + 1] = x2;
}

extern "C" __global__ void second(const float* __restrict__ y, float* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float y1 = 1.0f, y2 = 2.0f;
  if (y[i] < 0.0f) {
    y2 = 1.0f - y[i];
    y1 = 2.0f;
  }
  out[2 * i] = y1;
  out[2 * i + 1] = y2;
}
