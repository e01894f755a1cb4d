// glia core: dtypes, shapes, tensors over device-aware buffers, element-wise math and
// reduction monoids, the op table, the Graph IR, the Expr tracing API and the reference
// interpreter.
#pragma once

#include "glia/core/buffer.hpp"
#include "glia/core/device.hpp"
#include "glia/core/dtype.hpp"
#include "glia/core/elementwise.hpp"
#include "glia/core/error.hpp"
#include "glia/core/expr.hpp"
#include "glia/core/graph.hpp"
#include "glia/core/hash.hpp"
#include "glia/core/interpreter.hpp"
#include "glia/core/monoid.hpp"
#include "glia/core/op.hpp"
#include "glia/core/scan.hpp"
#include "glia/core/shape.hpp"
#include "glia/core/tensor.hpp"
#include "glia/core/tree.hpp"
