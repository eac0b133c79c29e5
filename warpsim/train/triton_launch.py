"""What every launch of the networks' and the loss's Triton kernels passes Triton beside its grid and shapes."""

OPTIONS = {"enable_fp_fusion": True}
"""A product and a sum fused into one FMA instruction where the compiler finds them: as Triton up to 3.8 compiled
the kernels when left to its default, and as their GPU tests and timings ran. Triton 3.9 warns in every process that
leaves it unset, and 3.10 turns it off by default, which would round their float32 arithmetic otherwise. GAE's scan
keeps it off, as eager GAE computes (``discounted_scan``)."""
