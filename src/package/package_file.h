// The package file (docs/packages.md): a graph, its plan, and its compiled
// kernels for each listed target, in one versioned file that runs with no
// compiler present. This is the container only: what goes in is
// package_build.h's, what comes out package_load.h's.
//
// Layout: the line "STITCHPKG 1", a line "manifest N", N bytes of JSON (the
// manifest), then the blobs the manifest lists by offset (from the first byte
// after the manifest), size and SHA-256. Every blob is checked when read, so a
// truncated or altered file is refused, never loaded.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace stitch::package {

// The format this Stitch writes and the only one it reads.
inline constexpr int kPackageFormat = 1;

// One compiled translation unit: the SHA-256 of the source the pipeline
// generates, and the object (a shared object; a cubin; PTX) built from it.
struct PackageObject {
  std::string source_sha256;
  std::string bytes;
};

// One target: a CPU ISA level ("x86-64-v3", "native") or a GPU architecture
// ("sm_90"), what it needs of the machine, and its objects.
struct PackageTarget {
  std::string arch;
  // CPU: the features the host must have (cpu_isa.h); for "native" the
  // builder's CPU's, as -march=native resolved them there.
  std::vector<std::string> features;
  std::string built_on;  // the builder's CPU (model name), for messages
  std::vector<PackageObject> objects;
  // The SHA-256 of each source the compiler rejected at the build: a loader
  // meets it as a failed compile and takes the same fallback.
  std::vector<std::string> rejected;
  // GPU: the PTX of each object beside the cubin, by source SHA-256.
  std::map<std::string, std::string> ptx;
};

struct Package {
  int format = kPackageFormat;
  std::string stitch_version;
  std::string backend;  // "cpu" or "cuda"
  std::string planner;
  std::string graph_text;  // the graph as given, in .stitch text
  std::string plan_text;   // the plan, as `stitch plan` prints it (to read, not to run)
  // What decides the generated code besides the graph: the resolved planning
  // options and the row-schedule target of the machine that built it, so
  // that every loader generates the same sources (name -> integer).
  std::map<std::string, int64_t> settings;
  std::vector<PackageTarget> targets;
  std::vector<std::string> sources;  // the generated sources, for reading (`stitch package --show`)
};

// Writes `p` to `path` (through a temporary file renamed into place).
// Throws UserError when the file cannot be written.
void write_package(const std::string& path, const Package& p);

// Reads `path`. Throws UserError naming the file and what is wrong: not a
// package, another format version (naming both), a manifest that does not
// parse, a blob past the end or whose SHA-256 does not match.
Package read_package(const std::string& path);

// Whether the file at `path` starts as a package does (for `stitch run`).
bool is_package_file(const std::string& path);

}  // namespace stitch::package
