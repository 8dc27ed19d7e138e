"""How numba compiles the kernels: the two settings every kernel module decorates with.

JIT: the entry points, functions that Python calls with the System and Workspace boxes
(kernels/structs.py; kernels/entry.py for kernels that other kernels call too): compiled with
numba's runtime (NRT), which takes a reference on a box passed in and releases it after the
call. KERNEL: everything else, compiled without the runtime: reading an array field of a box
then costs no reference count. With the runtime every such read took an atomic increment and
decrement, 33 % of the double pendulum's right-hand side (perf, issue 11).

KERNEL functions are decorated with `kernel` (numba's njit with these options and calls typed
on plain types, so that a constant argument compiles no specialisation of its own).

The rule: KERNEL functions must not allocate (the workspace holds all scratch) and must not
call JIT functions, i.e. kernels never call entry points (numba would compile those without the
runtime too, and a call from Python would then keep a reference on the boxes).
"""

from numba import types
from numba.core.registry import CPUDispatcher

JIT = dict(cache=True, nogil=True, fastmath=False)
KERNEL = dict(JIT, _nrt=False)


class _Kernel(CPUDispatcher):
    """The dispatcher of a KERNEL function (`kernel`): it types a call on the arguments' plain
    types. numba types a constant argument (a row index, a flag) as a literal and would compile
    one specialisation per value, each holding the object code of all it calls (issue 25: 17
    of one three-line kernel, 12 of another, for one model)."""

    def get_call_template(self, args, kws):
        return super().get_call_template(tuple(types.unliteral(a) for a in args),
                                         {k: types.unliteral(v) for k, v in kws.items()})


def kernel(fn=None, *, inline: bool = False, reassoc: bool = False):
    """njit(**KERNEL) with calls typed on plain types (_Kernel). inline=True: numba inlines the
    function into every caller (numba's inline='always'), for a kernel that takes many arrays:
    a call passes every field of every array argument (nine values for a 2-D array), which can
    cost more than the body does. reassoc=True: LLVM may reorder its sums (the fast-math flag
    reassoc alone), which it needs to vectorise a sum over an array: a sum's rounding then
    depends on the order LLVM picks (terms that cancel may do so in another order), and NaN
    and infinity keep their meaning (no nnan, ninf). The kernels it inlines compile with the
    same flag: use it on kernels of sums of well-scaled terms only."""
    if fn is None:
        return lambda f: kernel(f, inline=inline, reassoc=reassoc)
    options = {k: v for k, v in KERNEL.items() if k != "cache"}
    if inline:
        options["inline"] = "always"
    if reassoc:
        options["fastmath"] = {"reassoc"}
    dispatcher = _Kernel(py_func=fn, locals={}, targetoptions={**options, "nopython": True})
    dispatcher.enable_caching()
    return dispatcher
