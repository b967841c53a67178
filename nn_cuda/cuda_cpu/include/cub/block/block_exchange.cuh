// <cub/block/block_exchange.cuh> on the CPU runner: the runner lacks this primitive of CUB's, which
// <cub/cub.cuh> declares so that a use of it, not this #include, stops the build at its line ("the
// CPU runner does not support cub::...").
#pragma once
#include "../cub.cuh"
