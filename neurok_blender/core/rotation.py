"""Rotations as the exponential map of a rotation vector, its right Jacobian and that Jacobian's rate.

    R(theta) = I + A(t2) K + B(t2) K^2,   K = [theta]x,   t2 = |theta|^2,
    A = sin t / t = sum (-1)^n t2^n / (2n+1)!,   B = (1 - cos t) / t^2 = sum (-1)^n t2^n / (2n+2)!

and its right Jacobian, omega_body = T(theta) theta_dot (R^T dR/dt = [omega_body]x, and
dR/dtheta_k = R [T e_k]x),

    T(theta) = I - B K + C K^2,   C = (t - sin t) / t^3 = sum (-1)^n t2^n / (2n+3)!

A, B and C are written as their power series in t2: smooth everywhere, so the derivatives are exact
polynomials, with no branch at zero. Sixteen terms give float64 precision for |theta| <= pi; the
rollout re-centres the rigid map's chart every frame and whenever theta has moved 1 rad.
"""

import math

import torch

_TERMS = 16
_A = [(-1) ** n / math.factorial(2 * n + 1) for n in range(_TERMS)]
_B = [(-1) ** n / math.factorial(2 * n + 2) for n in range(_TERMS)]
_C = [(-1) ** n / math.factorial(2 * n + 3) for n in range(_TERMS)]


def hat(v: torch.Tensor) -> torch.Tensor:
    """Skew matrix [v]x with [v]x a = v x a, for v of shape (..., 3): one product with the generators."""
    return (v @ _GENERATORS.to(v.dtype)).reshape(*v.shape[:-1], 3, 3)


def vee(m: torch.Tensor) -> torch.Tensor:
    """Inverse of ``hat`` on the skew part of m."""
    return 0.5 * torch.stack(
        (m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1]), -1
    )


# [v]x = sum_k v_k L_k: row k holds the generator L_k = [e_k]x, flattened
_GENERATORS = torch.tensor([[0, 0, 0, 0, 0, -1, 0, 1, 0], [0, 0, 1, 0, 0, 0, -1, 0, 0], [0, -1, 0, 1, 0, 0, 0, 0, 0]],
                           dtype=torch.float64)


def _derived(c):
    return [n * c[n] for n in range(1, len(c))] + [0.0]


# Power-series coefficients of t2^n, one row per function: the exponential's A, B; the right
# Jacobian's B, C; the rates' A, B, B', C, C' (' a derivative in t2).
_EXP_SERIES = torch.tensor([_A, _B], dtype=torch.float64)
_JACOBIAN_SERIES = torch.tensor([_B, _C], dtype=torch.float64)
_RATES_SERIES = torch.tensor([_A, _B, _derived(_B), _C, _derived(_C)], dtype=torch.float64)


_POWERS = torch.arange(_TERMS, dtype=torch.float64)


def _coefficients(t2, series):
    """The rows of ``series`` at t2 (...,), each shaped like t2: one matrix product over the powers."""
    return ((t2[..., None] ** _POWERS.to(t2.dtype)) @ series.to(t2.dtype).T).unbind(-1)


def exp_so3(theta: torch.Tensor) -> torch.Tensor:
    """R = exp([theta]x) for theta of shape (..., 3)."""
    a, b = (c[..., None, None] for c in _coefficients((theta * theta).sum(-1), _EXP_SERIES))
    k = hat(theta)
    eye = torch.eye(3, dtype=theta.dtype, device=theta.device)
    return eye + a * k + b * (k @ k)


def body_angular_velocity(theta: torch.Tensor, theta_dot: torch.Tensor) -> torch.Tensor:
    """omega_body = vee(R^T dR/dt) = T(theta) theta_dot for R = exp(theta), (B, 3)."""
    return (right_jacobian(theta) @ theta_dot[..., None])[..., 0]


def right_jacobian(theta: torch.Tensor) -> torch.Tensor:
    """T(theta) = I - B K + C K^2 (B, 3, 3), omega_body = T theta_dot; also dR/dtheta_k = R [T e_k]x."""
    b, c = (x[:, None, None] for x in _coefficients((theta * theta).sum(-1), _JACOBIAN_SERIES))
    k = hat(theta)
    return torch.eye(3, dtype=theta.dtype) - b * k + c * (k @ k)


def rotation_rates(theta: torch.Tensor, theta_dot: torch.Tensor):
    """exp(theta), T and D = d(T theta_dot)/dtheta at fixed theta_dot, each (B, 3, 3): how omega_body
    changes with theta, so D theta_dot = (dT/dt) theta_dot. From T theta_dot = theta_dot
    - B theta x theta_dot + C theta x (theta x theta_dot), with dt2/dtheta = 2 theta^T and u = theta x theta_dot:

        D = 2 (C' theta x u - B' u) theta^T + B [theta_dot]x + C ((theta . theta_dot) I + theta theta_dot^T - 2 theta_dot theta^T)
    """
    a, b, b1, c, c1 = (x[:, None, None] for x in _coefficients((theta * theta).sum(-1), _RATES_SERIES))
    k = hat(theta)
    kk = k @ k
    eye = torch.eye(3, dtype=theta.dtype)
    u = (k @ theta_dot[..., None])[..., 0]
    outer = theta_dot[:, :, None] * theta[:, None, :]  # theta_dot theta^T
    along = (theta * theta_dot).sum(-1)[:, None, None] * eye
    turn = 2 * (c1 * (k @ u[..., None]) - b1 * u[..., None])
    derivative = turn * theta[:, None, :] + b * hat(theta_dot) + c * (along + outer.transpose(1, 2) - 2 * outer)
    return eye + a * k + b * kk, eye - b * k + c * kk, derivative
