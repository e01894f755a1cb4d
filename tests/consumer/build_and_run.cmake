# Driver of the package.consumer test, run as `cmake -D... -P build_and_run.cmake`:
# cmake --install BUILD_DIR into WORK_DIR/prefix (emptied first, so a file the install
# rules forget is missing), then configure, build and run SOURCE_DIR against it.
cmake_minimum_required(VERSION 3.22)
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR CXX_COMPILER)
  if(NOT ${var})
    message(FATAL_ERROR "build_and_run.cmake: -D${var}=... is required")
  endif()
endforeach()

# Runs one step, showing its output only when it fails.
function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "package.consumer: ${what} failed (${rc}):\n${ARGN}\n${out}")
  endif()
endfunction()

set(prefix ${WORK_DIR}/prefix)
set(build ${WORK_DIR}/build)
set(config_args)
if(CONFIG)
  set(config_args --config ${CONFIG})
endif()

file(REMOVE_RECURSE ${prefix})
run_step("installing glia" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix} ${config_args})

set(configure_args -S ${SOURCE_DIR} -B ${build} -G ${GENERATOR}
  -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
  -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
if(MAKE_PROGRAM)
  list(APPEND configure_args -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM})
endif()
if(LAUNCHER)
  list(APPEND configure_args -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER})
endif()
# The build's own flags (a sanitized glia needs a sanitized consumer to link).
if(CXX_FLAGS)
  list(APPEND configure_args "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}")
endif()
if(EXE_LINKER_FLAGS)
  list(APPEND configure_args "-DCMAKE_EXE_LINKER_FLAGS=${EXE_LINKER_FLAGS}")
endif()
if(CONFIG)
  list(APPEND configure_args -DCMAKE_BUILD_TYPE=${CONFIG})
endif()
run_step("configuring the consumer" ${CMAKE_COMMAND} ${configure_args})

# A glia installed elsewhere on the machine must not stand in for this build's.
file(STRINGS ${build}/CMakeCache.txt glia_dir REGEX "^glia_DIR:")
string(REGEX REPLACE "^glia_DIR:[A-Z]*=" "" glia_dir "${glia_dir}")
file(REAL_PATH "${prefix}" real_prefix)
file(REAL_PATH "${glia_dir}" real_glia_dir)
string(FIND "${real_glia_dir}" "${real_prefix}/" at)
if(NOT at EQUAL 0)
  message(FATAL_ERROR "package.consumer: find_package(glia) used ${glia_dir}, not ${prefix}")
endif()

run_step("building the consumer" ${CMAKE_COMMAND} --build ${build} ${config_args})

find_program(consumer_exe consumer PATHS ${build} ${build}/${CONFIG} NO_DEFAULT_PATH REQUIRED)
execute_process(COMMAND ${consumer_exe} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "package.consumer: the consumer exited with ${rc}")
endif()
