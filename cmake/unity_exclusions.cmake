# Sources compiled alone under STITCH_UNITY_BUILD: each defines a file-local name
# (a helper in an anonymous namespace, a constant, a test fixture's helper) that
# another source of its target defines too, so the two cannot share a
# translation unit. A new clash shows as a redefinition error in a unity build;
# renaming the helper or listing the file here ends it.
set(stitch_unity_exclusions
  src/fusion/group_dag.cpp
  src/fusion/tile_group.cpp
  src/ir/parser.cpp
  src/lazy/trace.cpp
  src/lower/lower_stitched_group.cpp
  src/lower/lower_tile_group.cpp
  src/ptx/sim/decode.cpp
  src/ptx/sim/ops_integer.cpp
  src/schedule/latency.cpp
  src/tune/schedule_tuner.cpp
  tests/codegen/executable_test.cpp
  tests/codegen/symbolic_prefix_test.cpp
  tests/fusion/group_dag_test.cpp
  tests/fusion/set_packing_test.cpp
  tests/gpu/executable_gpu_test.cpp
  tests/interp/int_semantics_test.cpp
  tests/ir/parser_errors_test.cpp
  tests/ir/parser_test.cpp
  tests/lazy/random_lazy_test.cpp
  tests/lower/gather_packing_test.cpp
  tests/lower/loop_lowering_test.cpp
  tests/lower/random_packed_test.cpp
  tests/lower/row_schedule_test.cpp
  tests/lower/stitched_lowering_test.cpp
  tests/lower/streaming_outputs_test.cpp
  tests/lower/tile_lowering_test.cpp
  tests/lower/transpose_tiles_test.cpp
  tests/ptx/interpreter_integer_test.cpp
  tests/ptx/weave_uniformity_test.cpp
  tests/schedule/plan_explain_test.cpp
  tests/schedule/template_test.cpp
  tests/tensor/tensor_test.cpp
  tools/stitch/bench_cuda_command.cpp
)
if(STITCH_UNITY_BUILD)
  list(TRANSFORM stitch_unity_exclusions PREPEND ${CMAKE_SOURCE_DIR}/)
  set(stitch_unity_directories ${CMAKE_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/bench)
  if(STITCH_BUILD_TESTS)
    list(APPEND stitch_unity_directories ${CMAKE_SOURCE_DIR}/tests)
  endif()
  if(STITCH_BUILD_FUZZERS)
    list(APPEND stitch_unity_directories ${CMAKE_SOURCE_DIR}/fuzz)
  endif()
  set_source_files_properties(${stitch_unity_exclusions} DIRECTORY ${stitch_unity_directories}
                              PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
endif()
