"""One forward and one backward of the bench shape (B=1, H=32, n=8K, d=128, causal bf16), after a
warm-up, for Nsight Compute:
    ncu --clock-control none -k regex:relation_kl -c 2 python3 benchmarks/gpu/profile_relation_kl.py
"""

import math
import os

import torch

torch.ops.load_library(os.environ["LINEAR_ARD_LIBRARY"])
n, h, d = 8192, 32, 128
xt = torch.randn(1, h, n, d, device="cuda", dtype=torch.bfloat16)
xs = (xt.float() + 0.3 * torch.randn_like(xt, dtype=torch.float)).bfloat16()
s = 1 / math.sqrt(d)
for _ in range(2):
    kl, lse_s, lse_t = torch.ops.linear_ard.relation_kl(xs, None, xt, None, None, True, s, s)
    torch.ops.linear_ard.relation_kl_backward(torch.ones_like(kl), xs, None, xt, None, lse_s, lse_t, None, True, s, s)
torch.cuda.synchronize()
