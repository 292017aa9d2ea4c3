"""Second-order Taylor coefficients at s = 0 of a smooth function of a few coordinates, by finite
differences on one batch of evaluations.

    f(s) ~ f(0) + Y s + 1/2 Z[s, s]
    Y_i  = (f(d e_i) - f(-d e_i)) / 2d                                   error d^2 / 6 T_iii
    Z_ii = (f(d e_i) - 2 f(0) + f(-d e_i)) / d^2                         error d^2 / 12 of the 4th
    Z_ij = (f(d (e_i + e_j)) - f(d e_i) - f(d e_j) + f(0)) / d^2         error d / 2 (T_iij + T_ijj)

(k + 1)(k + 2) / 2 evaluations for k coordinates, as many as a quadratic has coefficients (1 + 2k
for Y alone), taken as one batch of plain evaluations, where torch's forward mode runs every
elementwise operation through Python. In float64 at STEP = 1e-3 (the coordinates' unit: a prior
standard deviation) the rounding, about 4 eps / STEP^2 of the values differenced (displacements
rather than positions, so that it is of the motion's size), and the truncation of Y and Z_ii are
near 1e-7 of the coefficients; the mixed terms' one-sided truncation is about 1e-3 of the third
derivative, a few 1e-4 of Z on the decoder (docs/benchmarks.md, "Speed"), against 1e-3 and more
that the quadratic itself misses at a prior standard deviation. Both orders of error are the same at
a point and at its mirror image (the stencil lies in one block's coordinates), so a mirrored body's
fields stay mirror-equivariant to rounding.

The first order alone (``first_order``) is taken exactly, by reverse mode.
"""

import torch

STEP = 1e-3


def differences_lanes(size: int, order: int = 2, dtype=torch.float64) -> torch.Tensor:
    """The points s (L, size) ``coefficients`` needs f at: 0, +-STEP e_i and, for ``order`` 2,
    STEP (e_i + e_j) for i < j."""
    eye = torch.eye(size, dtype=dtype)
    rows = [eye.new_zeros(1, size), eye, -eye]
    if order == 2:
        i, j = torch.triu_indices(size, size, 1)
        rows.append(eye[i] + eye[j])
    return STEP * torch.cat(rows)


def coefficients(values: torch.Tensor, size: int, order: int = 2):
    """f(0) (...), Y (..., k) and, for ``order`` 2, Z (..., k, k) (else None) from f at
    ``differences_lanes(size, order)``, ``values`` (L, ...)."""
    k, d = size, STEP
    at_zero, plus, minus = values[0], values[1:k + 1], values[k + 1:2 * k + 1]
    first = ((plus - minus) / (2 * d)).movedim(0, -1)
    if order != 2:
        return at_zero, first, None
    curvature = (plus - 2 * at_zero + minus) / d**2  # (k, ...): Z_ii
    i, j = torch.triu_indices(k, k, 1)
    second = values.new_zeros(k, k, *values.shape[1:])
    second[torch.arange(k), torch.arange(k)] = curvature
    mixed = (values[2 * k + 1:] - plus[i] - plus[j] + at_zero) / d**2
    second[i, j], second[j, i] = mixed, mixed
    return at_zero, first, second.movedim(0, -1).movedim(0, -1)


def first_order(f, size: int, dtype):
    """f(0) (...) and Y (..., size) at s = 0, exact to rounding, for ``f`` batched over rows (s
    (B, size) -> (B, ...), row b a function of s[b] alone): reverse mode twice over ``size`` copies of
    s = 0. With g_b = Y^T u_b (a backward pass whose graph is kept), d(g_b . e_b)/du_b = Y e_b.
    Forward mode (``torch.func.jacfwd``) gives the same, but runs elementwise operations through
    Python decompositions whose first use imports torch's compiler, about 2 s of a first Simulate."""
    s = torch.zeros(size, size, dtype=dtype, requires_grad=True)
    with torch.enable_grad():
        values = f(s)
        probe = torch.zeros_like(values, requires_grad=True)
        # of scalars: a tensor of output gradients would import sympy (torch's shape checks), 0.6 s
        (pulled,) = torch.autograd.grad((values * probe).sum(), s, create_graph=True)  # row b: Y^T u_b
        (first,) = torch.autograd.grad((pulled * torch.eye(size, dtype=dtype)).sum(), probe)  # row b: Y e_b
    return values[0].detach(), first.movedim(0, -1)
