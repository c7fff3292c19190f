# Run by the install_examples test (tests/install/CMakeLists.txt) with
# BUILD_DIR, SOURCE_DIR, WORK_DIR, CONFIG, GENERATOR and CXX_COMPILER.
cmake_minimum_required(VERSION 3.20)

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${what} failed (${status}): ${ARGN}")
  endif()
endfunction()

# Whether `text` names the source or the build tree (as plain strings: a
# path may hold regex characters).
function(mentions_trees text result)
  string(FIND "${text}" "${SOURCE_DIR}" in_source)
  string(FIND "${text}" "${BUILD_DIR}" in_build)
  if(in_source GREATER -1 OR in_build GREATER -1)
    set(${result} TRUE PARENT_SCOPE)
  else()
    set(${result} FALSE PARENT_SCOPE)
  endif()
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
set(ENV{STITCH_CACHE_DIR} ${WORK_DIR}/kernel-cache)
# A variable set for this build must not decide where the examples' find_package looks.
unset(ENV{CMAKE_PREFIX_PATH})
unset(ENV{Stitch_DIR})

run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix} --config ${CONFIG})
foreach(path include/stitch/stitch.h include/stitch/runtime.h include/stitch/ops.def bin/stitch lib/libstitch.so
        lib/cmake/Stitch/StitchConfig.cmake lib/cmake/Stitch/StitchConfigVersion.cmake
        lib/cmake/Stitch/StitchTargets.cmake)
  if(NOT EXISTS ${prefix}/${path})
    message(FATAL_ERROR "not installed: ${path}")
  endif()
endforeach()

# What a consumer is handed: headers that include only the standard library
# and each other, and a target that names no other package.
file(GLOB headers ${prefix}/include/stitch/*.h)
foreach(header IN LISTS headers)
  file(STRINGS ${header} includes REGEX "^[ \t]*#[ \t]*include")
  foreach(line IN LISTS includes)
    if(line MATCHES "\"" AND NOT line MATCHES "\"stitch/[a-z_]+\\.(h|def)\"")
      message(FATAL_ERROR "${header} includes a header that is not public: ${line}")
    endif()
  endforeach()
endforeach()
file(GLOB target_files ${prefix}/lib/cmake/Stitch/StitchTargets*.cmake)
foreach(target_file IN LISTS target_files)
  file(READ ${target_file} text)
  if(text MATCHES "INTERFACE_LINK_LIBRARIES")
    message(FATAL_ERROR "${target_file}: Stitch::stitch hands its dependencies to consumers")
  endif()
  mentions_trees("${text}" mentioned)
  if(mentioned)
    message(FATAL_ERROR "${target_file} refers to the source or build tree")
  endif()
endforeach()
find_program(readelf readelf)
if(readelf)
  execute_process(COMMAND ${readelf} -d ${prefix}/lib/libstitch.so OUTPUT_VARIABLE dynamic RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "readelf -d libstitch.so failed")
  endif()
  if(dynamic MATCHES "jemalloc")
    message(FATAL_ERROR "libstitch.so links jemalloc (only the CLI may):\n${dynamic}")
  endif()
  mentions_trees("${dynamic}" mentioned)
  if(mentioned)
    message(FATAL_ERROR "libstitch.so's RUNPATH names the source or build tree:\n${dynamic}")
  endif()
endif()

set(examples_build ${WORK_DIR}/examples-build)
run("configuring examples/" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples -B ${examples_build} -G ${GENERATOR}
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix})
run("building examples/" ${CMAKE_COMMAND} --build ${examples_build} --config Release --parallel 2)

# Every example runs without arguments (examples/CMakeLists.txt: one
# executable per .cpp, named after it).
file(GLOB example_sources ${SOURCE_DIR}/examples/*.cpp)
if(NOT example_sources)
  message(FATAL_ERROR "no examples in ${SOURCE_DIR}/examples")
endif()
foreach(source IN LISTS example_sources)
  get_filename_component(name ${source} NAME_WE)
  set(program ${examples_build}/${name})
  if(NOT EXISTS ${program})
    set(program ${examples_build}/Release/${name})
  endif()
  message(STATUS "running example ${name}")
  run("example ${name}" ${program})
endforeach()
