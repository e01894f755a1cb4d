// The `cpu` backend's settings: the worker threads of OpenMP's pool, which oneDNN's
// primitives and glia's fused kernels share, for programs compiled and run from any thread
// of the process (CompileOptions::cpu.threads overrides them per executable); like
// torch::set_num_threads.
//   glia::cpu::set_threads(2);
#pragma once

namespace glia::cpu {

// glia::Error for n < 1. Without the cpu backend (glia built without oneDNN): no effect.
void set_threads(int n);
// set_threads's value, else the calling thread's OpenMP count; 1 without the cpu backend.
int threads();

}  // namespace glia::cpu
