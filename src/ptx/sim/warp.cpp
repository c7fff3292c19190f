#include "ptx/sim/warp.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace stitch::ptx::sim {

// ---- Exec: what handlers call ----

std::string Exec::thread_name(unsigned lane) const {
  auto sp = [&](uint32_t r) { return warp.special[size_t{r} * kWarpSize + lane]; };
  return fmt::format("thread ({},{},{}) of block ({},{},{})", sp(kTidX), sp(kTidY), sp(kTidZ), cta.id[0], cta.id[1],
                     cta.id[2]);
}

void Exec::fail(unsigned lane, const std::string& message) const {
  const InstInfo& info = function->info[pc];
  throw UserError(fmt::format("{} in {}: {}", info.text, thread_name(lane), message), info.loc);
}

Exec::Lanes Exec::computed(const DOperand& o, int slot) {
  uint64_t v = 0;
  switch (o.kind) {
    case OperandKind::LocalAddr: v = frame->local_base + o.imm; break;
    case OperandKind::ParamAddr: v = frame->param_base + o.imm; break;
    case OperandKind::Clock: v = launch.warp_instructions; break;
    case OperandKind::Pred: {
      const uint32_t m = pred(o);
      for (int l = 0; l < kWarpSize; ++l) scratch[slot][l] = (m >> l) & 1;
      return {scratch[slot].data(), 1};
    }
    default: break;
  }
  scratch[slot][0] = v;
  return {scratch[slot].data(), 0};
}

namespace {

const char* space_name(Space s) {
  switch (s) {
    case Space::Generic: return "generic";
    case Space::Global: return "global";
    case Space::Shared: return "shared";
    case Space::Local: return "local";
    case Space::KernelParam:
    case Space::FrameParam: return "param";
    case Space::Const: return "const";
  }
  return "?";
}

}  // namespace

std::byte* Exec::resolve(Space space, uint64_t addr, uint32_t size, bool write, unsigned lane, bool atomic) {
  const uint64_t written = addr;
  if (space == Space::Generic) {
    if (addr - kSharedWindow < kWindowSize) {
      space = Space::Shared;
      addr -= kSharedWindow;
    } else if (addr - kLocalWindow < kWindowSize) {
      space = Space::Local;
      addr -= kLocalWindow;
    } else {
      space = Space::Global;
    }
  }
  const char* what = write ? (atomic ? "atomic" : "store") : "load";
  if (size > 1 && addr % size != 0) {
    fail(lane, fmt::format("misaligned {} {} of {} bytes at address 0x{:x}", space_name(space), what, size, written));
  }
  std::byte* p = nullptr;
  switch (space) {
    case Space::Global:
    case Space::Const:
      p = launch.global->find(addr, size, write);
      if (p == nullptr) {
        fail(lane, fmt::format("out-of-bounds {} {} of {} bytes at address 0x{:x} ({})", space_name(space), what, size,
                               addr, launch.global->describe(addr, size, write)));
      }
      return p;
    case Space::Shared: {
      if (addr >= launch.shared_bytes || launch.shared_bytes - addr < size) {
        fail(lane, fmt::format("out-of-bounds shared {} of {} bytes at shared address 0x{:x} (the CTA has {} bytes)",
                               what, size, addr, launch.shared_bytes));
      }
      if (launch.detect_races && !atomic) {
        const uint16_t me = static_cast<uint16_t>(warp.index);
        for (uint32_t i = 0; i < size; ++i) {
          SharedShadow::Byte& b = launch.shadow.bytes[addr + i];
          const bool written_here = b.write_interval == cta.interval && b.writer != me;
          const bool read_here = write && b.read_interval == cta.interval && b.reader != me;
          if (written_here || read_here) {
            const std::string other = written_here ? fmt::format("written by warp {}", b.writer)
                                      : b.reader == SharedShadow::kSeveral ? std::string("read by other warps")
                                                                           : fmt::format("read by warp {}", b.reader);
            fail(lane, fmt::format("data race on shared address 0x{:x}: {} here by warp {}, and {} with no bar.sync "
                                   "in between",
                                   addr + i, write ? "written" : "read", warp.index, other));
          }
          if (write) {
            b.write_interval = cta.interval;
            b.writer = me;
          } else if (b.read_interval != cta.interval) {
            b.read_interval = cta.interval;
            b.reader = me;
          } else if (b.reader != me) {
            b.reader = SharedShadow::kSeveral;
          }
        }
      }
      return cta.shared.data() + addr;
    }
    case Space::Local:
      p = warp.local.find(lane, addr, size);
      if (p == nullptr) {
        fail(lane, fmt::format("out-of-bounds local {} of {} bytes at local address 0x{:x} (the thread has {} bytes)",
                               what, size, addr, warp.local.top()));
      }
      return p;
    case Space::KernelParam:
      if (addr >= launch.params.size() || launch.params.size() - addr < size) {
        fail(lane, fmt::format("out-of-bounds kernel parameter load of {} bytes at offset {} (the parameters take {} "
                               "bytes)",
                               size, addr, launch.params.size()));
      }
      return launch.params.data() + addr;
    case Space::FrameParam:
      p = warp.params.find(lane, addr, size);
      if (p == nullptr) fail(lane, fmt::format("out-of-bounds param {} of {} bytes at 0x{:x}", what, size, addr));
      return p;
    case Space::Generic: break;
  }
  STITCH_ASSERT(false, "unresolved state space");
  return nullptr;
}

