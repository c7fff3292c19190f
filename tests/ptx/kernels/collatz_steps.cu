// A loop whose trip count depends on the data (divergent within a warp):
// steps[i] = the number of Collatz steps from start[i] to 1 (0 for 0 or 1),
// capped at 1000. Any launch shape covering n threads.
//
//   extern "C" __global__ void collatz_steps(const unsigned* start, int* steps, int n)
extern "C" __global__ void collatz_steps(const unsigned* __restrict__ start, int* __restrict__ steps, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned long long v = start[i];
  int count = 0;
  while (v > 1 && count < 1000) {
    v = (v & 1) ? 3 * v + 1 : v / 2;
    ++count;
  }
  steps[i] = count;
}
