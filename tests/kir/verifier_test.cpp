// One test per verifier rule (docs/kernel-ir.md, "Verifier rules"), each
// pinning the exact message, on a kernel that is valid apart from that fault.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>

#include "kir/kernel_builder.h"
#include "kir/printer.h"
#include "kir/verifier.h"
#include "stitch/error.h"

namespace stitch::kir {
namespace {

using Problems = std::vector<std::string>;
using ThreadBody = std::function<void(KernelBuilder&, const Expr& b, const Expr& t)>;
using DeclareFn = std::function<void(KernelBuilder&)>;

// x: f32[N, 256] read, y: f32[N, 256] write, z: f32[N] readwrite; shared s:
// f32[256] and partials: f32[8]; grid(N) of 256-thread blocks running `body`.
KernelBuilder base(const DeclareFn& extra = {}) {
  KernelBuilder kb("k");
  Expr n = kb.scalar_param("N");
  kb.buffer_param("x", DType::f32, {n, int_const(256)}, Access::Read);
  kb.buffer_param("y", DType::f32, {n, int_const(256)}, Access::Write);
  kb.buffer_param("z", DType::f32, {n}, Access::ReadWrite);
  kb.shared("s", DType::f32, 256);
  kb.shared("partials", DType::f32, 8);
  kb.launch(n, 256);
  if (extra) extra(kb);
  return kb;
}

Problems verify_thread_body(const ThreadBody& body) {
  KernelBuilder kb = base();
  kb.grid("b", var("N"), [&](const Expr& b) { kb.block("t", 256, [&](const Expr& t) { body(kb, b, t); }); });
  return verify_kernel(kb.finish_unverified());
}

Problems verify_grid_body(const std::function<void(KernelBuilder&, const Expr& b)>& body) {
  KernelBuilder kb = base();
  kb.grid("b", var("N"), [&](const Expr& b) { body(kb, b); });
  return verify_kernel(kb.finish_unverified());
}

Expr x_at(KernelBuilder& kb, const Expr& b, const Expr& t) { return kb.load("x", {b, t}); }
Expr eq(Expr a, Expr b) { return op(OpKind::Eq, {std::move(a), std::move(b)}); }

TEST(KernelVerifier, TheBaseKernelIsValid) {
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr& b, const Expr& t) {
              kb.store("y", {b, t}, x_at(kb, b, t));
            }),
            Problems{});
}

// Shared buffers in an arena: each at an aligned offset inside it.
TEST(KernelVerifier, SharedArenaOffsetsFitAndAlign) {
  auto verify_arena = [](int64_t arena, int64_t s_at, int64_t partials_at) {
    KernelBuilder kb = base();
    kb.place_shared(arena, {{"s", s_at}, {"partials", partials_at}});
    kb.grid("b", var("N"), [&](const Expr& b) {
      kb.block("t", 256, [&](const Expr& t) { kb.store("y", {b, t}, kb.load("x", {b, t})); });
    });
    return verify_kernel(kb.finish_unverified());
  };
  EXPECT_EQ(verify_arena(1024, 0, 0), Problems{});  // overlap is the planner's decision
  EXPECT_EQ(verify_arena(1056, 0, 1024), Problems{});
  EXPECT_EQ(verify_arena(1024, 0, 1000),
            Problems{"shared buffer 'partials' at offset 1000 is misaligned or outside the 1024-byte arena"});
  EXPECT_EQ(verify_arena(1056, 2, 1024),
            Problems{"shared buffer 's' at offset 2 is misaligned or outside the 1056-byte arena"});
}

// A prefetch names a buffer parameter, with i64 bounds (kir::PrefetchStmt).
TEST(KernelVerifier, PrefetchNamesABufferParameter) {
  EXPECT_EQ(verify_grid_body([](KernelBuilder& kb, const Expr& b) {
              kb.prefetch("x", (b + 1) * 256, int_const(256));
              kb.block("t", 256, [&](const Expr& t) { kb.store("y", {b, t}, kb.load("x", {b, t})); });
            }),
            Problems{});
  EXPECT_EQ(verify_grid_body([](KernelBuilder& kb, const Expr& b) { kb.prefetch("s", b, int_const(8)); }),
            Problems{"prefetch of 's', which is not a buffer parameter"});
  EXPECT_EQ(verify_grid_body([](KernelBuilder& kb, const Expr& b) {
              kb.prefetch("x", b, int_const(8, DType::i32));
            }),
            Problems{"prefetch of 'x' with a non-i64 bound"});
}

