# `glia bench --rounds`: each round takes its own samples and the contender's figures pool
# them. With --time 0 a round takes exactly its minimum of 3 samples, so 4 rounds give 12;
# after each round the cores' round trip is measured.
#   cmake -DGLIA=<glia executable> -DOUT=<json file> -P bench_rounds_smoke.cmake
file(REMOVE ${OUT})
execute_process(COMMAND ${GLIA} bench --no-peer --backends cpu --cases tiny_predict --time 0
                        --warmup 0 --rounds 4 --json ${OUT}
                RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT code EQUAL 0)
  message(FATAL_ERROR "glia bench exited with ${code}")
endif()
if(NOT out MATCHES "in 4 turns")
  message(FATAL_ERROR "the header does not say the cases run in 4 turns")
endif()
file(READ ${OUT} doc)
string(JSON rounds ERROR_VARIABLE e GET "${doc}" settings rounds)
if(e OR NOT rounds EQUAL 4)
  message(FATAL_ERROR "${OUT}: settings.rounds is '${rounds}' ${e}")
endif()
string(JSON samples ERROR_VARIABLE e GET "${doc}" cases 0 contenders 0 seconds samples)
if(e OR NOT samples EQUAL 12)
  message(FATAL_ERROR "${OUT}: expected 12 samples pooled from 4 rounds, got '${samples}' ${e}")
endif()
# The cores' round trip after each round, on the bench's two threads: four, each between
# 1 ns and 1 ms (a round trip where both threads share one core yields: microseconds).
string(JSON trips ERROR_VARIABLE e LENGTH "${doc}" cases 0 round_trip_seconds)
if(e OR NOT trips EQUAL 4)
  message(FATAL_ERROR "${OUT}: expected 4 round trips, one a round, got '${trips}' ${e}")
endif()
foreach(i RANGE 3)
  string(JSON trip GET "${doc}" cases 0 round_trip_seconds ${i})
  if(NOT trip GREATER 1e-9 OR NOT trip LESS 1e-3)
    message(FATAL_ERROR "${OUT}: round trip ${i} is ${trip} s")
  endif()
endforeach()
if(NOT out MATCHES "cores' round trip after each turn: [0-9.]+ ns")
  message(FATAL_ERROR "the report does not print the cores' round trip")
endif()
message("ok: 4 rounds pooled into ${samples} samples; round trips ${trip} s ...")
