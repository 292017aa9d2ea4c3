"""The NeuROK network: from one static mesh, a latent space whose every point is a plausible deformation.

    prior      E_cond(M0)      -> mu_cond (L, c), shape tokens (L, w)       p(z | M0) = N(mu_cond, I)
    posterior  E_vae(phi, M0)  -> mu, log sigma^2 (L, c)                    training only
    decoder    D(z, M0)        -> a rigid motion (w_j, t_j) per query point, carried to any point by
                                  dual-quaternion skinning (``skinning.py``)

Everything runs in the object's own units: centred on its bounding-box centre and divided by its
bounding-box diagonal, so the model sees every object at the same size. Parts (loose pieces of the
mesh, or an articulated object's links) are given to the model in two ways: every point carries its
offset from its part's centroid, and a point follows query points of its own part only.
"""

from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from torch import nn

from .mesh import check_mesh, loose_parts
from .network import Block, FourierFeatures, LayerNorm, PerceiverEncoder
from .skinning import NEIGHBOURS, Skinning, deform, skinning
from .surface import SurfaceSamples, sample_surface, spread_queries


@dataclass(frozen=True)
class ModelConfig:
    width: int = 128
    heads: int = 4
    tokens: int = 32  # L latent tokens
    channels: int = 8  # c latent channels per token: the latent has L c dimensions
    encoder_depth: int = 2
    decoder_depth: int = 2
    frequencies: int = 6  # Fourier octaves
    encoder_points: int = 512
    queries: int = 256
    neighbours: int = NEIGHBOURS
    dual_quaternion: bool = True  # False: the plain-displacement ablation

    @property
    def latent_size(self) -> int:
        return self.tokens * self.channels


@dataclass
class ObjectShape:
    """A static mesh prepared for the model (model units); ``to_model`` / ``to_world`` convert."""

    center: np.ndarray  # (3,)
    scale: float  # bounding-box diagonal, m
    vertices: np.ndarray  # (V, 3) model units
    faces: np.ndarray
    triangle_parts: np.ndarray  # (F,)
    vertex_parts: np.ndarray  # (V,)
    samples: SurfaceSamples  # encoder points, model units
    queries: SurfaceSamples  # decoder query points, model units
    query_parts: np.ndarray
    skin: Skinning = field(repr=False)  # vertices <- queries

    def to_model(self, x):
        return (np.asarray(x) - self.center) / self.scale

    def to_world(self, x):
        return np.asarray(x) * self.scale + self.center


def prepare_shape(vertices, faces, config: ModelConfig, parts=None, seed: int = 0) -> ObjectShape:
    """Normalize, sample and spread query points on a mesh, deterministically from ``seed``.

    ``parts`` labels vertices (an articulated object's links); by default the mesh's loose pieces.
    """
    vertices, faces = check_mesh(vertices, faces)
    vertex_parts = loose_parts(faces, len(vertices)) if parts is None else np.asarray(parts)
    if vertex_parts.shape != (len(vertices),):
        raise ValueError(f"parts must label each of the {len(vertices)} vertices, got shape {vertex_parts.shape}")
    low, high = vertices.min(0), vertices.max(0)
    center, scale = (low + high) / 2, float(np.linalg.norm(high - low))
    if scale <= 0:
        raise ValueError("the mesh has no extent")
    unit = (vertices - center) / scale
    triangle_parts = vertex_parts[faces[:, 0]]
    rng = np.random.default_rng(seed)
    samples = sample_surface(unit, faces, config.encoder_points, rng)
    queries = spread_queries(unit, faces, triangle_parts, config.queries, rng)
    query_parts = triangle_parts[queries.faces]
    skin = skinning(unit, queries.points, vertex_parts, query_parts, config.neighbours)
    return ObjectShape(center, scale, unit, faces, triangle_parts, vertex_parts, samples, queries, query_parts, skin)


