"""Flexible-body preprocessing: sections, beam finite elements, superelement import, constrained modes
and the modal inertia invariants (body frame, SI units)."""

from .beam import Beam, beam_matrices
from .invariants import FlexBodyData, beam_body, beam_invariants, rigid_fields, superelement_body
from .reduction import clamped_dofs, constrained_modes, craig_bampton
from .sections import Section, box_tube, circle, explicit, rectangle, tube
from .superelement import Superelement, load_matrix_files, load_matrix_market, load_npz, make_superelement

__all__ = [
    "Beam",
    "FlexBodyData",
    "Section",
    "Superelement",
    "beam_body",
    "beam_invariants",
    "beam_matrices",
    "box_tube",
    "circle",
    "clamped_dofs",
    "constrained_modes",
    "craig_bampton",
    "explicit",
    "load_matrix_files",
    "load_matrix_market",
    "load_npz",
    "make_superelement",
    "rectangle",
    "rigid_fields",
    "superelement_body",
    "tube",
]
