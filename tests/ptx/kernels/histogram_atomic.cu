// Atomics in shared and global memory. Launch with blockDim.x == 256, any grid;
// nbins <= 256, bins zeroed and *max_value set to INT_MIN before the launch.
//
//   extern "C" __global__ void histogram_atomic(const int* values, int n, unsigned* bins, int nbins,
//                                               int* max_value, unsigned* first_negative)
//
// Each value v with 0 <= v < nbins counts into bins[v] (per-block shared
// histogram, then one atomicAdd per bin); *max_value = max of all values
// (atomicMax); *first_negative = the smallest index i with values[i] < 0,
// through an atomicCAS loop (leave it 0xffffffff before the launch).
extern "C" __global__ void histogram_atomic(const int* __restrict__ values, int n, unsigned* bins, int nbins,
                                            int* max_value, unsigned* first_negative) {
  __shared__ unsigned local[256];
  for (int b = threadIdx.x; b < nbins; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    int v = values[i];
    if (v >= 0 && v < nbins) atomicAdd(&local[v], 1u);
    atomicMax(max_value, v);
    if (v < 0) {
      unsigned seen = *first_negative;
      while (static_cast<unsigned>(i) < seen) {
        unsigned prev = atomicCAS(first_negative, seen, static_cast<unsigned>(i));
        if (prev == seen) break;
        seen = prev;
      }
    }
  }
  __syncthreads();
  for (int b = threadIdx.x; b < nbins; b += blockDim.x) {
    if (local[b] != 0) atomicAdd(&bins[b], local[b]);
  }
}
