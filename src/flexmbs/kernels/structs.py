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
from llvmlite import ir
from numba.core import cgutils
from numba.core.datamodel import default_manager, models
from numba.core.imputils import impl_ret_borrowed, lower_getattr_generic
from numba.core.typing.templates import AttributeTemplate
from numba.extending import infer_getattr, intrinsic

from .articulated import N_V3
from .settings import JIT

# Sizes: nb bodies (tree order, every parent before its children), nq / nv position / velocity
# coordinates, nmax the most modes of any body (>= 1; per-body arrays are padded to it), npmax
# the most mass points, nmk markers (the ground's first), nprof motion profiles, ntab spline
# knots, npf point loads, nsd spring-dampers and elastic rods, nc loop-constraint rows.
# Frames: W world; B a body's floating frame (at its joint's child marker / clamped reference);
# M a marker frame; P the parent marker of a joint. r_XY: position of Y in X.
SYSTEM_FIELDS: tuple[tuple[str, str], ...] = (
    ("nb", "number of bodies"),
    ("nq", "number of position coordinates q = [joint coordinates in tree order; modal coordinates]"),
    ("nv", "number of velocity coordinates u (= nq less one per quaternion)"),
    ("gravity", "(3,) gravitational acceleration in W [m/s^2]"),
    # tree and joints, per body (each body has exactly one inboard joint)
    ("parent", "(nb,) parent body index, -1 for ground"),
    ("jtype", "(nb,) joint type code (kernels/joints.py: FIXED ... FREE)"),
    ("pmark", "(nb,) marker index of the joint's parent marker P"),
    ("c_pos", "(nb, 3) r_BC: the joint's child marker C in the body frame B [m]"),
    ("c_R", "(nb, 3, 3) R_BC: orientation of the child marker in B"),
    ("axis1", "(nb, 3) first joint axis, unit, in P"),
    ("axis2", "(nb, 3) second joint axis (universal, planar), unit, in P"),
    # a revolute joint's rotation from the parent's to the child's axes on a parent marker that
    # does not deform: E(theta) = cos(theta) hj_C + (1 - cos(theta)) hj_w hj_m^T - sin(theta) hj_X
    # (compile/joints._hinge_tables)
    ("hj_C", "(nb, 3, 3) R_BC R_PM^T (R_PM: the parent marker's orientation mk_R0 in the parent body)"),
    ("hj_X", "(nb, 3, 3) R_BC [a]x R_PM^T (a = axis1)"),
    ("hj_w", "(nb, 3) R_BC a: the joint axis in B"),
    ("hj_m", "(nb, 3) R_PM a: the joint axis in the parent's axes (on such a marker)"),
    ("jq", "(nb,) index of the joint's first coordinate in q"),
    ("jnq", "(nb,) number of the joint's position coordinates"),
    ("ju", "(nb,) index of the joint's first coordinate in u"),
    ("jnv", "(nb,) number of the joint's velocity coordinates"),
    ("quat_q", "(nb,) index in q of the joint's quaternion [w, x, y, z], -1 if none"),
    ("quat_u", "(nb,) index in u of the joint's angular velocity (child axes) paired with it, -1 if none"),
    ("tree_top", "(nb,) the body's outermost ancestor below the ground (itself for a body jointed to ground)"),
    ("tree_sub_ptr", "(nb + 1,) tree_sub[tree_sub_ptr[t]:tree_sub_ptr[t + 1]] lists the subtree of top body t"),
    ("tree_sub", "(nb,) bodies grouped by tree_top, each group in tree order (empty groups for non-top bodies)"),
    # body inertia: flexible bodies padded to nmax modes (kernels/body.py)
    ("nm", "(nb,) number of modal coordinates eta of each body (0: rigid)"),
    ("eq", "(nb,) index of the body's first modal coordinate in q"),
    ("ev", "(nb,) index of the body's first modal rate in u"),
    ("eta_max", "(nb, nmax) modal amplitude that deflects the body by its own size: divergence bound [1]"),
    ("mass", "(nb,) body mass [kg]"),
    ("pt_n", "(nb,) number of mass points of the body"),
    ("pt_m", "(nb, npmax) mass of each point [kg]"),
    ("pt_s", "(nb, 3, npmax) undeformed position of each point in B [m] (the points last, here and in "
             "pt_P, pt_H: the sums over them vectorise)"),
    ("pt_P", "(nb, 3, nmax, npmax) translational mode shapes of each point in B [m per unit eta]"),
    ("pt_H", "(nb, nmax, nmax, npmax) foreshortening matrix: axial displacement -1/2 eta^T H eta [1/m]"),
    ("Mc", "(nb, 6+nmax, 6+nmax) constant part of the body mass matrix in z = [v; w; etad] (B axes) "
           "[kg, kg m, kg m^2]: all of a rigid body; what its points do not carry for a flexible one"),
    # moments of the mass points (kernels/body.py): with them the sums over points are exact
    # polynomials in eta (up to eta^4 with foreshortening); one slot per body that uses them, B axes
    ("iv_k", "(nb,) the body's slot in iv_m ... iv_Me, -1: it sums over its mass points (cheaper, or rigid)"),
    ("iv_h", "(nb,) the body's slot in iv_G ... iv_HH, -1: no foreshortening"),
    ("iv_m", "(nk,) sum m_q: mass of the points [kg]"),
    ("iv_S", "(nk, 3) sum m_q s_q: first moment of the undeformed points [kg m]"),
    ("iv_A", "(nk, 3, 3) sum m_q s_q s_q^T: second moment [kg m^2]"),
    ("iv_Sb", "(nk, 3, nmax) sum m_q P_q: modal first moment [kg m per unit eta]"),
    ("iv_Sk", "(nk, 3, 3, nmax) [k, l, j] sum m_q s_qk P_qlj [kg m^2 per unit eta]"),
    ("iv_C", "(nk, 3, 3, nmax, nmax) [k, l, i, j] sum m_q P_qki P_qlj [kg m^2 per unit eta^2]"),
    ("iv_Cx", "(nk, 3, nmax, nmax) [a, i, j] iv_C[k, l, i, j] - iv_C[l, k, i, j] for (k, l) = (1, 2), (2, 0), "
              "(0, 1) as a = 0, 1, 2: the antisymmetric part of iv_C, which alone enters the Coriolis "
              "forces on the modes [kg m^2 per unit eta^2]"),
    ("iv_Me", "(nk, nmax, nmax) sum m_q P_q^T P_q: the points' modal mass [kg m^2 per unit eta^2]"),
    ("iv_G", "(nh, nmax, nmax) sum m_q H_q [kg/m]"),
    ("iv_HS", "(nh, nmax, nmax, 3) [a, b, k] sum m_q H_qab s_qk [kg]"),
    ("iv_HP", "(nh, nmax, nmax, 3, nmax) [a, b, k, c] sum m_q H_qab P_qkc [kg per unit eta]"),
    ("iv_HH", "(nh, nmax, nmax, nmax, nmax) [a, b, c, d] sum m_q H_qab H_qcd [kg/m^2]"),
    ("Ke", "(nb, nmax, nmax) modal stiffness [N m per unit eta^2]"),
    ("De", "(nb, nmax, nmax) modal damping [N m s per unit eta^2]"),
    # markers
    ("mk_body", "(nmk,) owning body, -1 for ground"),
    ("mk_s0", "(nmk, 3) undeformed position r_BM [m] (ground: in W)"),
    ("mk_R0", "(nmk, 3, 3) undeformed orientation R_BM"),
    ("mk_Phi", "(nmk, 3, nmax) translational mode shapes at the marker, B axes [m per unit eta]"),
    ("mk_Psi", "(nmk, 3, nmax) rotational mode shapes at the marker (rotation vector), B axes [rad per unit eta]"),
    ("mk_H", "(nmk, nmax, nmax) foreshortening matrix at the marker [1/m]"),
    # per velocity coordinate
    ("uq", "(nv,) index in q of the position coordinate whose rate this is, -1 for quaternion rates"),
    ("k_spring", "(nv,) joint spring stiffness [N m/rad or N/m]"),
    ("c_spring", "(nv,) joint damper [N m s/rad or N s/m]"),
    ("q_preload", "(nv,) spring rest position [rad or m]"),
    ("drive", "(nv,) drive code (kernels/drives.py: PASSIVE, TORQUE, MOTION, SERVO, MOTOR)"),
    ("drive_in", "(nv,) index of a torque drive's input (a motor drive's: its voltage [V]), -1 otherwise"),
    ("drive_prof", "(nv,) index of a motion/servo drive's profile, -1 otherwise"),
    ("kp", "(nv,) servo stiffness [N m/rad or N/m]"),
    ("kd", "(nv,) servo damping [N m s/rad or N s/m]"),
    ("motor_J", "(nv,) rotor inertia on the coordinate (motor + reflected gear) [kg m^2 or kg]"),
    # geared DC motors inside the plant (kernels/motor.py; parameters per coordinate, 0 without one)
    ("mot_i", "(nv,) index k of the coordinate's motor current, the state x[nq + nv + k]; -1 without a motor drive"),
    ("mot_c", "(ni,) the velocity coordinate each motor current drives (ni motors)"),
    ("mot_R", "(nv,) armature resistance [ohm]"),
    ("mot_L", "(nv,) armature inductance [H]"),
    ("mot_kt", "(nv,) torque constant = back-EMF constant [N m/A = V s/rad]"),
    ("mot_b", "(nv,) viscous friction on the motor shaft, motor side [N m s/rad]"),
    ("mot_ratio", "(nv,) gear ratio: motor speed / joint speed [1]"),
    ("mot_eff", "(nv,) gear efficiency: fraction of the power the gear passes on [1]"),
    ("mot_wb", "(nv,) motor speed below which the gear's loss fades to none at standstill [rad/s]"),
    # motion profiles (kernels/profiles.py)
    ("prof_code", "(nprof,) profile type code"),
    ("prof_par", "(nprof, NPAR) profile parameters (meaning per type in profiles.py)"),
    ("prof_t", "(nprof, ntab) spline knots of table profiles [s]"),
    ("prof_c", "(nprof, ntab, 4) cubic coefficients per knot interval"),
    ("prof_n", "(nprof,) number of knots"),
    # loads
    ("pf_marker", "(npf,) marker of each point load"),
    ("pf_force", "(npf, 3) constant force [N] (frame: pf_frame)"),
    ("pf_torque", "(npf, 3) constant torque [N m]"),
    ("pf_frame", "(npf,) 0: components in W, 1: in the marker frame"),
    ("pf_input", "(npf,) index of its first of six inputs (force, torque), -1 if none"),
    ("sd_a", "(nsd,) first marker of each spring-damper / rod"),
    ("sd_b", "(nsd,) second marker"),
    ("sd_k", "(nsd,) stiffness [N/m] (rod: E A / L)"),
    ("sd_c", "(nsd,) damping [N s/m]"),
    ("sd_l0", "(nsd,) rest length [m]; 0: isotropic bushing"),
    ("sd_m", "(nsd,) mass of an elastic rod [kg], 0 for a massless spring-damper"),
    # loop-closing constraints, per row (flexmbs/loops.py)
    ("cr_a", "(nc,) marker a (the cut joint's parent side)"),
    ("cr_b", "(nc,) marker b (child side)"),
    ("cr_kind", "(nc,) 0: position e_i^A . (r_b - r_a); 1: alignment e_i^A . e_j^B"),
    ("cr_i", "(nc,) column i of the joint frame E on side a"),
    ("cr_j", "(nc,) column j of E on side b (alignment rows)"),
    ("cr_E", "(nc, 3, 3) joint frame E = [e1 e2 e3] in both marker frames (e3: the cut joint's axis)"),
    ("cr_on", "(nc,) 1 if the row is kept, 0 if dropped as redundant"),
    # their coupling through the tree, for the recursion (kernels/loop_closure.py): two kept rows
    # are coupled when a body of one has a tree_top in common with a body of the other
    ("cr_act", "(na,) row index of each kept row, in row order"),
    ("cr_nbr_ptr", "(na + 1,) cr_nbr[cr_nbr_ptr[i]:cr_nbr_ptr[i + 1]] lists the kept rows coupled with kept row i"),
    ("cr_nbr", "kept rows j <= i coupled with kept row i, ascending (the last is i)"),
    ("cr_env", "(na,) first column of row i's envelope in G M^-1 G^T: its smallest coupled row"),
    # forward-dynamics route (system.uses_recursion)
    ("recursive", "1: articulated-body recursion (kernels/articulated.py), 0: composite mass matrix"),
)
SystemArrays = namedtuple("SystemArrays", [name for name, _ in SYSTEM_FIELDS])
SystemArrays.__doc__ = "The compiled System as flat arrays (fields: SYSTEM_FIELDS)."


