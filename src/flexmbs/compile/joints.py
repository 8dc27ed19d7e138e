"""Stage 4, the joints: the coordinate layout (each joint's coordinates in tree order, then each
flexible body's modal coordinates), each joint's type code, markers and axes, its springs and
the inertia that turns with its coordinates, and the initial state the model gives."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from flexmbs_laws import motor as motor_law

from ..kernels.joints import CODE_OF
from ..model import JOINTS, Issue, Joint, ModelError
from ..so3 import quat_from_rotvec, skew
from .bodies import Bodies
from .markers import Markers
from .tree import Tree


@dataclass(frozen=True)
class Joints:
    """joint_q / joint_u: joint name -> (start, count) in q / u; body_eta: flexible body name ->
    (start, count) of its modal coordinates in q; q0, u0: the initial state the model gives
    (before loop assembly); fields: nq, nv, jq, jnq, ju, jnv, eq, ev, quat_q, quat_u, uq,
    jtype, pmark, c_pos, c_R, axis1, axis2, hj_C, hj_X, hj_w, hj_m, k_spring, c_spring,
    q_preload, motor_J (SYSTEM_FIELDS)."""

    joint_q: dict[str, tuple[int, int]]
    joint_u: dict[str, tuple[int, int]]
    body_eta: dict[str, tuple[int, int]]
    q0: np.ndarray
    u0: np.ndarray
    fields: dict


def joints_of(tree: Tree, bodies: Bodies, markers: Markers) -> Joints:
    """The joints of `tree`, their coordinates and the modal coordinates after them."""
    joints, nm = tree.joints, bodies.fields["nm"]
    layout = _layout(tree, nm)
    jq, jnq, ju, jnv = (layout[k] for k in ("jq", "jnq", "ju", "jnv"))
    q0 = np.zeros(layout["nq"])
    u0 = np.zeros(layout["nv"])
    for i, j in enumerate(joints):
        q0[jq[i]:jq[i] + jnq[i]] = _initial_joint_q(j.type, j.q0)
        if len(j.qd0):
            u0[ju[i]:ju[i] + jnv[i]] = np.asarray(j.qd0, dtype=float).ravel()
    geometry = _geometry(tree, markers)
    return Joints(
        joint_q={j.name: (int(jq[i]), int(jnq[i])) for i, j in enumerate(joints)},
        joint_u={j.name: (int(ju[i]), int(jnv[i])) for i, j in enumerate(joints)},
        body_eta={b.name: (int(layout["eq"][i]), int(nm[i])) for i, b in enumerate(tree.bodies) if nm[i] > 0},
        q0=q0, u0=u0,
        fields=dict(**layout, **geometry, **_hinge_tables(geometry, markers.fields["mk_R0"]),
                    **_coordinate_terms(tree, layout)))


def _layout(tree: Tree, nm: np.ndarray) -> dict:
    """nq, nv and where each joint's and each body's modal coordinates sit in q and u
    (jq, jnq, ju, jnv, eq, ev), the quaternions (quat_q, quat_u) and the position coordinate
    of each velocity coordinate (uq)."""
    nb = len(tree.joints)
    jq, jnq, ju, jnv = (np.zeros(nb, np.int64) for _ in range(4))
    nq = nv = 0
    for i, j in enumerate(tree.joints):
        jq[i], jnq[i], ju[i], jnv[i] = nq, JOINTS[j.type].nq, nv, JOINTS[j.type].nv
        nq += jnq[i]
        nv += jnv[i]
    eq, ev = (np.zeros(nb, np.int64) for _ in range(2))
    for i in range(nb):
        eq[i], ev[i] = nq, nv
        nq += nm[i]
        nv += nm[i]
    quat_q = np.full(nb, -1, np.int64)
    quat_u = np.full(nb, -1, np.int64)
    for i, j in enumerate(tree.joints):
        k = JOINTS[j.type].quaternion
        if k is not None:
            quat_q[i], quat_u[i] = jq[i] + k, ju[i] + k
    uq = np.full(nv, -1, np.int64)
    for i in range(nb):
        for c in range(jnv[i]):
            if quat_u[i] >= 0 and ju[i] + c >= quat_u[i]:
                continue
            uq[ju[i] + c] = jq[i] + c
    return dict(nq=nq, nv=nv, jq=jq, jnq=jnq, ju=ju, jnv=jnv, eq=eq, ev=ev, quat_q=quat_q, quat_u=quat_u, uq=uq)


def _geometry(tree: Tree, markers: Markers) -> dict:
    """jtype, pmark, c_pos, c_R, axis1, axis2: each joint's kernel code, parent marker, child
    marker pose in its body and axes. A joint attaches a flexible child at its clamped
    reference, where the marker does not deform."""
    joints, nb = tree.joints, len(tree.joints)
    mk = markers.fields
    cmark = [markers.index[f"{j.child}.{j.child_marker}"] for j in joints]
    for j, k in zip(joints, cmark):
        if np.any(mk["mk_Phi"][k]) or np.any(mk["mk_Psi"][k]):
            raise ModelError([Issue(
                f"joints '{j.name}'.child_marker",
                f"marker '{j.child_marker}' on flexible body '{j.child}' deforms; a joint must attach a "
                f"flexible child at its clamped reference (beam: x = 0; superelement: a reference node)")])
    return dict(
        jtype=np.array([CODE_OF[j.type] for j in joints], dtype=np.int64),
        pmark=np.array([markers.index[f"{j.parent}.{j.parent_marker}"] for j in joints], dtype=np.int64),
        c_pos=np.array([mk["mk_s0"][k] for k in cmark]).reshape(nb, 3),
        c_R=np.array([mk["mk_R0"][k] for k in cmark]).reshape(nb, 3, 3),
        axis1=np.array([_unit(j.axis) for j in joints]).reshape(nb, 3),
        axis2=np.array([_unit(j.axis2) for j in joints]).reshape(nb, 3))


def _unit(axis) -> np.ndarray:
    """The axis scaled to unit length (the model's checks accept it within 1e-6 of one; the
    kernels' formulas, the hinge tables' among them, take it as exactly one), a zero one as is."""
    a = np.asarray(axis, float)
    n = np.linalg.norm(a)
    return a / n if n > 0.0 else a


def _hinge_tables(geometry: dict, mk_R0: np.ndarray) -> dict:
    """hj_C, hj_X, hj_w, hj_m: the constant parts of a revolute joint's rotation E(theta) from
    its parent's axes to its child's, for a parent marker that does not deform (a rigid parent
    or the ground, whose marker rotation R_PM is mk_R0). With the joint's rotation
    R_J = cos(theta) I + sin(theta) [a]x + (1 - cos(theta)) a a^T about its unit axis a
    (Rodrigues) and E = R_BC R_J^T R_PM^T,
    E(theta) = cos(theta) C + (1 - cos(theta)) w m^T - sin(theta) X, with C = R_BC R_PM^T,
    X = R_BC [a]x R_PM^T, w = R_BC a and m = R_PM a; the kernel needs a sine, a cosine and 30
    multiplications where composing the rotations takes 54. Filled for every joint from its
    axis1; the kernels read them for revolute joints only."""
    c_R, a, pmark = geometry["c_R"], geometry["axis1"], geometry["pmark"]
    R_PM = mk_R0[pmark]
    ax = np.array([skew(ai) for ai in a]).reshape(c_R.shape)
    R_MP = np.transpose(R_PM, (0, 2, 1))
    return dict(hj_C=c_R @ R_MP, hj_X=c_R @ ax @ R_MP, hj_w=np.einsum("bij,bj->bi", c_R, a),
                hj_m=np.einsum("bij,bj->bi", R_PM, a))


def _motor_rotor(j: Joint) -> float:
    """The reflected rotor inertia ratio^2 J_rotor [kg m^2] of a joint's motor drive (0 without)."""
    m = j.drive.motor if j.drive.type == "motor" else None
    return 0.0 if m is None else motor_law.reflected_inertia(m.J_rotor, m.ratio)


