"""Meshes and kinematic maps with known answers, shared by the core tests."""

import numpy as np
import torch

from neurok_blender.core import KinematicMap
from neurok_blender.core.mesh import box_mesh, loose_parts

box = box_mesh  # closed, outward-facing box with its lowest corner at ``corner``


def hinged_boxes(gap=0.0):
    """(vertices, faces, parts): a 0.6 x 0.4 x 0.2 box with a 0.4 x 0.4 x 0.05 lid beside it on top,
    their edges meeting along the line x = 0.3, z = 0.7 (the lid raised by ``gap``: apart)."""
    (va, fa), (vb, fb) = box_mesh((0.6, 0.4, 0.2), (-0.3, -0.2, 0.5)), box_mesh((0.4, 0.4, 0.05), (0.3, -0.2, 0.7 + gap))
    vertices, faces = np.concatenate([va, vb]), np.concatenate([fa, fb + len(va)])
    return vertices, faces, loose_parts(faces, len(vertices))


class PendulumMap(KinematicMap):
    """One point mass on a massless rod of length L about a pivot at the origin; q = angle from down.

    Uses the base class's generic forward-mode derivatives on purpose.
    """

    def __init__(self, length=1.0, mass=1.0):
        super().__init__()
        self.length = length
        self.mass_points = torch.tensor([[[0.0, 0.0, -length]]], dtype=torch.float64)
        self.masses = torch.tensor([[mass]], dtype=torch.float64)
        self.rigid_dofs = torch.tensor([False])

    def embed(self, q, name):
        c, s = torch.cos(q[:, 0]), torch.sin(q[:, 0])
        zero, one = torch.zeros_like(c), torch.ones_like(c)
        rot = torch.stack([torch.stack([c, zero, -s], -1), torch.stack([zero, one, zero], -1),
                           torch.stack([s, zero, c], -1)], -2)
        return self.points(name) @ rot.transpose(1, 2)


class SpringMap(KinematicMap):
    """A point mass sliding along x with the potential V = k s^2 / 2."""

    def __init__(self, stiffness=4.0, mass=1.0):
        super().__init__()
        self.stiffness = stiffness
        self.mass_points = torch.zeros(1, 1, 3, dtype=torch.float64)
        self.masses = torch.tensor([[mass]], dtype=torch.float64)
        self.rigid_dofs = torch.tensor([False])

    def embed(self, q, name):
        return self.points(name) + q[:, None, :1] * torch.tensor([1.0, 0.0, 0.0], dtype=q.dtype)

    def potential(self, q):
        return 0.5 * self.stiffness * q[:, 0] ** 2


class StiffeningMap(SpringMap):
    """V = k (s^2 + s^4) / 2, V'' = k (1 + 6 s^2): at s = 2 omega is 5 times omega at rest, as a pulled
    start on the learned potential's wall."""

    def potential(self, q):
        return 0.5 * self.stiffness * (q[:, 0] ** 2 + q[:, 0] ** 4)


class WallMap(SpringMap):
    """A point mass sliding along x in a sextic well V = k s^6 / 6: no stiffness at rest, a steep wall
    further out, as the learned coordinates' wall; s counts as a learned coordinate."""

    def potential(self, q):
        return self.stiffness * q[:, 0] ** 6 / 6

    def latent_speed(self, q_dot):
        return float(q_dot.abs().max())


def overdamped_spring(damping, omega=100.0, x0=0.01):
    """x'' + c x' + omega^2 x = 0 from x0 at rest, c > 2 omega: the system, its start (q0, q_dot0) and the
    exact x(t) = x0 (l2 e^(l1 t) - l1 e^(l2 t)) / (l2 - l1), l = (-c +- sqrt(c^2 - 4 omega^2)) / 2."""
    from neurok_blender.core import Environment, LagrangianSystem

    system = LagrangianSystem(SpringMap(stiffness=omega**2, mass=1.0),
                              Environment(gravity=torch.zeros(3, dtype=torch.float64), damping=damping))
    q0, q_dot0 = torch.full((1, 1), x0, dtype=torch.float64), torch.zeros(1, 1, dtype=torch.float64)
    root = np.sqrt(damping**2 - 4 * omega**2)
    l1, l2 = (-damping + root) / 2, (-damping - root) / 2
    return system, q0, q_dot0, lambda t: x0 * (l2 * np.exp(l1 * t) - l1 * np.exp(l2 * t)) / (l2 - l1)
