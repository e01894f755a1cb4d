# The package test: installs this build into a prefix under the build folder, then
# configures, builds and runs tests/consumer against it with find_package(glia), the
# way another project would use glia. tests/consumer/build_and_run.cmake does the steps.
add_test(NAME package.consumer
  COMMAND ${CMAKE_COMMAND}
    -DBUILD_DIR=${PROJECT_BINARY_DIR}
    -DCONFIG=$<CONFIG>
    -DSOURCE_DIR=${CMAKE_CURRENT_LIST_DIR}/consumer
    -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/consumer
    -DGENERATOR=${CMAKE_GENERATOR}
    -DMAKE_PROGRAM=${CMAKE_MAKE_PROGRAM}
    -DCXX_COMPILER=${CMAKE_CXX_COMPILER}
    -DLAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER}
    "-DCXX_FLAGS=${CMAKE_CXX_FLAGS}"
    "-DEXE_LINKER_FLAGS=${CMAKE_EXE_LINKER_FLAGS}"
    -P ${CMAKE_CURRENT_LIST_DIR}/consumer/build_and_run.cmake)
set_tests_properties(package.consumer PROPERTIES
  TIMEOUT 600 LABELS package PASS_REGULAR_EXPRESSION "the installed glia package works")
