"""The second-order expansion by finite differences (core/taylor.py) against known derivatives."""

import torch

from neurok_blender.core.taylor import STEP, coefficients, differences_lanes, first_order


def polynomial(k, seed=0):
    """f(s) = c + Y s + 1/2 Z[s, s] + 1/6 T[s, s, s] on (P, 3) outputs, Z and T symmetric, and its
    exact value, first, second and third derivatives at s = 0."""
    g = torch.Generator().manual_seed(seed)
    c = torch.randn(5, 3, generator=g, dtype=torch.float64)
    first = torch.randn(5, 3, k, generator=g, dtype=torch.float64)
    second = torch.randn(5, 3, k, k, generator=g, dtype=torch.float64)
    second = 0.5 * (second + second.transpose(-1, -2))
    third = torch.randn(k, k, k, generator=g, dtype=torch.float64)
    third = sum(third.permute(*p) for p in [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)]) / 6

    def f(s):  # (L, k) -> (L, 5, 3)
        cubic = torch.einsum("ijk,li,lj,lk->l", third, s, s, s)[:, None, None]
        return (c + torch.einsum("pik,lk->lpi", first, s) + 0.5 * torch.einsum("pikm,lk,lm->lpi", second, s, s)
                + cubic / 6)

    return f, c, first, second, third


def test_the_differences_give_the_expansion_of_a_cubic_with_the_stated_truncation():
    k = 4
    f, c, first, second, third = polynomial(k)
    lanes = differences_lanes(k)
    assert lanes.shape == ((k + 1) * (k + 2) // 2, k)  # as many as a quadratic in k has coefficients
    at_zero, y, z = coefficients(f(lanes), k)
    torch.testing.assert_close(at_zero, c, rtol=0, atol=1e-15)
    # Y: STEP^2 / 6 T_iii; Z_ii: the cubic cancels (rounding only); Z_ij: STEP / 2 (T_iij + T_ijj)
    torch.testing.assert_close(y, first + STEP**2 / 6 * third.diagonal(dim1=1, dim2=2).diagonal(), rtol=0, atol=1e-9)
    mixed = STEP / 2 * (third.diagonal(dim1=0, dim2=1).T + third.diagonal(dim1=1, dim2=2))  # [i, j]: T_iij + T_ijj
    mixed.fill_diagonal_(0.0)
    torch.testing.assert_close(z, second + mixed, rtol=0, atol=1e-8)
    assert (z - second).abs().max() > 1e-4  # and it is there: these are differences, not derivatives


def test_the_first_order_alone_takes_two_lanes_a_coordinate():
    k = 3
    f, c, first, _, _ = polynomial(k, seed=1)
    lanes = differences_lanes(k, order=1)
    assert lanes.shape == (1 + 2 * k, k)
    at_zero, y, z = coefficients(f(lanes), k, order=1)
    assert z is None
    assert (y - first).abs().max() < 10 * STEP**2


def test_the_first_order_by_reverse_mode_is_exact():
    """No truncation: Y of the cubic to rounding, where the differences are STEP^2 / 6 T_iii off."""
    k = 4
    f, c, first, _, _ = polynomial(k, seed=2)
    at_zero, y = first_order(f, k, torch.float64)
    torch.testing.assert_close(at_zero, c, rtol=0, atol=1e-15)
    torch.testing.assert_close(y, first, rtol=0, atol=1e-13)
