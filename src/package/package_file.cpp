#include "package/package_file.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runtime/common/entry_signature.h"
#include "stitch/error.h"

namespace stitch::package {
namespace {

using nlohmann::json;

constexpr std::string_view kMagic = "STITCHPKG ";

// Blobs are appended to `data`; the manifest names them by offset and size.
json blob(std::string& data, const std::string& bytes) {
  json b = {{"offset", data.size()}, {"size", bytes.size()}, {"sha256", runtime::sha256_hex(bytes)}};
  data += bytes;
  return b;
}

std::string read_blob(const json& b, const std::string& data, const std::string& path) {
  const uint64_t offset = b.at("offset").get<uint64_t>(), size = b.at("size").get<uint64_t>();
  if (offset > data.size() || size > data.size() - offset) {
    throw UserError(fmt::format("{}: truncated (a blob ends past the end of the file)", path));
  }
  std::string bytes = data.substr(offset, size);
  if (runtime::sha256_hex(bytes) != b.at("sha256").get<std::string>()) {
    throw UserError(fmt::format("{}: damaged (a blob's SHA-256 does not match the manifest)", path));
  }
  return bytes;
}

}  // namespace

void write_package(const std::string& path, const Package& p) {
  std::string data;
  json targets = json::array();
  for (const PackageTarget& t : p.targets) {
    json objects = json::array();
    for (const PackageObject& o : t.objects) {
      json entry = {{"source_sha256", o.source_sha256}, {"object", blob(data, o.bytes)}};
      if (auto ptx = t.ptx.find(o.source_sha256); ptx != t.ptx.end()) entry["ptx"] = blob(data, ptx->second);
      objects.push_back(std::move(entry));
    }
    targets.push_back({{"arch", t.arch}, {"features", t.features}, {"built_on", t.built_on}, {"objects", objects}, {"rejected", t.rejected}});
  }
  json sources = json::array();
  for (const std::string& s : p.sources) sources.push_back(blob(data, s));
  const json manifest = {{"format", p.format},       {"stitch", p.stitch_version}, {"backend", p.backend},
                         {"planner", p.planner},     {"graph", p.graph_text},      {"plan", p.plan_text},
                         {"settings", p.settings},   {"targets", targets},         {"sources", sources}};
  const std::string text = manifest.dump(1);
  const std::string tmp = fmt::format("{}.tmp-{}", path, getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out << kMagic << p.format << "\nmanifest " << text.size() << "\n" << text << data;
    if (!out.flush()) throw UserError(fmt::format("{}: cannot write the package", path));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw UserError(fmt::format("{}: cannot write the package: {}", path, ec.message()));
  }
}

bool is_package_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(kMagic.size(), '\0');
  return in.read(head.data(), static_cast<std::streamsize>(head.size())) && head == kMagic;
}

Package read_package(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(fmt::format("{}: cannot be read", path));
  std::stringstream whole;
  whole << in.rdbuf();
  const std::string file = whole.str();
  if (file.compare(0, kMagic.size(), kMagic) != 0) throw UserError(fmt::format("{}: not a Stitch package", path));
  size_t pos = kMagic.size();
  const size_t line_end = file.find('\n', pos);
  const std::string version = file.substr(pos, line_end == std::string::npos ? 0 : line_end - pos);
  if (version != std::to_string(kPackageFormat)) {
    throw UserError(fmt::format("{}: package format {}, but this Stitch reads format {} only; build the package "
                                "again with this Stitch (`stitch package`)",
                                path, version, kPackageFormat));
  }
  pos = line_end + 1;
  const size_t size_end = file.find('\n', pos);
  size_t manifest_size = 0;
  if (size_end == std::string::npos || file.compare(pos, 9, "manifest ") != 0 ||
      std::sscanf(file.c_str() + pos + 9, "%zu", &manifest_size) != 1 || manifest_size > file.size() - size_end - 1) {
    throw UserError(fmt::format("{}: truncated or damaged (no complete manifest)", path));
  }
  const std::string data = file.substr(size_end + 1 + manifest_size);
  Package p;
  try {
    const json m = json::parse(file.substr(size_end + 1, manifest_size));
    p.format = m.at("format").get<int>();
    p.stitch_version = m.at("stitch").get<std::string>();
    p.backend = m.at("backend").get<std::string>();
    p.planner = m.at("planner").get<std::string>();
    p.graph_text = m.at("graph").get<std::string>();
    p.plan_text = m.at("plan").get<std::string>();
    p.settings = m.at("settings").get<std::map<std::string, int64_t>>();
    for (const json& t : m.at("targets")) {
      PackageTarget target;
      target.arch = t.at("arch").get<std::string>();
      target.features = t.at("features").get<std::vector<std::string>>();
      target.built_on = t.at("built_on").get<std::string>();
      target.rejected = t.at("rejected").get<std::vector<std::string>>();
      for (const json& o : t.at("objects")) {
        const std::string sha = o.at("source_sha256").get<std::string>();
        target.objects.push_back({sha, read_blob(o.at("object"), data, path)});
        if (o.contains("ptx")) target.ptx[sha] = read_blob(o.at("ptx"), data, path);
      }
      p.targets.push_back(std::move(target));
    }
    for (const json& s : m.at("sources")) p.sources.push_back(read_blob(s, data, path));
  } catch (const json::exception& e) {
    throw UserError(fmt::format("{}: damaged manifest ({})", path, e.what()));
  }
  return p;
}

}  // namespace stitch::package
