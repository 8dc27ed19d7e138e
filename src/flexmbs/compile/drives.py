"""Stage 5, the drives: how the first coordinate of each joint is driven (torque input,
prescribed motion, PD servo, geared DC motor or passive), the motion profiles as the kernels
evaluate them (kernels/profiles.py), the motors' parameters and currents (kernels/motor.py), and
the inputs the drives read."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels import profiles as prof
from ..kernels.drives import MOTION, MOTOR, SERVO, TORQUE
from ..model import PROFILES, Joint, Motor, Profile
from .joints import Joints


@dataclass(frozen=True)
class Drives:
    """kinds: joint name -> its drive type; inputs: the drives' input names in order (a torque's
    `<joint>.tau`, a motor's `<joint>.voltage`, an input profile's `<joint>.q_ref`, `.qd_ref`,
    `.qdd_ref`) and input_defaults their values until set; i0: the motors' currents at the
    start [A]; fields: drive, drive_in, drive_prof, kp, kd, prof_code, prof_par, prof_t,
    prof_c, prof_n, mot_i, mot_c, mot_R, mot_L, mot_kt, mot_b, mot_ratio, mot_eff, mot_wb
    (SYSTEM_FIELDS)."""

    kinds: dict[str, str]
    inputs: list[str]
    input_defaults: list[float]
    i0: np.ndarray
    fields: dict


def drives_of(joints: list[Joint], layout: Joints) -> Drives:
    """The drives of `joints` (tree order) on the velocity coordinates of `layout`."""
    nv, ju = layout.fields["nv"], layout.fields["ju"]
    drive = np.zeros(nv, np.int64)
    drive_in = np.full(nv, -1, np.int64)
    drive_prof = np.full(nv, -1, np.int64)
    kp, kd = np.zeros(nv), np.zeros(nv)
    rows: list = []
    inputs: list[str] = []
    defaults: list[float] = []
    kinds: dict[str, str] = {}
    for i, j in enumerate(joints):
        dr = j.drive
        c = ju[i]
        kinds[j.name] = dr.type
        if dr.type == "torque":
            drive[c] = TORQUE
            drive_in[c] = len(inputs)
            inputs.append(f"{j.name}.tau")
            defaults.append(dr.torque)
        elif dr.type in ("motion", "servo"):
            drive[c] = MOTION if dr.type == "motion" else SERVO
            drive_prof[c] = len(rows)
            row = _profile_row(dr.profile)
            if dr.profile.type == "input":
                row[1][0] = len(inputs)
                inputs.extend(f"{j.name}.{s}" for s in ("q_ref", "qd_ref", "qdd_ref"))
                defaults.extend([0.0, 0.0, 0.0])
            rows.append(row)
            kp[c], kd[c] = dr.kp, dr.kd
        elif dr.type == "motor":
            drive[c] = MOTOR
            drive_in[c] = len(inputs)
            inputs.append(f"{j.name}.voltage")
            defaults.append(dr.voltage)
    motors = [(ju[i], j.drive.motor) for i, j in enumerate(joints) if j.drive.type == "motor"]
    fields = dict(drive=drive, drive_in=drive_in, drive_prof=drive_prof, kp=kp, kd=kd, **_profile_table(rows),
                  **_motor_table(motors, nv))
    return Drives(kinds, inputs, defaults, np.array([m.i0 for _, m in motors], float), fields)


# the motor parameters the kernels read: SystemArrays field <- Motor field
_MOTOR_FIELDS = {"mot_R": "R", "mot_L": "L", "mot_kt": "k_t", "mot_b": "b_motor", "mot_ratio": "ratio",
                 "mot_eff": "efficiency", "mot_wb": "w_band"}


def _motor_table(motors: list[tuple[int, Motor]], nv: int) -> dict[str, np.ndarray]:
    """mot_i, mot_c and the parameter rows (_MOTOR_FIELDS) of the motors, given as (velocity
    coordinate, Motor) in tree order."""
    table = {name: np.zeros(nv) for name in _MOTOR_FIELDS}
    mot_i = np.full(nv, -1, np.int64)
    for k, (c, m) in enumerate(motors):
        mot_i[c] = k
        for name, field in _MOTOR_FIELDS.items():
            table[name][c] = getattr(m, field)
    return dict(mot_i=mot_i, mot_c=np.array([c for c, _ in motors], np.int64), **table)


def _profile_row(p: Profile) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """Profile -> (code, par, spline knots, spline coefficients rows [c0, c1, c2, c3])."""
    code = prof.CODE_OF[p.type]
    par = np.zeros(prof.NPAR)
    knots = np.zeros(0)
    coef = np.zeros((0, 4))
    kind = PROFILES[p.type]
    if not kind.spline:
        par[:len(kind.fields)] = [getattr(p, name) for name in kind.fields]
    else:
        knots = np.asarray(p.times, dtype=float)
        from scipy.interpolate import CubicSpline  # imported here: it costs 0.4 s at start-up

        cs = CubicSpline(knots, np.asarray(p.values, dtype=float), bc_type="clamped")
        coef = np.zeros((knots.size, 4))
        coef[:-1] = cs.c[::-1].T
        coef[-1, 0] = p.values[-1]
    return code, par, knots, coef


def _profile_table(rows: list) -> dict[str, np.ndarray]:
    """prof_code, prof_par, prof_t, prof_c, prof_n: the profile rows stacked, splines padded to
    the longest (at least one row and one knot, so that every array has its declared shape)."""
    nprof = max(1, len(rows))
    ntab = max([1] + [r[2].size for r in rows])
    prof_code = np.zeros(nprof, np.int64)
    prof_par = np.zeros((nprof, prof.NPAR))
    prof_t = np.zeros((nprof, ntab))
    prof_c = np.zeros((nprof, ntab, 4))
    prof_n = np.zeros(nprof, np.int64)
    for k, (code, par, knots, coef) in enumerate(rows):
        prof_code[k], prof_par[k], prof_n[k] = code, par, knots.size
        prof_t[k, :knots.size] = knots
        prof_c[k, :knots.size] = coef
    return dict(prof_code=prof_code, prof_par=prof_par, prof_t=prof_t, prof_c=prof_c, prof_n=prof_n)
