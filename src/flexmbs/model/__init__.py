"""Model description: the user-facing dataclasses, one table per element type, the YAML loader
and the validator."""

from .elements import (GROUND, IMPLICIT_METHODS, METHODS, Body, Damping, Drive, Joint, Load, Loops, Marker, Material, Model, Motor,
                       Profile, Section, Sensor, Solver, Spring, inertia_matrix)
from .errors import Issue, ModelError
from .loader import load_model, model_from_dict
from .tables import CUT_TYPES, JOINT_TYPES, JOINTS, MOTOR, PROFILE_TYPES, PROFILES, SECTIONS, section_properties
from .validate import validate
from ..so3 import rotation_matrix

__all__ = [
    "CUT_TYPES", "GROUND", "IMPLICIT_METHODS", "JOINTS", "JOINT_TYPES", "METHODS", "MOTOR", "PROFILES", "PROFILE_TYPES", "SECTIONS", "Body",
    "Damping", "Drive", "Issue", "Joint", "Load", "Loops", "Marker", "Material", "Model", "ModelError", "Motor",
    "Profile",
    "Section", "Sensor", "Solver", "Spring", "inertia_matrix", "load_model", "model_from_dict", "rotation_matrix",
    "section_properties", "validate",
]