def part_centroids_of(points: np.ndarray, parts: np.ndarray) -> np.ndarray:
    """Mean point of each part label (rows indexed by label): each point's offset from its part's
    centroid is how the network tells parts apart. Pass encoder samples and query points together:
    the queries give every part at least one point."""
    count = int(parts.max()) + 1
    sums = np.zeros((count, 3))
    np.add.at(sums, parts, points)
    return sums / np.maximum(np.bincount(parts, minlength=count), 1)[:, None]


class NeuROKModel(nn.Module):
    def __init__(self, config: ModelConfig = ModelConfig()):
        super().__init__()
        self.config = config
        w = config.width
        self.fourier = FourierFeatures(config.frequencies)
        point = self.fourier.width(3) + 6  # Fourier(x), normal, offset from the part centroid
        self.prior_encoder = PerceiverEncoder(point, w, config.heads, config.tokens, config.encoder_depth)
        self.posterior_encoder = PerceiverEncoder(point + self.fourier.width(3) + 3, w, config.heads,
                                                  config.tokens, config.encoder_depth)
        self.prior_mean = nn.Linear(w, config.channels)
        self.posterior_head = nn.Linear(w, 2 * config.channels)
        self.latent_in = nn.Linear(config.channels, w)
        self.decoder = nn.ModuleList(Block(w, config.heads) for _ in range(config.decoder_depth))
        self.query_embed = nn.Linear(point, w)
        self.query_read = Block(w, config.heads)
        self.head = nn.Sequential(LayerNorm(w), nn.Linear(w, w), nn.GELU(), nn.Linear(w, 6))
        with torch.no_grad():  # start from "no deformation"
            self.head[-1].weight.mul_(0.01)
            self.head[-1].bias.zero_()

    def point_features(self, points, normals, offsets):
        return torch.cat([self.fourier(points), normals, offsets], -1)

    def prior(self, features):
        """mu_cond (..., L, c) and the shape tokens (..., L, w) the decoder is conditioned on."""
        tokens = self.prior_encoder(features)
        return self.prior_mean(tokens), tokens

    def posterior(self, features, deformation):
        """mu and log sigma^2 (..., L, c) of q(z | phi, M0); ``deformation`` (..., P, 3) is phi at the points."""
        deformed = features[..., :3] + deformation
        tokens = self.posterior_encoder(torch.cat([features, self.fourier(deformed), deformation], -1))
        mean, log_variance = self.posterior_head(tokens).chunk(2, -1)
        return mean, log_variance.clamp(-12.0, 6.0)

    def motions(self, z, shape_tokens, query_features):
        """Per query point a rotation vector and a displacement (..., Q, 3) each, model units."""
        x = shape_tokens + self.latent_in(z)
        for block in self.decoder:
            x = block(x)
        out = self.head(self.query_read(self.query_embed(query_features), x))
        return out[..., :3], out[..., 3:]

    def deform(self, z, shape_tokens, query_features, queries, points, skin: Skinning):
        """Positions (..., N, 3) of ``points`` (N, 3, model units) under the deformation decoded from z."""
        rotation, displacement = self.motions(z, shape_tokens, query_features)
        return deform(queries, rotation, displacement, points, skin, self.config.dual_quaternion)

    def config_dict(self) -> dict:
        return asdict(self.config)


def shape_tensors(model: NeuROKModel, shape: ObjectShape, dtype=torch.float32, device="cpu"):
    """The encoder's point features, the query features and the query points of ``shape`` as tensors."""
    parts_of = {"samples": shape.triangle_parts[shape.samples.faces], "queries": shape.query_parts}
    centroids = part_centroids_of(np.concatenate([shape.samples.points, shape.queries.points]),
                                  np.concatenate([parts_of["samples"], parts_of["queries"]]))

    def features(s: SurfaceSamples, parts):
        raw = [s.points, s.normals, s.points - centroids[parts]]
        return model.point_features(*(torch.as_tensor(a, dtype=dtype, device=device) for a in raw))

    return (features(shape.samples, parts_of["samples"]), features(shape.queries, parts_of["queries"]),
            torch.as_tensor(shape.queries.points, dtype=dtype, device=device))
