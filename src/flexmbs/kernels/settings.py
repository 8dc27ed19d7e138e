"""How numba compiles the kernels: the two settings every kernel module decorates with.

JIT: the entry points, functions that Python calls with the System and Workspace boxes
(kernels/structs.py; kernels/entry.py for kernels that other kernels call too): compiled with
numba's runtime (NRT), which takes a reference on a box passed in and releases it after the
call. KERNEL: everything else, compiled without the runtime: reading an array field of a box
then costs no reference count. With the runtime every such read took an atomic increment and
decrement, 33 % of the double pendulum's right-hand side (perf, issue 11).

The rule: KERNEL functions must not allocate (the workspace holds all scratch) and must not
call JIT functions, i.e. kernels never call entry points (numba would compile those without the
runtime too, and a call from Python would then keep a reference on the boxes).
"""

JIT = dict(cache=True, nogil=True, fastmath=False)
KERNEL = dict(JIT, _nrt=False)
