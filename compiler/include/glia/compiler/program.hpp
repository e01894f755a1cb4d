// A Program: a graph lowered into kernel specs and a placement for every value, as plain
// data. The lowering (lowering.hpp) makes it once for every backend; a backend realises it
// (cpu: oneDNN primitives and glia's tile executor; cuda: cuBLASLt, cuDNN, NVRTC kernels)
// and the AOT exporter emits C from it. Tests assert on it; describe() prints it.
//   const glia::Program& p = exe->program();
//   for (const glia::Kernel& k : p.kernels)
//     if (auto* mm = std::get_if<glia::MatmulSpec>(&k.spec)) std::cout << mm->m << "\n";
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "glia/compiler/memory_plan.hpp"
#include "glia/core/graph.hpp"

namespace glia {

// A value's dense row-major storage seen through other dims and strides (elements): how
// a kernel reads an operand through the transposes that produced it, or writes its result
// into a transposed layout. A dimension of size 1 may carry any stride.
struct StridedView {
  ValueId value = 0;  // whose storage
  std::vector<std::int64_t> dims, strides;
};

// What runs on a contraction's result before it is stored: per-channel bias, residual
// add, relu, tanh, logistic — oneDNN's post-ops, cuBLASLt's epilogues.
struct EpilogueSpec {
  enum class Step : std::uint8_t { add, relu, tanh, logistic };
  struct Operand {
    ValueId value = 0;
    // Per destination dimension: where it steps in the operand (0: broadcast along it).
    std::vector<std::int64_t> strides;
    bool bias = false;  // steps along one destination dimension only (a per-channel bias)
  };
  std::vector<Step> steps;        // in order; each add reads the next operand
  std::vector<Operand> operands;  // the adds' operands, in step order
  bool empty() const { return steps.empty(); }
  std::string text() const;  // " + bias, relu"; empty when there are no steps
};

// out[b..., i, j] = sum_k lhs[b..., i, k] * rhs[b..., k, j]: a dot_general whose axes fold
// into a strided (batched) matrix product. Strides are in elements, per [batch..., rows,
// cols]; the kernel writes its output (the epilogue's last value, or the dot_general) as
// [batch..., M, N] with out_strides.
struct MatmulSpec {
  ValueId lhs = 0, rhs = 0;
  DType dtype = DType::f32;
  std::vector<std::int64_t> batch;
  std::int64_t m = 1, k = 1, n = 1;
  std::vector<std::int64_t> lhs_strides, rhs_strides, out_strides;
  EpilogueSpec epilogue;
  std::int64_t multiply_adds() const;  // batch x M x K x N
};

// A convolution in a primitive's roles: src [N, C, S...], weights [(G,) O, C/G, K...],
// dst [N, O, S'...]. The forward pass writes dst; autograd's two backward forms are
// recognised as the input gradient (backward_data: writes src from dst and weights) and
// the kernel gradient (backward_weights: writes weights from src and dst). The written
// view's value is the kernel's output.
struct ConvSpec {
  enum class Pass : std::uint8_t { forward, backward_data, backward_weights };
  Pass pass = Pass::forward;
  DType dtype = DType::f32;
  StridedView src, weights, dst;
  // Per spatial dimension; a dilation of 1 is a dense kernel.
  std::vector<std::int64_t> strides, dilations, padding_low, padding_high;
  std::int64_t groups = 1;
  EpilogueSpec epilogue;  // forward only

