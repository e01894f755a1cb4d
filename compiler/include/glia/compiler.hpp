// glia compiler: the Backend interface and registry, the lowering into kernel specs
// (Program) that every backend realises, memory planning, IR passes, and jit / compile
// over trees of tensors.
#pragma once

#include "glia/compiler/backend.hpp"
#include "glia/compiler/compile.hpp"
#include "glia/compiler/cpu_backend.hpp"
#include "glia/compiler/jit.hpp"
#include "glia/compiler/lowering.hpp"
#include "glia/compiler/memory_plan.hpp"
#include "glia/compiler/passes.hpp"
#include "glia/compiler/program.hpp"
#include "glia/compiler/registry.hpp"
