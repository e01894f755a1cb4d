// glia compiler: the Backend interface and registry, memory planning, trees of
// tensors, and jit / compile over them.
#pragma once

#include "glia/compiler/backend.hpp"
#include "glia/compiler/compile.hpp"
#include "glia/compiler/jit.hpp"
#include "glia/compiler/memory_plan.hpp"
#include "glia/compiler/passes.hpp"
#include "glia/compiler/registry.hpp"
