"""Learned coordinates in the engine: q = (p, theta, s), rigid pose plus the reduced latent.

    x(q) = p + R_ref exp(theta) (y(s) - c),   y(s) = xbar + h (F(z(s), xbar) - F(z(0), xbar))

F is the decoder (model units, scaled back by the object's size h), z(s) = mu_cond + A^T s its active
subspace and c the rest centre of mass. Subtracting F(z(0)) makes q = (c, 0, 0) the rest shape
exactly, whatever the decoder does at the prior mean, so the body starts where the artist left it.
The engine differentiates x with forward-mode products (``KinematicMap``): mass matrix J^T m J,
quadratic velocity term and J^T f come out of the decoder's own Jacobian.

Potential: V(s) = 1/2 omega^2 sum_i m_i |y_i(s) - xbar_i|^2, a spring for every mass point back to
its rest place in the body's own frame: zero at rest, blind to rigid motion, and with the kinetic
energy T = 1/2 sum m |x_dot|^2 every small deformation oscillates at omega.
"""

import copy

import numpy as np
import torch

from .kinematics import KinematicMap
from .model import NeuROKModel, ObjectShape, shape_tensors
from .reduction import Subspace
from .rotation import body_angular_velocity, exp_so3
from .skinning import skinning


class NeuralBodyMap(KinematicMap):
    """One body (B = 1) on the learned coordinates of ``model`` for ``shape``."""

    def __init__(self, model: NeuROKModel, shape: ObjectShape, subspace: Subspace, mass_points, masses,
                 frequency: float, dtype=torch.float64):
        self.model = copy.deepcopy(model).to(dtype).requires_grad_(False)  # the engine differentiates in q only
        self.shape = shape
        features, self.query_features, self.queries = shape_tensors(self.model, shape, dtype=dtype)
        with torch.no_grad():
            self.prior_mean, self.tokens = self.model.prior(features)
        self.basis = subspace.basis.to(dtype)
        self.mass_points = torch.as_tensor(np.asarray(mass_points), dtype=dtype)[None]
        self.masses = torch.as_tensor(np.asarray(masses), dtype=dtype)[None]
        self.center = (self.masses[0, :, None] * self.mass_points[0]).sum(0) / self.masses.sum()
        self.orientation = torch.eye(3, dtype=dtype)[None]
        self.omega2 = (2 * np.pi * frequency) ** 2
        k = len(self.basis)
        self.rigid_dofs = torch.cat([torch.ones(6, dtype=torch.bool), torch.zeros(k, dtype=torch.bool)])
        self.scale = torch.tensor(shape.scale, dtype=dtype)
        self.offset = torch.as_tensor(shape.center, dtype=dtype)
        self._skins = {}
        self.attach(self.mass_points)

    def rest_coordinates(self):
        return torch.cat([self.center, torch.zeros(3 + len(self.basis), dtype=self.dtype)])[None]

    def attach(self, points):
        """Each point follows the query points of the part of its nearest mesh vertex."""
        key = (points.data_ptr(), tuple(points.shape))
        if key not in self._skins:
            model_points = (points[0].detach().numpy() - self.shape.center) / self.shape.scale
            nearest = np.argmin(((model_points[:, None] - self.shape.vertices[None]) ** 2).sum(-1), axis=1)
            self._skins[key] = (torch.as_tensor(model_points, dtype=self.dtype),
                                skinning(model_points, self.shape.queries.points, self.shape.vertex_parts[nearest],
                                         self.shape.query_parts, self.model.config.neighbours))

    def _skin(self, points):
        key = (points.data_ptr(), tuple(points.shape))  # the engine passes the same point tensors every call
        if key not in self._skins:
            raise KeyError("embed was asked about points never attached to the map (KinematicMap.attach)")
        return self._skins[key]

    def deformed(self, s, points):
        """y(s) (B, P, 3): the points moved by the deformation alone, world units, body at rest pose."""
        model_points, skin = self._skin(points)
        z = self.prior_mean + torch.einsum("bi,ilc->blc", s, self.basis)
        latents = torch.cat([z, self.prior_mean[None]])  # F(z(s)) and F(z(0)) in one pass
        moved = self.model.deform(latents, self.tokens, self.query_features, self.queries, model_points, skin)
        return points + self.scale * (moved[:-1] - moved[-1:])

    def embed(self, q, points):
        rotation = self.orientation @ exp_so3(q[:, 3:6])
        return q[:, None, :3] + (self.deformed(q[:, 6:], points) - self.center) @ rotation.transpose(1, 2)

    def potential(self, q):
        """V = 1/2 omega^2 sum m |y(s) - xbar|^2 per body."""
        u = self.deformed(q[:, 6:], self.mass_points) - self.mass_points
        return 0.5 * self.omega2 * (self.masses[..., None] * u * u).sum((1, 2))

    def recenter(self, q, q_dot):
        """As the rigid map: R_ref <- R_ref exp(theta), theta <- 0, theta_dot <- body angular velocity."""
        omega = body_angular_velocity(q[:, 3:6], q_dot[:, 3:6])
        self.orientation = self.orientation @ exp_so3(q[:, 3:6])
        zeros = torch.zeros_like(omega)
        return (torch.cat([q[:, :3], zeros, q[:, 6:]], 1), torch.cat([q_dot[:, :3], omega, q_dot[:, 6:]], 1))

    def pose(self, q):
        return {"translation": q[:, :3], "rotation": self.orientation @ exp_so3(q[:, 3:6]), "reduced": q[:, 6:]}

    def chart_speed(self, q_dot):
        return float(q_dot[:, 3:6].norm(dim=1).max())
