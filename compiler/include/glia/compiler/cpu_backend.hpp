// The `cpu` backend's settings: the worker threads of OpenMP's pool, which oneDNN's
// primitives and glia's fused kernels share, for programs run from the calling thread
// (CompileOptions::cpu.threads overrides them per executable); like torch::set_num_threads.
//   glia::cpu::set_threads(2);
#pragma once

namespace glia::cpu {

// glia::Error for n < 1. Without the cpu backend (glia built without oneDNN): no effect.
void set_threads(int n);
int threads();  // 1 without the cpu backend

}  // namespace glia::cpu
