// Tiled transpose through shared memory: out[c][r] = in[r][c] for a
// rows x cols row-major matrix. Launch with blockDim = (32, 8),
// gridDim = (ceil(cols / 32), ceil(rows / 32)). The tile has 33 columns so
// that the column reads hit distinct banks.
//
//   extern "C" __global__ void transpose_tiled(const float* in, float* out, int rows, int cols)
extern "C" __global__ void transpose_tiled(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  __shared__ float tile[32][33];
  int x = blockIdx.x * 32 + threadIdx.x;
  int y = blockIdx.y * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8) {
    if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
  }
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x;
  y = blockIdx.x * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8) {
    if (x < rows && y + j < cols) out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
  }
}