def read_only(arrays: tuple) -> tuple:
    """`arrays` (a SystemArrays) with every array made read-only, in place: a compiled System
    is not changed afterwards, by Python or by a kernel (the box types them read-only, so a
    kernel that wrote into one would not compile)."""
    for value in arrays:
        if isinstance(value, np.ndarray):
            value.setflags(write=False)
    return arrays


def _marker_frame(prefix: str, nv: int, suffixes: str = "") -> dict:
    """Scratch for one marker's world pose and motion as `marker_world` fills it: r (3) [m],
    A (3, 3) R_WM, v, w (3) [m/s, rad/s], Jv, Jw (3, nv), a, al (3) velocity-product
    accelerations [m/s^2, rad/s^2], all in W."""
    z = np.zeros
    out = {}
    for s in suffixes or [""]:
        out.update({f"{prefix}r{s}": z(3), f"{prefix}A{s}": z((3, 3)), f"{prefix}v{s}": z(3),
                    f"{prefix}w{s}": z(3), f"{prefix}Jv{s}": z((3, nv)), f"{prefix}Jw{s}": z((3, nv)),
                    f"{prefix}a{s}": z(3), f"{prefix}al{s}": z(3)})
    return out


def _workspace_fields(S) -> dict:
    """Scratch and stage results for the System arrays S, by field name. Each kernel owns the fields of its
    prefix and no other kernel writes them:

    stage results (read by later stages and outputs):
      r, A, v, w, a, al (nb, 3 / 3x3): body frame origin r_WB [m], R_WB, velocity [m/s],
        angular velocity [rad/s], velocity-product accelerations (Jdot u) [m/s^2, rad/s^2], in W;
      Jv, Jw (nb, 3, nv): world Jacobians, v = Jv u, w = Jw u;
      M (nv, nv) mass matrix; Q (nv) generalised forces; L (nv, nv) Cholesky factor of the
      (drive-modified) M; tau_drive (nv) torque [N m or N] of each motion drive;
      c_g, c_G, c_gam, c_lam, c_dir: constraint residuals, Jacobian, velocity-product term,
      multipliers [N or N m] and reaction directions (kernels/constraints.py); c_fw (nc, 12)
      each row's world forces and torques at its markers per unit multiplier; c_za, c_zb
      (nc, nbd) the same as extended forces on the bodies of markers a and b (body axes: the
      row of G in z coordinates, kernels/loop_closure.py);
    scratch by kernel:
      k_*  kinematics.forward        m_*  kinematics.marker_local / marker_world
      b_*  body.body_terms (moments: b_J inertia tensor, b_B [k, l, j] sum m r_k D_lj, b_N its
           contraction with etad, b_Ce iv_C contracted with eta, b_Cx iv_Cx with etad, b_W1, b_W2, b_W3,
           b_V the foreshortening moments contracted with eta; points, the last axis: b_r, b_a,
           b_t (3, npmax) each point's position [m], acceleration terms [m/s^2] and P etad
           [m/s], b_c (3, npmax) eta^T H eta, etad^T H etad, etad^T H eta, b_h (nmax, npmax)
           H eta, b_D (nmax, npmax) D's axial row P[0] - (H eta)^T, b_hd (npmax))
      i_*  inertia.inertia (the frame rows of a body's Jacobian i_J (6, nv), z, c (6), M, h, F)
      l_*  loads.load_forces         s_*  dynamics.composite_accelerations (solve)
      c_*  constraints               o_*  outputs.sample
      e_*  energy.energies (e_kin (nb): each body's kinetic energy 1/2 z^T Mb z [J], which the
           dynamics leave in an output sample: inertia.inertia, the recursion's pass 1)
      ab_* articulated (the recursion; nbd = 6 + nmax, body axes throughout):
        ab_P (nb, 6, nbd) child frame velocity [v; w] from the parent's extended velocity z_p
          (rows 3-5 of columns 0-2 are zero, from the allocation: pass 1 does not write them);
        ab_S (nb, 6, 6) joint motion subspace in child axes (first jnv columns);
        ab_rp (nb, 3) r_pb: the parent's origin to the body's, in the parent's axes [m];
        ab_Vb, ab_cb (nb, 6) body velocity [m/s, rad/s] and velocity-product acceleration
        [m/s^2, rad/s^2]; ab_c (nb, 6) Pdot z_p + Hdot y plus the prescribed columns' H qdd;
        ab_IA (nb, nbd, nbd) articulated inertia [kg, kg m, kg m^2]; ab_pA (nb, nbd) articulated
        bias force [N, N m, modal]; ab_U (nb, nbd, nbd) IA H over the free columns of H;
        ab_K (nb, nbd, 7) D^-1 [U^T (frame columns), u] (articulated.KU: the last); ab_zd (nb, nbd)
        extended accelerations; ab_col (nb, nbd) velocity coordinate of each free column,
        ab_nf / ab_nj (nb,) number of free / joint columns; ab_tau (nv) joint forces [N m or N];
        per body processed: ab_D, ab_L (nbd, nbd) pivot block and its factor, ab_x (nbd),
        ab_Ia (6, 6) IA - U D^-1 U^T, ab_T (6, nbd) and ab_X (6, 6) scratch of the transform
        to the parent (ab_Ia rotated, shifted, times P's modal columns), ab_fa, ab_a6 (6), rotations
        ab_E (parent -> child axes), ab_Rc (parent marker -> child; not written for a hinge on a
        rigid parent or the ground), ab_RM (parent marker -> parent; not written for a hinge
        on a rigid parent or the ground either), ab_V3 (N_V3, 3) named 3-vectors, ab_eta, ab_etad (nmax) zero-padded modal
        state, ab_vb, ab_wb (3), body terms ab_hb, ab_Fb (nbd), ab_g (3)
        gravity in body axes; joint kinematics scratch ab_p, ab_R, ab_Sv, ab_Sw, ab_cw, ab_R1,
        ab_R2, ab_bj; load scratch: marker frames abl_*a, abl_*b, force ab_F [N], torque
        ab_Tq [N m], ab_t (3); with loops (kernels/loop_closure.py): ab_Lb (nb, nbd, nbd) each
        body's factor of D, and a unit-force solve's extended force ab_pT, D^-1 part ab_DuT,
        accelerations ab_zT and free-column accelerations ab_yT (nb, nbd), its marks ab_on
        (bodies on the forces' paths) and ab_topon (tops whose subtree it solved), ab_count the
        solves so far (the marks' stamp).
      xq, xu, xud: dynamics.rhs's copies of q and u (prescribed values are written into them)
        and its udot; xi (ni): the motor currents [A] the joint forces read (rhs and sample
        copy them from the state);
      sampling (1): 1.0 while outputs.sample runs: the dynamics then leave each body's kinetic
        energy in e_kin for energy.kinetic (any other right-hand side skips it);
      rates_only (1): 1.0 while an integrator's kernel runs (solvers/explicit.py, implicit.py),
        whose right-hand sides are read for their rates only: the recursion's pass 1 then
        leaves the bodies' world position and motion (r, v, w, a, al) unset unless the model's
        loads or loop rows read them (articulated._world_motion). The integrators' entry points
        clear it when they return, the output samples when they start (after an exception in
        an integrator's kernel it stays set until then; the rates do not depend on it).
    """
    nb, nv = S.nb, S.nv
    nc = S.cr_a.shape[0]
    nmax = S.Ke.shape[1]
    npmax = S.pt_m.shape[1]
    nbd = 6 + nmax
    z = np.zeros
    return dict(
        r=z((nb, 3)), A=z((nb, 3, 3)), v=z((nb, 3)), w=z((nb, 3)), a=z((nb, 3)), al=z((nb, 3)),
        Jv=z((nb, 3, nv)), Jw=z((nb, 3, nv)),
        M=z((nv, nv)), Q=z(nv), L=z((nv, nv)), tau_drive=z(nv),
        k_r=z(3), k_A=z((3, 3)), k_v=z(3), k_w=z(3), k_a=z(3), k_al=z(3), k_Jv=z((3, nv)), k_Jw=z((3, nv)),
        k_p=z(3), k_R=z((3, 3)), k_cw=z(3), k_Sv=z((3, 6)), k_Sw=z((3, 6)),
        k_R1=z((3, 3)), k_R2=z((3, 3)), k_b=z(3), k_pw=z(3), k_wrel=z(3), k_vrel=z(3), k_d=z(3), k_t3=z(3),
        k_t1=z(3),
        m_s=z(3), m_Ds=z((3, nmax)), m_sd=z(3), m_sb=z(3), m_R=z((3, 3)), m_wr=z(3), m_wb=z(3),
        m_t1=z(3), m_psi=z(3), m_psid=z(3), m_E=z((3, 3)), m_T=z((3, 3)),
        m_sw=z(3), m_sdw=z(3), m_wrw=z(3), m_TPsi=z((3, nmax)), m_h=z(nmax), m_hd=z(nmax),
        b_r=z((3, npmax)), b_a=z((3, npmax)), b_t=z((3, npmax)), b_c=z((3, npmax)), b_D=z((nmax, npmax)),
        b_h=z((nmax, npmax)), b_hd=z(npmax),
        b_J=z((3, 3)), b_N=z((3, 3)), b_B=z((3, 3, nmax)),
        b_Ce=z((3, 3, nmax)), b_Cx=z((3, nmax)), b_g=z(nmax), b_W1=z((nmax, nmax, nmax)),
        b_W2=z((nmax, 3, nmax)), b_W3=z((nmax, nmax, 3)), b_V=z((nmax, nmax)), b_x=z(3), b_y=z(3),
        i_J=z((6, nv)), i_c=z(6), i_z=z(nbd), i_g=z(3), i_M=z((nbd, nbd)), i_h=z(nbd), i_F=z(nbd),
        i_MJ=z((nbd, nv)), **_marker_frame("i_", nv, "ab"),
        l_F=z(3), l_T=z(3), l_t=z(3), **_marker_frame("l_", nv, "ab"),
        s_rhs=z(nv), s_Mrow=z((nv, nv)),
        xq=z(S.nq), xu=z(nv), xud=z(nv), xi=z(S.mot_c.shape[0]), rates_only=z(1), sampling=z(1),
        c_g=z(nc), c_G=z((nc, nv)), c_G0=z((nc, nv)), c_gam=z(nc), c_X=z((nc, nv)), c_S=z((nc, nc)),
        c_LS=z((nc, nc)), c_lam=z(nc), c_r=z(nc), c_dir=z((nc, 3)), c_e=z(3), c_f=z(3), c_t=z(3),
        c_d=z(3), c_dd=z(3), c_ed=z(3), c_fd=z(3), c_fw=z((nc, 12)), c_za=z((nc, nbd)), c_zb=z((nc, nbd)),
        **_marker_frame("c_", nv, "ab"),
        e_s=z(3), e_t=z(3), e_ra=z(3), e_rb=z(3), e_A=z((3, 3)), e_v=z(3), e_vb=z(3), e_w=z(3),
        e_Jv=z((3, nv)), e_Jw=z((3, nv)), e_a=z(3), e_al=z(3), e_kin=z(nb),
        **_marker_frame("o_", nv),
        ab_P=z((nb, 6, nbd)), ab_S=z((nb, 6, 6)), ab_Vb=z((nb, 6)), ab_cb=z((nb, 6)), ab_c=z((nb, 6)),
        ab_IA=z((nb, nbd, nbd)), ab_pA=z((nb, nbd)), ab_U=z((nb, nbd, nbd)), ab_K=z((nb, nbd, 7)),
        ab_zd=z((nb, nbd)), ab_col=np.zeros((nb, nbd), np.int64),
        ab_nf=np.zeros(nb, np.int64), ab_nj=np.zeros(nb, np.int64), ab_tau=z(nv),
        ab_D=z((nbd, nbd)), ab_L=z((nbd, nbd)), ab_x=z(nbd), ab_Ia=z((6, 6)), ab_T=z((6, nbd)),
        ab_X=z((6, 6)), ab_rp=z((nb, 3)),
        ab_fa=z(6), ab_a6=z(6), ab_E=z((3, 3)), ab_Rc=z((3, 3)), ab_RM=z((3, 3)), ab_V3=z((N_V3, 3)),
        ab_eta=z(nmax), ab_etad=z(nmax), ab_vb=z(3), ab_wb=z(3),
        ab_hb=z(nbd), ab_Fb=z(nbd), ab_g=z(3),
        ab_p=z(3), ab_R=z((3, 3)), ab_Sv=z((3, 6)), ab_Sw=z((3, 6)), ab_cw=z(3), ab_R1=z((3, 3)),
        ab_R2=z((3, 3)), ab_bj=z(3), ab_F=z(3), ab_Tq=z(3), ab_t=z(3), **_marker_frame("abl_", nv, "ab"),
        ab_Lb=z((nb if nc else 0, nbd, nbd)), ab_pT=z((nb, nbd)), ab_DuT=z((nb, nbd)), ab_zT=z((nb, nbd)),
        ab_yT=z((nb, nbd)), ab_on=np.zeros(nb, np.int64), ab_topon=np.zeros(nb, np.int64),
        ab_count=np.zeros(1, np.int64),
    )