def _coordinate_terms(tree: Tree, layout: dict) -> dict:
    """k_spring, c_spring, q_preload, motor_J per velocity coordinate: the joint springs and the
    rotor and motor inertia that turn with the joint."""
    ju, jnv, nv = layout["ju"], layout["jnv"], layout["nv"]
    k_spring, c_spring, q_preload, motor_J = (np.zeros(nv) for _ in range(4))
    for i, j in enumerate(tree.joints):
        motor_J[ju[i]:ju[i] + jnv[i]] = j.rotor_inertia + j.drive.motor_inertia + _motor_rotor(j)
        if j.spring is not None:
            sl = slice(ju[i], ju[i] + jnv[i])
            k_spring[sl], c_spring[sl], q_preload[sl] = j.spring.stiffness, j.spring.damping, j.spring.preload
    return dict(k_spring=k_spring, c_spring=c_spring, q_preload=q_preload, motor_J=motor_J)


def _initial_joint_q(jtype: str, q0) -> np.ndarray:
    """Initial joint coordinates, with rotation vectors turned into unit quaternions (after
    the coordinates before them, a free joint's position)."""
    kind = JOINTS[jtype]
    q0 = np.asarray(q0, dtype=float).ravel()
    k = kind.quaternion
    if k is not None:
        lin = q0[:k] if q0.size >= k + 3 else np.zeros(0)
        rot = q0[lin.size:]
        if rot.size == 0:
            quat = np.array([1.0, 0.0, 0.0, 0.0])
        elif rot.size == 3:
            quat = quat_from_rotvec(rot)
        else:
            quat = rot / np.linalg.norm(rot)
        if k:
            lin = lin if lin.size else np.zeros(k)
            return np.concatenate([lin, quat])
        return quat
    return q0 if q0.size else np.zeros(kind.nq)