TEST(KernelVerifier, TransposeTileOnASharedSquareAtTheBlocksTopLevel) {
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr& b, const Expr& t) {
              kb.store("s", {t}, x_at(kb, b, t));
              kb.transpose_tile("s", 16);
              kb.store("y", {b, t}, kb.load("s", {t}));
            }),
            Problems{});
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr&, const Expr&) { kb.transpose_tile("x", 16); }),
            Problems{"transpose_tile of 'x', which is not a shared buffer"});
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr&, const Expr&) { kb.transpose_tile("partials", 3); }),
            Problems{"transpose_tile of a 3x3 square in 'partials', which holds 8 elements"});
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr&, const Expr& t) {
              kb.if_then(eq(t, int_const(0)), [&] { kb.transpose_tile("s", 16); });
            }),
            Problems{"transpose_tile under thread-dependent control flow"});
  EXPECT_EQ(verify_grid_body([](KernelBuilder& kb, const Expr&) { kb.transpose_tile("s", 16); }),
            Problems{"transpose_tile of 's' outside a block loop"});
}

TEST(KernelVerifier, NamesMustBeDefinedBeforeUse) {
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr& b, const Expr& t) {
              kb.store("y", {b, t}, var("later", DType::f32));
              kb.let("later", x_at(kb, b, t));
            }),
            Problems{"'later' is not defined"});
}

TEST(KernelVerifier, NamesAreUniqueInTheKernel) {
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr&, const Expr& t) { kb.let("N", t); }),
            Problems{"'N' is already defined"});
}

TEST(KernelVerifier, NamesLeaveScopeWithTheirBody) {
  EXPECT_EQ(verify_grid_body([](KernelBuilder& kb, const Expr& b) {
              kb.block("t", 256, [&](const Expr& t) { kb.let("inside", t); });
              kb.let("after", var("inside") + b);
            }),
            Problems{"'inside' is not defined"});
}

TEST(KernelVerifier, VariableUseMustMatchItsDeclaredDtype) {
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr&, const Expr&) { kb.let("u", var("t", DType::i32)); }),
            Problems{"'t' is used as i32 but declared i64"});
}

TEST(KernelVerifier, LetInitMustHaveTheDeclaredDtype) {
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr&, const Expr& t) {
              kb.append({LetStmt{"a", DType::f32, t}});
            }),
            Problems{"'a' is declared f32 but initialised with i64"});
}

TEST(KernelVerifier, AssignMustMatchTheLocalsDtype) {
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr&, const Expr& t) {
              Expr a = kb.let("a", DType::f32);
              kb.assign(a, t);
            }),
            Problems{"'a' is f32 but is assigned i64"});
}

TEST(KernelVerifier, OpResultDtypeMustFollowTheGraphIrRule) {
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr&, const Expr& t) {
              kb.let("a", make_op_unchecked(OpKind::Add, DType::f32, {t, t}));
            }),
            Problems{"add(t, t) is typed f32 but computes i64"});
}

TEST(KernelVerifier, OpOperandsMustSatisfyTheGraphIrRule) {
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr&, const Expr& t) {
              kb.let("a", make_op_unchecked(OpKind::Exp, DType::i64, {t}));
            }),
            Problems{"exp(t): exp expects floating operands, got i64"});
}

TEST(KernelVerifier, StoredValueMustHaveTheBuffersDtype) {
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr& b, const Expr& t) { kb.store("y", {b, t}, t); }),
            Problems{"store of i64 to 'y', which holds f32"});
}

TEST(KernelVerifier, IndicesAreI64) {
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr& b, const Expr& t) {
              kb.store("y", {b, t}, kb.load("x", {b, cast(t, DType::i32)}));
            }),
            Problems{"index of 'x' is i32, expected i64"});
}

TEST(KernelVerifier, IfConditionIsBool) {
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr&, const Expr& t) { kb.if_then(t, [] {}); }),
            Problems{"if condition is i64, expected bool"});
}