class FieldsType(types.StructRef):
    """A numba struct passed by reference whose fields mirror a namedtuple of arrays. A System's
    box also carries its forward-dynamics route in its type (`route`: ROUTES), so that numba
    compiles the kernels of that route only (kernels/dynamics.py dispatches on it)."""

    def __init__(self, fields, route: str = "") -> None:
        super().__init__(fields)
        self.route = route
        if route:
            self.name = f"{self.name}[{route}]"   # the type's identity (numba interns types by name)

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


# Registered by hand rather than with structref.register, for one difference: a field is read
# straight from the payload pointer of numba's MemInfo (its fourth member, as numba's own
# NRT_MemInfo_data_fast reads it) instead of through the runtime, so that the kernels compiled
# without the runtime (settings.KERNEL) can read fields without reference counting.
default_manager.register(FieldsType, models.StructRefModel)


@infer_getattr
class _FieldsAttribute(AttributeTemplate):
    key = FieldsType

    def generic_resolve(self, typ, attr):
        return typ.field_dict.get(attr)


@lower_getattr_generic(FieldsType)
def _fields_getattr(context, builder, typ, val, attr):
    meminfo = cgutils.create_struct_proxy(typ)(context, builder, value=val).meminfo
    words = builder.bitcast(meminfo, ir.IntType(8).as_pointer().as_pointer())
    data = builder.load(builder.gep(words, [ir.Constant(ir.IntType(32), 3)]))
    payload_type = context.data_model_manager[typ.get_data_type()].get_value_type()
    payload = cgutils.create_struct_proxy(typ.get_data_type())(
        context, builder, ref=builder.bitcast(data, payload_type.as_pointer()))
    # a borrowed reference: counted only where the runtime is on (impl_ret_borrowed checks)
    return impl_ret_borrowed(context, builder, typ.field_dict[attr], getattr(payload, attr))


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