  std::int64_t multiply_adds() const;  // of any one pass: dst's elements x C/G x window
  // The view the pass writes: dst, src or weights.
  StridedView& written() {
    return pass == Pass::forward ? dst : pass == Pass::backward_data ? src : weights;
  }
  const StridedView& written() const { return const_cast<ConvSpec*>(this)->written(); }
};

// Max pooling over [N, C, spatial...] views (N or C may be a unit stand-in of stride 0),
// and its adjoint: max_backward sends each window's `source` value to the window's first
// maximum of `input` (row-major window order, a NaN beats numbers), summed where windows
// overlap, into `output` (input's shape). With `positive_input_only`, an element whose
// input is not above zero (a NaN included) gets zero: relu's gradient mask after the
// adjoint of max pooling over a relu's output (the select it folds in).
struct PoolSpec {
  enum class Kind : std::uint8_t { max, max_backward };
  Kind kind = Kind::max;
  DType dtype = DType::f32;
  StridedView input, source, output;  // source: max_backward only
  // Per spatial dimension; a dilation of 1 is a dense window.
  std::vector<std::int64_t> window, strides, dilations, padding_low, padding_high;
  bool positive_input_only = false;  // max_backward only
};

// A convolution whose output only max pooling reads (and, in a training step, pooling's
// adjoint and relu's mask), run without storing that output: `forward` computes each
// window's convolution values (conv: the forward ConvSpec with its epilogue; conv.dst
// names the unstored output) and writes their maximum (pool: kind max over conv.dst into
// pool.output). `backward_weights` computes the values again, the same arithmetic, and
// sends `pooled_grad` (pool.output's layout) to each window's first maximum (positive
// maxima only, relu's mask, when the epilogue ends in relu) and from there into the
// kernel gradient `weight_grad` (conv.weights's roles). A target takes both passes or
// neither: the forward pass stores nothing the unfused adjoint could read.
struct ConvPoolSpec {
  enum class Pass : std::uint8_t { forward, backward_weights };
  Pass pass = Pass::forward;
  ConvSpec conv;
  PoolSpec pool;
  StridedView pooled_grad, weight_grad;  // backward_weights only
  bool positive_only = false;            // backward_weights: relu's mask folded in
};

// Layer ops with kernels of their own that neither a library call nor a fused sweep
// suits: window_sum, gather, scatter_add, pad, concatenate, argmax, argmin. The node's
// attributes are in the program's graph.
struct DirectSpec {
  Op op = Op::gather;
  ValueId node = 0;
  std::vector<ValueId> operands;  // the node's inputs, in order
  // gather, scatter_add (the target), argmax, argmin: the operand as (outer, size, inner)
  // around the axis.
  AxisSplit split;
};

// A fused group of element-wise, layout-view, random and reduction nodes as sweeps over
// flat iteration domains. Each sweep is a straight-line program over virtual registers
// (each instruction defines one, dst) run for every flat index t of its domain; sweeps
// run in order, a later one reading what an earlier one stored or reduced (softmax:
// max | exp and sum | divide).
struct FusedSpec {
  // Flat index t over `dims` (row-major) -> offset + sum(index[d] * strides[d]) elements
  // into a value's storage; size-1 axes dropped and axes that step as one merged.
  struct View {
    std::vector<std::int64_t> dims, strides;
    std::int64_t offset = 0;
    bool identity() const;  // element t at offset t
    bool scalar() const;    // one element everywhere
  };
  enum class Code : std::uint8_t {
    load,     // dst = value[view(t)]
    iota,     // dst = t / iota_stride % iota_dim
    random,   // dst = Threefry-2x32 bits of counter t under the key in `value`
    unary,    // dst = op(a)
    binary,   // dst = op(a, b)
    compare,  // dst = op(a, b) : bool, operands of src_dtype
    select,   // dst = a ? b : c
    cast,     // dst = (dtype) a, from src_dtype
    store,    // value[t] = a
    reduce    // reductions[reduction] op= a
  };
  struct Instr {
    Code code = Code::load;
    Op op = Op::add;
    DType dtype = DType::f32;      // the result's dtype (store, reduce: the value's)
    DType src_dtype = DType::f32;  // the operands' dtype (compare, cast)
    int dst = -1, a = -1, b = -1, c = -1;
    ValueId value = -1;  // load, store: the value in memory; random: its key
    View view;           // load
    std::int64_t iota_stride = 1, iota_dim = 1;
    int reduction = -1;  // reduce
  };
  // A reduction over its input's shape seen as extents, outermost first (size-1 axes
  // dropped, neighbours of one kind merged): kept extents index the result row-major,
  // reduced ones are combined. Row sums of [128, 10]: {128 kept, 10 reduced}.
  struct Extent {
    std::int64_t size = 1;
    bool reduced = false;
  };
  struct Reduction {
    Op op = Op::reduce_sum;
    DType dtype = DType::f32;
    ValueId result = 0;
    std::int64_t numel = 0;  // of the result
    std::vector<Extent> extents;
  };
  struct Sweep {
    std::int64_t numel = 0;   // the iteration domain: t in [0, numel)
    std::vector<Instr> code;  // loads and computations in order, then the stores
    int registers = 0;        // virtual registers defined
    std::vector<Reduction> reductions;
    std::vector<std::string> ops;  // the ops it computes, for describe()
  };
  std::vector<Sweep> sweeps;
};

// A node on its op's reference kernel (plain loops), with the reason the backend gives.
// An empty reason is a fallback the backend does not declare: tests treat it as a bug.
struct ReferenceSpec {
  ValueId node = 0;
  Op op = Op::add;
  std::string reason;
};

// A loop (scan, attrs.hpp): its body graph (in the nodes' ScanAttrs) runs once per step; a
// backend compiles the body as a graph of its own and runs it `length` times, the carries
// passed from step to step and each step's outputs stored by row. One kernel computes
// every node of the loop.
struct ScanSpec {
  ValueId node = 0;                                       // the loop's first node
  std::vector<ValueId> operands;                          // its inputs, in order
  std::vector<std::pair<std::int64_t, ValueId>> results;  // (result index, node)
};

// A sum over the processes of a communicator (all_reduce, collective.hpp): the input copied
// to the output (unless they share storage), summed there in place. A backend may start it
// and wait only before the first kernel reading its output, so that it runs while the
// kernels in between compute (a gradient bucket's sum during the rest of backward).
struct CollectiveSpec {
  ValueId node = 0;
  std::int64_t communicator = 0, bucket = 0;
  DType dtype = DType::f32;
  std::int64_t count = 0;
};

// New alternatives go last: backends switch on the index.
using Spec = std::variant<MatmulSpec, ConvSpec, PoolSpec, DirectSpec, FusedSpec, ReferenceSpec,
                          ScanSpec, CollectiveSpec, ConvPoolSpec>;

struct Kernel {
  Spec spec;
  std::vector<ValueId> inputs;       // values it reads that others compute or bind, each once
  std::vector<ValueId> outputs;      // values it writes that are read after it or returned
  std::vector<ValueId> temporaries;  // values it writes and reads itself alone (a sweep's
                                     // reduction that a later sweep reads)
  std::vector<ValueId> covered;      // every node it computes
  // (input, output): the output may take the input's storage, every element of the input
  // being read before the same element of the output is written (element-wise sweeps).
  std::vector<std::pair<ValueId, ValueId>> in_place;

