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
        super().__init__()
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

    def embed(self, q, name):
        offsets = self.points(name) - self.centers[:, None, :]
        return q[:, None, :3] + offsets @ self.rotation(q).transpose(1, 2)

    def jacobian(self, q, name):
        return posed_jacobian(self.orientation, q, self.points(name) - self.centers[:, None, :])

    def derivatives(self, q, q_dot, name):
        return posed_derivatives(self.orientation, q, q_dot, self.points(name) - self.centers[:, None, :])

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


def posed_jacobian(orientation, q, r, r_s=None):
    """Closed form for x = p + R r, R = R_ref exp(theta), q = (p, theta, s...), with the body-frame
    offsets r (B, P, 3) and, for a deforming body, r_s = dr/ds (B, P, 3, k):

        J = [I | R_ref R_k r | R r_s]
    """
    rot, rot_k = exp_so3_derivatives(q[:, 3:6])
    blocks = [_eye_block(r), _apply_each(orientation, rot_k, r)]
    if r_s is not None:
        blocks.append(_apply_to_columns(orientation @ rot, r_s))
    return q[:, None, :3] + _apply(orientation, rot, r), torch.cat(blocks, -1)


def posed_derivatives(orientation, q, q_dot, r, r_s=None, r_s_dot=None, r_ss_dot=None):
    """x, v, J and H_k = d(J q_dot)/dq_k in closed form, for r as in ``posed_jacobian`` and, when the
    body deforms, r_s_dot = r_s s_dot (B, P, 3) and r_ss_dot = d(r_s s_dot)/ds (B, P, 3, k):

        v = p_dot + R_ref (Rdot r + R r_s_dot)
        H = [0 | R_ref (Rdot_k r + R_k r_s_dot) | R_ref (Rdot r_s + R r_ss_dot)]
    """
    rot, rot_k, rot_dot, rot_dot_k = exp_so3_derivatives(q[:, 3:6], q_dot[:, 3:6])
    eye = _eye_block(r)
    x = q[:, None, :3] + _apply(orientation, rot, r)
    v = q_dot[:, None, :3] + _apply(orientation, rot_dot, r)
    jac = [eye, _apply_each(orientation, rot_k, r)]
    hess = [torch.zeros_like(eye), _apply_each(orientation, rot_dot_k, r)]
    if r_s is not None:
        v = v + _apply(orientation, rot, r_s_dot)
        jac.append(_apply_to_columns(orientation @ rot, r_s))
        hess[1] = hess[1] + _apply_each(orientation, rot_k, r_s_dot)
        hess.append(_apply_to_columns(orientation @ rot_dot, r_s) + _apply_to_columns(orientation @ rot, r_ss_dot))
    return x, v, torch.cat(jac, -1), torch.cat(hess, -1)


def _apply(orientation, matrix, r):
    """(B, 3, 3) -> R_ref M r as (B, P, 3)."""
    return r @ (orientation @ matrix).transpose(1, 2)


def _apply_each(orientation, matrices, r):
    """(B, 3, 3, k) -> R_ref M_k r as (B, P, 3, k)."""
    per_k = (orientation[:, None] @ matrices.permute(0, 3, 1, 2)).transpose(2, 3)
    return (r[:, None] @ per_k).permute(0, 2, 3, 1)


def _apply_to_columns(matrix, columns):
    """(B, 3, 3), (B, P, 3, k) -> M applied to every column, (B, P, 3, k)."""
    return torch.einsum("bij,bpjk->bpik", matrix, columns)


def _eye_block(r):
    return torch.eye(3, dtype=r.dtype).expand(*r.shape[:2], 3, 3)