TEST(KernelVerifier, IndexCountMatchesTheBuffersRank) {
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr& b, const Expr& t) {
              kb.store("y", {b, t}, kb.load("x", {t}));
            }),
            Problems{"'x' has rank 2 but is indexed with 1 indices"});
}

TEST(KernelVerifier, LoadsAndStoresOnlyOnDeclaredBuffers) {
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr& b, const Expr& t) {
              kb.store("w", {t}, x_at(kb, b, t));
              kb.store("y", {b, t}, load("N", DType::f32, {}));
            }),
            (Problems{"'w' is not defined", "'N' is not a buffer"}));
}

TEST(KernelVerifier, ReadOnlyBuffersAreNotWritten) {
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr& b, const Expr& t) {
              kb.store("x", {b, t}, float_const(0, DType::f32));
            }),
            Problems{"store to read-only buffer 'x'"});
}

TEST(KernelVerifier, WriteOnlyBuffersAreNotRead) {
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr& b, const Expr& t) {
              kb.store("z", {b}, kb.load("y", {b, t}));
            }),
            Problems{"load from write-only buffer 'y'"});
}

TEST(KernelVerifier, OnlyWriteOnlyBuffersStream) {
  KernelBuilder kb = base();
  kb.grid("b", var("N"), [&](const Expr& b) {
    kb.block("t", 256, [&](const Expr& t) { kb.store("y", {b, t}, kb.load("x", {b, t})); });
  });
  kir::Kernel k = kb.finish_unverified();
  k.buffers[1].streaming = true;  // y: write
  EXPECT_EQ(verify_kernel(k), Problems{});
  EXPECT_NE(kir::print_kernel(k).find("y: global f32[N, 256] write streaming,"), std::string::npos);
  k.buffers[0].streaming = true;  // x: read
  k.buffers[2].streaming = true;  // z: readwrite
  EXPECT_EQ(verify_kernel(k),
            (Problems{"streaming buffer 'x' is not write-only", "streaming buffer 'z' is not write-only"}));
}

TEST(KernelVerifier, ShapesSeeOnlyScalarParameters) {
  KernelBuilder kb = base([](KernelBuilder& k) {
    k.buffer_param("w", DType::f32, {var("x")}, Access::Read, {int_const(1), int_const(1)});
  });
  kb.grid("b", var("N"), [](const Expr&) {});
  EXPECT_EQ(verify_kernel(kb.finish_unverified()),
            (Problems{"'x' is not defined", "'w' has 1 dimensions but 2 strides"}));
}

TEST(KernelVerifier, OnlyTheGridLoopLetsAndAssignmentsAtTopLevel) {
  KernelBuilder kb = base();
  kb.let("rows", var("N"));
  kb.store("z", {int_const(0)}, float_const(1, DType::f32));
  kb.grid("b", var("N"), [](const Expr&) {});
  EXPECT_EQ(verify_kernel(kb.finish_unverified()),
            Problems{"only the grid loop, lets and assignments may appear at the top level"});
}

TEST(KernelVerifier, ExactlyOneGridLoop) {
  KernelBuilder none = base();
  EXPECT_EQ(verify_kernel(none.finish_unverified()), Problems{"kernel has no grid loop"});
  KernelBuilder two = base();
  two.grid("b", var("N"), [](const Expr&) {});
  two.grid("b2", var("N"), [](const Expr&) {});
  EXPECT_EQ(verify_kernel(two.finish_unverified()), Problems{"kernel has 2 grid loops"});
}

TEST(KernelVerifier, GridLoopOnlyAtTopLevel) {
  EXPECT_EQ(verify_grid_body([](KernelBuilder& kb, const Expr&) { kb.grid("g", var("N"), [](const Expr&) {}); }),
            Problems{"grid loop 'g' is not at the top level"});
}

TEST(KernelVerifier, GridLoopSpansTheLaunchGrid) {
  KernelBuilder kb = base();
  kb.grid("b", var("N") + 1, [](const Expr&) {});
  EXPECT_EQ(verify_kernel(kb.finish_unverified()),
            Problems{"grid loop 'b' extent add(N, 1) differs from the launch grid N"});
}

