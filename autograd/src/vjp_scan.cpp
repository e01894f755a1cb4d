// Reverse mode through scan. For a forward loop c[t+1], y[t] = body(c[t], x[t], w), the
// backward loop runs the other way with the carries' cotangents a[t+1] and the constants'
// gradient sums as its carries:
//   a[t], dx[t], dw[t] = vjp of body at (c[t], x[t], w) applied to (a[t+1], dy[t])
//   a[t] += the cotangent of the stored carry c[t] (when that result is used)
//   acc += dw[t]
// A constant whose per-step gradient is one matrix product a[t] . b[t] (a recurrent
// kernel's) is not summed in the loop: the loop gives a[t] and b[t], and one product over
// the stacked steps after it sums them (one large GEMM in place of one small one a step).
// It reads the forward loop's stored carries c[t] and step outputs (its trace results,
// computed by the same loop) and recomputes each step's other intermediates. It is itself a scan,
// so it differentiates again (second order, nested loops).
#include <algorithm>
#include <map>

#include "glia/autograd/grad.hpp"
#include "scan_vjp.hpp"
#include "vjp_rules.hpp"

namespace glia::detail {

ScanGroups::ScanGroups(const Graph& g, std::size_t end) {
  for (std::size_t i = 0; i < end; ++i) {
    const Node& n = g.nodes()[i];
    if (n.op != Op::scan) continue;
    auto it = std::find_if(groups_.begin(), groups_.end(),
                           [&](const auto& e) { return same_loop(g.node(e.first), n); });
    if (it == groups_.end())
      groups_[static_cast<ValueId>(i)] = {static_cast<ValueId>(i)};
    else
      it->second.push_back(static_cast<ValueId>(i));
  }
}

const std::vector<ValueId>* ScanGroups::at_first(ValueId id) const {
  auto it = groups_.find(id);
  return it == groups_.end() ? nullptr : &it->second;
}

namespace {

Expr plus(const Expr& a, const Expr& b) {
  if (!a.defined()) return b;
  return b.defined() ? add(a, b) : a;
}

}  // namespace

std::vector<Expr> scan_vjp(Graph& g, ValueId loop, const std::vector<std::pair<ValueId, Expr>>& cts,
                           const std::vector<bool>& wanted) {
  TraceScope scope(g);
  const Node node = g.node(loop);  // a copy: the graph grows below
  const auto& a = std::get<ScanAttrs>(node.attrs);
  const Graph& body = *a.body;
  const auto n = node.inputs.size(), k = static_cast<std::size_t>(a.carries),
             m = static_cast<std::size_t>(a.sequences), p = n - k - m;
  const std::size_t q = body.outputs().size() - k;
  std::vector<Expr> inputs;
  for (ValueId in : node.inputs) inputs.emplace_back(&g, in);

  // The cotangent of every result (undefined: unused).
  std::vector<Expr> rct(2 * k + q);
  for (const auto& [v, ct] : cts) {
    auto r = static_cast<std::size_t>(std::get<ScanAttrs>(g.node(v).attrs).result);
    rct[r] = plus(rct[r], ct);
  }
  auto is_f = [&](std::size_t i) { return is_float(inputs[i].dtype()); };
  std::vector<std::size_t> fc, gy, gs, dxs, dws;  // float carries, used outputs, ..., wanted
  for (std::size_t j = 0; j < k; ++j)
    if (is_f(j)) fc.push_back(j);
  for (std::size_t j = 0; j < q; ++j)
    if (rct[k + j].defined()) gy.push_back(j);
  for (std::size_t j : fc)
    if (rct[k + q + j].defined()) gs.push_back(j);
  for (std::size_t j = 0; j < m; ++j)
    if (wanted[k + j] && is_f(k + j)) dxs.push_back(j);
  for (std::size_t j = 0; j < p; ++j)
    if (wanted[k + m + j] && is_f(k + m + j)) dws.push_back(j);

  // Results of the forward loop, its existing nodes where the trace has them (so that no
  // equal node is made twice).
  std::map<std::int64_t, ValueId> existing;
  for (std::int64_t i = 0; i < g.size(); ++i) {
    const Node& other = g.nodes()[static_cast<std::size_t>(i)];
    if (same_loop(other, node))
      existing.emplace(std::get<ScanAttrs>(other.attrs).result, static_cast<ValueId>(i));
  }
  auto forward_result = [&](std::size_t r) {
    auto it = existing.find(static_cast<std::int64_t>(r));
    return it != existing.end() ? Expr(&g, it->second)
                                : scan_result(inputs, a, static_cast<std::int64_t>(r));
  };

  // The carries each step received, from the forward loop itself.
  std::vector<Expr> seqs, consts(inputs.begin() + std::ptrdiff_t(k + m), inputs.end());
  for (std::size_t j = 0; j < k; ++j) seqs.push_back(forward_result(k + q + j));
  seqs.insert(seqs.end(), inputs.begin() + std::ptrdiff_t(k),
              inputs.begin() + std::ptrdiff_t(k + m));
  for (std::size_t j : gy) seqs.push_back(rct[k + j]);
  for (std::size_t j : gs) seqs.push_back(rct[k + q + j]);
  // The body's step outputs are stored by the forward loop: the backward loop reads them
  // instead of recomputing them (an lstm outputs its gate pre-activations for this, which
  // spares the recurrent product). Their gradient still flows into the recomputed values,
  // whose results nobody reads, so compiling drops that computation.
  std::map<ValueId, std::size_t> stored_row;  // body value -> its row in `row`
  for (std::size_t j = 0; j < q; ++j) {
    ValueId v = body.outputs()[k + j];
    if (body.node(v).op == Op::parameter || stored_row.count(v) != 0) continue;
    stored_row[v] = seqs.size();
    seqs.push_back(forward_result(k + j));
  }

  // A constant's gradient is the sum over the steps of its per-step gradient. Where that is
  // one matrix product a[t] . b[t] (a recurrent kernel's h[t]^T . dz[t]), the loop gives
  // a and b per step and one product over the stacked steps sums them after the loop;
  // otherwise the loop carries the running sum. `split[i]` says which for dws[i].
  std::vector<bool> split(dws.size(), false);
  bool probing = false;  // the trial trace: sets `split`
  std::vector<DotAttrs> products(dws.size());
  auto backward = [&](const std::vector<Expr>& carry, const std::vector<Expr>& row,
                      const std::vector<Expr>& w) {
    std::vector<Expr> args(row.begin(), row.begin() + std::ptrdiff_t(k + m));
    args.insert(args.end(), w.begin(), w.end());
    std::vector<Expr> outs = call(body, args, [&](ValueId v, const Expr& copy) {
      auto it = stored_row.find(v);
      if (it == stored_row.end()) return copy;
      return custom_grad(row[it->second], {copy},
                         [](const Expr& ct) { return std::vector<Expr>{ct}; });
    });
    std::vector<Expr> seeds(outs.size());
    for (std::size_t i = 0; i < fc.size(); ++i) seeds[fc[i]] = carry[i];
    for (std::size_t i = 0; i < gy.size(); ++i) seeds[k + gy[i]] = row[k + m + i];
    std::vector<Expr> wrt;
    for (std::size_t j : fc) wrt.push_back(args[j]);
    for (std::size_t j : dxs) wrt.push_back(args[k + j]);
    for (std::size_t j : dws) wrt.push_back(args[k + m + j]);
    std::vector<Expr> grads = vjp(outs, seeds, wrt);
    ScanResult r;
    for (std::size_t i = 0; i < fc.size(); ++i) {
      Expr c = grads[i];
      auto s = std::find(gs.begin(), gs.end(), fc[i]);
      if (s != gs.end()) c = add(c, row[k + m + gy.size() + std::size_t(s - gs.begin())]);
      r.carries.push_back(c);
    }
    std::size_t carried = fc.size();
    for (std::size_t i = 0; i < dws.size(); ++i) {
      const Expr& gw = grads[fc.size() + dxs.size() + i];
      const Node& n = gw.graph()->node(gw.id());
      if (probing) {  // is it one product without batch axes?
        const auto* d = std::get_if<DotAttrs>(&n.attrs);
        split[i] = n.op == Op::dot_general && d->lhs_batch.empty() && d->rhs_batch.empty();
        if (split[i]) products[i] = *d;
      }
      if (split[i] && !probing) {
        r.outputs.emplace_back(gw.graph(), n.inputs[0]);
        r.outputs.emplace_back(gw.graph(), n.inputs[1]);
      } else {
        r.carries.push_back(add(carry[carried++], gw));
      }
    }
    for (std::size_t i = 0; i < dxs.size(); ++i) r.outputs.push_back(grads[fc.size() + i]);
    return r;
  };
  std::vector<Expr> result(n);
  if (fc.empty() && gy.empty()) return result;  // no cotangent enters the loop

  std::vector<Expr> init;
  for (std::size_t j : fc) init.push_back(rct[j].defined() ? rct[j] : zeros_like(inputs[j]));
  if (!dws.empty()) {  // a trial trace of the step decides `split`
    std::vector<TensorType> types;
    for (const Expr& c : init) types.push_back(c.type());
    for (std::size_t j : dws) types.push_back(inputs[k + m + j].type());
    for (const Expr& sq : seqs) {
      Ints dims = sq.shape().dims();
      dims.erase(dims.begin());
      types.push_back({sq.dtype(), Shape(dims)});
    }
    for (const Expr& c : consts) types.push_back(c.type());
    const std::size_t nc = init.size() + dws.size(), ns = seqs.size();
    probing = true;
    trace(
        [&](const std::vector<Expr>& in) {
          auto at = [&](std::size_t b, std::size_t e) {
            return std::vector<Expr>(in.begin() + std::ptrdiff_t(b),
                                     in.begin() + std::ptrdiff_t(e));
          };
          ScanResult r = backward(at(0, nc), at(nc, nc + ns), at(nc + ns, in.size()));
          std::vector<Expr> all = r.carries;
          all.insert(all.end(), r.outputs.begin(), r.outputs.end());
          return all;
        },
        types, "scan_vjp_probe");
    probing = false;
  }
  for (std::size_t i = 0; i < dws.size(); ++i)
    if (!split[i]) init.push_back(zeros_like(inputs[k + m + dws[i]]));
  ScanOptions options{!a.reverse, a.length, body.name() + "_grad"};
  ScanResult r = scan(backward, init, seqs, consts, options);
  for (std::size_t i = 0; i < fc.size(); ++i) result[fc[i]] = r.carries[i];
  std::size_t carried = fc.size(), out = 0;
  for (std::size_t i = 0; i < dws.size(); ++i) {
    if (!split[i]) {
      result[k + m + dws[i]] = r.carries[carried++];
      continue;
    }
    // Sum over the steps: the stacked axis 0 contracted too.
    const DotAttrs& d = products[i];
    Ints lc{0}, rc{0};
    for (std::int64_t c : d.lhs_contract) lc.push_back(c + 1);
    for (std::int64_t c : d.rhs_contract) rc.push_back(c + 1);
    result[k + m + dws[i]] = dot_general(r.outputs[out], r.outputs[out + 1], lc, rc);
    out += 2;
  }
  for (std::size_t i = 0; i < dxs.size(); ++i) result[k + dxs[i]] = r.outputs[out + i];
  return result;
}

namespace {

// The rule for one scan node alone (grad differentiates a loop's nodes together).
std::vector<Expr> vjp_scan_node(const VjpArgs& args) {
  Graph& g = *args.output.graph();
  std::vector<bool> wanted(args.inputs.size(), true);
  return scan_vjp(g, args.output.id(), {{args.output.id(), args.cotangent}}, wanted);
}

}  // namespace

void add_control_vjps(VjpTable& t) { set_vjp(t, Op::scan, &vjp_scan_node); }

}  // namespace glia::detail
