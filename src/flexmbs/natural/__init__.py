"""A second, independent formulation for rigid mechanisms with closed loops: natural
coordinates with a constant mass matrix and a topology-ordered block factorisation (Kraus et al. 2001).
Selected by `solver: {formulation: natural}` in the model file (flexmbs.simulate then runs it);
it shares nothing with the joint-coordinate kernels but the model file and the output signals,
and serves as their cross-check.

Scope: rigid bodies; revolute, prismatic (to the ground), spherical and fixed joints, tree or
cut alike; motion drives on revolute joints; gravity. No springs, dampers, torque inputs or
loads (refused with a message naming them).
"""

from .arrays import NaturalSystem, compile_natural
from .run import simulate_natural

__all__ = ["NaturalSystem", "compile_natural", "simulate_natural"]
