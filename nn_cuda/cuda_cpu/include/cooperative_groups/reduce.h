// cg::reduce: with the rest of cooperative groups in ../cooperative_groups.h on the CPU runner.
#pragma once
#include "../cooperative_groups.h"