TEST(KernelVerifier, LaunchBlockSizeWithinCudaLimit) {
  KernelBuilder kb = base([](KernelBuilder& k) { k.launch(var("N"), 2048); });
  kb.grid("b", var("N"), [](const Expr&) {});
  EXPECT_EQ(verify_kernel(kb.finish_unverified()), Problems{"launch block size 2048 is not in 1..1024"});
  // A kernel for the CPU alone runs its blocks as vector loops, up to 4096 threads.
  KernelBuilder cpu = base([](KernelBuilder& k) {
    k.launch(var("N"), 2048);
    k.cpu_only();
  });
  cpu.grid("b", var("N"), [](const Expr&) {});
  EXPECT_TRUE(verify_kernel(cpu.finish_unverified()).empty());
  KernelBuilder wider = base([](KernelBuilder& k) {
    k.launch(var("N"), 8192);
    k.cpu_only();
  });
  wider.grid("b", var("N"), [](const Expr&) {});
  EXPECT_EQ(verify_kernel(wider.finish_unverified()), Problems{"launch block size 8192 is not in 1..4096"});
}

TEST(KernelVerifier, BlockLoopInsideTheGridLoop) {
  KernelBuilder kb = base();
  kb.block("t", 256, [](const Expr&) {});
  kb.grid("b", var("N"), [](const Expr&) {});
  EXPECT_EQ(verify_kernel(kb.finish_unverified()),
            (Problems{"only the grid loop, lets and assignments may appear at the top level",
                      "block loop 't' is outside the grid loop"}));
}

TEST(KernelVerifier, BlockLoopsDoNotNest) {
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr&, const Expr&) { kb.block("t2", 256, [](const Expr&) {}); }),
            Problems{"block loop 't2' is inside another block loop"});
}

TEST(KernelVerifier, BlockLoopSpansTheLaunchBlock) {
  EXPECT_EQ(verify_grid_body([](KernelBuilder& kb, const Expr&) { kb.block("t", 128, [](const Expr&) {}); }),
            Problems{"block loop 't' spans 128 threads but the launch block size is 256"});
  EXPECT_EQ(verify_grid_body([](KernelBuilder& kb, const Expr&) {
              kb.loop("t", var("N"), LoopLevel::Block, [](const Expr&) {});
            }),
            Problems{"block loop 't' has a non-constant extent"});
}

TEST(KernelVerifier, BlockLoopUnderBlockUniformControlOnly) {
  EXPECT_EQ(verify_grid_body([](KernelBuilder& kb, const Expr& b) {
              Expr first = kb.let("first", eq(b, int_const(0)));
              kb.if_then(first, [&] { kb.block("t", 256, [](const Expr&) {}); });
            }),
            Problems{});
}

TEST(KernelVerifier, WarpLoopIsTheWholeBodyOfABlockLoop) {
  EXPECT_EQ(verify_grid_body([](KernelBuilder& kb, const Expr&) {
              kb.block("w", 8, [&](const Expr& w) {
                kb.let("warp_id", w);
                kb.warp("l", [](const Expr&) {});
              });
            }),
            Problems{"warp loop 'l' is not the whole body of a block loop"});
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr&, const Expr&) {
              kb.serial("i", int_const(2), [&](const Expr&) { kb.warp("l", [](const Expr&) {}); });
            }),
            Problems{"warp loop 'l' is not the whole body of a block loop"});
}

TEST(KernelVerifier, WarpLoopSpansTheLanes) {
  EXPECT_EQ(verify_grid_body([](KernelBuilder& kb, const Expr&) {
              kb.block("w", 8, [&](const Expr&) {
                kb.loop("l", int_const(16), LoopLevel::Warp, [](const Expr&) {});
              });
            }),
            Problems{"warp loop 'l' has extent 16; a warp loop spans the 32 lanes"});
}

TEST(KernelVerifier, UnrollAndVectorExtentsAreConstant) {
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr&, const Expr&) {
              kb.loop("u", var("N"), LoopLevel::Unroll, [](const Expr&) {});
              kb.loop("v", var("N"), LoopLevel::Vector, [](const Expr&) {});
            }),
            (Problems{"unroll loop 'u' has a non-constant extent", "vector loop 'v' has a non-constant extent"}));
}

TEST(KernelVerifier, BarrierOutsideTheGridLoop) {
  KernelBuilder kb = base();
  kb.barrier();
  kb.grid("b", var("N"), [](const Expr&) {});
  EXPECT_EQ(verify_kernel(kb.finish_unverified()),
            (Problems{"only the grid loop, lets and assignments may appear at the top level",
                      "barrier outside the grid loop"}));
}

