// Not provided by the CPU runner: including it stops the build naming what is missing.
#pragma once
#error "the CPU runner does not support half precision (__half, __half2; cuda_fp16.h)"
