# cmake -DSTITCH=... -DPYTHON=... -DCOMPARE=... -DMODEL_DIR=... -DOUTPUT_DIR=...
#       -DBACKEND=... -DPLANNER=... -DRTOL=... -DATOL=... -P run_and_compare.cmake
#
# Runs `stitch run MODEL_DIR/model.onnx` with every MODEL_DIR/inputs/NAME.npy bound to
# the ONNX input NAME, writes the outputs to OUTPUT_DIR, and compares them with
# MODEL_DIR/expected/*.npy (scripts/compare_npy.py).
foreach(var STITCH PYTHON COMPARE MODEL_DIR OUTPUT_DIR BACKEND PLANNER RTOL ATOL)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_and_compare.cmake: -D${var}=... is required")
  endif()
endforeach()

file(GLOB input_files ${MODEL_DIR}/inputs/*.npy)
if(NOT input_files)
  message(FATAL_ERROR "${MODEL_DIR}/inputs: no .npy inputs (did the export run?)")
endif()
set(input_args)
foreach(file IN LISTS input_files)
  get_filename_component(name ${file} NAME_WE)
  list(APPEND input_args --input ${name}=${file})
endforeach()

file(REMOVE_RECURSE ${OUTPUT_DIR})
execute_process(
  COMMAND ${STITCH} run ${MODEL_DIR}/model.onnx --backend ${BACKEND} --planner ${PLANNER}
          ${input_args} --output-dir ${OUTPUT_DIR}
  RESULT_VARIABLE run_status)
if(NOT run_status EQUAL 0)
  message(FATAL_ERROR "stitch run --backend ${BACKEND} --planner ${PLANNER} failed: ${run_status}")
endif()

execute_process(
  COMMAND ${PYTHON} ${COMPARE} ${MODEL_DIR}/expected ${OUTPUT_DIR} --rtol ${RTOL} --atol ${ATOL}
  RESULT_VARIABLE compare_status)
if(NOT compare_status EQUAL 0)
  message(FATAL_ERROR "results differ from PyTorch's (compare_npy.py exit ${compare_status})")
endif()
