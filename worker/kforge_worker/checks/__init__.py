"""Whether a candidate's result can be believed: static checks of its source (static_checks, run in a
child within static_limits), what its process did while it ran (runtime_checks, gathered there;
reference_checks, judged in the reference), the output check (compare) with its calibration against
null kernels (calibration) and the float64 audit (precision), the speed of light (sol, with the elementwise arithmetic it counts in pointwise_cost), the memory a
call holds (memory_estimate), and the reference's defences in one place (guard).

May import: common, backends, exchange, measure.
"""