TEST(KernelVerifier, BarrierAtBlockUniformPointsOnly) {
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr&, const Expr& t) {
              kb.if_then(eq(t, int_const(0)), [&] { kb.barrier(); });
            }),
            Problems{"barrier under thread-dependent control flow"});
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr&, const Expr& t) {
              kb.serial("i", t, [&](const Expr&) { kb.barrier(); });
            }),
            Problems{"barrier under thread-dependent control flow"});
  // Block-uniform control flow inside the thread region is fine.
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr& b, const Expr&) {
              kb.serial("i", b, [&](const Expr&) { kb.barrier(); });
            }),
            Problems{});
}

TEST(KernelVerifier, ThreadDependenceFlowsThroughLocalsToAFixpoint) {
  // `flag` becomes thread-dependent only by an assignment after its use in
  // the loop's condition, so a single pass in program order would miss it.
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr&, const Expr& t) {
              Expr flag = kb.let("flag", bool_const(true));
              kb.serial("i", int_const(2), [&](const Expr&) {
                kb.if_then(flag, [&] { kb.barrier(); });
                kb.assign(flag, eq(t, int_const(3)));
              });
            }),
            Problems{"barrier under thread-dependent control flow"});
}

TEST(KernelVerifier, NoBarrierInsideAVectorLoop) {
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr&, const Expr&) {
              kb.loop("v", int_const(4), LoopLevel::Vector, [&](const Expr&) { kb.barrier(); });
            }),
            Problems{"barrier inside vector loop 'v'"});
}

TEST(KernelVerifier, ThreadRegionsAssignOnlyTheirOwnLocals) {
  EXPECT_EQ(verify_grid_body([](KernelBuilder& kb, const Expr&) {
              Expr acc = kb.let("acc", float_const(0, DType::f32));
              kb.block("t", 256, [&](const Expr&) { kb.assign(acc, float_const(1, DType::f32)); });
            }),
            Problems{"'acc' is declared outside the thread region that assigns it"});
}

TEST(KernelVerifier, OnlyLocalsAreAssigned) {
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr&, const Expr& t) { kb.assign(var("N"), t); }),
            Problems{"'N' is not a local and cannot be assigned"});
}

TEST(KernelVerifier, SharedBuffersOnlyInsideTheGridLoop) {
  KernelBuilder kb = base();
  kb.let("first", kb.load("s", {int_const(0)}));
  kb.grid("b", var("N"), [](const Expr&) {});
  EXPECT_EQ(verify_kernel(kb.finish_unverified()), Problems{"shared buffer 's' accessed outside the grid loop"});
}

TEST(KernelVerifier, ReductionsOnlyInsideAThreadRegion) {
  EXPECT_EQ(verify_grid_body([](KernelBuilder& kb, const Expr& b) {
              kb.warp_reduce(OpKind::ReduceSum, kb.load("z", {b}), "r");
            }),
            Problems{"warp reduce_sum outside a block or warp loop"});
}

TEST(KernelVerifier, WarpReductionUnderWarpUniformControlOnly) {
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr& b, const Expr& t) {
              kb.if_then(eq(t, int_const(0)), [&] { kb.warp_reduce(OpKind::ReduceSum, x_at(kb, b, t), "r"); });
            }),
            Problems{"warp reduce_sum under lane-dependent control flow"});
  // Control that depends on the warp but not the lane keeps every lane of a warp together.
  EXPECT_EQ(verify_grid_body([](KernelBuilder& kb, const Expr& b) {
              kb.block("w", 8, [&](const Expr& w) {
                kb.warp("l", [&](const Expr& l) {
                  kb.if_then(eq(w, int_const(0)),
                             [&] { kb.warp_reduce(OpKind::ReduceMax, kb.load("x", {b, w * 32 + l}), "r"); });
                });
              });
            }),
            Problems{});
}

