// Internal: glia::cpu::set_threads's value for the cpu backend, which applies it to the
// OpenMP pool of whichever thread compiles or runs a program (cpu_options.cpp).
#pragma once

namespace glia::detail {

// The thread count set_threads was last given, or 0 where it was never called.
int cpu_threads_setting();

}  // namespace glia::detail
