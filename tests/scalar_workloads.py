"""Workloads with host scalar arguments that the scalar tests share: Adam as users write it (Python
float ``lr``, Python int step ``t``) and the kv-cache write ``cache[:, t] = k``."""
import numpy as np


def adam(p, g, m, v, lr, t):
    b1, b2, eps = 0.9, 0.999, 1e-8
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    mhat = m / (1 - b1 ** t)
    vhat = v / (1 - b2 ** t)
    return p - lr * mhat / (np.sqrt(vhat) + eps), m, v


def kv(cache, k, t):
    cache[:, t] = k
