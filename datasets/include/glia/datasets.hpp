// glia datasets: file readers (IDX) and batching.
#pragma once

#include "glia/datasets/dataset.hpp"
#include "glia/datasets/idx.hpp"
