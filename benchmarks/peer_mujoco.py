"""Peer: MuJoCo (https://github.com/google-deepmind/mujoco, PyPI package ``mujoco``).

The serial chains of benchmarks/models.py (the double pendulum and the ``chain_rhs`` chains)
written as MJCF: nested bodies with hinge joints, explicit inertials, no geometry and the
contact and constraint stages switched off, no damping or armature, so that the equations are
exactly the rigid-body ones the other codes solve.

* ``chain_rhs``: one ``mj_forward`` from Python (positions, velocities, accelerations:
  composite-rigid-body mass matrix, its sparse factorisation, recursive Newton-Euler bias
  forces); each call pays the pybind11 overhead (well under 1 us).
* ``double_pendulum_case``: ``integrator="RK4"`` with a fixed ``timestep``, stepped by
  ``mujoco.rollout`` (the stepping loop runs in C, so no Python overhead per step).
"""

from __future__ import annotations

import numpy as np

from models import GRAVITY, Link


def version() -> str:
    import mujoco

    return mujoco.__version__


def mjcf(links: list[Link], timestep: float = 1e-3, integrator: str = "RK4") -> str:
    """The MJCF text of the serial chain ``links``."""
    axis = {"z": "0 0 1", "y": "0 1 0"}

    def vec(v) -> str:
        return " ".join(f"{x:.17g}" for x in v)

    body = ""
    for k, lk in reversed(list(enumerate(links))):
        body = (f'<body name="link{k}" pos="{vec(lk.offset)}">'
                f'<joint name="j{k}" type="hinge" axis="{axis[lk.axis]}"/>'
                f'<inertial pos="{vec(lk.com)}" mass="{lk.mass:.17g}" '
                f'diaginertia="{vec(lk.inertia)}"/>{body}</body>')
    return (f'<mujoco model="chain"><option timestep="{timestep:.17g}" integrator="{integrator}" '
            f'gravity="{vec(GRAVITY)}"><flag contact="disable" constraint="disable"/>'
            f'</option>'
            f'<worldbody>{body}</worldbody></mujoco>')


def load(links: list[Link], **kw):
    """(MjModel, MjData) of the chain; checks that MuJoCo kept the masses and inertias (it
    silently rebalances inertias that violate its bounds)."""
    import mujoco

    m = mujoco.MjModel.from_xml_string(mjcf(links, **kw))
    for k, lk in enumerate(links):
        b = m.body(f"link{k}")
        assert abs(b.mass[0] - lk.mass) < 1e-12 and np.allclose(b.inertia, lk.inertia, atol=1e-14)
    return m, mujoco.MjData(m)


def chain_rhs(links: list[Link], q: np.ndarray, qd: np.ndarray):
    """A closure that runs one ``mj_forward`` at (q, qd) and returns the accelerations
    [rad/s^2] (a view of data.qacc)."""
    import mujoco

    m, d = load(links)
    d.qpos[:] = q
    d.qvel[:] = qd
    forward, qacc = mujoco.mj_forward, d.qacc

    def call() -> np.ndarray:
        forward(m, d)
        return qacc

    call.keep_alive = (m, d)
    return call


def double_pendulum_case(links: list[Link], t_end: float, h: float):
    """(solve, collect) for the chain ``links`` released from rest at q = 0, RK4 with step h.
    ``solve()`` is one ``mujoco.rollout.rollout`` of t_end / h steps from the initial state
    (the timed part); ``collect()`` returns the times [s] and joint angles [rad] after every
    step of the last solve, starting with t = 0."""
    import mujoco
    from mujoco import rollout

    m, d = load(links, timestep=h, integrator="RK4")
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    nstep = int(round(t_end / h))
    size = mujoco.mj_stateSize(m, spec)
    x0 = np.zeros((1, size))
    mujoco.mj_getState(m, d, x0[0], spec)
    state = np.zeros((1, nstep, size))
    out = {}

    def solve() -> None:
        rollout.rollout(m, d, x0, nstep=nstep, state=state)

    def collect() -> dict:
        t = np.concatenate([[0.0], state[0, :, 0]])    # the full-physics state starts with time
        q = np.vstack([np.zeros(m.nq), state[0, :, 1:1 + m.nq]])
        out.update(t=t, q=q)
        return out

    solve.keep_alive = (m, d)
    return solve, collect
