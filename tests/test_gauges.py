"""Strain-gauge and section-force sensors of beams against beam statics: a clamped cantilever
under a tip load (moments and shear forces from equilibrium, strain M c / (E I) + N / (E A)),
torsion of a round bar (surface shear strain T r / (G J) read by a 45-degree gauge), and Huang's
arm sagging under gravity (root strain against tip deflection of a uniformly loaded cantilever
with a tip mass)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import flexmbs
from flexmbs import equilibrium, linearize
from flexmbs.model import Body, Drive, Joint, Load, Marker, Material, ModelError, Model, Profile, Section, Sensor
from flexmbs.signals import Evaluator, output_width, signal_table, state_slots

L, E, G = 1.2, 7.0e10, 2.6e10
W, H = 0.03, 0.02                          # rectangle: width along body y, height along z [m]
F = np.array([3.0, 2.0, -1.5])             # tip force, world = body axes of the clamped beam [N]


def cantilever(section: Section, *, force=F, torque=(0.0, 0.0, 0.0), modes: int | None = None,
               static_modes: bool = False, interface_modes: bool = True, acceleration_modes: bool = True,
               sensors: list[Sensor] = ()) -> Model:
    """A beam clamped at the origin along world x (4 elements; all 24 FE modes unless `modes`),
    no gravity, a tip load in world axes (which stay the beam's axes up to the small rotations)."""
    beam = Body("beam", type="beam", length=L, elements=4, modes=modes or 24, static_modes=static_modes,
                interface_modes=interface_modes, acceleration_modes=acceleration_modes,
                material=Material(E=E, G=G, rho=2700.0), section=section, geometric_stiffening=False,
                markers=[Marker("root", x=0.0), Marker("tip", x=L)])
    clamp = Joint("clamp", "fixed", "ground", "origin", "beam", "root")
    load = Load("point_force", name="tip_load", body="beam", marker="tip", force=tuple(force), torque=tuple(torque),
                frame="world")
    return Model("cantilever", gravity=(0, 0, 0), bodies=[beam], joints=[clamp], loads=[load], sensors=list(sensors))


def static_outputs(model: Model) -> dict[str, float]:
    """Every output signal at the static equilibrium."""
    system = flexmbs.compile_model(model)
    x = equilibrium(system)
    Y = np.zeros((1, output_width(system)))
    Evaluator(system, system.workspace()).evaluate(np.zeros(1), x[None, :],
                                                   np.zeros((1, max(1, len(system.inputs)))), Y)
    return {s.name: float(Y[0, s.index]) for s in signal_table(system)}


GAUGES = [Sensor("top", "beam", type="strain_gauge", x=0.0, z=H / 2),
          Sensor("side", "beam", type="strain_gauge", x=0.0, y=W / 2),
          Sensor("root", "beam", type="section_force", x=0.0),
          Sensor("inner", "beam", type="section_force", x=0.45),
          Sensor("node", "beam", type="section_force", x=0.6)]


def test_the_state_level_gives_the_gauges_of_the_full_evaluation() -> None:
    """An FMU's outputs read without the dynamics (Evaluator.evaluate_state: positions,
    velocities, tip deflections, gauges and section forces) are those of the full evaluation,
    bit for bit, at the statically loaded cantilever, whose gauges the tests below check
    against beam statics."""
    system = flexmbs.compile_model(cantilever(Section("rectangle", width=W, height=H), sensors=GAUGES))
    x = equilibrium(system)
    u = np.zeros(max(1, len(system.inputs)))
    full, alone = np.zeros((1, output_width(system))), np.full(output_width(system), np.nan)
    evaluator = Evaluator(system, system.workspace())
    evaluator.evaluate(np.zeros(1), x[None, :], u[None, :], full)
    evaluator.evaluate_state(0.0, x, u, alone, np.zeros(system.nv))
    slots = state_slots(system)
    gauge = [s.index for s in signal_table(system) if s.name.startswith(("top", "side", "root", "inner", "node"))]
    assert set(gauge) <= set(slots) and np.abs(full[0, gauge]).max() > 0.0
    np.testing.assert_array_equal(alone[slots], full[0, slots])


@pytest.mark.parametrize("modes, static, interface", [(None, False, True), (2, True, True), (2, True, False)])
def test_cantilever_tip_load_strain_and_section_forces(modes, static, interface) -> None:
    """Static tip force F: N = Fx, Vy = Fy, Vz = Fz, My = -Fz (L - x), Mz = Fy (L - x) at every
    station, and the root surface strains N/(EA) + My c/(E Iy) (top, z = h/2) and
    N/(EA) - Mz c/(E Iz) (side, y = w/2), to 1e-6; with all 24 FE modes, with 2 modes and the
    tip as an interface station (its constraint modes include the axial one), and with 2
    cantilever modes plus static modes and no acceleration shapes (bending only, so the axial
    force then reads 0: the rows follow the basis; the centrifugal stretch shape would carry
    the axial tip load as a Ritz vector of another load's shape, 3.72 N at the root for 3 N)."""
    sec = flexmbs.compile_model(cantilever(Section("rectangle", width=W, height=H))).flex["beam"].beam.section
    out = static_outputs(cantilever(Section("rectangle", width=W, height=H), modes=modes, static_modes=static,
                                    interface_modes=interface, acceleration_modes=interface or not static,
                                    sensors=GAUGES))
    axial = 0.0 if static and not interface else F[0]
    for name, x in (("root", 0.0), ("inner", 0.45), ("node", 0.6)):
        expected = {"N": axial, "V[1]": F[1], "V[2]": F[2], "T": 0.0, "M[1]": -F[2] * (L - x), "M[2]": F[1] * (L - x)}
        for k, value in expected.items():
            assert out[f"{name}.{k}"] == pytest.approx(value, rel=1e-6, abs=1e-6 * np.abs(F).max()), (name, k)
    My, Mz = -F[2] * L, F[1] * L
    assert out["top.strain"] == pytest.approx(axial / (E * sec.A) + My * (H / 2) / (E * sec.Iy), rel=1e-6)
    assert out["side.strain"] == pytest.approx(axial / (E * sec.A) - Mz * (W / 2) / (E * sec.Iz), rel=1e-6)


def test_round_bar_torsion_read_by_a_45_degree_gauge() -> None:
    """Tip torque T on a solid round bar: section torque T everywhere, and a gauge at 45 degrees
    between the axis and the circumference at the surface point (0, r) reads half the shear
    strain, T r / (2 G J) with J = pi r^4 / 2; an axial gauge there reads 0."""
    r, T = 0.01, 5.0
    sensors = [Sensor("rosette", "beam", type="strain_gauge", x=0.3, y=0.0, z=r,
                      direction=(math.sqrt(0.5), -math.sqrt(0.5), 0.0)),
               Sensor("axial", "beam", type="strain_gauge", x=0.3, z=r),
               Sensor("cut", "beam", type="section_force", x=0.9)]
    out = static_outputs(cantilever(Section("circle", diameter=2 * r), force=(0, 0, 0), torque=(T, 0, 0),
                                    sensors=sensors))
    J = math.pi * r ** 4 / 2
    assert out["cut.T"] == pytest.approx(T, rel=1e-6)
    assert out["rosette.strain"] == pytest.approx(T * r / (2 * G * J), rel=1e-6)
    assert abs(out["axial.strain"]) < 1e-6 * T * r / (G * J)


def huang_sag(modes: int, elements: int) -> tuple[float, float]:
    """(root strain at the upper surface, tip deflection) of Huang's link 2 held horizontal
    (elbow motion-driven at pi/2), sagging under gravity at equilibrium."""
    model = flexmbs.load_model("huang_two_link")
    link = model.body("link2")
    link.modes, link.elements = modes, elements
    model.joint("elbow").drive = Drive("motion", profile=Profile("constant", value=math.pi / 2))
    model.sensors.append(Sensor("root_gauge", "link2", type="strain_gauge", x=0.0, y=link.section.width / 2))
    out = static_outputs(model)
    return out["root_gauge.strain"], out["link2.tip_deflection[2]"]


def test_huang_arm_root_strain_matches_its_tip_deflection() -> None:
    """Link 2 horizontal under gravity is a cantilever with uniform weight q = rho A g and a tip
    weight m g: root moment g (rho A L^2 / 2 + m L), tip deflection g (rho A L^4 / 8 + m L^3 / 3)
    / (E I), so strain / deflection = c (rho A L^2 / 2 + m L) / (rho A L^4 / 8 + m L^3 / 3) with
    E I cancelled. The shipped model (4 modes, 4 elements) is within 1 %; refining converges to
    it (2e-3 with 8 elements and modes, 5e-4 with 16 elements and 24 modes)."""
    model = flexmbs.load_model("huang_two_link")
    link = model.body("link2")
    w, t, Ln, m = link.section.width, link.section.thickness, link.length, link.tip_mass
    rho_a = link.material.rho * (w ** 2 - (w - 2 * t) ** 2)
    ratio = (w / 2) * (rho_a * Ln ** 2 / 2 + m * Ln) / (rho_a * Ln ** 4 / 8 + m * Ln ** 3 / 3)
    errors = []
    for modes, elements in ((4, 4), (8, 8), (24, 16)):
        strain, deflection = huang_sag(modes, elements)
        assert strain > 0 > deflection       # bent toward -y: the +y surface in tension
        errors.append(abs(-strain / deflection / ratio - 1))
    assert errors[0] < 1e-2 and errors[1] < 2e-3 and errors[2] < 5e-4


def test_gauges_are_result_signals_with_units_and_linearize_outputs() -> None:
    """The sensors' outputs are Result signals with their units, and linearize outputs whose C
    row is the static sensitivity: a cantilever's tip-force response read through the strain."""
    model = cantilever(Section("rectangle", width=W, height=H), force=(0.0, 0.0, 0.0), modes=4, sensors=GAUGES)
    res = flexmbs.simulate(model, 0.01, output_step=0.005)
    units = {s.name: s.unit for s in signal_table(res.system)}
    assert units["top.strain"] == "1" and units["root.N"] == "N" and units["root.M[2]"] == "N.m"
    assert np.all(res["top.strain"] == 0.0)
    lin = linearize(model, outputs=["top.strain", "root.M[1]"])
    assert lin.C.shape == (2, lin.A.shape[0]) and np.any(lin.C[0] != 0)


def test_gauge_input_errors() -> None:
    """Bad gauge sensors are reported with their place."""
    bad = [Sensor("far", "beam", type="section_force", x=2.0),
           Sensor("skew", "beam", type="strain_gauge", x=0.1, direction=(1.0, 1.0, 0.0)),
           Sensor("rigid", "ground", type="strain_gauge", x=0.0),
           Sensor("extra", "beam", type="section_force", x=0.1, y=0.01)]
    with pytest.raises(ModelError) as err:
        flexmbs.compile_model(cantilever(Section("rectangle", width=W, height=H), sensors=bad))
    text = str(err.value)
    assert "sensors[0] 'far'.x" in text and "[0, length 1.2 m]" in text
    assert "sensors[1] 'skew'.direction" in text and "unit vector" in text
    assert "sensors[2] 'rigid'" in text
    assert "sensors[3] 'extra'.y" in text and "not used by a section_force sensor" in text


def test_gauges_are_fmu_outputs_like_simulate(tmp_path) -> None:
    """Huang's arm with a root strain gauge and a section-force sensor, built as an FMU: the
    outputs are declared with units 1, N, N.m and reproduce flexmbs.simulate."""
    import yaml
    from fmpy import read_model_description, simulate_fmu

    from flexmbs.model.catalog import models_dir
    from flexmbs.fmi.build import build

    data = yaml.safe_load((models_dir() / "huang_two_link.yaml").read_text())
    data["sensors"] += [{"name": "root_gauge", "body": "link2", "type": "strain_gauge", "x": 0.0, "y": 0.00635},
                        {"name": "root_load", "body": "link2", "type": "section_force", "x": 0.0}]
    data["fmu"]["parameters"] = []
    path = tmp_path / "huang_gauges.yaml"
    path.write_text(yaml.safe_dump(data))
    fmu = str(build(path, tmp_path).path)
    units = {v.name: v.unit for v in read_model_description(fmu).modelVariables}
    assert units["root_gauge.strain"] == "1" and units["root_load.V[1]"] == "N" and units["root_load.M[2]"] == "N.m"
    names = ["root_gauge.strain", "root_load.M[2]", "root_load.N"]
    got = simulate_fmu(fmu, stop_time=0.2, output_interval=0.005, output=names)
    direct = flexmbs.simulate(flexmbs.load_model(path), 0.2, output_step=0.005)
    for name in names:
        scale = np.max(np.abs(direct[name]))
        assert scale > 0 and np.max(np.abs(got[name] - direct[name])) <= 1e-6 * scale, name


def test_section_forces_on_a_segmented_beam() -> None:
    """With `segments: 2` a station moves to the segment holding it (x = 0.9 m is 0.3 m into the
    second): a transverse tip load's moments and shear forces follow linear statics to 1e-5 (the
    chain of frames keeps the geometric nonlinearity, second order in the 3e-4 rad rotations;
    an axial load would tilt with the second segment's frame at first order)."""
    sensors = [Sensor("a", "beam", type="section_force", x=0.3), Sensor("b", "beam", type="section_force", x=0.9)]
    force = (0.0, F[1], F[2])
    model = cantilever(Section("rectangle", width=W, height=H), force=force, modes=12, sensors=sensors)
    model.body("beam").segments = 2
    out = static_outputs(model)
    for name, x in (("a", 0.3), ("b", 0.9)):
        assert out[f"{name}.M[1]"] == pytest.approx(-F[2] * (L - x), rel=1e-5), name
        assert out[f"{name}.M[2]"] == pytest.approx(F[1] * (L - x), rel=1e-5), name
        assert out[f"{name}.V[1]"] == pytest.approx(F[1], rel=1e-5), name
        assert out[f"{name}.V[2]"] == pytest.approx(F[2], rel=1e-5), name
