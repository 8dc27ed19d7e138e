"""Data layout of the kernels: the compiled System arrays and the scratch Workspace, and the
box that hands them to numba by reference.

Kernels take (S, Wr), two boxes, and unpack S = Sr.t, W = Wr.t; passing the boxes instead of
the ~100-field tuples keeps calls cheap and compilation fast.
"""

from collections import namedtuple

import numpy as np
from numba import njit, typeof, types
from numba.experimental import structref
from numba.experimental.structref import _Utils
from numba.extending import intrinsic

from .articulated import N_V3
from .rotations import JIT

SystemArrays = namedtuple("SystemArrays", [
    "nb", "nq", "nv", "gravity",
    # tree and joints, per body
    "parent", "jtype", "pmark", "c_pos", "c_R", "axis1", "axis2", "jq", "jnq", "ju", "jnv",
    "quat_q", "quat_u",
    # body inertia (flexible bodies padded to nmax modes)
    "nm", "eq", "ev", "eta_max", "mass", "pt_n", "pt_m", "pt_s", "pt_P", "pt_H", "Mc", "Ke", "De",
    # markers
    "mk_body", "mk_s0", "mk_R0", "mk_Phi", "mk_Psi", "mk_H",
    # per velocity coordinate: q index, spring, drive
    "uq", "k_spring", "c_spring", "q_preload", "drive", "drive_in", "drive_prof", "kp", "kd", "motor_J",
    # profiles
    "prof_code", "prof_par", "prof_t", "prof_c", "prof_n",
    # loads
    "pf_marker", "pf_force", "pf_torque", "pf_frame", "pf_input",
    "sd_a", "sd_b", "sd_k", "sd_c", "sd_l0", "sd_m",
    # loop-closing constraints, per row: markers, kind (0 position, 1 axis dot), axes, joint frame, in use
    "cr_a", "cr_b", "cr_kind", "cr_i", "cr_j", "cr_E", "cr_on",
    # forward-dynamics route: 1 articulated-body recursion, 0 composite mass matrix
    "recursive",
])

Workspace = namedtuple("Workspace", [
    "r", "A", "v", "w", "a", "al", "Jv", "Jw",
    "k_r", "k_A", "k_v", "k_w", "k_a", "k_al", "k_Jv", "k_Jw", "k_p", "k_R", "k_cw", "k_Sv", "k_Sw",
    "k_R1", "k_R2", "k_b", "k_pw", "k_wrel", "k_vrel", "k_d", "k_t3",
    "m_s", "m_Ds", "m_sd", "m_sb", "m_R", "m_wr", "m_wb", "m_t1", "m_t2", "m_psi", "m_psid", "m_E", "m_T",
    "m_sw", "m_sdw", "m_wrw", "m_TPsi",
    "b_S", "b_pv", "b_pw", "b_g", "f_h", "f_hd",
    "Jb", "cb", "wb", "Mb", "hb", "Fb", "MJ", "rhs", "l_F", "l_T",
    "l_r", "l_A", "l_v", "l_w", "l_Jv", "l_Jw", "l_a", "l_al",
    "l_r2", "l_A2", "l_v2", "l_w2", "l_Jv2", "l_Jw2", "l_a2",
    "M", "Q", "L", "Mrow", "tau_drive", "xq", "xu",
    "c_g", "c_G", "c_G0", "c_gam", "c_X", "c_S", "c_LS", "c_lam", "c_r", "c_dir", "c_a2", "c_al2", "c_e", "c_f",
    "c_t",
    # articulated-body recursion (kernels/articulated.py); nbd = 6 + nmax, body axes throughout
    "ab_P",     # (nb, 6, nbd): child frame velocity [v; w] from the parent's extended velocity z_p
    "ab_S",     # (nb, 6, 6): joint motion subspace S_c in child axes (first jnv columns)
    "ab_Vb",    # (nb, 6): body velocity [v; w] in body axes [m/s, rad/s]
    "ab_cb",    # (nb, 6): velocity-product acceleration of the body frame [m/s^2, rad/s^2]
    "ab_c",     # (nb, 6): c = Pdot z_p + Hdot y, plus the motion-driven columns of H times their qdd
    "ab_IA",    # (nb, nbd, nbd): articulated inertia of the subtree [kg, kg m, kg m^2]
    "ab_pA",    # (nb, nbd): articulated bias force of the subtree [N, N m, modal]
    "ab_U",     # (nb, nbd, nbd): U = IA H over the free columns of H
    "ab_K",     # (nb, nbd, 6): D^-1 U^T, frame columns only
    "ab_Du",    # (nb, nbd): D^-1 u over the free columns
    "ab_zd",    # (nb, nbd): extended acceleration zdot of every body
    "ab_col",   # (nb, nbd) int: velocity coordinate of each free column of H (joints, then modes)
    "ab_nf",    # (nb,) int: number of free columns of H
    "ab_nj",    # (nb,) int: how many of them are joint coordinates
    "ab_tau",   # (nv,): joint spring/damper, torque-input and servo forces per coordinate [N m or N]
    "ab_D",     # (nbd, nbd): pivot block D of the body being processed
    "ab_L",     # (nbd, nbd): its Cholesky factor
    "ab_x",     # (nbd,): right-hand side / solution scratch over the free columns
    "ab_Ia",    # (6, 6): IA - U D^-1 U^T of the body being processed (frame rows and columns)
    "ab_T",     # (6, nbd): ab_Ia P
    "ab_fa",    # (6,): articulated bias force passed on / joint force of the subtree
    "ab_a6",    # (6,): P zdot_p + c of the body being processed [m/s^2, rad/s^2]
    "ab_E",     # (3, 3): rotation parent axes -> child axes
    "ab_Rc",    # (3, 3): rotation parent-marker axes -> child axes
    "ab_RM",    # (3, 3): rotation parent-marker axes -> parent axes
    "ab_V3",    # (N_V3, 3): 3-vectors of the kinematics pass, rows named in articulated.py (parent axes)
    "ab_eta",   # (nmax,): modal coordinates of the body being processed, zero-padded
    "ab_etad",  # (nmax,): its modal rates, zero-padded
    "ab_vb",    # (3,): origin velocity in body axes [m/s]
    "ab_wb",    # (3,): angular velocity in body axes [rad/s]
])




