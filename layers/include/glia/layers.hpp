// glia layers: the model builder (Axon's API), initializers, build -> {init, predict},
// summary and graph drawing.
#pragma once

#include "glia/layers/activation.hpp"
#include "glia/layers/build.hpp"
#include "glia/layers/combine.hpp"
#include "glia/layers/display.hpp"
#include "glia/layers/linear.hpp"
#include "glia/layers/model.hpp"
#include "glia/layers/shaping.hpp"
