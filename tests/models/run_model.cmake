# cmake -DPYTHON=... -DSCRIPT=... [-DARGS=a|b] -DSTITCH=... -DGRAPH=... -DMODE=check|check-cuda-sim|plan
#       [-DPLANNER=...] -P run_model.cmake
#
# Generates a model graph with bench/models/SCRIPT (ARGS, '|'-separated, passed on),
# writes it to GRAPH, then runs `stitch check GRAPH` (every planner on the CPU back end against the
# interpreter), with MODE=check-cuda-sim the same on the CUDA back end on the simulated
# driver (docs/cuda-sim.md), or, with MODE=plan, `stitch plan GRAPH --planner PLANNER`.
foreach(var PYTHON SCRIPT STITCH GRAPH MODE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_model.cmake: -D${var}=... is required")
  endif()
endforeach()

string(REPLACE "|" ";" ARGS "${ARGS}")
get_filename_component(graph_dir ${GRAPH} DIRECTORY)
file(MAKE_DIRECTORY ${graph_dir})
execute_process(COMMAND ${PYTHON} ${SCRIPT} ${ARGS}
                OUTPUT_FILE ${GRAPH}
                RESULT_VARIABLE gen_status)
if(NOT gen_status EQUAL 0)
  string(REPLACE ";" " " text "${ARGS}")
  message(FATAL_ERROR "${PYTHON} ${SCRIPT} ${text} failed: ${gen_status}")
endif()

if(MODE STREQUAL "check")
  set(command ${STITCH} check ${GRAPH} --backend cpu)
elseif(MODE STREQUAL "check-cuda-sim")
  set(command ${STITCH} check ${GRAPH} --backend cuda-sim)
elseif(MODE STREQUAL "plan")
  set(command ${STITCH} plan ${GRAPH} --planner ${PLANNER} -o ${GRAPH}.${PLANNER}.plan)
else()
  message(FATAL_ERROR "run_model.cmake: MODE must be check, check-cuda-sim or plan, got '${MODE}'")
endif()
execute_process(COMMAND ${command} RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  string(REPLACE ";" " " text "${command}")
  message(FATAL_ERROR "`${text}` failed (exit ${status})")
endif()
