// texture_types.h of CUDA's toolkit: the texture and surface types are built into the CPU runner, and
// its functions stop the build at their use, in one line (device_functions.h): nothing to add here.
#pragma once