namespace {

// ---- warps ----

void init_warp(const Launch& L, Warp& w, uint32_t index, uint32_t threads, const Cta& cta) {
  const DFunction& kernel = L.program->functions[L.kernel];
  w.index = index;
  const uint32_t first = index * kWarpSize;
  const uint32_t n = std::min<uint32_t>(kWarpSize, threads - first);
  w.live = n == kWarpSize ? kFullMask : (1u << n) - 1;
  w.special.assign(size_t{kNumSpecial} * kWarpSize, 0);
  auto set = [&](uint32_t r, unsigned lane, uint64_t v) { w.special[size_t{r} * kWarpSize + lane] = v; };
  const uint32_t warps = (threads + kWarpSize - 1) / kWarpSize;
  for (unsigned lane = 0; lane < kWarpSize; ++lane) {
    const uint32_t linear = first + lane;
    set(kTidX, lane, linear % L.block[0]);
    set(kTidY, lane, (linear / L.block[0]) % L.block[1]);
    set(kTidZ, lane, linear / (L.block[0] * L.block[1]));
    for (int k = 0; k < 3; ++k) {
      set(kNtidX + k, lane, L.block[k]);
      set(kCtaidX + k, lane, cta.id[k]);
      set(kNctaidX + k, lane, L.grid[k]);
    }
    set(kLaneId, lane, lane);
    set(kWarpId, lane, index);
    set(kNwarpId, lane, warps);
    set(kNsmId, lane, 1);
    set(kLanemaskEq, lane, 1u << lane);
    set(kLanemaskLe, lane, lane == 31 ? kFullMask : (2u << lane) - 1);
    set(kLanemaskLt, lane, (1u << lane) - 1);
    set(kLanemaskGe, lane, ~((1u << lane) - 1));
    set(kLanemaskGt, lane, lane == 31 ? 0 : ~((2u << lane) - 1));
    set(kDynamicSmemSize, lane, L.dynamic_shared);
    set(kTotalSmemSize, lane, L.shared_bytes);
  }
  w.regs.assign(size_t{kernel.num_regs} * kWarpSize, 0);
  w.preds.assign(kernel.num_preds, 0);
  w.local.pop(0);
  w.params.pop(0);
  Frame f;
  f.function = L.kernel;
  f.local_base = w.local.push(kernel.local_bytes);
  // The kernel's own .param variables (argument blocks of its calls).
  f.param_base = w.params.push(kernel.param_bytes);
  w.frames.assign(1, f);
  w.stack.assign(1, StackEntry{0, kNoReconvergence, w.live});
  w.waiting = false;
  w.arrived = 0;
  w.done = false;
}

class WarpRunner {
 public:
  WarpRunner(Launch& L, Cta& cta, Warp& w) : L_(L), w_(w), x_{L, cta, w, L.global} { bind(); }