  // "matmul", "convolution", "pooling", "direct", "fused", "reference", "scan", "collective",
  // "convolution+pooling"
  const char* kind() const;
  std::string describe(const Graph& graph) const;  // "matmul [128x784]·[784x128] + bias, relu"
};

// Where a value lives while a program runs.
struct Placement {
  enum class Kind : std::uint8_t {
    none,      // not computed (dead), or computed and consumed inside one kernel
    input,     // a graph parameter: the caller's tensor
    constant,  // the graph's own tensor
    arena,     // `offset` bytes into the executable's one arena
    output     // a graph output: a buffer of its own (output slot `index`)
  };
  Kind kind = Kind::none;
  std::int64_t offset = -1;  // arena
  int index = -1;            // input: parameter index; output: output slot
  // output: the parameter whose storage it takes when the caller donated that input and
  // nobody else holds it (an optimizer updating parameters in place); -1: none.
  int donor = -1;
};

struct Program {
  Graph graph;                       // the graph lowered
  std::vector<Kernel> kernels;       // in run order: every producer before its readers
  std::vector<Placement> placement;  // by value id
  // Liveness over kernel positions, the arena's size and each arena value's offset.
  MemoryPlan memory;
  int output_slots = 0;

  // Kernels whose spec is S.
  template <class S>
  std::vector<const S*> specs() const {
    std::vector<const S*> found;
    for (const Kernel& k : kernels)
      if (const S* s = std::get_if<S>(&k.spec)) found.push_back(s);
    return found;
  }
  // The kernel that computes `value` (covers it), or null.
  const Kernel* kernel_of(ValueId value) const;
  // The header, one line per kernel with where its outputs go, and the graph; `note`
  // adds a backend's words to kernel i's line (how it realises it).
  std::string describe(const std::function<std::string(std::size_t)>& note = {}) const;
};

}  // namespace glia
