#include "runtime/cuda/cubin_cache.h"

#include <nvrtc.h>

#include <fmt/format.h>

#include "codegen/cuda/nvrtc_check.h"
#include "runtime/cpu/cache_maintenance.h"
#include "runtime/cpu/kernel_cache.h"
#include "stitch/error.h"

namespace stitch::runtime::cuda {

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "nvrtc unknown";
  return fmt::format("nvrtc {}.{}", major, minor);
}

CubinCache::CubinCache(std::filesystem::path directory, std::optional<std::string> secret)
    : directory_(std::move(directory)), max_bytes_(cpu::cache_max_bytes()), secret_(std::move(secret)) {}
CubinCache::CubinCache() : CubinCache(cpu::default_cache_directory()) {}

std::string CubinCache::key(const std::string& source, const std::string& arch, ModuleImage image) const {
  // Length-prefixed fields, so no two inputs concatenate to the same material.
  std::string material;
  auto field = [&](std::string_view name, std::string_view value) {
    material += fmt::format("{} {}\n", name, value.size());
    material += value;
    material += '\n';
  };
  field("source", source);
  for (const std::string& option : codegen::cuda::nvrtc_options(arch)) field("option", option);
  field("nvrtc", nvrtc_version());
  field("arch", arch);
  if (image == ModuleImage::Ptx) field("image", "ptx");
  return cpu::sha256_hex(material);
}

std::filesystem::path CubinCache::cubin_path(const std::string& key, const std::string& arch,
                                             ModuleImage image) const {
  return directory_ / "cuda" / arch / (key + (image == ModuleImage::Ptx ? ".ptx" : ".cubin"));
}

std::filesystem::path CubinCache::checksum_path(const std::string& key, const std::string& arch) const {
  return directory_ / "cuda" / arch / (key + ".sha256");
}

std::filesystem::path CubinCache::tag_path(const std::string& key, const std::string& arch) const {
  return directory_ / "cuda" / arch / (key + ".tag");
}

std::string CubinCache::load_or_compile(const std::string& source, const std::string& arch, ModuleImage image) {
  const std::string k = key(source, arch, image);
  const std::string checksum = cpu::read_cache_file(checksum_path(k, arch));
  std::string cubin = cpu::read_cache_file(cubin_path(k, arch, image));
  const bool intact = !checksum.empty() && !cubin.empty() && cpu::sha256_hex(cubin) == checksum;
  const bool unsigned_entry =
      intact && secret_ && !entry_tag_verifies(*secret_, k, cubin, cpu::read_cache_file(tag_path(k, arch)));
  if (intact && !unsigned_entry) {
    cpu::touch_cache_file(checksum_path(k, arch));
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.hits;
    return cubin;
  }
  if (unsigned_entry) warn_unverified_entry_once(cubin_path(k, arch, image).string());
  const bool had_entry = !checksum.empty() || !cubin.empty();
  codegen::cuda::NvrtcResult compiled = codegen::cuda::compile_with_nvrtc(source, arch);
  if (!compiled.ok) {
    throw cpu::CompileError(fmt::format("NVRTC rejected the generated CUDA C for {}", arch), compiled.log);
  }
  std::string& bytes = image == ModuleImage::Ptx ? compiled.ptx : compiled.cubin;
  // The cubin first, its tag next, its checksum last: an entry is valid only
  // once all are complete and agree, so a crash between them leaves a miss.
  cpu::write_cache_file_atomically(cubin_path(k, arch, image), bytes);
  if (secret_) cpu::write_cache_file_atomically(tag_path(k, arch), entry_tag(*secret_, k, bytes));
  cpu::write_cache_file_atomically(checksum_path(k, arch), cpu::sha256_hex(bytes));
  cpu::maintain_cache(directory_, max_bytes_, {cubin_path(k, arch, image), checksum_path(k, arch), tag_path(k, arch)});
  std::lock_guard<std::mutex> lock(mutex_);
  ++(unsigned_entry ? stats_.rejected_unsigned : had_entry ? stats_.recompiled_corrupt : stats_.misses);
  return std::move(bytes);
}

CubinCacheStats CubinCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace stitch::runtime::cuda
