// Not provided by the CPU runner: including it stops the build naming what is missing.
#pragma once
#error "the CPU runner does not support cuRAND's device random numbers (curand_kernel.h)"
