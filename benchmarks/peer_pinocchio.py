"""Peer: Pinocchio (https://github.com/stack-of-tasks/pinocchio, PyPI package ``pin``).

Builds the serial chains of benchmarks/models.py as a ``pinocchio.Model`` and evaluates the
forward dynamics with the articulated-body algorithm ``pin.aba`` (Featherstone 2008, Rigid
Body Dynamics Algorithms, ch. 7), called from Python: each call pays pybind/eigenpy's
argument conversion (about 1 us on this machine), which is part of the reported time.
"""

from __future__ import annotations

import numpy as np

from models import GRAVITY, Link


def version() -> str:
    import pinocchio as pin

    return pin.__version__


def chain(links: list[Link]):
    """(model, data) of the serial chain ``links``: joint k is a revolute joint about the link
    frame's z or y at ``offset`` in link k - 1's frame; body inertia about the COM."""
    import pinocchio as pin

    model = pin.Model()
    model.gravity.linear = GRAVITY
    joint = {"z": pin.JointModelRZ, "y": pin.JointModelRY}
    parent = 0
    for k, lk in enumerate(links):
        placement = pin.SE3(np.eye(3), np.asarray(lk.offset, dtype=float))
        parent = model.addJoint(parent, joint[lk.axis](), placement, f"j{k}")
        model.appendBodyToJoint(parent, pin.Inertia(lk.mass, np.asarray(lk.com, dtype=float),
                                                    np.diag(lk.inertia)), pin.SE3.Identity())
    return model, model.createData()


def chain_rhs(links: list[Link], q: np.ndarray, qd: np.ndarray):
    """A closure that runs one ``pin.aba`` at (q, qd, tau = 0) and returns the accelerations
    [rad/s^2] (a view of data.ddq)."""
    import pinocchio as pin

    model, data = chain(links)
    q, qd, tau = np.array(q, dtype=float), np.array(qd, dtype=float), np.zeros(len(links))

    def call() -> np.ndarray:
        return pin.aba(model, data, q, qd, tau)

    call.keep_alive = (model, data)
    return call
