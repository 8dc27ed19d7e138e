"""Mechanisms built with the Python API for the tests (independent of the YAML model files)."""

from __future__ import annotations

import numpy as np

from flexmbs.model import (Body, Damping, Drive, Joint, Marker, Material, Model, Profile, Section, Sensor,
                           Solver)

# Huang's aluminium link (Huang 1998 Table 3.1)
LINK2 = dict(length=1.02, rho=2770.0, E=0.69e11, G=0.26e11, width=0.0127, thickness=0.0016)


def compound_pendulum(m: float = 2.0, d: float = 0.4, Ic: float = 0.05, q0: float = 0.0) -> Model:
    """Rigid body hinged about z at the origin, COM at distance d along body x, gravity -y."""
    body = Body("bar", mass=m, com=(d, 0, 0), inertia=(Ic / 10, Ic, Ic), markers=[Marker("pivot")])
    joint = Joint("hinge", "revolute", "ground", "origin", "bar", "pivot", axis=(0, 0, 1), q0=(q0,))
    return Model("compound_pendulum", gravity=(0, -9.81, 0), bodies=[body], joints=[joint])


def double_pendulum(L: float = 1.0, m: float = 1.0) -> Model:
    """Two uniform links of length L, mass m, revolute about z, released horizontal; gravity -y."""
    inertia = (m * L**2 / 1200, m * L**2 / 12, m * L**2 / 12)
    bodies = [Body(f"link{i}", mass=m, com=(L / 2, 0, 0), inertia=inertia,
                   markers=[Marker("root"), Marker("tip", position=(L, 0, 0))]) for i in (1, 2)]
    joints = [Joint("j1", "revolute", "ground", "origin", "link1", "root", axis=(0, 0, 1)),
              Joint("j2", "revolute", "link1", "tip", "link2", "root", axis=(0, 0, 1))]
    return Model("double_pendulum", gravity=(0, -9.81, 0), bodies=bodies, joints=joints,
                 solver=Solver(method="rk4", step=1e-3, output_step=0.01))


def _link2(name: str, E_factor: float, modes: int, elements: int, tip_mass: float, alpha: float,
           stiffening: bool = True) -> Body:
    p = LINK2
    return Body(name, type="beam", length=p["length"], elements=elements, modes=modes,
                material=Material(E=p["E"] * E_factor, G=p["G"] * E_factor, rho=p["rho"]),
                section=Section("box_tube", width=p["width"], height=p["width"], thickness=p["thickness"]),
                tip_mass=tip_mass, geometric_stiffening=stiffening, damping=Damping(stiffness_proportional=alpha),
                markers=[Marker("root", x=0.0), Marker("tip", x=p["length"])])


def rigid_link2_equivalent(tip_mass: float) -> Body:
    """A rigid body with the mass distribution of the undeformed link 2 plus its tip mass (analytic)."""
    p = LINK2
    L = p["length"]
    w, t = p["width"], p["thickness"]
    A = w**2 - (w - 2 * t) ** 2
    I = (w**4 - (w - 2 * t) ** 4) / 12
    mb = p["rho"] * A * L
    m = mb + tip_mass
    xc = (mb * L / 2 + tip_mass * L) / m
    i_root = mb * L**2 / 3 + p["rho"] * I * L + tip_mass * L**2
    i_c = i_root - m * xc**2
    return Body("link2", mass=m, com=(xc, 0, 0), inertia=(p["rho"] * 2 * I * L, i_c, i_c),
                markers=[Marker("root"), Marker("tip", position=(L, 0, 0))])


def huang_arm(*, flexible: bool = True, E_factor: float = 1.0, modes: int = 4, elements: int = 4,
              tip_mass: float = 0.5, alpha: float = 0.0, stiffening: bool = True, springs: bool = False,
              q0=(1.5, -1.0)) -> Model:
    """Seed 000 two-link arm: rigid link 1 turning about the vertical, link 2 hanging from its tip
    on a joint along link 1 (world z up)."""
    m1, L1 = 2.067, 0.231
    it = 0.04022 - m1 * 0.1155**2
    link1 = Body("link1", mass=m1, com=(L1 / 2, 0, 0), inertia=(3.752e-4, it, it),
                 markers=[Marker("root"), Marker("tip", position=(L1, 0, 0), rotation={"axis": (0, 1, 0), "angle": 90})])
    link2 = _link2("link2", E_factor, modes, elements, tip_mass, alpha, stiffening) if flexible \
        else rigid_link2_equivalent(tip_mass)
    from flexmbs.model import Spring
    spring = Spring(stiffness=0.1, damping=0.098) if springs else None
    joints = [Joint("shoulder", "revolute", "ground", "origin", "link1", "root", axis=(0, 0, 1), q0=(q0[0],),
                    rotor_inertia=0.04862, spring=spring),
              Joint("elbow", "revolute", "link1", "tip", "link2", "root", axis=(0, 0, 1), q0=(q0[1],), spring=spring)]
    return Model("huang_arm", gravity=(0, 0, -9.81), bodies=[link1, link2], joints=joints,
                 sensors=[Sensor("tip", "link2", "tip")],
                 solver=Solver(method="dopri5", rtol=1e-9, max_step=1e-2, output_step=0.01))


def spin_up_beam(omega_s: float, *, stiffening: bool = True, elements: int = 8, modes: int = 4,
                 t_s: float = 15.0) -> Model:
    """Kane-Ryan-Banerjee spin-up beam: L = 10 m, EI = 1.4e4, EA = 2.8e7, rhoA = 1.2, hub about z."""
    beam = Body("beam", type="beam", length=10.0, elements=elements, modes=modes,
                material=Material(E=7e10, G=2.7e10, rho=3000.0),
                section=Section("explicit", A=4e-4, Iy=2e-7, Iz=2e-7, J=4e-7),
                geometric_stiffening=stiffening, markers=[Marker("root", x=0.0), Marker("tip", x=10.0)])
    hub = Joint("hub", "revolute", "ground", "origin", "beam", "root", axis=(0, 0, 1),
                drive=Drive("motion", profile=Profile("spin_up", omega_s=omega_s, t_s=t_s)))
    return Model("spin_up", gravity=(0, 0, 0), bodies=[beam], joints=[hub],
                 solver=Solver(method="dopri5", rtol=1e-8, max_step=5e-2, output_step=0.05))


def spin_up_angle(t: np.ndarray, omega_s: float, t_s: float = 15.0) -> np.ndarray:
    """Seed 004 eq. 9.18 integrated: hub angle [rad]."""
    t = np.asarray(t, float)
    w = 2 * np.pi / t_s
    ramp = omega_s / t_s * (t**2 / 2 + (np.cos(w * t) - 1) / w**2)
    return np.where(t < t_s, ramp, omega_s * (t - t_s / 2))
