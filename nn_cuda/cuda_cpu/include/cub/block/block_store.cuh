// <cub/block/block_store.cuh> on the CPU runner: the direct blocked and striped loads and stores, which
// <cub/cub.cuh> holds (CUB's examples include this header for them); cub::BlockStore stops the build at
// its use, saying so.
#pragma once
#include "../cub.cuh"
