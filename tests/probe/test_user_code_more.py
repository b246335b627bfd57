"""The probe, functions 1, 3, 5... of ``user_fns.CASES`` (two files: CI's workers share
them): ``probe_checks`` says what is checked (NumPy's results on the CPU backend; CUDA C compiled
by NVRTC)."""
from probe_checks import make_tests

test_matches_numpy, test_cuda_kernels_compile = make_tests(1)