def make_workspace(S) -> tuple:
    """Scratch arrays sized for the System arrays S."""
    nb, nv = S.nb, S.nv
    nc = S.cr_a.shape[0]
    nmax = S.Ke.shape[1]
    nbd = 6 + nmax
    z = np.zeros
    return Workspace(
        r=z((nb, 3)), A=z((nb, 3, 3)), v=z((nb, 3)), w=z((nb, 3)), a=z((nb, 3)), al=z((nb, 3)),
        Jv=z((nb, 3, nv)), Jw=z((nb, 3, nv)),
        k_r=z(3), k_A=z((3, 3)), k_v=z(3), k_w=z(3), k_a=z(3), k_al=z(3), k_Jv=z((3, nv)), k_Jw=z((3, nv)),
        k_p=z(3), k_R=z((3, 3)), k_cw=z(3), k_Sv=z((3, 6)), k_Sw=z((3, 6)),
        k_R1=z((3, 3)), k_R2=z((3, 3)), k_b=z(3), k_pw=z(3), k_wrel=z(3), k_vrel=z(3), k_d=z(3), k_t3=z(3),
        m_s=z(3), m_Ds=z((3, nmax)), m_sd=z(3), m_sb=z(3), m_R=z((3, 3)), m_wr=z(3), m_wb=z(3),
        m_t1=z(3), m_t2=z(3), m_psi=z(3), m_psid=z(3), m_E=z((3, 3)), m_T=z((3, 3)),
        m_sw=z(3), m_sdw=z(3), m_wrw=z(3), m_TPsi=z((3, nmax)),
        b_S=z(3), b_pv=z(3), b_pw=z(3), b_g=z(3), f_h=z(nmax), f_hd=z(nmax),
        Jb=z((nbd, nv)), cb=z(nbd), wb=z(nbd), Mb=z((nbd, nbd)), hb=z(nbd), Fb=z(nbd),
        MJ=z((nbd, nv)), rhs=z(nv), l_F=z(3), l_T=z(3),
        l_r=z(3), l_A=z((3, 3)), l_v=z(3), l_w=z(3), l_Jv=z((3, nv)), l_Jw=z((3, nv)), l_a=z(3), l_al=z(3),
        l_r2=z(3), l_A2=z((3, 3)), l_v2=z(3), l_w2=z(3), l_Jv2=z((3, nv)), l_Jw2=z((3, nv)), l_a2=z(3),
        M=z((nv, nv)), Q=z(nv), L=z((nv, nv)), Mrow=z((nv, nv)), tau_drive=z(nv),
        xq=z(S.nq), xu=z(nv),
        c_g=z(nc), c_G=z((nc, nv)), c_G0=z((nc, nv)), c_gam=z(nc), c_X=z((nc, nv)), c_S=z((nc, nc)),
        c_LS=z((nc, nc)), c_lam=z(nc), c_r=z(nc), c_dir=z((nc, 3)), c_a2=z(3), c_al2=z(3), c_e=z(3), c_f=z(3),
        c_t=z(3),
        ab_P=z((nb, 6, nbd)), ab_S=z((nb, 6, 6)), ab_Vb=z((nb, 6)), ab_cb=z((nb, 6)), ab_c=z((nb, 6)),
        ab_IA=z((nb, nbd, nbd)), ab_pA=z((nb, nbd)), ab_U=z((nb, nbd, nbd)), ab_K=z((nb, nbd, 6)),
        ab_Du=z((nb, nbd)), ab_zd=z((nb, nbd)), ab_col=np.zeros((nb, nbd), np.int64),
        ab_nf=np.zeros(nb, np.int64), ab_nj=np.zeros(nb, np.int64), ab_tau=z(nv),
        ab_D=z((nbd, nbd)), ab_L=z((nbd, nbd)), ab_x=z(nbd), ab_Ia=z((6, 6)), ab_T=z((6, nbd)),
        ab_fa=z(6), ab_a6=z(6), ab_E=z((3, 3)), ab_Rc=z((3, 3)), ab_RM=z((3, 3)), ab_V3=z((N_V3, 3)), ab_eta=z(nmax), ab_etad=z(nmax),
        ab_vb=z(3), ab_wb=z(3),
    )




