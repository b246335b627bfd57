"""The probe, functions 0, 2, 4... of ``user_fns.CASES``: ``probe_checks`` says what is
checked (NumPy's results on the CPU backend; CUDA C compiled by NVRTC)."""
import pytest

from probe_checks import check_cuda_kernels_compile, check_matches_numpy, params


@pytest.mark.parametrize("name", params(0))
def test_matches_numpy(name):
    check_matches_numpy(name)


@pytest.mark.parametrize("name", params(0))
def test_cuda_kernels_compile(name):
    check_cuda_kernels_compile(name)
