// device_double_functions.h of CUDA's toolkit declares what the CPU runner has built in (runtime.h and
// device_functions.h, which every CPU build includes first): nothing to add here.
#pragma once