@structref.register
class FieldsType(types.StructRef):
    """A numba struct passed by reference whose fields mirror a namedtuple of arrays."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class Fields(structref.StructRefProxy):
    """Python handle of a FieldsType struct (opaque: read the arrays from the namedtuple)."""


structref.define_boxing(FieldsType, Fields)


@intrinsic
def _fill(typingctx, st, tup):
    """Copy every element of a namedtuple into the same-named field of a fresh struct."""

    def codegen(context, builder, sig, args):
        st_ty, tup_ty = sig.args
        inst, tupval = args
        data = _Utils(context, builder, st_ty).get_data_struct(inst)
        for i, name in enumerate(tup_ty.fields):
            val = builder.extract_value(tupval, i)
            context.nrt.incref(builder, tup_ty.types[i], val)
            setattr(data, name, val)
        return context.get_dummy_value()

    return types.none(st, tup), codegen


def _struct_of(prototype: tuple) -> FieldsType:
    return FieldsType(list(zip(type(prototype)._fields, typeof(prototype).types)))


def _prototype_system() -> tuple:
    """A SystemArrays with the right dtypes and dimensions (sizes are irrelevant to typing)."""
    f, i = np.zeros, lambda *s: np.zeros(s, np.int64)
    dims = dict(
        nb=0, nq=0, nv=0, gravity=f(3), parent=i(0), jtype=i(0), pmark=i(0), c_pos=f((0, 3)),
        c_R=f((0, 3, 3)), axis1=f((0, 3)), axis2=f((0, 3)), jq=i(0), jnq=i(0), ju=i(0), jnv=i(0),
        quat_q=i(0), quat_u=i(0), nm=i(0), eq=i(0), ev=i(0), eta_max=f((0, 1)), mass=f(0), pt_n=i(0), pt_m=f((0, 1)),
        pt_s=f((0, 1, 3)), pt_P=f((0, 1, 3, 1)), pt_H=f((0, 1, 1, 1)), Mc=f((0, 7, 7)),
        Ke=f((0, 1, 1)), De=f((0, 1, 1)),
        mk_body=i(0), mk_s0=f((0, 3)), mk_R0=f((0, 3, 3)), mk_Phi=f((0, 3, 1)), mk_Psi=f((0, 3, 1)),
        mk_H=f((0, 1, 1)), uq=i(0), k_spring=f(0), c_spring=f(0), q_preload=f(0), drive=i(0),
        drive_in=i(0), drive_prof=i(0), kp=f(0), kd=f(0), motor_J=f(0), prof_code=i(0),
        prof_par=f((0, 6)), prof_t=f((0, 1)), prof_c=f((0, 1, 4)), prof_n=i(0), pf_marker=i(0),
        pf_force=f((0, 3)), pf_torque=f((0, 3)), pf_frame=i(0), pf_input=i(0), sd_a=i(0), sd_b=i(0),
        sd_k=f(0), sd_c=f(0), sd_l0=f(0), sd_m=f(0), cr_a=i(0), cr_b=i(0), cr_kind=i(0), cr_i=i(0), cr_j=i(0),
        cr_E=f((0, 3, 3)), cr_on=i(0), recursive=0)
    return SystemArrays(**dims)


_SYSTEM = _prototype_system()
SYSTEM_STRUCT = _struct_of(_SYSTEM)
WORK_STRUCT = _struct_of(make_workspace(_SYSTEM))


@njit(**JIT)
def _box_system(t):
    b = structref.new(SYSTEM_STRUCT)
    _fill(b, t)
    return b


@njit(**JIT)
def _box_work(t):
    b = structref.new(WORK_STRUCT)
    _fill(b, t)
    return b


def box(t: tuple) -> Fields:
    """Put a SystemArrays or a Workspace into a struct for the kernels."""
    return _box_system(t) if isinstance(t, SystemArrays) else _box_work(t)