  // Runs until the warp waits at a barrier or has finished.
  void run() {
    const uint64_t limit = L_.max_warp_instructions;
    for (;;) {
      if (w_.stack.size() == w_.frames.back().stack_base) {
        if (w_.frames.size() == 1) {
          w_.done = true;
          return;
        }
        finish_call();
        continue;
      }
      StackEntry& top = w_.stack.back();
      if (top.parked && top.mask != 0) {
        x_.fail(static_cast<unsigned>(__builtin_ctz(top.mask)),
                fmt::format("barrier.sync: lanes 0x{:08x} of warp {} wait at the barrier while lanes 0x{:08x} went on "
                            "to reconverge without arriving; the interpreter's reconvergence model cannot continue",
                            top.mask, w_.index, w_.live & ~top.mask));
      }
      if (top.mask == 0 || top.pc == top.rpc) {
        w_.stack.pop_back();
        continue;
      }
      const uint32_t pc = top.pc;
      STITCH_ASSERT(pc < x_.function->code.size(), "warp ran past the end of its function");
      const DInst& in = code_[pc];
      uint32_t mask = top.mask;
      if (in.guard.kind != OperandKind::None) mask &= x_.pred(in.guard);
      x_.pc = pc;
      L_.thread_instructions += static_cast<uint64_t>(__builtin_popcount(mask));
      if (L_.pc_counts != nullptr) ++(*L_.pc_counts)[w_.frames.back().function][pc];
      if (++L_.warp_instructions > limit && limit != 0) {
        x_.fail(static_cast<unsigned>(__builtin_ctz(top.mask)),
                fmt::format("the launch ran more than {} warp instructions (an endless loop?)", limit));
      }
      if (L_.observer != nullptr) observe(in, pc, mask);
      switch (in.control) {
        case Control::Plain:
          if (mask != 0) in.fn(x_, in, mask);
          top.pc = pc + 1;
          break;
        case Control::Branch: branch(in, pc, mask); break;
        case Control::Return: leave(mask, false, pc); break;
        case Control::Exit: leave(mask, true, pc); break;
        case Control::Trap:
          if (mask != 0) x_.fail(static_cast<unsigned>(__builtin_ctz(mask)), "trap executed");
          top.pc = pc + 1;
          break;
        case Control::Call: call(in, pc, mask); break;
        case Control::Barrier:
          if (mask == 0) {
            top.pc = pc + 1;
            break;
          }
          if (barrier(in, pc, mask)) return;
          break;
      }
    }
  }

 private:
  // Tells the observer about the instruction before it runs, with its
  // addresses resolved as the memory handlers resolve them.
  void observe(const DInst& in, uint32_t pc, uint32_t mask) {
    const Frame& frame = w_.frames.back();
    const uint8_t kind = L_.access_kind[frame.function][pc];
    if (kind == kNoAccess || mask == 0 ||
        !(in.space == Space::Global || in.space == Space::Shared || in.space == Space::Local ||
          in.space == Space::Generic)) {
      L_.observer->issue(w_.index, *x_.function, pc, in, frame.reg_base, mask, nullptr);
      return;
    }
    MemoryAccess access;
    access.write = kind == kStoreAccess;
    access.atomic = kind == kAtomicAccess;
    access.bytes = uint32_t{in.size} * std::max<uint32_t>(in.width, 1);
    const auto base = x_.src(in.ops[0], 0);
    const uint64_t offset = in.ops[0].kind == OperandKind::Reg ? in.ops[0].imm : 0;
    Space space = in.space;
    for_lanes(mask, [&](unsigned l) {
      uint64_t a = base[l] + offset;
      if (in.space == Space::Generic) {
        if (a >= kLocalWindow) {
          space = Space::Local;
          a -= kLocalWindow;
        } else if (a >= kSharedWindow) {
          space = Space::Shared;
          a -= kSharedWindow;
        } else {
          space = Space::Global;
        }
      }
      access.address[l] = a;
    });
    access.space = space == Space::Generic ? Space::Global : space;
    L_.observer->issue(w_.index, *x_.function, pc, in, frame.reg_base, mask, &access);
  }

  void bind() {
    const Frame& f = w_.frames.back();
    x_.frame = &f;
    x_.function = &L_.program->functions[f.function];
    x_.regs = w_.regs.data() + size_t{f.reg_base} * kWarpSize;
    x_.preds = w_.preds.data() + f.pred_base;
    code_ = x_.function->code.data();
  }

