// The fake CUDA driver (docs/cuda-allocator-and-cublas.md, The fake driver)
// is what every GPU-less runtime test stands on, so its own behaviour is
// pinned here: load_driver accepts it, it reports an H100, and it refuses what
// the real driver refuses.
#include <elf.h>
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fake_driver_fixture.h"
#include "pipeline/cuda/device_target.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/driver.h"

namespace stitch::runtime::cuda {
namespace {

using FakeDriver = FakeDriverTest;

// A minimal ELF64 file like a cubin: a header, one string table holding
// `names`, and the section headers after it.
std::vector<char> elf_with_strings(const std::vector<std::string>& names) {
  std::string strtab(1, '\0');
  for (const std::string& name : names) strtab += name + std::string(1, '\0');
  Elf64_Ehdr header{};
  std::memcpy(header.e_ident, ELFMAG, SELFMAG);
  header.e_ident[EI_CLASS] = ELFCLASS64;
  header.e_ident[EI_DATA] = ELFDATA2LSB;
  header.e_ident[EI_VERSION] = EV_CURRENT;
  header.e_type = ET_EXEC;
  header.e_machine = EM_CUDA;
  header.e_version = EV_CURRENT;
  header.e_ehsize = sizeof header;
  header.e_shoff = sizeof header + strtab.size();
  header.e_shentsize = sizeof(Elf64_Shdr);
  header.e_shnum = 2;
  header.e_shstrndx = 1;
  Elf64_Shdr sections[2]{};
  sections[1].sh_type = SHT_STRTAB;
  sections[1].sh_offset = sizeof header;
  sections[1].sh_size = strtab.size();
  std::vector<char> image(sizeof header + strtab.size() + sizeof sections);
  std::memcpy(image.data(), &header, sizeof header);
  std::memcpy(image.data() + sizeof header, strtab.data(), strtab.size());
  std::memcpy(image.data() + header.e_shoff, sections, sizeof sections);
  return image;
}

TEST_F(FakeDriver, ReportsOneH100) {
  int count = 0;
  check(*api_, api_->cuDeviceGetCount(&count), "cuDeviceGetCount");
  EXPECT_EQ(count, 1);
  const DeviceProperties d = query_device(*api_);
  EXPECT_EQ(d.major, 9);
  EXPECT_EQ(d.minor, 0);
  EXPECT_EQ(d.sm_count, 132);
  EXPECT_EQ(d.warp_size, 32);
  EXPECT_EQ(d.max_threads_per_block, 1024);
  EXPECT_EQ(d.max_threads_per_sm, 2048);
  EXPECT_EQ(d.shared_bytes_per_block, 49152);
  EXPECT_EQ(d.shared_bytes_per_block_optin, 232448);
  EXPECT_EQ(d.shared_bytes_per_sm, 233472);
  EXPECT_EQ(d.l2_bytes, 50 * 1024 * 1024);
  EXPECT_EQ(pipeline::target_for_device(d).arch, d.arch());
  // An attribute the fake has no value for is refused, not answered with 0.
  int value = 0;
  EXPECT_EQ(api_->cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_TCC_DRIVER, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api_->cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 1), CUDA_ERROR_INVALID_DEVICE);
}

TEST_F(FakeDriver, ErrorsHaveNames) {
  EXPECT_NE(describe_result(*api_, CUDA_ERROR_OUT_OF_MEMORY).find("CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos);
  EXPECT_THROW(check(*api_, CUDA_ERROR_INVALID_IMAGE, "cuModuleLoadData"), InternalError);
}

TEST_F(FakeDriver, MemoryIsHostMemoryWithCheckedRanges) {
  CUdeviceptr ptr = 0;
  ASSERT_EQ(api_->cuMemAlloc(&ptr, 100), CUDA_SUCCESS);
  EXPECT_EQ(ptr % 256, 0u);
  EXPECT_EQ(fake_.stitch_fake_cuda_live_allocations(), 1);
  EXPECT_EQ(fake_.stitch_fake_cuda_bytes_allocated(), 100);
  std::vector<uint8_t> in(100), out(100, 0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(api_->cuMemcpyHtoDAsync(ptr, in.data(), 100, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(api_->cuMemsetD8Async(ptr + 10, 7, 5, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(api_->cuMemcpyDtoHAsync(out.data(), ptr, 100, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(out[9], 9);
  EXPECT_EQ(out[10], 7);
  EXPECT_EQ(out[14], 7);
  EXPECT_EQ(out[15], 15);
  // A copy running past the allocation, or into memory never allocated, fails.
  EXPECT_EQ(api_->cuMemcpyHtoDAsync(ptr + 1, in.data(), 100, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api_->cuMemsetD8Async(ptr + 200, 0, 1, nullptr), CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr other = 0;
  ASSERT_EQ(api_->cuMemAlloc(&other, 100), CUDA_SUCCESS);
  EXPECT_EQ(api_->cuMemcpyDtoDAsync(other, ptr, 100, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(api_->cuMemcpyDtoHAsync(out.data(), other, 100, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(out[12], 7);
  EXPECT_EQ(api_->cuMemFree(ptr), CUDA_SUCCESS);
  EXPECT_EQ(api_->cuMemFree(ptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api_->cuMemFree(other), CUDA_SUCCESS);
  EXPECT_EQ(fake_.stitch_fake_cuda_live_allocations(), 0);
  EXPECT_EQ(fake_.stitch_fake_cuda_alloc_calls(), 2);
  EXPECT_EQ(fake_.stitch_fake_cuda_free_calls(), 2);
  EXPECT_EQ(api_->cuMemAlloc(&ptr, 0), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(FakeDriver, MemoryHasAConfigurableSizeAndInjectedFailures) {
  fake_.stitch_fake_cuda_set_total_memory(1 << 20);
  size_t free_bytes = 0, total_bytes = 0;
  CUdeviceptr ptr = 0;
  ASSERT_EQ(api_->cuMemAlloc(&ptr, 1000), CUDA_SUCCESS);
  ASSERT_EQ(api_->cuMemGetInfo(&free_bytes, &total_bytes), CUDA_SUCCESS);
  EXPECT_EQ(total_bytes, size_t{1} << 20);
  EXPECT_EQ(free_bytes, (size_t{1} << 20) - 1000);
  CUdeviceptr big = 0;
  EXPECT_EQ(api_->cuMemAlloc(&big, 1 << 20), CUDA_ERROR_OUT_OF_MEMORY);
  fake_.stitch_fake_cuda_fail_next_allocations(1);
  EXPECT_EQ(api_->cuMemAlloc(&big, 16), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(api_->cuMemAlloc(&big, 16), CUDA_SUCCESS);
}

TEST_F(FakeDriver, ModulesAcceptElfImagesAndFindTheirKernels) {
  CUmodule module = nullptr;
  const char ptx[] = ".version 8.0\n.target sm_90\n";
  EXPECT_EQ(api_->cuModuleLoadData(&module, ptx), CUDA_ERROR_INVALID_IMAGE);
  std::vector<char> image = elf_with_strings({"stitch_kernel_0", "xstitch_kernel_1"});
  // Bytes after the ELF's last section are not part of the module.
  const std::string beyond = std::string(1, '\0') + "beyond" + std::string(1, '\0');
  image.insert(image.end(), beyond.begin(), beyond.end());
  ASSERT_EQ(api_->cuModuleLoadData(&module, image.data()), CUDA_SUCCESS);
  CUfunction function = nullptr;
  EXPECT_EQ(api_->cuModuleGetFunction(&function, module, "stitch_kernel_0"), CUDA_SUCCESS);
  EXPECT_NE(function, nullptr);
  CUfunction again = nullptr;
  EXPECT_EQ(api_->cuModuleGetFunction(&again, module, "stitch_kernel_0"), CUDA_SUCCESS);
  EXPECT_EQ(again, function);
  // Whole strings only: a suffix of another name is not a kernel.
  EXPECT_EQ(api_->cuModuleGetFunction(&again, module, "stitch_kernel_1"), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(api_->cuModuleGetFunction(&again, module, "beyond"), CUDA_ERROR_NOT_FOUND);
  StitchFakeCudaHandles handles{};
  fake_.stitch_fake_cuda_live_handles(&handles);
  EXPECT_EQ(handles.modules, 1);
  EXPECT_EQ(api_->cuModuleUnload(module), CUDA_SUCCESS);
  EXPECT_EQ(api_->cuModuleUnload(module), CUDA_ERROR_INVALID_HANDLE);
}

// A real cubin: the image is measured from its own headers and the kernel's
// name is in its string table, so the executable's tests can load what NVRTC
// produces.
TEST_F(FakeDriver, LoadsACubinFromNvrtc) {
  const char* source = "extern \"C\" __global__ void stitch_fake_add_one(float* x) { x[threadIdx.x] += 1.0f; }\n";
  nvrtcProgram program = nullptr;
  ASSERT_EQ(nvrtcCreateProgram(&program, source, "fake_add_one.cu", 0, nullptr, nullptr), NVRTC_SUCCESS);
  const char* options[] = {"--gpu-architecture=sm_90"};
  ASSERT_EQ(nvrtcCompileProgram(program, 1, options), NVRTC_SUCCESS);
  size_t size = 0;
  ASSERT_EQ(nvrtcGetCUBINSize(program, &size), NVRTC_SUCCESS);
  std::vector<char> cubin(size);
  ASSERT_EQ(nvrtcGetCUBIN(program, cubin.data()), NVRTC_SUCCESS);
  nvrtcDestroyProgram(&program);
  CUmodule module = nullptr;
  ASSERT_EQ(api_->cuModuleLoadData(&module, cubin.data()), CUDA_SUCCESS);
  CUfunction function = nullptr;
  EXPECT_EQ(api_->cuModuleGetFunction(&function, module, "stitch_fake_add_one"), CUDA_SUCCESS);
  EXPECT_EQ(api_->cuModuleGetFunction(&function, module, "stitch_fake_add_two"), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(api_->cuModuleUnload(module), CUDA_SUCCESS);
}

TEST_F(FakeDriver, FunctionAttributesAndLaunchesAreRecorded) {
  CUmodule module = nullptr;
  const std::vector<char> image = elf_with_strings({"k"});
  ASSERT_EQ(api_->cuModuleLoadData(&module, image.data()), CUDA_SUCCESS);
  CUfunction k = nullptr;
  ASSERT_EQ(api_->cuModuleGetFunction(&k, module, "k"), CUDA_SUCCESS);
  int value = 0;
  EXPECT_EQ(api_->cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_NUM_REGS, k), CUDA_SUCCESS);
  EXPECT_EQ(value, 32);
  EXPECT_EQ(api_->cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k), CUDA_SUCCESS);
  EXPECT_EQ(value, 1024);
  CUstream stream = nullptr;
  ASSERT_EQ(api_->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUdeviceptr buffer = 0x1000;
  int64_t count = 77;
  void* params[] = {&buffer, &count};
  const size_t sizes[] = {sizeof buffer, sizeof count};
  fake_.stitch_fake_cuda_record_param_sizes(sizes, 2);
  // Above 48 KiB of dynamic shared memory needs the opt-in attribute first.
  EXPECT_EQ(api_->cuLaunchKernel(k, 4, 1, 1, 256, 1, 1, 100000, stream, params, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api_->cuFuncSetAttribute(k, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 300000),
            CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(api_->cuFuncSetAttribute(k, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 100000), CUDA_SUCCESS);
  EXPECT_EQ(api_->cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, k), CUDA_SUCCESS);
  EXPECT_EQ(value, 100000);
  ASSERT_EQ(api_->cuLaunchKernel(k, 4, 2, 1, 256, 1, 1, 100000, stream, params, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(api_->cuLaunchKernel(k, 1, 1, 1, 1025, 1, 1, 0, stream, params, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api_->cuLaunchKernel(k, 0, 1, 1, 32, 1, 1, 0, stream, params, nullptr), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(fake_.stitch_fake_cuda_launch_count(), 1);
  StitchFakeCudaLaunch launch{};
  ASSERT_EQ(fake_.stitch_fake_cuda_get_launch(0, &launch), 1);
  EXPECT_STREQ(launch.function_name, "k");
  EXPECT_EQ(launch.grid[0], 4u);
  EXPECT_EQ(launch.grid[1], 2u);
  EXPECT_EQ(launch.block[0], 256u);
  EXPECT_EQ(launch.shared_bytes, 100000u);
  EXPECT_EQ(launch.stream, stream);
  CUdeviceptr recorded_buffer = 0;
  int64_t recorded_count = 0;
  ASSERT_EQ(fake_.stitch_fake_cuda_get_launch_param(0, 0, &recorded_buffer, sizeof recorded_buffer), 1);
  ASSERT_EQ(fake_.stitch_fake_cuda_get_launch_param(0, 1, &recorded_count, sizeof recorded_count), 1);
  EXPECT_EQ(recorded_buffer, 0x1000u);
  EXPECT_EQ(recorded_count, 77);
  EXPECT_EQ(fake_.stitch_fake_cuda_get_launch_param(0, 2, &recorded_count, sizeof recorded_count), 0);
  EXPECT_EQ(fake_.stitch_fake_cuda_get_launch(1, &launch), 0);
  EXPECT_EQ(api_->cuStreamDestroy(stream), CUDA_SUCCESS);
  // A launch on a destroyed stream, or of a function whose module is gone, fails.
  EXPECT_EQ(api_->cuLaunchKernel(k, 1, 1, 1, 32, 1, 1, 0, stream, params, nullptr), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(api_->cuModuleUnload(module), CUDA_SUCCESS);
}

TEST_F(FakeDriver, EventsTimeOnTheHostClock) {
  CUevent start = nullptr, stop = nullptr, untimed = nullptr;
  ASSERT_EQ(api_->cuEventCreate(&start, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  ASSERT_EQ(api_->cuEventCreate(&stop, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  ASSERT_EQ(api_->cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  float ms = -1;
  EXPECT_EQ(api_->cuEventElapsedTime(&ms, start, stop), CUDA_ERROR_INVALID_HANDLE);  // not recorded yet
  ASSERT_EQ(api_->cuEventRecord(start, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(api_->cuEventRecord(stop, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(api_->cuEventRecord(untimed, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(api_->cuEventSynchronize(stop), CUDA_SUCCESS);
  ASSERT_EQ(api_->cuEventElapsedTime(&ms, start, stop), CUDA_SUCCESS);
  EXPECT_GE(ms, 0.0f);
  EXPECT_LT(ms, 1000.0f);
  EXPECT_EQ(api_->cuEventElapsedTime(&ms, start, untimed), CUDA_ERROR_INVALID_HANDLE);
  StitchFakeCudaHandles handles{};
  fake_.stitch_fake_cuda_live_handles(&handles);
  EXPECT_EQ(handles.events, 3);
  for (CUevent e : {start, stop, untimed}) EXPECT_EQ(api_->cuEventDestroy(e), CUDA_SUCCESS);
  EXPECT_EQ(api_->cuEventDestroy(start), CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(FakeDriver, ThePrimaryContextIsCounted) {
  CUcontext context = nullptr;
  ASSERT_EQ(api_->cuDevicePrimaryCtxRetain(&context, 0), CUDA_SUCCESS);
  EXPECT_NE(context, nullptr);
  EXPECT_EQ(api_->cuCtxSetCurrent(context), CUDA_SUCCESS);
  EXPECT_EQ(api_->cuCtxSynchronize(), CUDA_SUCCESS);
  StitchFakeCudaHandles handles{};
  fake_.stitch_fake_cuda_live_handles(&handles);
  EXPECT_EQ(handles.primary_context_retains, 1);
  EXPECT_EQ(api_->cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
  EXPECT_EQ(api_->cuDevicePrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT);
}

}  // namespace
}  // namespace stitch::runtime::cuda
