"""Free rigid bodies: q = (p, theta), x = p + R_ref exp(theta) (xbar - c)."""

import numpy as np
import torch

from .kinematics import KinematicMap
from .mesh import mass_properties, principal_points
from .rotation import body_angular_velocity, exp_so3, exp_so3_derivatives


class RigidBodyMap(KinematicMap):
    """Six coordinates per body: translation of the centre of mass and a rotation vector.

    The rotation vector is measured from a reference orientation R_ref that ``recenter`` moves
    forward, so theta stays small: no gimbal lock and no 2*pi singularity of the exponential map.
    """

    def __init__(self, centers, mass_points, masses, dtype=torch.float64):
        self.centers = torch.as_tensor(np.asarray(centers), dtype=dtype)  # (B, 3) rest centre of mass
        self.mass_points = torch.as_tensor(np.asarray(mass_points), dtype=dtype)
        self.masses = torch.as_tensor(np.asarray(masses), dtype=dtype)
        self.orientation = torch.eye(3, dtype=dtype).repeat(len(self.centers), 1, 1)  # R_ref
        self.rigid_dofs = torch.ones(6, dtype=torch.bool)

    @classmethod
    def from_meshes(cls, meshes, masses, dtype=torch.float64):
        """One body per (vertices, faces); mass points reproduce each body's exact inertia."""
        props = [mass_properties(v, f, m) for (v, f), m in zip(meshes, masses)]
        points, weights = zip(*(principal_points(p) for p in props))
        return cls([p.center for p in props], points, weights, dtype), props

    def rest_coordinates(self) -> torch.Tensor:
        return torch.cat([self.centers, torch.zeros_like(self.centers)], dim=1)

    def rotation(self, q: torch.Tensor) -> torch.Tensor:
        return self.orientation @ exp_so3(q[:, 3:])

    def embed(self, q, points):
        offsets = points - self.centers[:, None, :]
        return q[:, None, :3] + offsets @ self.rotation(q).transpose(1, 2)

    def jacobian(self, q, points):
        """Closed form: x = p + R_ref R r, J = [I | R_ref R_k r] with r = xbar - c."""
        rot, rot_k = exp_so3_derivatives(q[:, 3:])
        r = points - self.centers[:, None, :]
        return q[:, None, :3] + self._apply(rot, r), torch.cat([self._translation_block(r), self._apply_each(rot_k, r)], -1)

    def derivatives(self, q, q_dot, points):
        """Closed form: J as above, v = p_dot + R_ref Rdot r, H = [0 | R_ref Rdot_k r]."""
        rot, rot_k, rot_dot, rot_dot_k = exp_so3_derivatives(q[:, 3:], q_dot[:, 3:])
        r = points - self.centers[:, None, :]
        eye = self._translation_block(r)
        x = q[:, None, :3] + self._apply(rot, r)
        v = q_dot[:, None, :3] + self._apply(rot_dot, r)
        jac = torch.cat([eye, self._apply_each(rot_k, r)], -1)
        hess = torch.cat([torch.zeros_like(eye), self._apply_each(rot_dot_k, r)], -1)
        return x, v, jac, hess

    def _apply(self, matrix, r):
        """(B, 3, 3) -> R_ref M r as (B, P, 3)."""
        return r @ (self.orientation @ matrix).transpose(1, 2)

    def _apply_each(self, matrices, r):
        """(B, 3, 3, k) -> R_ref M_k r as (B, P, 3, k)."""
        per_k = (self.orientation[:, None] @ matrices.permute(0, 3, 1, 2)).transpose(2, 3)
        return (r[:, None] @ per_k).permute(0, 2, 3, 1)

    @staticmethod
    def _translation_block(r):
        return torch.eye(3, dtype=r.dtype).expand(*r.shape[:2], 3, 3)

    def recenter(self, q, q_dot):
        """R_ref <- R_ref exp(theta), theta <- 0, theta_dot <- body angular velocity J_r(theta) theta_dot."""
        omega_body = body_angular_velocity(q[:, 3:], q_dot[:, 3:])
        self.orientation = self.rotation(q)
        zeros = torch.zeros_like(omega_body)
        return torch.cat([q[:, :3], zeros], 1), torch.cat([q_dot[:, :3], omega_body], 1)

    def pose(self, q):
        """Centre of mass (B, 3) and world rotation matrix (B, 3, 3)."""
        return {"translation": q[:, :3], "rotation": self.rotation(q)}

    def chart_speed(self, q_dot):
        return float(q_dot[:, 3:].norm(dim=1).max())
