"""Fusion: simplification passes, the roofline cost model, and the planner that groups IR nodes
into kernels (``pipeline.optimize``, ``pipeline.plan``; ``explain.format_plan`` prints a plan)."""
from .cost import Cost, DeviceSpec, from_properties, get_device_spec
from .explain import format_plan
from .kinds import GroupKind
from .pipeline import optimize, plan
from .plan import KernelGroup, Plan, Refusal

__all__ = ["Cost", "DeviceSpec", "GroupKind", "KernelGroup", "Plan", "Refusal", "format_plan",
           "from_properties", "get_device_spec", "optimize", "plan"]
