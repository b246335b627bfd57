"""NumPy-style attention functions the attention tests share (plan, runtime views, GPU): the
softmax as users write it, and attention over it in the layouts the tests check."""
import math

import numpy as np


def softmax(s):
    s = s - s.max(-1, keepdims=True)
    p = np.exp(s)
    return p / p.sum(-1, keepdims=True)


def plain(q, k, v):
    return softmax(q @ np.swapaxes(k, -1, -2) * (1.0 / math.sqrt(q.shape[-1]))) @ v


def bshd(q, k, v):          # PyTorch's layout (B, S, H, D), heads moved forward for the products
    q, k, v = (np.transpose(x, (0, 2, 1, 3)) for x in (q, k, v))
    return plain(q, k, v)
