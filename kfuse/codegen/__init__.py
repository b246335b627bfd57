"""Code generation: KernelIR, lowering of fusion groups, and the per-backend emitters."""
