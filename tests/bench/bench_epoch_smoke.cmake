# `glia bench` on an epoch case, cut to its first batch (--epoch-fraction 0.001): the LSTM
# epoch (a scan over 28 steps and its reverse scan) trains on the cpu backend, its time is
# scaled to the epoch's 469 batches, and the report prints its row and its GEMM bound.
# One thread: two would spin-wait on the cores the suite's other tests keep busy. Most of
# its ~5 s is the bound (oneDNN timed on the 16 GEMM shapes of full and last batches).
#   cmake -DGLIA=<glia executable> -DOUT=<json file> -P bench_epoch_smoke.cmake
file(REMOVE ${OUT})
execute_process(COMMAND ${GLIA} bench --quick --no-peer --backends cpu --threads 1
                        --cases lstm_epoch_b128 --epoch-fraction 0.001 --json ${OUT}
                RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT code EQUAL 0)
  message(FATAL_ERROR "glia bench exited with ${code}")
endif()
# The cpu row: name, figures, the fraction of the bound and the note on the partial epoch.
if(NOT out MATCHES "\n== lstm_epoch_b128: MNIST read row by row"
   OR NOT out MATCHES "\ncpu +[0-9.]+ [^\n]*±[0-9.]+%[^\n]* [0-9]+% +\\(timed 1 of 469 batches, scaled to an epoch\\)"
   OR NOT out MATCHES "bound: [^\n]*recurrent products step by step[^\n]*GFLOP/s")
  message(FATAL_ERROR "the report's lstm_epoch_b128 rows are not as expected")
endif()
file(READ ${OUT} doc)
string(JSON name ERROR_VARIABLE e GET "${doc}" cases 0 name)
string(JSON median ERROR_VARIABLE e1 GET "${doc}" cases 0 contenders 0 seconds median)
string(JSON bound ERROR_VARIABLE e2 GET "${doc}" cases 0 bound seconds)
string(JSON fraction ERROR_VARIABLE e3 GET "${doc}" cases 0 contenders 0 fraction_of_bound)
if(e OR e1 OR e2 OR e3 OR NOT name STREQUAL "lstm_epoch_b128" OR NOT median GREATER 0
   OR NOT bound GREATER 0 OR NOT fraction GREATER 0)
  message(FATAL_ERROR "${OUT}: case '${name}', median '${median}', bound '${bound}', "
                      "fraction '${fraction}' ${e} ${e1} ${e2} ${e3}")
endif()
message("ok: lstm_epoch_b128 ${median} s an epoch (scaled), bound ${bound} s")
