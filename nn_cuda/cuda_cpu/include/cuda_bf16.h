// Not provided by the CPU runner: including it stops the build naming what is missing.
#pragma once
#error "the CPU runner does not support bfloat16 (__nv_bfloat16; cuda_bf16.h)"