TEST(KernelVerifier, BlockReductionUnderBlockUniformControlOnly) {
  EXPECT_EQ(verify_grid_body([](KernelBuilder& kb, const Expr& b) {
              kb.block("w", 8, [&](const Expr& w) {
                kb.warp("l", [&](const Expr& l) {
                  kb.if_then(eq(w, int_const(0)), [&] {
                    kb.block_reduce(OpKind::ReduceSum, kb.load("x", {b, w * 32 + l}), "r", "partials");
                  });
                });
              });
            }),
            Problems{"block reduce_sum under thread-dependent control flow"});
}

TEST(KernelVerifier, BlockReductionScratchIsASharedBufferWithOneSlotPerWarp) {
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr& b, const Expr& t) {
              kb.block_reduce(OpKind::ReduceSum, x_at(kb, b, t), "r1", "z");
              kb.block_reduce(OpKind::ReduceSum, t, "r2", "partials");
            }),
            (Problems{"block reduce_sum scratch 'z' is not a shared buffer",
                      "block reduce_sum scratch 'partials' holds f32, expected i64"}));
  KernelBuilder kb = base([](KernelBuilder& k) { k.shared("tiny", DType::f32, 4); });
  kb.grid("b", var("N"), [&](const Expr& b) {
    kb.block("t", 256, [&](const Expr& t) { kb.block_reduce(OpKind::ReduceMin, x_at(kb, b, t), "r", "tiny"); });
  });
  EXPECT_EQ(verify_kernel(kb.finish_unverified()),
            Problems{"block reduce_min scratch 'tiny' holds 4 elements, needs 8 (one per warp)"});
}

TEST(KernelVerifier, ReductionsUseCombiningOpsOnMatchingDtypes) {
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr& b, const Expr& t) {
              kb.warp_reduce(OpKind::ReduceMean, x_at(kb, b, t), "r1");
              kb.warp_reduce(OpKind::ReduceAny, x_at(kb, b, t), "r2");
              kb.warp_reduce(OpKind::ReduceProd, eq(t, int_const(0)), "r3");
              kb.warp_reduce(OpKind::ArgMax, x_at(kb, b, t), "r4");
              kb.warp_arg_reduce(OpKind::ReduceSum, x_at(kb, b, t), t, "r5", "i5");
            }),
            (Problems{"reduce_mean is not a combining reduction", "warp reduce_any needs a bool value, got f32",
                      "warp reduce_prod needs a numeric value, got bool", "warp argmax needs an i64 index",
                      "warp argmax needs an index result", "warp reduce_sum takes no index"}));
}

TEST(KernelVerifier, WarpReductionsNeedWholeWarps) {
  KernelBuilder kb = base([](KernelBuilder& k) { k.launch(var("N"), 48); });
  kb.grid("b", var("N"), [&](const Expr& b) {
    kb.block("t", 48, [&](const Expr& t) { kb.warp_reduce(OpKind::ReduceSum, x_at(kb, b, t), "r"); });
  });
  EXPECT_EQ(verify_kernel(kb.finish_unverified()),
            Problems{"warp reduce_sum needs a block size that is a multiple of 32"});
}

TEST(KernelVerifier, ReductionResultIsUniformOverItsScope) {
  // A block reduction's result may steer a barrier; a warp reduction's may not.
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr& b, const Expr& t) {
              Expr total = kb.block_reduce(OpKind::ReduceMax, x_at(kb, b, t), "total", "partials");
              Expr warp_total = kb.warp_reduce(OpKind::ReduceMax, x_at(kb, b, t), "warp_total");
              kb.if_then(op(OpKind::Gt, {total, float_const(0, DType::f32)}), [&] { kb.barrier(); });
              kb.if_then(op(OpKind::Gt, {warp_total, float_const(0, DType::f32)}), [&] { kb.barrier(); });
            }),
            Problems{"barrier under thread-dependent control flow"});
}

TEST(KernelVerifier, LocalArraysStayInTheirThreadRegion) {
  EXPECT_EQ(verify_grid_body([](KernelBuilder& kb, const Expr&) {
              kb.local_array("cache", DType::f32, 4);
              kb.block("t", 256, [&](const Expr&) { kb.store("cache", {int_const(0)}, float_const(0, DType::f32)); });
            }),
            Problems{"local array 'cache' is declared outside the thread region that stores to it"});
}

