"""Rotations as the exponential map of a rotation vector, with exact first and second derivatives.

    R(theta) = I + A(t2) K + B(t2) K^2,   K = [theta]x,   t2 = |theta|^2,
    A = sin t / t = sum (-1)^n t2^n / (2n+1)!,   B = (1 - cos t) / t^2 = sum (-1)^n t2^n / (2n+2)!

A and B are written as their power series in t2: smooth everywhere, so the derivatives are exact
polynomials, with no branch at zero. Sixteen terms give float64 precision for |theta| <= pi; the
rigid map re-centres its chart every step, which keeps |theta| far below that.
"""

import math

import torch

_TERMS = 16
_A = [(-1) ** n / math.factorial(2 * n + 1) for n in range(_TERMS)]
_B = [(-1) ** n / math.factorial(2 * n + 2) for n in range(_TERMS)]


def hat(v: torch.Tensor) -> torch.Tensor:
    """Skew matrix [v]x with [v]x a = v x a, for v of shape (..., 3)."""
    x, y, z = v.unbind(-1)
    o = torch.zeros_like(x)
    return torch.stack(
        (torch.stack((o, -z, y), -1), torch.stack((z, o, -x), -1), torch.stack((-y, x, o), -1)), -2
    )


def vee(m: torch.Tensor) -> torch.Tensor:
    """Inverse of ``hat`` on the skew part of m."""
    return 0.5 * torch.stack(
        (m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1]), -1
    )


def _series(coefficients, t2, derivative=0):
    """d^k/dt2^k of sum c_n t2^n by Horner's rule."""
    c = coefficients
    for _ in range(derivative):
        c = [n * c[n] for n in range(1, len(c))]
    out = torch.full_like(t2, c[-1])
    for coefficient in reversed(c[:-1]):
        out = out * t2 + coefficient
    return out


def exp_so3(theta: torch.Tensor) -> torch.Tensor:
    """R = exp([theta]x) for theta of shape (..., 3)."""
    t2 = (theta * theta).sum(-1)[..., None, None]
    k = hat(theta)
    eye = torch.eye(3, dtype=theta.dtype, device=theta.device)
    return eye + _series(_A, t2) * k + _series(_B, t2) * (k @ k)


def exp_so3_derivatives(theta: torch.Tensor, theta_dot: torch.Tensor):
    """R, dR/dtheta_k, Rdot = sum_k theta_dot_k dR/dtheta_k and d(Rdot)/dtheta_k, for theta (B, 3).

    Differentiating R = I + A K + B K^2 with dK/dtheta_k = L_k = [e_k]x and dt2/dtheta_k = 2 theta_k:
        R_k     = 2 theta_k (A' K + B' K^2) + A L_k + B (L_k K + K L_k)
        Rdot    = 2 s (A' K + B' K^2) + A Kd + B (Kd K + K Kd),        s = theta . theta_dot, Kd = [theta_dot]x
        Rdot_k  = 2 theta_dot_k (A' K + B' K^2) + 2 s (2 theta_k (A'' K + B'' K^2) + A' L_k + B' (L_k K + K L_k))
                  + 2 theta_k (A' Kd + B' (Kd K + K Kd)) + B (Kd L_k + L_k Kd)
    Shapes: R and Rdot (B, 3, 3); R_k and Rdot_k (B, 3, 3, 3) with k last.
    """
    t2 = (theta * theta).sum(-1)[:, None, None, None]
    a, a1, a2 = (_series(_A, t2, d) for d in range(3))
    b, b1, b2 = (_series(_B, t2, d) for d in range(3))
    k = hat(theta)[..., None]  # (B, 3, 3, 1)
    kd = hat(theta_dot)[..., None]
    gen = hat(torch.eye(3, dtype=theta.dtype)).permute(1, 2, 0)[None]  # (1, 3, 3, 3): L_k at [..., k]
    kk = torch.einsum("bijx,bjlx->bilx", k, k)
    k_l = torch.einsum("bijx,xjlk->bilk", k, gen) + torch.einsum("xijk,bjlx->bilk", gen, k)  # L_k K + K L_k
    kd_k = torch.einsum("bijx,bjlx->bilx", kd, k) + torch.einsum("bijx,bjlx->bilx", k, kd)  # Kd K + K Kd
    kd_l = torch.einsum("bijx,xjlk->bilk", kd, gen) + torch.einsum("xijk,bjlx->bilk", gen, kd)  # Kd L_k + L_k Kd
    th = theta[:, None, None, :]
    thd = theta_dot[:, None, None, :]
    s = (theta * theta_dot).sum(-1)[:, None, None, None]
    eye = torch.eye(3, dtype=theta.dtype)[None, :, :, None]

    rot = eye + a * k + b * kk
    first = a1 * k + b1 * kk
    rot_k = 2 * th * first + a * gen + b * k_l
    rot_dot = 2 * s * first + a * kd + b * kd_k
    rot_dot_k = (
        2 * thd * first
        + 2 * s * (2 * th * (a2 * k + b2 * kk) + a1 * gen + b1 * k_l)
        + 2 * th * (a1 * kd + b1 * kd_k)
        + b * kd_l
    )
    return rot[..., 0], rot_k, rot_dot[..., 0], rot_dot_k


def body_angular_velocity(theta: torch.Tensor, theta_dot: torch.Tensor) -> torch.Tensor:
    """omega_body = vee(R^T dR/dt) for R = exp(theta): the right Jacobian J_r(theta) applied to theta_dot."""
    rot, _, rot_dot, _ = exp_so3_derivatives(theta, theta_dot)
    return vee(rot.transpose(-1, -2) @ rot_dot)
