"""Free rigid bodies: q = (p, theta), x = p + R_ref exp(theta) (xbar - c)."""

import numpy as np
import torch

from .kinematics import KinematicMap, MassTerms, rows_at
from .mesh import mass_properties, principal_points
from .rotation import body_angular_velocity, exp_so3, hat, right_jacobian, rotation_rates


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

    def jacobian(self, q, name, index=None):
        arms = self.points(name) - self.centers[:, None, :]
        return posed_jacobian(self.orientation, q, arms if index is None else rows_at(arms, index))

    def mass_terms(self, q, q_dot):
        return posed_mass_terms(self.orientation, q, q_dot, self.masses, self.mass_points - self.centers[:, None, :])

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

        J = [I | R_ref R_k r | R r_s] = [I | R (T e_k x r) | R r_s]

    (R_k = dexp/dtheta_k = exp(theta) [T e_k]x, T the right Jacobian)."""
    b, count = r.shape[:2]
    rotation = orientation @ exp_so3(q[:, 3:6])
    arms = torch.linalg.cross(right_jacobian(q[:, 3:6]).transpose(1, 2)[:, None], r[:, :, None])  # T e_k x r
    turning = (arms.reshape(b, count * 3, 3) @ rotation.transpose(1, 2)).reshape(b, count, 3, 3).transpose(2, 3)
    blocks = [_eye_block(r), turning]
    if r_s is not None:
        blocks.append(_apply_to_columns(rotation, r_s))
    return q[:, None, :3] + r @ rotation.transpose(1, 2), torch.cat(blocks, -1)


def posed_mass_terms(orientation, q, q_dot, masses, r, r_s=None, r_ss_dot=None) -> MassTerms:
    """``MassTerms`` of the mass points (masses (B, P)) of x = p + R r(s), with the body-frame offsets
    r (B, P, 3) and, for a deforming body, r_s = dr/ds and r_ss_dot = d(r_s s_dot)/ds (B, P, 3, k),
    summed in the body frame, where no sum needs R or theta.

    With T the right Jacobian (omega = T theta_dot, the body angular velocity), D = d omega / dtheta
    at fixed theta_dot (``rotation.rotation_rates``), W = diag(R^T, T, I) and
    G_i = [I | -[r_i]x | r_s,i]: J_i = R G_i W, and each point moves in the body frame with
    g_i = R^T v_i = nu + omega x r_i + rdot_i (nu = R^T p_dot, rdot_i = r_s,i s_dot). Then

        M           = W^T (sum m G_i^T G_i) W
        J^T m d2x   = W^T sum m G_i^T a_i,   a_i = omega x (omega x r_i) + 2 omega x rdot_i + Z_i[s_dot, s_dot] + (D theta_dot) x r_i
        dT/dq       = (0,  T^T (P x nu) + D^T h,  sum m (r_s,i^T (g_i x omega) + (Z_i s_dot)^T g_i))
        sum m J     = R [M_total I | -[sum m r]x | sum m r_s] W

    with the body-frame momenta P = sum m g_i and h = sum m r_i x g_i, Z_i s_dot = r_ss_dot and
    Z_i[s_dot, s_dot] = r_ss_dot s_dot. Per point only vectors (and r_s's columns) are formed, never J.
    """
    b, count = masses.shape
    n, dtype = q.shape[1], r.dtype
    turned, turn, change = rotation_rates(q[:, 3:6], q_dot[:, 3:6])  # exp(theta), T, D
    rotation = orientation @ turned
    omega = turn @ q_dot[:, 3:6, None]
    spin = hat(omega[..., 0])  # [omega]x: omega x u = u @ spin^T
    nu = rotation.transpose(1, 2) @ q_dot[:, :3, None]
    m = masses[..., None]
    weighted = m * r
    first = weighted.sum(1)  # sum m r
    # sum_i m r_i x u_i for vectors u (B, P, 3, c) as one product: [m r_i]x side by side (B, 3, 3P)
    crossing = hat(weighted).transpose(1, 2).reshape(b, 3, 3 * count)
    moment_of = lambda u: crossing @ u.reshape(b, 3 * count, -1)
    second = weighted.transpose(1, 2) @ r  # sum m r r^T
    eye = torch.eye(3, dtype=dtype).expand(b, 3, 3)
    velocity = nu.transpose(1, 2) + r @ spin.transpose(1, 2)  # g_i
    accel = r @ (spin @ spin + hat((change @ q_dot[:, 3:6, None])[..., 0])).transpose(1, 2)  # a_i (rigid part)
    skew = hat(first)
    body_mass = [[masses.sum(1)[:, None, None] * eye, -skew],
                 [skew, second.diagonal(dim1=1, dim2=2).sum(-1)[:, None, None] * eye - second]]
    if r_s is not None:
        k = r_s.shape[-1]
        s_dot = q_dot[:, 6:, None]
        columns = r_s.reshape(b, count * 3, k)
        rdot = (columns @ s_dot).reshape(b, count, 3)
        z_dot = r_ss_dot.reshape(b, count * 3, k)
        accel = accel + rdot @ (2 * spin).transpose(1, 2) + (z_dot @ s_dot).reshape(b, count, 3)
        velocity = velocity + rdot
        weighted_columns = m[..., None] * r_s
        shift = weighted_columns.sum(1)  # sum m r_s
        twist = moment_of(r_s)  # sum m r x r_s
        body_mass[0].append(shift)
        body_mass[1].append(twist)
        body_mass.append([shift.transpose(1, 2), twist.transpose(1, 2),
                          weighted_columns.reshape(b, count * 3, k).transpose(1, 2) @ columns])
    body_mass = torch.cat([torch.cat(row, 2) for row in body_mass], 1)
    frame = torch.zeros(b, n, n, dtype=dtype)  # W
    frame[:, :3, :3] = rotation.transpose(1, 2)
    frame[:, 3:6, 3:6] = turn
    frame[:, 6:, 6:] = torch.eye(n - 6, dtype=dtype)
    moments = moment_of(torch.stack([accel, velocity], -1)).transpose(1, 2)  # sum m r x (a, g)
    ma, mv = m * accel, m * velocity
    momentum = mv.sum(1)
    generalized = [ma.sum(1), moments[:, 0]]
    gradient = [torch.zeros_like(momentum), (turn.transpose(1, 2) @ hat(momentum) @ nu)[..., 0]
                + (change.transpose(1, 2) @ moments[:, 1, :, None])[..., 0]]
    if r_s is not None:
        generalized.append((ma.reshape(b, 1, count * 3) @ columns)[:, 0])
        turning = mv @ spin  # m g x omega
        gradient.append((turning.reshape(b, 1, count * 3) @ columns + mv.reshape(b, 1, count * 3) @ z_dot)[:, 0])
    frame_t = frame.transpose(1, 2)
    return MassTerms(mass_matrix=frame_t @ body_mass @ frame,
                     quadratic=(frame_t @ torch.cat(generalized, 1)[..., None])[..., 0],
                     kinetic_gradient=torch.cat(gradient, 1),
                     moment=rotation @ body_mass[:, :3] @ frame)


def _apply_to_columns(matrix, columns):
    """(B, 3, 3), (B, P, 3, k) -> M applied to every column, (B, P, 3, k)."""
    return torch.einsum("bij,bpjk->bpik", matrix, columns)


def _eye_block(r):
    return torch.eye(3, dtype=r.dtype).expand(*r.shape[:2], 3, 3)