  void branch(const DInst& in, uint32_t pc, uint32_t taken) {
    StackEntry& top = w_.stack.back();
    const uint32_t not_taken = top.mask & ~taken;
    if (not_taken == 0) {
      top.pc = in.target;
    } else if (taken == 0) {
      top.pc = pc + 1;
    } else {
      const uint32_t r = in.reconverge;
      // The paths rejoin at the post-dominator r: the entry below waits there
      // with all the lanes (or, when it already waits at r, is reused).
      if (top.rpc == r) {
        top.pc = pc + 1;
        top.mask = not_taken;
      } else {
        top.pc = r;
        w_.stack.push_back({pc + 1, r, not_taken});
      }
      w_.stack.push_back({in.target, r, taken});
    }
  }

  // ret (exit == false) leaves the current function; exit ends the threads.
  void leave(uint32_t mask, bool exit, uint32_t pc) {
    StackEntry& top = w_.stack.back();
    if (mask == 0) {
      top.pc = pc + 1;
      return;
    }
    const size_t from = exit ? 0 : w_.frames.back().stack_base;
    for (size_t i = from; i < w_.stack.size(); ++i) w_.stack[i].mask &= ~mask;
    if (exit) w_.live &= ~mask;
    // Lanes that stay (a guarded ret) go on; emptied entries are popped by run().
    if (w_.stack.back().mask != 0) w_.stack.back().pc = pc + 1;
  }

  void call(const DInst& in, uint32_t pc, uint32_t mask) {
    StackEntry& top = w_.stack.back();
    top.pc = pc + 1;
    if (mask == 0) return;
    const DFunction& caller = *x_.function;
    const CallSite& site = caller.calls[in.target];
    const DFunction& callee = L_.program->functions[site.callee];
    if (site.args.size() != callee.params.size() || site.rets.size() != callee.returns.size()) {
      x_.fail(static_cast<unsigned>(__builtin_ctz(mask)),
              fmt::format("{} takes {} parameters and {} results, the call passes {} and {}", callee.name,
                          callee.params.size(), callee.returns.size(), site.args.size(), site.rets.size()));
    }
    const Frame caller_frame = w_.frames.back();
    Frame f;
    f.function = site.callee;
    f.reg_base = static_cast<uint32_t>(w_.regs.size() / kWarpSize);
    f.pred_base = static_cast<uint32_t>(w_.preds.size());
    f.local_base = w_.local.push(callee.local_bytes);
    f.param_base = w_.params.push(callee.param_bytes);
    f.stack_base = static_cast<uint32_t>(w_.stack.size());
    f.call_site = in.target;
    f.call_mask = mask;
    w_.regs.resize(w_.regs.size() + size_t{callee.num_regs} * kWarpSize, 0);
    w_.preds.resize(w_.preds.size() + callee.num_preds, 0);
    for (size_t k = 0; k < site.args.size(); ++k) {
      const ParamSlot& slot = callee.params[k];
      for_lanes(mask, [&](unsigned l) {
        std::byte* from = w_.params.find(l, caller_frame.param_base + site.args[k].imm, slot.size);
        std::byte* to = w_.params.find(l, f.param_base + slot.offset, slot.size);
        if (from == nullptr) x_.fail(l, "call argument outside the caller's .param variables");
        std::memcpy(to, from, slot.size);
      });
    }
    w_.frames.push_back(f);
    w_.stack.push_back({0, kNoReconvergence, mask});
    bind();
  }

  void finish_call() {
    const Frame f = w_.frames.back();
    const DFunction& callee = L_.program->functions[f.function];
    const Frame& caller_frame = w_.frames[w_.frames.size() - 2];
    const CallSite& site = L_.program->functions[caller_frame.function].calls[f.call_site];
    for (size_t k = 0; k < site.rets.size(); ++k) {
      const ParamSlot& slot = callee.returns[k];
      for_lanes(f.call_mask & w_.live, [&](unsigned l) {
        std::byte* from = w_.params.find(l, f.param_base + slot.offset, slot.size);
        std::byte* to = w_.params.find(l, caller_frame.param_base + site.rets[k].imm, slot.size);
        STITCH_ASSERT(from != nullptr && to != nullptr, "return value outside the .param frames");
        std::memcpy(to, from, slot.size);
      });
    }
    w_.regs.resize(size_t{f.reg_base} * kWarpSize);
    w_.preds.resize(f.pred_base);
    w_.params.pop(f.param_base);
    w_.local.pop(f.local_base);
    w_.frames.pop_back();
    bind();
  }

