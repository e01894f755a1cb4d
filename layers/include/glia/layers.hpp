// glia layers: the model builder (Axon's API), initializers, build -> {init, predict},
// summary and graph drawing, the architecture as JSON.
#pragma once

#include "glia/layers/activation.hpp"
#include "glia/layers/attention.hpp"
#include "glia/layers/build.hpp"
#include "glia/layers/combine.hpp"
#include "glia/layers/convolution.hpp"
#include "glia/layers/display.hpp"
#include "glia/layers/dropout.hpp"
#include "glia/layers/export.hpp"
#include "glia/layers/initializers.hpp"
#include "glia/layers/linear.hpp"
#include "glia/layers/model.hpp"
#include "glia/layers/normalization.hpp"
#include "glia/layers/pooling.hpp"
#include "glia/layers/recurrent.hpp"
#include "glia/layers/serialize.hpp"
#include "glia/layers/shaping.hpp"
