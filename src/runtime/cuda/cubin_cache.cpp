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

CubinCache::CubinCache(std::filesystem::path directory, std::optional<std::string> secret,
                       std::shared_ptr<RemoteCache> remote)
    : directory_(std::move(directory)),
      max_bytes_(cpu::cache_max_bytes()),
      secret_(std::move(secret)),
      remote_(std::move(remote)) {}
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

namespace {

// The remote tier's name space of an entry: "cuda/sm_90", "cuda/sm_90/ptx".
std::string remote_space(const std::string& arch, ModuleImage image) {
  return "cuda/" + arch + (image == ModuleImage::Ptx ? "/ptx" : "");
}

}  // namespace

void CubinCache::store_local(const std::string& key, const std::string& arch, ModuleImage image,
                             const std::string& bytes) {
  // The image first, its tag next, its checksum last: an entry is valid only
  // once all are complete and agree, so a crash between them leaves a miss.
  cpu::write_cache_file_atomically(cubin_path(key, arch, image), bytes);
  if (secret_) cpu::write_cache_file_atomically(tag_path(key, arch), entry_tag(*secret_, key, bytes));
  cpu::write_cache_file_atomically(checksum_path(key, arch), sha256_hex(bytes));
  cpu::maintain_cache(directory_, max_bytes_, {cubin_path(key, arch, image), checksum_path(key, arch), tag_path(key, arch)});
}

void CubinCache::count(int EntryCounts::*field) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++(stats_.*field);
}

std::string CubinCache::load_or_compile(const std::string& source, const std::string& arch, ModuleImage image) {
  const std::string k = key(source, arch, image);
  const std::string checksum = cpu::read_cache_file(checksum_path(k, arch));
  std::string cubin = cpu::read_cache_file(cubin_path(k, arch, image));
  const bool intact = !checksum.empty() && !cubin.empty() && sha256_hex(cubin) == checksum;
  bool unverified =
      intact && secret_ && !entry_tag_verifies(*secret_, k, cubin, cpu::read_cache_file(tag_path(k, arch)));
  if (intact && !unverified) {
    cpu::touch_cache_file(checksum_path(k, arch));
    count(&EntryCounts::hits);
    return cubin;
  }
  if (unverified) warn_unverified_entry_once(cubin_path(k, arch, image).string());
  bool bad_entry = !checksum.empty() || !cubin.empty();

  bool leased = false;
  if (remote_) {
    RemoteEntry entry = remote_->get_or_lease(remote_space(arch, image), k, leased);
    if (entry.state == RemoteEntry::State::Hit) {
      store_local(k, arch, image, entry.bytes);
      count(&EntryCounts::remote_hits);
      return std::move(entry.bytes);
    }
    if (entry.state == RemoteEntry::State::Unverified) {
      warn_unverified_entry_once(RemoteCache::entry_name(remote_space(arch, image), k) + " (remote)");
      unverified = true;
    }
    bad_entry = bad_entry || entry.state == RemoteEntry::State::Corrupt;
  }
  RemoteLease lease(remote_.get(), remote_space(arch, image), k, leased);
  codegen::cuda::NvrtcResult compiled = codegen::cuda::compile_with_nvrtc(source, arch);
  if (!compiled.ok) {
    throw cpu::CompileError(fmt::format("NVRTC rejected the generated CUDA C for {}", arch), compiled.log);
  }
  // Both images of the one NVRTC run, each under its own key, locally and
  // remotely: the other image is stored first, so that once this key's
  // waiters see their entry, its companion is there too.
  const ModuleImage other = image == ModuleImage::Ptx ? ModuleImage::Cubin : ModuleImage::Ptx;
  const std::string other_key = key(source, arch, other);
  const std::string& other_bytes = other == ModuleImage::Ptx ? compiled.ptx : compiled.cubin;
  std::string& bytes = image == ModuleImage::Ptx ? compiled.ptx : compiled.cubin;
  if (!other_bytes.empty()) {
    store_local(other_key, arch, other, other_bytes);
    if (remote_) remote_->put(remote_space(arch, other), other_key, other_bytes);
  }
  store_local(k, arch, image, bytes);
  if (remote_) remote_->put(remote_space(arch, image), k, bytes);
  count(unverified ? &EntryCounts::rejected_unsigned : bad_entry ? &EntryCounts::recompiled_corrupt : &EntryCounts::misses);
  return std::move(bytes);
}

CubinCacheStats CubinCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace stitch::runtime::cuda