  // True when the warp now waits at the barrier.
  bool barrier(const DInst& in, uint32_t pc, uint32_t mask) {
    StackEntry& top = w_.stack.back();
    const unsigned first = static_cast<unsigned>(__builtin_ctz(mask));
    if (mask != w_.live && (in.flags & kFlagAligned)) {
      x_.fail(first, fmt::format("bar.sync reached divergently: lanes 0x{:08x} of warp {} are here, lanes 0x{:08x} "
                                 "are on another path (bar.sync is .aligned; barrier.sync is not)",
                                 mask, w_.index, w_.live & ~mask));
    }
    const auto id = x_.src(in.ops[0], 0);
    const uint32_t barrier = static_cast<uint32_t>(id[first]);
    if (barrier > 15) x_.fail(first, fmt::format("barrier {} does not exist (0..15)", barrier));
    if (in.ops[1].kind != OperandKind::None) {
      const uint32_t count = static_cast<uint32_t>(x_.src(in.ops[1], 1)[first]);
      const uint32_t threads = L_.block[0] * L_.block[1] * L_.block[2];
      if (count != (threads + kWarpSize - 1) / kWarpSize * kWarpSize) {
        x_.fail(first, fmt::format("bar.sync with a thread count ({}) other than the whole CTA is not supported by the "
                                   "PTX interpreter",
                                   count));
      }
    }
    top.pc = pc + 1;
    if (w_.arrived != 0 && w_.barrier != barrier) {
      x_.fail(first, fmt::format("lanes 0x{:08x} of warp {} wait at barrier {} while lanes 0x{:08x} arrive at barrier "
                                 "{}: a deadlock",
                                 w_.arrived, w_.index, w_.barrier, mask, barrier));
    }
    w_.barrier = barrier;
    if ((w_.arrived | mask) != w_.live) {
      // barrier.sync reached by part of the warp (PTX ISA: a thread waits for
      // the non-exited threads of its warp): these lanes wait while their
      // sibling path, the entry below with the same reconvergence point, runs.
      w_.arrived |= mask;
      top.parked = true;
      const size_t n = w_.stack.size();
      if (n < 2 || n - 2 < w_.frames.back().stack_base || w_.stack[n - 2].rpc != top.rpc || w_.stack[n - 2].parked) {
        x_.fail(first, fmt::format("barrier.sync: lanes 0x{:08x} of warp {} arrive while lanes 0x{:08x} are not on a "
                                   "sibling path the interpreter can run first",
                                   mask, w_.index, w_.live & ~w_.arrived));
      }
      std::swap(w_.stack[n - 1], w_.stack[n - 2]);
      return false;
    }
    // The whole warp has arrived (perhaps in parts): it waits for the CTA.
    w_.arrived = 0;
    for (StackEntry& e : w_.stack) e.parked = false;
    w_.waiting = true;
    return true;
  }

