"""Runtime: compile plans for a device, launch kernels, cache compiled code."""
