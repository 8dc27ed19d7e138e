"""Model description: the user-facing dataclasses, the YAML loader and the validator."""

from .elements import (CUT_TYPES, GROUND, JOINT_NQ, JOINT_NV, JOINT_TYPES, METHODS, PROFILE_TYPES, Body,
                       Damping, Drive, Joint, Load, Loops, Marker, Material, Model, Profile, Section,
                       Sensor, Solver, Spring)
from .errors import Issue, ModelError
from .loader import load_model, model_from_dict
from .validate import inertia_matrix, validate
from ..so3 import rotation_matrix

__all__ = [
    "CUT_TYPES", "GROUND", "JOINT_NQ", "JOINT_NV", "JOINT_TYPES", "METHODS", "PROFILE_TYPES", "Body", "Damping",
    "Drive", "Issue", "Joint", "Load", "Loops", "Marker", "Material", "Model", "ModelError", "Profile",
    "Section", "Sensor", "Solver", "Spring", "inertia_matrix", "load_model", "model_from_dict",
    "rotation_matrix", "validate",
]
