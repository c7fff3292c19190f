// Instruction latencies per architecture (docs/goptx.md, Latency tables).
//
// Cycles from issue until a dependent instruction can read the result. Each
// figure names its source; "estimate" marks a figure no microbenchmark source
// at hand gave, with the reasoning. The scheduler uses the figures to order
// work, not to predict time, so what matters most is their ratios: a global
// load costs about a hundred ALU operations, a shared load about seven.
#include "ptx/weave/latency.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "ptx/weave/effects.h"

namespace stitch::ptx {
namespace {

struct LatencyTable {
  int integer_alu;     // add/sub/logic/shift/min/max/abs/neg/cvta and 32-bit mul/mad
  int integer_wide;    // 64-bit mul/mad, mul.hi, popc/clz/brev/bfind
  int integer_div;     // div/rem on integers: a multi-instruction sequence
  int fp32;            // add/sub/mul/fma/min/max .f32
  int fp64;            // add/sub/mul/fma .f64
  int fp16;            // .f16/.bf16 and the x2 forms
  int conversion;      // cvt, cvt.rni ...
  int sfu;             // ex2/lg2/rcp/rsqrt/sin/cos/tanh/sqrt .approx
  int div_sqrt_f32;    // div.rn/rcp.rn/sqrt.rn .f32: multi-instruction sequences
  int div_sqrt_f64;    // the same for .f64
  int shared_load;     // ld.shared
  int global_load;     // ld.global, ld generic, tex: a representative L1-miss figure
  int local_load;      // ld.local
  int const_load;      // ld.const, ld.param
  int store;           // st, red: no result; only issue order matters
  int shared_atomic;   // atom.shared
  int global_atomic;   // atom.global / generic
  int shuffle;         // shfl, vote, match, redux, activemask
  int compare;         // setp, selp, set, slct
  int move;            // mov between registers or of an immediate
  int special_read;    // mov from %tid, %ctaid, %clock ... (S2R)
  int other;           // anything else: branches, barriers, fences
};

// Sources (docs/goptx.md, Latency tables):
//  [AS80] / [AS90]: the Accel-Sim tested configurations SM80_A100 and
//    SM90_H100 (configs/tested-cfgs/*/gpgpusim.config in
//    accel-sim/gpgpu-sim_distribution), whose latencies Accel-Sim's
//    microbenchmark tuner measured on the cards (Khairy et al., ISCA 2020).
//  [AB22]: Abdelkhalik et al. 2022, "Demystifying the Nvidia Ampere
//    Architecture through Microbenchmarking and Instruction-level Analysis".

// Ampere (sm_80, A100).
constexpr LatencyTable kSm80 = {
    // [AS80] -ptx_opcode_latency_int ADD/MAX/MUL/MAD: 4.
    .integer_alu = 4,
    // Estimate: 64-bit products and mul.hi take two dependent IMAD-class issues.
    .integer_wide = 8,
    // [AS80] -ptx_opcode_latency_int DIV: 21 (integer div/rem).
    .integer_div = 21,
    // [AS80] -ptx_opcode_latency_fp: 4; [AB22]: a dependent add.f32 takes 4 cycles.
    .fp32 = 4,
    // [AS80] -ptx_opcode_latency_dp ADD/MUL/MAD: 6.
    .fp64 = 6,
    // Estimate: HADD2/HFMA2 share the FMA pipe; no source at hand gives a
    // separate figure, so slightly above fp32.
    .fp16 = 6,
    // Estimate: F2F/F2I/I2F go to the conversion unit, between ALU and SFU.
    .conversion = 6,
    // [AS80] -ptx_opcode_latency_sfu: 23.
    .sfu = 23,
    // [AS80] -ptx_opcode_latency_fp DIV: 39 (IEEE f32 div/sqrt/rcp sequences).
    .div_sqrt_f32 = 39,
    // [AS80] -ptx_opcode_latency_dp DIV: 330.
    .div_sqrt_f64 = 330,
    // [AS80] -gpgpu_smem_latency: 28.
    .shared_load = 28,
    // [AS80] an access that misses L1 and L2: -gpgpu_l1_latency 34 +
    // -gpgpu_l2_rop_latency 200 + -dram_latency 190, without queueing.
    .global_load = 424,
    // Estimate: local memory lives in device memory behind the same caches as global.
    .local_load = 424,
    // A constant-cache hit runs at register speed: 4 cycles on Turing
    // (github.com/sjfeng1999/gpu-arch-microbenchmark, "Constant L1 Latency");
    // ptxas folds most ld.param/ld.const into c[] operands.
    .const_load = 4,
    // Estimate: a store produces nothing a later instruction waits for.
    .store = 4,
    // Estimate: read-modify-write in the shared memory unit, twice a shared load.
    .shared_atomic = 56,
    // Estimate: an atomic with a result is a round trip to L2 and beyond; the global figure.
    .global_atomic = 424,
    // Estimate: since Volta SHFL goes through the shared-memory crossbar (the
    // MIO path), so it is given the shared load figure.
    .shuffle = 28,
    // Estimate: ISETP/FSETP/SEL are ALU operations.
    .compare = 4,
    // Estimate: ptxas folds most register moves away; what remains is a MOV.
    .move = 2,
    // Estimate: S2R returns through the variable-latency path, like the SFU.
    .special_read = 23,
    .other = 4,
};

// Hopper (sm_90, H100).
constexpr LatencyTable kSm90 = {
    .integer_alu = 4,    // [AS90] -ptx_opcode_latency_int: 4
    .integer_wide = 8,   // estimate, as for sm_80
    .integer_div = 21,   // [AS90] -ptx_opcode_latency_int DIV: 21
    .fp32 = 4,           // [AS90] -ptx_opcode_latency_fp: 4
    .fp64 = 8,           // [AS90] -ptx_opcode_latency_dp: 8
    .fp16 = 6,           // estimate, as for sm_80
    .conversion = 6,     // estimate, as for sm_80
    .sfu = 23,           // [AS90] -ptx_opcode_latency_sfu: 23
    .div_sqrt_f32 = 39,  // [AS90] -ptx_opcode_latency_fp DIV: 39
    .div_sqrt_f64 = 330,  // [AS90] -ptx_opcode_latency_dp DIV: 330
    .shared_load = 29,  // [AS90] -gpgpu_smem_latency: 29
    // [AS90] -gpgpu_l1_latency 41 + -gpgpu_l2_rop_latency 237 + -dram_latency 194.
    .global_load = 472,
    .local_load = 472,     // estimate: as global
    .const_load = 4,       // as for sm_80
    .store = 4,            // estimate
    .shared_atomic = 58,   // estimate: twice the shared load figure
    .global_atomic = 472,  // estimate: as global
    .shuffle = 29,         // estimate: the shared load figure, as for sm_80
    .compare = 4,          // estimate
    .move = 2,             // estimate
    .special_read = 23,    // estimate: as the SFU
    .other = 4,
};

bool has_any(const Instruction& in, std::initializer_list<const char*> modifiers) {
  for (const char* m : modifiers) {
    if (in.has_modifier(m)) return true;
  }
  return false;
}

bool is_f64(const Instruction& in) { return in.has_modifier("f64"); }
bool is_f32(const Instruction& in) { return in.has_modifier("f32"); }
bool is_half(const Instruction& in) { return has_any(in, {"f16", "f16x2", "bf16", "bf16x2"}); }
bool is_64bit_int(const Instruction& in) { return has_any(in, {"s64", "u64", "b64"}); }

bool reads_divergent_special(const Instruction& in) {
  for (const Operand& o : in.operands) {
    if (o.kind != Operand::Kind::Register || !is_special_register(o.name)) continue;
    // %ntid, %nctaid and the like live in the constant bank (an ordinary MOV).
    std::string_view n(o.name);
    if (n.substr(0, 2) != "%n" && n.substr(0, 7) != "%envreg") return true;
  }
  return false;
}

int arithmetic_latency(const Instruction& in, const LatencyTable& t) {
  const std::string& op = in.opcode;
  const bool approx = in.has_modifier("approx");
  if (op == "ex2" || op == "lg2" || op == "sin" || op == "cos" || op == "tanh" || op == "rsqrt") {
    return is_f64(in) ? t.div_sqrt_f64 : t.sfu;
  }
  if (op == "rcp" || op == "sqrt" || op == "div" || op == "rem") {
    // rcp.approx is one MUFU; div.approx/div.full/sqrt.approx add a dependent multiply (estimate).
    if (approx && op == "rcp" && !is_f64(in)) return t.sfu;
    if (approx || in.has_modifier("full")) return is_f64(in) ? t.div_sqrt_f64 : t.sfu + t.fp32;
    if (is_f64(in)) return t.div_sqrt_f64;
    if (is_f32(in)) return t.div_sqrt_f32;
    return t.integer_div;
  }
  if (op == "cvt") return t.conversion;
  if (op == "setp" || op == "selp" || op == "set" || op == "slct") return t.compare;
  if (op == "mov") return reads_divergent_special(in) ? t.special_read : t.move;
  if (is_f64(in)) return t.fp64;
  if (is_half(in)) return t.fp16;
  if (is_f32(in) && (op == "add" || op == "sub" || op == "mul" || op == "fma" || op == "mad" || op == "min" ||
                     op == "max" || op == "abs" || op == "neg" || op == "copysign" || op == "testp")) {
    return t.fp32;
  }
  if (op == "mul" || op == "mad") {
    if (in.has_modifier("hi") || in.has_modifier("wide") || is_64bit_int(in)) return t.integer_wide;
    return t.integer_alu;
  }
  if (op == "popc" || op == "clz" || op == "brev" || op == "bfind" || op == "fns") return t.integer_wide;
  if (op == "add" || op == "sub" || op == "and" || op == "or" || op == "xor" || op == "not" || op == "shl" ||
      op == "shr" || op == "shf" || op == "min" || op == "max" || op == "abs" || op == "neg" || op == "cvta" ||
      op == "bfe" || op == "bfi" || op == "prmt" || op == "lop3" || op == "cnot" || op == "addc" || op == "subc" ||
      op == "madc" || op == "sad" || op == "mul24" || op == "mad24" || op == "dp4a" || op == "dp2a") {
    // Estimate: a 64-bit add is a carry pair (IADD3 then IADD3.X).
    return is_64bit_int(in) && (op == "add" || op == "sub") ? 2 * t.integer_alu : t.integer_alu;
  }
  return t.other;
}

}  // namespace

int instruction_latency(const Instruction& in, WeaveArch arch) {
  const LatencyTable& t = arch == WeaveArch::Sm80 ? kSm80 : kSm90;
  const InstructionEffects e = effects_of(in);
  if (e.sync == SyncKind::Warp && in.opcode != "bar") return t.shuffle;
  switch (e.memory) {
    case MemoryEffect::Read:
      if (in.opcode == "prefetch" || in.opcode == "prefetchu") return t.store;
      if (e.space == "shared") return t.shared_load;
      if (e.space == "local") return t.local_load;
      if (e.space == "const" || e.space == "param") return t.const_load;
      return t.global_load;
    case MemoryEffect::Write:
      return t.store;
    case MemoryEffect::ReadWrite:
      return e.space == "shared" ? t.shared_atomic : t.global_atomic;
    case MemoryEffect::Fence:
      return t.other;
    case MemoryEffect::None:
      break;
  }
  // ld.param of a parameter: a constant-bank read.
  if (in.opcode == "ld" || in.opcode == "ldu") return t.const_load;
  return arithmetic_latency(in, t);
}

WeaveArch weave_arch_for_target(const std::vector<std::string>& target) {
  for (const std::string& t : target) {
    if (t.rfind("sm_", 0) != 0) continue;
    int number = 0;
    for (size_t i = 3; i < t.size() && std::isdigit(static_cast<unsigned char>(t[i])) != 0; ++i) {
      number = number * 10 + (t[i] - '0');
    }
    return number >= 80 && number <= 89 ? WeaveArch::Sm80 : WeaveArch::Sm90;
  }
  return WeaveArch::Sm90;
}

}  // namespace stitch::ptx
