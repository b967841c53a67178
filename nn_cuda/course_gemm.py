"""The course's fixed numbers for its GEMM test (grading mode 4), used by the grader and the benchmarks."""

#: (M, N, K) of the course's mode-4 products: the layers' GEMMs at H = 1000 and batch 800
COURSE_GEMM_SIZES = [(800, 1000, 784), (800, 10, 1000), (800, 100, 1000)]
#: the course's mode-4 product: C <- GEMM_ALPHA A B + GEMM_BETA C
GEMM_ALPHA, GEMM_BETA = 2.0, 5.0
