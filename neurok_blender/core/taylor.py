"""Second-order Taylor coefficients at s = 0 of a smooth function of a few coordinates, by central
differences on one batch of evaluations.

    f(s) ~ f(0) + Y s + 1/2 Z[s, s]
    Y_i  = (f(d e_i) - f(-d e_i)) / 2d
    Z_ii = (f(d e_i) - 2 f(0) + f(-d e_i)) / d^2
    Z_ij = (D_ij - Z_ii - Z_jj) / 2,  D_ij = (f(d (e_i + e_j)) - 2 f(0) + f(-d (e_i + e_j))) / d^2

1 + k + k^2 evaluations for k coordinates (1 + 2k for Y alone), taken as one batch of plain
evaluations, where torch's forward mode runs every elementwise operation through Python. In float64
at STEP = 1e-3 (the coordinates' unit: a prior standard deviation) the truncation, STEP^2 / 6 of the
third and STEP^2 / 12 of the fourth derivative, and the rounding, about 4 eps / STEP^2 of the values
differenced (displacements rather than positions, so that it is of the motion's size), are both near
1e-7 of the coefficients (docs/benchmarks.md, "Speed").
"""

import torch

STEP = 1e-3


def differences_lanes(size: int, order: int = 2, dtype=torch.float64) -> torch.Tensor:
    """The points s (L, size) ``coefficients`` needs f at: 0, +-STEP e_i and, for ``order`` 2,
    +-STEP (e_i + e_j) for i < j."""
    eye = torch.eye(size, dtype=dtype)
    rows = [eye.new_zeros(1, size), eye, -eye]
    if order == 2:
        i, j = torch.triu_indices(size, size, 1)
        rows += [eye[i] + eye[j], -(eye[i] + eye[j])]
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
    pairs = len(i)
    along = (values[2 * k + 1:2 * k + 1 + pairs] - 2 * at_zero + values[2 * k + 1 + pairs:]) / d**2
    second = values.new_zeros(k, k, *values.shape[1:])
    second[torch.arange(k), torch.arange(k)] = curvature
    mixed = 0.5 * (along - curvature[i] - curvature[j])
    second[i, j], second[j, i] = mixed, mixed
    return at_zero, first, second.movedim(0, -1).movedim(0, -1)