  Launch& L_;
  Warp& w_;
  Exec x_;
  const DInst* code_ = nullptr;
};

// The location and thread of the barrier a waiting warp passed, for messages.
[[noreturn]] void fail_at_barrier(const Launch& L, const Cta& cta, const Warp& w, const std::string& message) {
  const Frame& f = w.frames.back();
  const DFunction& fn = L.program->functions[f.function];
  const uint32_t pc = w.stack.back().pc - 1;
  const unsigned lane = static_cast<unsigned>(__builtin_ctz(w.live));
  auto sp = [&](uint32_t r) { return w.special[size_t{r} * kWarpSize + lane]; };
  throw UserError(fmt::format("{} in thread ({},{},{}) of block ({},{},{}): {}", fn.info[pc].text, sp(kTidX), sp(kTidY),
                              sp(kTidZ), cta.id[0], cta.id[1], cta.id[2], message),
                  fn.info[pc].loc);
}

void run_cta(Launch& L, Cta& cta) {
  const uint32_t threads = L.block[0] * L.block[1] * L.block[2];
  const uint32_t warps = (threads + kWarpSize - 1) / kWarpSize;
  cta.warps.resize(warps);
  for (uint32_t i = 0; i < warps; ++i) init_warp(L, cta.warps[i], i, threads, cta);
  // Shared memory starts with unspecified contents; zeros here.
  std::fill(cta.shared.begin(), cta.shared.end(), std::byte{0});
  cta.interval = L.next_interval++;
  for (;;) {
    for (Warp& w : cta.warps) {
      if (!w.done && !w.waiting) WarpRunner(L, cta, w).run();
    }
    const Warp* waiting = nullptr;
    uint32_t arrived = 0;
    for (const Warp& w : cta.warps) {
      if (!w.waiting) continue;
      if (waiting == nullptr) waiting = &w;
      if (w.barrier != waiting->barrier) {
        fail_at_barrier(L, cta, w,
                        fmt::format("warp {} waits at barrier {} while warp {} waits at barrier {}: a deadlock",
                                    w.index, w.barrier, waiting->index, waiting->barrier));
      }
      arrived += static_cast<uint32_t>(__builtin_popcount(w.live));
    }
    if (waiting == nullptr) return;
    if (arrived != threads) {
      fail_at_barrier(L, cta, *waiting,
                      fmt::format("bar.sync reached by only {} of the CTA's {} threads; the others have exited: a "
                                  "deadlock on hardware",
                                  arrived, threads));
    }
    for (Warp& w : cta.warps) w.waiting = false;
    cta.interval = L.next_interval++;
  }
}

void run_one_cta(Launch& L, Cta& cta, const std::array<uint32_t, 3>& id) {
  cta.id = id;
  if (L.observer != nullptr) L.observer->begin_cta(id, (L.block[0] * L.block[1] * L.block[2] + kWarpSize - 1) / kWarpSize);
  run_cta(L, cta);
  if (L.observer != nullptr) L.observer->end_cta();
}

}  // namespace

std::vector<std::vector<uint8_t>> access_kinds(const Program& program) {
  std::vector<std::vector<uint8_t>> kinds;
  for (const DFunction& f : program.functions) {
    std::vector<uint8_t>& k = kinds.emplace_back(f.code.size(), kNoAccess);
    for (size_t pc = 0; pc < f.info.size() && pc < f.code.size(); ++pc) {
      const std::string& t = f.info[pc].text;
      if (t.rfind("ld.", 0) == 0 || t.rfind("ldu.", 0) == 0) {
        k[pc] = kLoadAccess;
      } else if (t.rfind("st.", 0) == 0) {
        k[pc] = kStoreAccess;
      } else if (t.rfind("atom.", 0) == 0 || t.rfind("red.", 0) == 0) {
        k[pc] = kAtomicAccess;
      }
    }
  }
  return kinds;
}

void run_grid(Launch& L) {
  Cta cta;
  cta.shared.resize(L.shared_bytes);
  if (L.detect_races) L.shadow.bytes.assign(L.shared_bytes, SharedShadow::Byte{});
  if (L.observer != nullptr && L.access_kind.empty()) L.access_kind = access_kinds(*L.program);
  if (L.only_ctas != nullptr && !L.only_ctas->empty()) {
    const uint64_t gx = L.grid[0], gxy = uint64_t{L.grid[0]} * L.grid[1];
    for (uint64_t linear : *L.only_ctas) {
      STITCH_ASSERT(linear < gxy * L.grid[2], "a sampled CTA lies outside the grid");
      run_one_cta(L, cta, {static_cast<uint32_t>(linear % gx), static_cast<uint32_t>(linear % gxy / gx),
                           static_cast<uint32_t>(linear / gxy)});
    }
    return;
  }
  for (uint32_t z = 0; z < L.grid[2]; ++z) {
    for (uint32_t y = 0; y < L.grid[1]; ++y) {
      for (uint32_t x = 0; x < L.grid[0]; ++x) run_one_cta(L, cta, {x, y, z});
    }
  }
}

}  // namespace stitch::ptx::sim
