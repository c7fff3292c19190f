# The fixture of the onnx_node tests (cmake -P): a fresh copy of the ONNX
# backend node tests and an empty folder for this test run's results and
# kernel cache. Generated at test time, never at configure time and never
# committed (docs/onnx-conformance.md).
#   -DPYTHON=${STITCH_ONNX_PYTHON} -DSCRIPT=.../gen_onnx_node_tests.py -DCASES=DIR -DWORK=DIR
foreach(var PYTHON SCRIPT CASES WORK)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "generate_cases.cmake: -D${var}=... is required")
  endif()
endforeach()
file(REMOVE_RECURSE "${CASES}" "${WORK}")
file(MAKE_DIRECTORY "${WORK}/kernel-cache")
execute_process(COMMAND "${PYTHON}" "${SCRIPT}" "${CASES}"
                RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE output)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${PYTHON} ${SCRIPT} failed (${status}); it needs the onnx package: Debian's "
                      "python3-onnx (scripts/setup.sh --tests installs it), or another python3 with onnx "
                      "named by -DSTITCH_ONNX_PYTHON=...:\n${output}")
endif()
file(GLOB cases LIST_DIRECTORIES true "${CASES}/node/*")
list(LENGTH cases count)
message(STATUS "generated ${count} ONNX node test cases in ${CASES}")
