# `glia bench` measures the machine's limits in the run: the softmax over 1M is bounded by
# memory bandwidth (a triad) and the batch-10,000 MLP predict by oneDNN's GEMM rate on its
# shapes. The JSON holds each case's positive bound and the cpu contender's fraction of it,
# which no honest measurement puts far above 1 (with dense products: GLIA_CPU_ZERO_SKIP=0,
# as the test runs it; skipping the zeros of MNIST's test images does less work than the
# bound counts).
# In a sanitized build (-DSANITIZED=ON) the triad that measures the bandwidth is
# instrumented and the generated kernels are not, so only the bounds' presence is checked.
#   cmake -DGLIA=<glia executable> -DOUT=<json file> [-DSANITIZED=ON] -P bench_bound_smoke.cmake
file(REMOVE ${OUT})
execute_process(COMMAND ${GLIA} bench --quick --no-peer --backends cpu
                        --cases softmax_1m,mlp_predict_b10000 --json ${OUT}
                RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT code EQUAL 0)
  message(FATAL_ERROR "glia bench exited with ${code}")
endif()
file(READ ${OUT} doc)
foreach(i 0 1)
  string(JSON name ERROR_VARIABLE e GET "${doc}" cases ${i} name)
  string(JSON bound ERROR_VARIABLE e1 GET "${doc}" cases ${i} bound seconds)
  string(JSON what ERROR_VARIABLE e2 GET "${doc}" cases ${i} bound what)
  string(JSON fraction ERROR_VARIABLE e3 GET "${doc}" cases ${i} contenders 0 fraction_of_bound)
  set(too_fast FALSE)
  if(NOT SANITIZED AND fraction GREATER 1.5)
    set(too_fast TRUE)
  endif()
  if(e1 OR e2 OR e3 OR NOT bound GREATER 0 OR NOT fraction GREATER 0 OR too_fast)
    message(FATAL_ERROR "${OUT}: case ${name}: bound '${bound}' (${what}), fraction '${fraction}' ${e1} ${e2} ${e3}")
  endif()
  message("${name}: bound ${bound} s (${what}); cpu at ${fraction} of it")
endforeach()
if(NOT out MATCHES "bound: .*triad" OR NOT out MATCHES "bound: .*GEMM")
  message(FATAL_ERROR "the report does not print the bounds")
endif()
