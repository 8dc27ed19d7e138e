"""Stage 2, the bodies: each flexible body reduced to its modes (beam finite elements or an
imported superelement, with interface modes at the points stage 1 found), and every body's
inertia as the kernels take it: mass points exact in the modal coordinates plus a constant
matrix (kernels/body.py), or the points' moments where those are cheaper; modal stiffness and
damping; the modal amplitudes a floating frame stays valid for."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from ..flex.blas import one_blas_thread
from ..flex.invariants import (FlexBodyData, beam_body, body_size, consistent_mass_matrix, points_mass_matrix,
                               rigid_mass_matrix, superelement_body)
from ..flex.superelement import load_matrix_files, load_npz
from ..model import Body, Issue, Model, ModelError, inertia_matrix, section_properties
from ..model.elements import SUPERELEMENT_FILES
from .tree import Tree


@dataclass(frozen=True)
class Bodies:
    """flex: flexible body name -> its modal data; nmax: the most modes of any body (>= 1, the
    padding of per-body arrays); fields: nm, mass, pt_*, Mc, Ke, De, eta_max, iv_* (SYSTEM_FIELDS)."""

    flex: dict[str, FlexBodyData]
    nmax: int
    fields: dict


@one_blas_thread
def flex_data(body: Body, interface: Sequence = ()) -> Optional[FlexBodyData]:
    """Modal data of a flexible body (None for rigid bodies). With interface modes on (the
    default), `interface` holds its interface points (model/interfaces.py interface_points:
    beam stations [m], superelement nodes); none given, only the reference is held. Computed
    on one BLAS thread (flex/blas.py): the same bits in every process."""
    points = list(interface) if body.interface_modes and body.type != "rigid" else None
    if body.type == "beam":
        tip_j = None if body.tip_inertia is None else inertia_matrix(body.tip_inertia)
        return beam_body(body.length, body.elements, body.modes, body.material.E,
                         body.material.shear_modulus, body.material.rho, section_properties(body.section),
                         body.tip_mass, tip_j, body.rotary_inertia, body.geometric_stiffening, body.name,
                         body.static_modes, points, body.acceleration_modes)
    if body.type == "superelement":
        if body.file is not None:
            se = load_npz(body.file)
        else:
            se = load_matrix_files(body.mass_file, body.stiffness_file, body.nodes_file, body.dofs_per_node)
        return superelement_body(se, body.modes, tuple(body.reference_nodes), points, body.acceleration_modes)
    return None


def bodies_of(model: Model, tree: Tree) -> Bodies:
    """The bodies of `tree` (in its order) compiled; `model` names them in errors."""
    flex = {b.name: d for b in tree.bodies
            if (d := _flex_data_of(model, b, tree.interfaces.get(b.name, ()))) is not None}
    nb = len(tree.bodies)
    nmax = max([1] + [d.n for d in flex.values()])
    nm = np.zeros(nb, np.int64)
    for i, b in enumerate(tree.bodies):
        nm[i] = flex[b.name].n if b.name in flex else 0
    return Bodies(flex, nmax, dict(nm=nm, **_inertia(tree.bodies, flex, nmax)))


def _flex_data_of(model: Model, body: Body, interface: Sequence) -> Optional[FlexBodyData]:
    """flex_data, with a superelement data error or a number too large to compute turned into a
    ModelError naming the body (and file), as the validator would have."""
    try:
        return flex_data(body, interface)
    except ModelError:
        raise
    except (ValueError, OverflowError, FloatingPointError) as err:
        if body.type != "superelement" and not isinstance(err, (OverflowError, FloatingPointError)):
            raise
        index = next((i for i, b in enumerate(model.bodies) if b.name == body.name), None)
        where = f"bodies[{index}] {body.name!r}" if index is not None else f"body {body.name!r}"
        if body.type == "superelement":
            named = [n for n in SUPERELEMENT_FILES if getattr(body, n) and str(getattr(body, n)) in str(err)]
            where += f".{(named or ['file' if body.file is not None else 'mass_file'])[0]}"
            message = str(err)
        else:
            message = f"its numbers are beyond what can be computed ({err}); check the dimensions and units"
        raise ModelError([Issue(where, message, model.source)]) from None


def _inertia(bodies: list[Body], flex: dict[str, FlexBodyData], nmax: int) -> dict[str, np.ndarray]:
    """mass, pt_*, Mc, Ke, De, eta_max, iv_k, iv_h and the iv_* moments of the bodies: mass
    points (exact in eta) plus a constant matrix Mc (see kernels/body.py)."""
    nb = len(bodies)
    npmax = max([1] + [d.point_mass.size for d in flex.values()])
    mass = np.zeros(nb)
    pt_n = np.zeros(nb, np.int64)
    pt_m = np.zeros((nb, npmax))
    pt_s = np.zeros((nb, 3, npmax))
    pt_P = np.zeros((nb, 3, nmax, npmax))
    pt_H = np.zeros((nb, nmax, nmax, npmax))
    Mc = np.zeros((nb, 6 + nmax, 6 + nmax))
    Ke, De = (np.zeros((nb, nmax, nmax)) for _ in range(2))
    eta_max = np.full((nb, nmax), np.inf)
    iv_k, iv_h = np.full(nb, -1, np.int64), np.full(nb, -1, np.int64)
    slots: list[dict] = []
    fslots: list[dict] = []
    for i, b in enumerate(bodies):
        d = flex.get(b.name)
        if d is None:
            mass[i] = b.mass
            Mc[i, :6, :6] = rigid_mass_matrix(b.mass, np.asarray(b.com, float), inertia_matrix(b.inertia))
            continue
        n, npt = d.n, d.point_mass.size
        mass[i] = d.mass
        pt_n[i] = npt
        pt_m[i, :npt], pt_s[i, :, :npt] = d.point_mass, d.point_position.T
        pt_P[i, :, :n, :npt] = np.transpose(d.point_shapes, (1, 2, 0))
        pt_H[i, :n, :n, :npt] = np.transpose(d.point_H, (1, 2, 0))
        Mc[i, :6 + n, :6 + n] = consistent_mass_matrix(d) - points_mass_matrix(d)
        Ke[i, :n, :n] = d.Ke
        eta_max[i, :n] = body_size(d) / np.maximum(np.abs(d.nodal_modes).max(axis=0), 1e-300)
        # one ratio per normal mode: the interface modes past them take the last one
        ratios = np.asarray(b.damping.modal, dtype=float)
        zeta = np.pad(ratios, (0, n - ratios.size), mode="edge")[:n] if ratios.size else np.zeros(n)
        De[i, :n, :n] = b.damping.stiffness_proportional * d.Ke + np.diag(2.0 * zeta * d.freqs)
        foreshortening = bool(np.any(d.point_H != 0.0))
        points, moments = _moment_cost(npt, n, foreshortening)
        if moments < points:
            iv_k[i] = len(slots)
            slots.append(_point_moments(d, nmax, foreshortening))
            if foreshortening:
                iv_h[i] = len(fslots)
                fslots.append(slots[-1])
    return dict(mass=mass, pt_n=pt_n, pt_m=pt_m, pt_s=pt_s, pt_P=pt_P, pt_H=pt_H, Mc=Mc, Ke=Ke, De=De,
                eta_max=eta_max, iv_k=iv_k, iv_h=iv_h, **_stack_moments(slots, fslots, nmax))


def _moment_cost(npt: int, n: int, foreshortening: bool) -> tuple[float, float]:
    """The time [us] of one right-hand side that the mass-point sum and the point moments
    (kernels/body.py) take beyond their common part, for npt points and n modal coordinates:
    the moments are used when cheaper. The shapes are the routes' arithmetic (per point its
    n x n products; the moments' contractions, n^3 with foreshortening); the coefficients are
    the least-squares fit of benchmarks/body_routes.py on this machine (2026-11-30: 56 beam
    pendulums, 9 to 49 points, n = 2 to 11; it picks the slower route on 3 of them, by at most
    0.26 us, where the former operation counts did on 7, by up to 0.44 us, the spin-up beam's
    3.10 us right-hand side among them, 2.86 us by the points)."""
    points = npt * (0.0119 + 0.00092 * n * n)
    moments = 0.0035 * n * n + (0.0072 * n**3 if foreshortening else 0.0)
    return points, moments


def _point_moments(d: FlexBodyData, nmax: int, foreshortening: bool) -> dict[str, np.ndarray]:
    """Moments of a flexible body's mass points (m_q at r_q = s_q + P_q eta - 1/2 e_x eta^T H_q
    eta, body axes) that make the kernels' sums over points exact polynomials in eta
    (kernels/body.py), padded to nmax modes: iv_m [kg], iv_S, iv_A, iv_Sb, iv_Sk, iv_C, iv_Cx,
    iv_Me and, with foreshortening, iv_G, iv_HS, iv_HP, iv_HH (SYSTEM_FIELDS has their meaning)."""
    n = d.n
    m, s, P = d.point_mass, d.point_position, d.point_shapes
    # the kernels' sums take H symmetric (the rate of eta^T H eta is 2 eta^T H etad)
    H = 0.5 * (d.point_H + np.swapaxes(d.point_H, 1, 2))
    pad = [(0, 0)]
    C = np.einsum("q,qki,qlj->klij", m, P, P)
    out = dict(
        iv_m=np.array(m.sum()), iv_S=m @ s, iv_A=np.einsum("q,qk,ql->kl", m, s, s),
        iv_Sb=np.pad(np.einsum("q,qkj->kj", m, P), pad + [(0, nmax - n)]),
        iv_Sk=np.pad(np.einsum("q,qk,qlj->klj", m, s, P), pad * 2 + [(0, nmax - n)]),
        iv_C=np.pad(C, pad * 2 + [(0, nmax - n)] * 2),
        iv_Cx=np.pad(np.stack([C[1, 2] - C[2, 1], C[2, 0] - C[0, 2], C[0, 1] - C[1, 0]]), pad + [(0, nmax - n)] * 2),
        iv_Me=np.pad(np.einsum("q,qki,qkj->ij", m, P, P), [(0, nmax - n)] * 2),
    )
    if foreshortening:
        e = (0, nmax - n)
        out.update(
            iv_G=np.pad(np.einsum("q,qab->ab", m, H), [e] * 2),
            iv_HS=np.pad(np.einsum("q,qab,qk->abk", m, H, s), [e, e, (0, 0)]),
            iv_HP=np.pad(np.einsum("q,qab,qkc->abkc", m, H, P), [e, e, (0, 0), e]),
            iv_HH=np.pad(np.einsum("q,qab,qcd->abcd", m, H, H), [e] * 4),
        )
    return out


def _stack_moments(slots: list[dict], fslots: list[dict], nmax: int) -> dict[str, np.ndarray]:
    """The System's iv_* arrays: one row per slot (_point_moments of the bodies that use them;
    fslots: those with foreshortening), shaped as SYSTEM_FIELDS declares even when empty."""
    out = {}
    for group, shapes in ((slots, dict(iv_m=(), iv_S=(3,), iv_A=(3, 3), iv_Sb=(3, nmax), iv_Sk=(3, 3, nmax),
                                       iv_C=(3, 3, nmax, nmax), iv_Cx=(3, nmax, nmax), iv_Me=(nmax, nmax))),
                          (fslots, dict(iv_G=(nmax, nmax), iv_HS=(nmax, nmax, 3), iv_HP=(nmax, nmax, 3, nmax),
                                        iv_HH=(nmax,) * 4))):
        for name, shape in shapes.items():
            out[name] = np.array([sl[name] for sl in group], dtype=float).reshape((len(group),) + shape)
    return out
