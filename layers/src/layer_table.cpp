// The table of built-in layer types for model_from_json: one row per type with its number
// of inputs and a function that reads the options (as the layer's config wrote them) and
// calls the layer's public builder.
#include "layer_table.hpp"

#include <functional>
#include <map>

#include "glia/layers.hpp"

namespace glia::detail {

namespace {

constexpr int kOneOrMore = -1;

using Inputs = std::vector<Model>;
struct LayerType {
  int inputs;  // the exact count, or kOneOrMore
  std::function<Model(const Inputs&, OptionReader&)> make;
};

DenseOptions dense_options(OptionReader& r) {
  DenseOptions o;
  o.activation = r.string("activation");
  o.use_bias = r.boolean("use_bias");
  o.kernel_initializer = r.initializer("kernel_initializer");
  o.bias_initializer = r.initializer("bias_initializer");
  return o;
}

RecurrentOptions recurrent_options(OptionReader& r) {
  RecurrentOptions o;
  o.activation = r.string("activation");
  o.recurrent_activation = r.string("recurrent_activation");
  o.use_bias = r.boolean("use_bias");
  o.kernel_initializer = r.initializer("kernel_initializer");
  o.recurrent_initializer = r.initializer("recurrent_initializer");
  o.bias_initializer = r.initializer("bias_initializer");
  o.return_sequences = r.boolean("return_sequences");
  o.reverse = r.boolean("reverse");
  o.unroll = r.boolean("unroll");
  return o;
}

// A recurrent layer's inputs: the sequence, the initial hidden and cell states given, and
// the mask last ("mask": true). Sets o.mask.
RecurrentState recurrent_inputs(Inputs in, OptionReader& r, RecurrentOptions& o) {
  if (r.has("mask") && r.boolean("mask")) {
    if (in.size() < 2) r.fail("mask", "is true, but the layer has no input for it");
    o.mask = in.back();
    in.pop_back();
  }
  RecurrentState s;
  if (in.size() > 1) s.hidden = in[1];
  if (in.size() > 2) s.cell = in[2];
  return s;
}

template <class Make>
LayerType recurrent_layer(Make make) {
  return {kOneOrMore, [make](const Inputs& in, OptionReader& r) {
            std::int64_t units = r.integer("units");
            RecurrentOptions o = recurrent_options(r);
            RecurrentState s = recurrent_inputs(in, r, o);
            return make(in[0], units, o, s);
          }};
}

ConvLayerOptions conv_options(OptionReader& r) {
  ConvLayerOptions o;
  o.kernel_size = r.integers("kernel_size");
  o.strides = r.integers("strides");
  o.padding = r.padding("padding");
  o.input_dilation = r.integers("input_dilation");
  o.kernel_dilation = r.integers("kernel_dilation");
  o.feature_groups = r.integer("feature_groups");
  o.channels = r.channels("channels");
  o.activation = r.string("activation");
  o.use_bias = r.boolean("use_bias");
  o.kernel_initializer = r.initializer("kernel_initializer");
  o.bias_initializer = r.initializer("bias_initializer");
  return o;
}

PoolOptions pool_options(OptionReader& r) {
  PoolOptions o;
  o.kernel_size = r.integers("kernel_size");
  o.strides = r.integers("strides");
  o.padding = r.padding("padding");
  o.window_dilation = r.integers("window_dilation");
  o.channels = r.channels("channels");
  o.norm = r.number("norm");
  return o;
}

AdaptivePoolOptions adaptive_options(OptionReader& r) {
  AdaptivePoolOptions o;
  o.output_size = r.integers("output_size");
  o.channels = r.channels("channels");
  o.norm = r.number("norm");
  return o;
}

GlobalPoolOptions global_options(OptionReader& r) {
  GlobalPoolOptions o;
  o.keep_axes = r.boolean("keep_axes");
  o.channels = r.channels("channels");
  o.norm = r.number("norm");
  return o;
}

NormOptions norm_options(OptionReader& r) {
  NormOptions o;
  o.axis = r.integer("axis");
  o.epsilon = r.number("epsilon");
  o.momentum = r.number("momentum");
  o.gamma_initializer = r.initializer("gamma_initializer");
  o.beta_initializer = r.initializer("beta_initializer");
  return o;
}

DropoutOptions dropout_options(OptionReader& r) { return {.rate = r.number("rate")}; }

// query, key, value, then the masks the config says were given, in that order.
Model attention_layer(const Inputs& in, OptionReader& r) {
  MultiHeadAttentionOptions o;
  std::int64_t num_heads = r.integer("num_heads");
  o.use_bias = r.boolean("use_bias");
  o.causal = r.boolean("causal");
  o.dropout = r.number("dropout");
  bool key_mask = r.boolean("key_mask"), attention_mask = r.boolean("attention_mask");
  o.kernel_initializer = r.initializer("kernel_initializer");
  o.bias_initializer = r.initializer("bias_initializer");
  std::size_t want = 3 + (key_mask ? 1 : 0) + (attention_mask ? 1 : 0);
  if (in.size() != want)
    throw Error(cat(r.where(), ": expected ", want, " inputs (query, key, value",
                    key_mask ? ", key_mask" : "", attention_mask ? ", attention_mask" : "",
                    "), got ", in.size()));
  if (key_mask) o.key_mask = in[3];
  if (attention_mask) o.attention_mask = in[want - 1];
  return multi_head_attention(in[0], in[1], in[2], num_heads, o);
}

// A row for a layer taking one input and an options struct read by `read`.
template <class Read, class Build>
LayerType unary(Read read, Build build) {
  return {1, [read, build](const Inputs& in, OptionReader& r) { return build(in[0], read(r)); }};
}

std::map<std::string, LayerType> make_table() {
  std::map<std::string, LayerType> t;
  t["dense"] = {1, [](const Inputs& in, OptionReader& r) {
                  return dense(in[0], r.integer("units"), dense_options(r));
                }};
  t["bilinear"] = {2, [](const Inputs& in, OptionReader& r) {
                     return bilinear(in[0], in[1], r.integer("units"), dense_options(r));
                   }};
  t["embedding"] = {1, [](const Inputs& in, OptionReader& r) {
                      EmbeddingOptions o{.kernel_initializer = r.initializer("kernel_initializer")};
                      return embedding(in[0], r.integer("vocab_size"), r.integer("embedding_size"),
                                       o);
                    }};
  t["bias"] = {1, [](const Inputs& in, OptionReader& r) {
                 return bias(in[0], {.bias_initializer = r.initializer("bias_initializer")});
               }};
  t["lstm"] = recurrent_layer([](auto&&... a) { return lstm(a...); });
  t["gru"] = recurrent_layer([](auto&&... a) { return gru(a...); });
  t["conv_lstm"] = {kOneOrMore, [](const Inputs& in, OptionReader& r) {
                      ConvLstmOptions o{.kernel_size = r.integers("kernel_size"),
                                        .strides = r.integers("strides"),
                                        .padding = r.padding("padding")};
                      std::int64_t filters = r.integer("filters");
                      o.recurrent = recurrent_options(r);
                      RecurrentState s = recurrent_inputs(in, r, o.recurrent);
                      return conv_lstm(in[0], filters, o, s);
                    }};
  t["mask"] = {
      1, [](const Inputs& in, OptionReader& r) { return mask(in[0], r.number("pad_value")); }};
  t["layer_output"] = {
      1, [](const Inputs& in, OptionReader& r) { return layer_output(in[0], r.string("output")); }};
  t["conv"] = {1, [](const Inputs& in, OptionReader& r) {
                 return conv(in[0], r.integer("filters"), conv_options(r));
               }};
  t["conv_transpose"] = {1, [](const Inputs& in, OptionReader& r) {
                           return conv_transpose(in[0], r.integer("filters"), conv_options(r));
                         }};
  t["depthwise_conv"] = {1, [](const Inputs& in, OptionReader& r) {
                           return depthwise_conv(in[0], r.integer("channel_multiplier"),
                                                 conv_options(r));
                         }};
  t["separable_conv2d"] = {1, [](const Inputs& in, OptionReader& r) {
                             return separable_conv2d(in[0], r.integer("filters"),
                                                     r.integer("channel_multiplier"),
                                                     conv_options(r));
                           }};
  t["separable_conv3d"] = {1, [](const Inputs& in, OptionReader& r) {
                             return separable_conv3d(in[0], r.integer("filters"),
                                                     r.integer("channel_multiplier"),
                                                     conv_options(r));
                           }};
  t["multi_head_attention"] = {kOneOrMore, attention_layer};
  for (const std::string& name : activations::names())
    t[name] = {1, [name](const Inputs& in, OptionReader&) { return activation(in[0], name); }};

  t["dropout"] = unary(dropout_options, [](const Model& x, auto o) { return dropout(x, o); });
  t["alpha_dropout"] =
      unary(dropout_options, [](const Model& x, auto o) { return alpha_dropout(x, o); });
  t["feature_alpha_dropout"] =
      unary(dropout_options, [](const Model& x, auto o) { return feature_alpha_dropout(x, o); });
  t["spatial_dropout"] =
      unary(dropout_options, [](const Model& x, auto o) { return spatial_dropout(x, o); });

  t["max_pool"] = unary(pool_options, [](const Model& x, auto o) { return max_pool(x, o); });
  t["avg_pool"] = unary(pool_options, [](const Model& x, auto o) { return avg_pool(x, o); });
  t["lp_pool"] = unary(pool_options, [](const Model& x, auto o) { return lp_pool(x, o); });
  t["adaptive_avg_pool"] =
      unary(adaptive_options, [](const Model& x, auto o) { return adaptive_avg_pool(x, o); });
  t["adaptive_max_pool"] =
      unary(adaptive_options, [](const Model& x, auto o) { return adaptive_max_pool(x, o); });
  t["adaptive_lp_pool"] =
      unary(adaptive_options, [](const Model& x, auto o) { return adaptive_lp_pool(x, o); });
  t["global_avg_pool"] =
      unary(global_options, [](const Model& x, auto o) { return global_avg_pool(x, o); });
  t["global_max_pool"] =
      unary(global_options, [](const Model& x, auto o) { return global_max_pool(x, o); });
  t["global_lp_pool"] =
      unary(global_options, [](const Model& x, auto o) { return global_lp_pool(x, o); });

  t["batch_norm"] = unary(norm_options, [](const Model& x, auto o) { return batch_norm(x, o); });
  t["instance_norm"] =
      unary(norm_options, [](const Model& x, auto o) { return instance_norm(x, o); });
  t["layer_norm"] = unary(norm_options, [](const Model& x, auto o) { return layer_norm(x, o); });
  t["rms_norm"] = unary(norm_options, [](const Model& x, auto o) { return rms_norm(x, o); });
  t["group_norm"] = {1, [](const Inputs& in, OptionReader& r) {
                       return group_norm(in[0], r.integer("num_groups"), norm_options(r));
                     }};

  t["flatten"] = {1, [](const Inputs& in, OptionReader&) { return flatten(in[0]); }};
  t["reshape"] = {
      1, [](const Inputs& in, OptionReader& r) { return reshape(in[0], r.integers("shape")); }};
  t["transpose"] = {
      1, [](const Inputs& in, OptionReader& r) { return transpose(in[0], r.integers("perm")); }};
  t["pad"] = {1, [](const Inputs& in, OptionReader& r) {
                return pad(in[0], r.pairs("padding"), r.number("value"));
              }};
  t["resize"] = {1, [](const Inputs& in, OptionReader& r) {
                   ResizeOptions o{.method = r.string("method"),
                                   .channels = r.channels("channels")};
                   return resize(in[0], r.integers("size"), o);
                 }};

  t["concatenate"] = {kOneOrMore, [](const Inputs& in, OptionReader& r) {
                        return concatenate(in, r.integer("axis"));
                      }};
  t["add"] = {kOneOrMore, [](const Inputs& in, OptionReader&) { return add(in); }};
  t["multiply"] = {kOneOrMore, [](const Inputs& in, OptionReader&) { return multiply(in); }};
  t["subtract"] = {2, [](const Inputs& in, OptionReader&) { return subtract(in[0], in[1]); }};
  t["split"] = {1, [](const Inputs& in, OptionReader& r) {
                  std::int64_t parts = r.integer("parts"), part = r.integer("part");
                  std::vector<Model> all = split(in[0], parts, r.integer("axis"));
                  if (part < 0 || part >= parts)
                    r.fail("part", cat("must be in [0, ", parts, "), got ", part));
                  return all[static_cast<std::size_t>(part)];
                }};
  t["constant"] = {0, [](const Inputs&, OptionReader& r) {
                     return constant(r.tensor("value"), CombineOptions{});
                   }};
  return t;
}

}  // namespace

Model rebuild_layer(const std::string& type, const std::vector<Model>& inputs,
                    OptionReader& options, const std::string& where) {
  static const std::map<std::string, LayerType> kTable = make_table();
  auto it = kTable.find(type);
  check(it != kTable.end(), where, ": unknown layer type '", type, "'");
  const int want = it->second.inputs;
  const auto got = static_cast<int>(inputs.size());
  check(want == kOneOrMore ? got >= 1 : got == want, where, ": expected ",
        want == kOneOrMore ? "at least 1" : std::to_string(want), " input(s), got ", got);
  try {
    Model m = it->second.make(inputs, options);
    options.finish();
    return m;
  } catch (const Error& e) {
    // The builders' own checks ("dense: units must be positive") get the layer's name too.
    std::string_view what = e.what();
    if (what.substr(0, where.size()) == where) throw;
    throw Error(cat(where, ": ", what));
  }
}

}  // namespace glia::detail