def _struct_of(prototype: tuple, route: str = "") -> FieldsType:
    return FieldsType(list(zip(type(prototype)._fields, typeof(prototype).types)), route)


# The forward-dynamics routes: the articulated-body recursion or the composite mass matrix, on
# a tree or with closed loops (loop-closing rows). Each compiles only its own kernels.
ROUTES = ("recursive tree", "recursive loops", "composite tree", "composite loops")


def route_of(arrays: SystemArrays) -> str:
    """The route (ROUTES) of System arrays: S.recursive and whether there are loop rows."""
    return f"{'recursive' if arrays.recursive else 'composite'} {'loops' if arrays.cr_a.shape[0] else 'tree'}"


def _prototype_system() -> tuple:
    """A SystemArrays with the right dtypes and dimensions (sizes are irrelevant to typing)."""
    f, i = np.zeros, lambda *s: np.zeros(s, np.int64)
    dims = dict(
        nb=0, nq=0, nv=0, gravity=f(3), parent=i(0), jtype=i(0), pmark=i(0), c_pos=f((0, 3)),
        c_R=f((0, 3, 3)), axis1=f((0, 3)), axis2=f((0, 3)), hj_C=f((0, 3, 3)), hj_X=f((0, 3, 3)),
        hj_w=f((0, 3)), hj_m=f((0, 3)), jq=i(0), jnq=i(0), ju=i(0), jnv=i(0),
        quat_q=i(0), quat_u=i(0), tree_top=i(0), tree_sub_ptr=i(1), tree_sub=i(0), nm=i(0), eq=i(0), ev=i(0), eta_max=f((0, 1)), mass=f(0), pt_n=i(0), pt_m=f((0, 1)),
        pt_s=f((0, 3, 1)), pt_P=f((0, 3, 1, 1)), pt_H=f((0, 1, 1, 1)), Mc=f((0, 7, 7)),
        iv_k=i(0), iv_h=i(0), iv_m=f(0), iv_S=f((0, 3)), iv_A=f((0, 3, 3)), iv_Sb=f((0, 3, 1)),
        iv_Sk=f((0, 3, 3, 1)), iv_C=f((0, 3, 3, 1, 1)), iv_Cx=f((0, 3, 1, 1)), iv_Me=f((0, 1, 1)), iv_G=f((0, 1, 1)),
        iv_HS=f((0, 1, 1, 3)), iv_HP=f((0, 1, 1, 3, 1)), iv_HH=f((0, 1, 1, 1, 1)),
        Ke=f((0, 1, 1)), De=f((0, 1, 1)),
        mk_body=i(0), mk_s0=f((0, 3)), mk_R0=f((0, 3, 3)), mk_Phi=f((0, 3, 1)), mk_Psi=f((0, 3, 1)),
        mk_H=f((0, 1, 1)), uq=i(0), k_spring=f(0), c_spring=f(0), q_preload=f(0), drive=i(0),
        drive_in=i(0), drive_prof=i(0), kp=f(0), kd=f(0), motor_J=f(0), mot_i=i(0), mot_c=i(0),
        mot_R=f(0), mot_L=f(0), mot_kt=f(0), mot_b=f(0), mot_ratio=f(0), mot_eff=f(0), mot_wb=f(0), prof_code=i(0),
        prof_par=f((0, 6)), prof_t=f((0, 1)), prof_c=f((0, 1, 4)), prof_n=i(0), pf_marker=i(0),
        pf_force=f((0, 3)), pf_torque=f((0, 3)), pf_frame=i(0), pf_input=i(0), sd_a=i(0), sd_b=i(0),
        sd_k=f(0), sd_c=f(0), sd_l0=f(0), sd_m=f(0), cr_a=i(0), cr_b=i(0), cr_kind=i(0), cr_i=i(0), cr_j=i(0),
        cr_E=f((0, 3, 3)), cr_on=i(0), cr_act=i(0), cr_nbr_ptr=i(1), cr_nbr=i(0),
        cr_env=i(0), recursive=0)
    return read_only(SystemArrays(**dims))


_SYSTEM = _prototype_system()
Workspace = namedtuple("Workspace", list(_workspace_fields(_SYSTEM)))
Workspace.__doc__ = "Stage results and per-kernel scratch of the kernels (see _workspace_fields)."


def make_workspace(S) -> tuple:
    """A fresh Workspace for the System arrays S."""
    return Workspace(**_workspace_fields(S))


SYSTEM_STRUCTS = {route: _struct_of(_SYSTEM, route) for route in ROUTES}
WORK_STRUCT = _struct_of(make_workspace(_SYSTEM))


@njit(**JIT)
def _box_system(t, struct):
    b = structref.new(struct)
    _fill(b, t)
    return b


@njit(**JIT)
def _box_work(t):
    b = structref.new(WORK_STRUCT)
    _fill(b, t)
    return b


def box(t: tuple) -> Fields:
    """Put a SystemArrays or a Workspace into a struct for the kernels."""
    return _box_system(t, SYSTEM_STRUCTS[route_of(t)]) if isinstance(t, SystemArrays) else _box_work(t)