TEST(KernelVerifier, FailingKernelIsAnInternalError) {
  KernelBuilder kb = base();
  EXPECT_THROW(kb.finish(), InternalError);
  try {
    verify_kernel_or_throw(kb.finish_unverified());
    ADD_FAILURE() << "an invalid kernel passed verify_kernel_or_throw";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("kernel 'k' fails verification:\n  kernel has no grid loop"),
              std::string::npos);
  }
}


TEST(KernelVerifier, MalformedStatementsAreProblemsNotCrashes) {
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr& b, const Expr& t) {
              kb.append({StoreStmt{"y", {b, t}, Expr()}});
              kb.append({ForStmt{"i", Expr(), LoopLevel::Serial, {}}});
              kb.append({ForStmt{"j", float_const(2, DType::f32), LoopLevel::Serial, {}}});
              kb.append({IfStmt{Expr(), {}, {}}});
              kb.let("a", var("x", DType::f32));
              kb.let("c", load("x", DType::f64, {b, t}));
              kb.local_array("none", DType::f32, 0);
            }),
            (Problems{"an operand is missing", "loop 'i' has no extent", "extent of loop 'j' is f32, expected i64",
                      "if has no condition", "'x' is a buffer, used as a scalar",
                      "load of 'x' is typed f64 but the buffer holds f32", "local array 'none' has 0 elements"}));
}

TEST(KernelVerifier, BlockLoopPlacementInsideTheGridLoop) {
  EXPECT_EQ(verify_grid_body([](KernelBuilder& kb, const Expr&) {
              kb.loop("v", int_const(2), LoopLevel::Vector, [&](const Expr&) { kb.block("t", 256, [](const Expr&) {}); });
            }),
            Problems{"block loop 't' is inside vector loop 'v'"});
  // Several rows per block: a serial loop around the thread region is fine.
  EXPECT_EQ(verify_grid_body([](KernelBuilder& kb, const Expr&) {
              kb.serial("r", int_const(4), [&](const Expr&) { kb.block("t", 256, [](const Expr&) {}); });
            }),
            Problems{});
}

TEST(KernelVerifier, WarpReductionsTakeNoScratch) {
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr& b, const Expr& t) {
              kb.append({ReduceStmt{ReduceScope::Warp, OpKind::ReduceSum, x_at(kb, b, t), Expr(), "r", "", "s", ""}});
            }),
            Problems{"warp reduce_sum takes no scratch buffer"});
}

// Segmented warp reductions (several short rows per warp): a power-of-two
// width below 32, printed as width=W; a block reduction is never segmented.
TEST(KernelVerifier, SegmentedWarpReductionWidths) {
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr& b, const Expr& t) {
              kb.warp_reduce(OpKind::ReduceSum, x_at(kb, b, t), "r", 8);
            }),
            Problems{});
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr& b, const Expr& t) {
              kb.warp_reduce(OpKind::ReduceSum, x_at(kb, b, t), "r", 3);
            }),
            Problems{"warp reduce_sum has width 3; a warp reduction's width is a power of two 2..32, a block's 32"});
  EXPECT_EQ(verify_thread_body([](KernelBuilder& kb, const Expr& b, const Expr& t) {
              kb.append({ReduceStmt{ReduceScope::Block, OpKind::ReduceSum, x_at(kb, b, t), Expr(), "r", "", "s", "", 8}});
            }),
            Problems{"block reduce_sum has width 8; a warp reduction's width is a power of two 2..32, a block's 32"});
}

TEST(KernelPrinter, SegmentedWarpReductionShowsItsWidth) {
  KernelBuilder kb = base([](KernelBuilder&) {});
  kb.grid("b", var("N"), [&](const Expr& b) {
    kb.block("t", 32, [&](const Expr& t) { kb.warp_reduce(OpKind::ReduceMax, x_at(kb, b, t), "r", 4); });
  });
  EXPECT_NE(print_kernel(kb.finish_unverified()).find("r = warp.reduce_max(x[b, t], width=4)"), std::string::npos);
}

TEST(KernelVerifier, SharedBuffersAreNonEmpty) {
  KernelBuilder kb = base([](KernelBuilder& k) { k.shared("empty", DType::f32, 0); });
  kb.grid("b", var("N"), [](const Expr&) {});
  EXPECT_EQ(verify_kernel(kb.finish_unverified()), Problems{"shared buffer 'empty' has 0 elements"});
}

}  // namespace
}  // namespace stitch::kir
