"""Mesh checks, mass properties, contact samples and convex hulls, in numpy (float64; scipy where noted)."""

import math
from dataclasses import dataclass

import numpy as np

_FLAT_VOLUME = 1e-9  # |V| / bbox_diag^3 below this: a closed but flat mesh, treated as a shell
# of a hull's size (bbox diagonal): the smooth support's tau, the hull points within about this of the
# furthest sharing the support point (round_hull, dynamics._smooth_support)
SUPPORT_SMOOTHING = 1e-3
ROUND_GAP = 0.002  # of a hull's size: the samples' hull falling this far short makes a body round (round_hull)
ROUND_RADIUS = 1.0  # of a hull's size: the largest radius of curvature of a round body's hull (round_hull)


@dataclass(frozen=True)
class MassProperties:
    """Mass, centre of mass and second moment S = sum m (x - c)(x - c)^T of a solid or a shell."""

    mass: float
    center: np.ndarray  # (3,)
    second_moment: np.ndarray  # (3, 3)
    solid: bool  # True: from the enclosed volume; False: from the surface area

    @property
    def inertia(self) -> np.ndarray:
        """Inertia tensor about the centre of mass, I = tr(S) 1 - S."""
        return np.trace(self.second_moment) * np.eye(3) - self.second_moment


_BOX_FACES = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                       [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])


def box_mesh(size=(1.0, 1.0, 1.0), corner=(0.0, 0.0, 0.0)) -> tuple[np.ndarray, np.ndarray]:
    """Closed, outward-facing box (8 vertices, 12 triangles) with its lowest corner at ``corner``."""
    v = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], dtype=np.float64)
    return v * np.asarray(size, dtype=np.float64) + np.asarray(corner, dtype=np.float64), _BOX_FACES.copy()


def undirected_edges(faces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The triangles' edges (3F, 2), the (0 1), then (1 2), then (2 0) edge of every face, and a key for
    each that both directions share, lo * n + hi with n past the largest index (int64): np.unique
    on the keys sorts numbers, not rows, in the rows' lexicographic order."""
    faces = np.asarray(faces, dtype=np.int64)
    directed = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    return directed, directed.min(1) * (int(faces.max()) + 1) + directed.max(1)


def subdivided(vertices: np.ndarray, faces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each triangle split into four at its edge midpoints (shared midpoints merged): the same
    surface with four times the triangles, for a mesh fine enough to bend."""
    edges, keys = undirected_edges(faces)
    _, first, index = np.unique(keys, return_index=True, return_inverse=True)
    mids = len(vertices) + index.reshape(3, -1).T
    v = np.concatenate([vertices, vertices[edges[first]].mean(1)])
    a, b, c = faces.T
    ab, bc, ca = mids.T
    return v, np.concatenate([np.stack(t, 1) for t in ((a, ab, ca), (ab, b, bc), (ca, bc, c), (ab, bc, ca))])


def check_mesh(vertices, faces) -> tuple[np.ndarray, np.ndarray]:
    """Return float64 vertices (V, 3) and int64 triangles (F, 3), or raise ValueError saying what is wrong."""
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces)
    if v.ndim != 2 or v.shape[1] != 3 or len(v) == 0:
        raise ValueError(f"vertices must be a non-empty (V, 3) array, got shape {v.shape}")
    if not np.isfinite(v).all():
        bad = int((~np.isfinite(v).all(axis=1)).sum())
        raise ValueError(f"{bad} vertices have non-finite coordinates")
    if f.size == 0:
        raise ValueError("the mesh has no faces")
    if f.ndim != 2 or f.shape[1] != 3 or not np.issubdtype(f.dtype, np.integer):
        raise ValueError(f"faces must be an integer (F, 3) array of triangles, got {f.dtype} {f.shape}")
    if f.min() < 0 or f.max() >= len(v):
        raise ValueError(f"face indices must lie in [0, {len(v) - 1}], found {f.min()}..{f.max()}")
    if triangle_areas(v, f).sum() <= 1e-12 * max(bbox_diagonal(v), 1e-300) ** 2:
        raise ValueError("the mesh has no area (all faces are degenerate)")
    return v, f.astype(np.int64)


def is_closed(faces: np.ndarray) -> bool:
    """Every edge is shared by exactly two triangles: then the mesh has an inside (a closed solid)."""
    _, counts = np.unique(undirected_edges(faces)[1], return_counts=True)
    return bool((counts == 2).all())


def mass_properties(vertices: np.ndarray, faces: np.ndarray, mass: float) -> MassProperties:
    """Exact moments of a uniform solid (closed mesh with volume) or uniform shell (otherwise).

    Solid, divergence theorem over tetrahedra (o, a, b, c) with signed volume V_t = det(a, b, c) / 6:
        int x dV = V_t s / 4,   int x x^T dV = V_t / 20 (sum_k v_k v_k^T + s s^T),   s = a + b + c.
    Shell, per triangle of area A:
        int x dA = A s / 3,     int x x^T dA = A / 12 (sum_k v_k v_k^T + s s^T).
    """
    if not (np.isfinite(mass) and mass > 0):
        raise ValueError(f"mass must be a positive number of kilograms, got {mass}")
    origin = vertices.mean(axis=0)  # moments about a nearby point keep cancellation small
    a, b, c = (vertices[faces[:, k]] - origin for k in range(3))
    s = a + b + c

    def outer(w):  # sum_f w_f (sum_k v_k v_k^T + s s^T), no (F, 3, 3) in between
        return sum(np.einsum("f,fi,fj->ij", w, x, x, optimize=True) for x in (a, b, c, s))

    solid = False
    if is_closed(faces):
        signed = np.einsum("fi,fi->f", a, cross(b, c)) / 6.0
        volume = signed.sum()
        if abs(volume) > _FLAT_VOLUME * bbox_diagonal(vertices) ** 3:
            solid = True
            measure = volume
            first = (signed[:, None] * s).sum(0) / 4.0
            second = outer(signed) / 20.0
    if not solid:
        area = triangle_areas(vertices, faces)
        measure = area.sum()
        first = (area[:, None] * s).sum(0) / 3.0
        second = outer(area) / 12.0
    density = mass / measure
    center_local = first / measure
    second_moment = density * second - mass * np.outer(center_local, center_local)
    second_moment = 0.5 * (second_moment + second_moment.T)
    return MassProperties(float(mass), origin + center_local, second_moment, solid)


def principal_points(props: MassProperties) -> tuple[np.ndarray, np.ndarray]:
    """Six equal point masses at c +- a_k u_k with exactly the body's mass, centre and second moment.

    With S = U diag(s) U^T, two masses m/6 at distance a_k along u_k give second moment m a_k^2 / 3,
    so a_k = sqrt(3 s_k / m). Kinetic energy and gravity of a rigid body depend on nothing else.
    """
    s, u = np.linalg.eigh(props.second_moment)
    reach = np.sqrt(3.0 * np.clip(s, 0.0, None) / props.mass)
    offsets = (u * reach).T  # row k is a_k u_k
    points = props.center + np.concatenate([offsets, -offsets])
    return points, np.full(6, props.mass / 6.0)


def contact_samples(vertices: np.ndarray, count: int = 128, directions: int = 256) -> np.ndarray:
    """Vertex indices that can touch a collider first: convex-hull extremes, then spread surface points.

    Extremes along well-spread directions are hull vertices (what a rigid body rests on); when there
    are more than ``count`` of them a farthest-point subset keeps them spread over the whole hull.
    Farthest-point samples of all vertices fill any remaining budget, so concave regions and later
    deformations are represented too. Chosen on the vertices from their lowest corner, to a billionth
    of their extent, where a box's ties are exact: a copy moved elsewhere gets the same indices.
    """
    local = vertices - vertices.min(0)
    local = np.round(local / max(float(local.max()), 1e-30), 9)
    order = np.lexsort(local.T[::-1])  # stable: each distinct point's first index leads its run
    distinct = np.ones(len(order), dtype=bool)
    distinct[1:] = (local[order[1:]] != local[order[:-1]]).any(1)
    candidates = np.sort(order[distinct])
    points = local[candidates]
    extremes = np.unique(_extremes(fibonacci_sphere(directions), points))
    if len(extremes) >= count:
        return candidates[extremes[farthest_points(points[extremes], count)]]
    return candidates[farthest_points(points, min(count, len(points)), extremes.tolist())]


def support_samples(vertices: np.ndarray, directions: int = 1024, candidates: int = 16384) -> np.ndarray:
    """Vertex indices (sorted) of the convex hull as the ground meets it: the furthest vertex along
    each of ``directions`` well-spread directions, among at most ``candidates`` vertices (a seeded
    random subset of a larger mesh, whose own spacing is then far finer than the directions'). On UV
    spheres of 0.3 m radius and 1k-100k vertices their hull lies within 0.9-1.3 mm of the surface in
    every direction, where 128 contact samples' lies up to 15-17 mm inside it."""
    vertices = np.asarray(vertices, dtype=np.float64)
    pool = np.arange(len(vertices)) if len(vertices) <= candidates else \
        np.sort(np.random.default_rng(0).choice(len(vertices), candidates, replace=False))
    return np.unique(pool[_extremes(fibonacci_sphere(directions), vertices[pool])])


@dataclass(frozen=True)
class Hull:
    """The convex hull of a mesh's vertices as a round body rolls on it (``convex_hull``)."""

    indices: np.ndarray  # (K,) the hull's vertices, sorted
    shares: np.ndarray  # (K,) each one's share of the directions: its normal cone's solid angle over 4 pi
    normals: np.ndarray  # (F, 3) unit normals of its broadest triangles, where a flat side would lie


def convex_hull(vertices: np.ndarray, candidates: int = 4096) -> Hull:
    """Qhull's hull of at most ``candidates`` vertices (a seeded random subset of a larger mesh): its
    vertices, each one's share of the directions (its angular defect, 2 pi less the angles of the
    hull's triangles there, over 4 pi; they sum to 1), and the normals of its 64 broadest triangles.
    Weighted by their shares, a smooth support over the vertices (dynamics ``_smooth_support``) leans
    no way: taken once each, a UV sphere's poles, where its vertices crowd, stood out by a millimetre
    and the ball rolled off to turn one down. ValueError for a mesh with no hull of volume."""
    from scipy.spatial import ConvexHull, QhullError  # scipy's, imported here: round rigid bodies alone need it
    vertices = np.asarray(vertices, dtype=np.float64)
    pool = np.arange(len(vertices)) if len(vertices) <= candidates else \
        np.sort(np.random.default_rng(0).choice(len(vertices), candidates, replace=False))
    points = vertices[pool]
    try:
        triangles = ConvexHull(points).simplices
    except QhullError as error:
        raise ValueError("the mesh has no hull of volume (it is flat or straight)") from error
    corners = points[triangles]  # (T, 3, 3)
    angles = np.zeros(triangles.shape)
    for k in range(3):  # the triangle's angle at its corner k
        u, w = corners[:, (k + 1) % 3] - corners[:, k], corners[:, (k + 2) % 3] - corners[:, k]
        cosine = (u * w).sum(1) / np.maximum(np.linalg.norm(u, axis=1) * np.linalg.norm(w, axis=1), 1e-300)
        angles[:, k] = np.arccos(np.clip(cosine, -1.0, 1.0))
    hull = np.unique(triangles)
    defect = np.maximum(2 * np.pi - np.bincount(triangles.ravel(), angles.ravel(), minlength=len(points))[hull], 0.0)
    normals = cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])  # |n| = 2 area
    broadest = normals[np.argsort(-np.linalg.norm(normals, axis=1))[:64]]
    return Hull(pool[hull], defect / defect.sum(), broadest / np.linalg.norm(broadest, axis=1, keepdims=True))


def round_hull(vertices: np.ndarray, support: np.ndarray, samples: np.ndarray, directions: int = 512) -> Hull | None:
    """The hull a rigid body rolls on with its support point (dynamics ``_place_support``), or None
    where it rolls on its contact samples (``samples`` (C, 3)). Round: their hull falls short of its
    surface's (``support`` (K, 3), ``support_samples``) by more than ROUND_GAP of its size along some
    well-spread direction, so that the body would roll over them like a polygon (a ball, an egg; a box
    or a low-poly body, whose hull points are all samples, is not, and its hull is not made), and
    nowhere is its hull's (``convex_hull`` of ``vertices``) radius of curvature more than ROUND_RADIUS
    times its size: the support point slides over a side that flat by that radius per radian of tilt,
    and a body landing on it (a box's face, a can's end, a rounded box's side, a cigar's flank) gained
    0.1-0.2 J in the impact. The radius is the largest eigenvalue of the covariance of the hull's
    points under a smooth support's weights (tau ten times the support point's, which the subsampled
    hulls of fine meshes need) over tau, along those directions and the broadest triangles' normals:
    0.28-0.30 of a UV sphere's size, 0.87 for an egg twice as long as wide, 1.6 for one three times as
    long and for a box rounded halfway to a ball."""
    size = bbox_diagonal(support)
    spread = fibonacci_sphere(directions)
    if ((support @ spread.T).max(0) - (samples @ spread.T).max(0)).max() <= ROUND_GAP * size:
        return None
    try:
        hull = convex_hull(vertices)
    except ValueError:  # flat: no side of it rolls
        return None
    points = vertices[hull.indices]
    tau = 10 * SUPPORT_SMOOTHING * size
    # a hull point of no share (a side flat to rounding, its angles summing to 2 pi) never weighs in
    share = np.log(hull.shares, out=np.full(len(hull.shares), -np.inf), where=hull.shares > 0)
    along = points @ np.concatenate([hull.normals, spread]).T / tau + share[:, None]  # (K, D)
    weights = np.exp(along - along.max(0))
    weights /= weights.sum(0)
    mean = weights.T @ points
    second = (weights.T @ (points[:, :, None] * points[:, None, :]).reshape(-1, 9)).reshape(-1, 3, 3)
    covariance = second - mean[:, :, None] * mean[:, None, :]
    return hull if np.linalg.eigvalsh(covariance)[:, -1].max() / tau <= ROUND_RADIUS * size else None


def _extremes(directions: np.ndarray, points: np.ndarray, entries: int = 2**21) -> np.ndarray:
    """For each direction (D, 3) the index of the point (N, 3) furthest along it, the first of ties,
    by blocks of points: (D, block) products of about ``entries`` at a time (16 MB), not one (D, N)
    (2 GB at a million points and 256 directions)."""
    block = max(1, entries // len(directions))
    best, where = np.full(len(directions), -np.inf), np.zeros(len(directions), np.int64)
    for start in range(0, len(points), block):
        along = directions @ points[start:start + block].T  # (D, block): its rows contiguous for argmax
        pick = np.argmax(along, axis=1)
        value = along[np.arange(len(directions)), pick]
        better = value > best  # a later block's tie keeps the first index
        best[better], where[better] = value[better], pick[better] + start
    return where


def farthest_points(points: np.ndarray, count: int, seeds=(0,)) -> np.ndarray:
    """``seeds`` followed by greedy farthest-point picks until ``count`` indices into ``points`` (N, 3),
    each the farthest from those already chosen (even coverage). Each coordinate a contiguous column:
    the distances of the rows' norms, bit for bit, at a fraction of their time."""
    x, y, z = np.ascontiguousarray(np.asarray(points).T)

    def distances(index):
        dx, dy, dz = x - x[index], y - y[index], z - z[index]
        return np.sqrt(dx * dx + dy * dy + dz * dz)

    chosen = list(seeds)
    distance = np.full(len(x), np.inf)
    for index in chosen:
        np.minimum(distance, distances(index), out=distance)
    while len(chosen) < count:
        far = int(np.argmax(distance))
        chosen.append(far)
        np.minimum(distance, distances(far), out=distance)
    return np.array(chosen, dtype=np.int64)


def crease_edges(vertices: np.ndarray, faces: np.ndarray, angle: float = 0.0) -> np.ndarray:
    """The mesh's edges (E, 2) whose two faces' normals differ by more than ``angle`` (radians), and its
    open borders: a flat polygon's inner diagonals are no edges of its shape, nor, above 0, the
    shallow folds of a smooth surface."""
    v, f = np.asarray(vertices, dtype=np.float64), np.asarray(faces, dtype=np.int64)
    if not len(f):
        return np.zeros((0, 2), np.int64)
    directed, keys = undirected_edges(f)
    normals = np.tile(cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]]), (3, 1))
    normals /= np.linalg.norm(normals, axis=1, keepdims=True).clip(min=1e-300)
    order = np.argsort(keys, kind="stable")  # each edge's faces side by side, its first face first
    starts = np.flatnonzero(np.diff(keys[order], prepend=-1) != 0)
    sides = np.diff(np.append(starts, len(keys)))
    summed = np.add.reduceat(normals[order], starts)  # |n_1 + n_2| = 2 cos(theta / 2), theta between them
    crease = (sides != 2) | (np.linalg.norm(summed, axis=1) < 2.0 * math.cos(0.5 * angle) - 1e-9)
    return directed[np.sort(order[starts[crease]])]


def edge_samples(vertices: np.ndarray, faces: np.ndarray, count: int) -> np.ndarray:
    """At most ``count`` points (N, 3) along the mesh's edges besides their ends: each edge of length l
    split into ceil(l / s) equal parts, with the finest spacing s (by bisection) whose points fit,
    so that the points lie about s apart along every edge, and a mirror-symmetric mesh gets
    mirror-symmetric points. Only its creases and borders: a flat polygon's inner diagonals are no
    edges of its shape. Where two low-poly meshes meet edge on edge (two boxes laid crosswise)
    or a face rests over another's edge, no vertex may lie on the other; points along the edges do."""
    v = np.asarray(vertices, dtype=np.float64)
    edges = crease_edges(v, faces)
    a, b = v[edges[:, 0]], v[edges[:, 1]]
    length = np.linalg.norm(b - a, axis=1)
    if count <= 0 or not len(edges) or float(length.max()) <= 0.0:
        return np.zeros((0, 3))
    parts = lambda spacing: np.ceil(length / spacing).astype(np.int64).clip(min=1)
    # no edge split at the longest edge's length; below a (count + 2)-th of it, that edge alone overflows
    spacing = _finest_spacing(lambda s: int((parts(s) - 1).sum()), float(length.max()), count)
    return along_segments(a, b, parts(spacing), ends=False)[0]


def _finest_spacing(number_at, coarse: float, count: int) -> float:
    """The finest spacing s whose ``number_at(s)`` points fit in ``count``, by bisection of log s
    between ``coarse`` (where they fit) and coarse / (count + 2) (where they do not), to a part in
    2^40 of that range's logarithm."""
    fine = coarse / (count + 2)
    for _ in range(40):
        middle = math.sqrt(fine * coarse)
        fine, coarse = (middle, coarse) if number_at(middle) > count else (fine, middle)
    return coarse


def face_samples(vertices: np.ndarray, faces: np.ndarray, count: int) -> np.ndarray:
    """At most ``count`` points (N, 3) over the mesh's surface besides its vertices, about s apart
    everywhere, with the finest spacing s (by bisection) whose points fit: along its creases and
    borders as ``edge_samples`` places them, and inside each triangle on a square grid of s laid along
    its longest side from that side's midpoint, at least s / 2 from its other sides and from every
    crease and border, and on that side itself where it is no crease (a quad's diagonal: its two
    triangles, each the other's image through its centre, share that row and get each other's grids,
    so its points are centred on it). A low-poly face then presses on what it meets with its whole
    area, evenly, where its vertices alone press at its corners and points along its edges at its
    border. A Python loop over the triangles: meant for low-poly meshes."""
    v = np.asarray(vertices, dtype=np.float64)
    edges = crease_edges(v, faces)
    ends = v[edges[:, 0]], v[edges[:, 1]]
    edge_length = np.linalg.norm(ends[1] - ends[0], axis=1)
    corners = v[faces]  # (T, 3, 3)
    sides = np.linalg.norm(corners[:, [2, 0, 1]] - corners[:, [1, 2, 0]], axis=2)  # the side opposite corner k
    size = float(sides.max(initial=0.0))
    if count <= 0 or size <= 0.0:
        return np.zeros((0, 3))
    rows = np.arange(len(faces))[:, None]
    opposite = sides.argmax(1)[:, None]
    a, b, c = (corners[rows, (opposite + k) % 3][:, 0] for k in (1, 2, 0))  # a -> b the longest side
    unit = lambda x: x / np.linalg.norm(x, axis=1, keepdims=True).clip(min=1e-300)
    along, middle = unit(b - a), (a + b) / 2
    height = c - middle - ((c - middle) * along).sum(1, keepdims=True) * along
    depth, up = np.linalg.norm(height, axis=1), unit(height)
    crease_keys = {tuple(e) for e in np.sort(edges, axis=1)}
    on_crease = np.array([tuple(sorted(faces[t, [(o + 1) % 3, (o + 2) % 3]])) in crease_keys
                          for t, o in enumerate(opposite[:, 0])], dtype=bool)

    def inward(p, q):
        """The unit normal of side p -> q in the triangle's plane, towards the longest side's midpoint."""
        d = unit(q - p)
        n = unit(up - (up * d).sum(1, keepdims=True) * d)
        return np.where(((middle - p) * n).sum(1, keepdims=True) < 0, -n, n), p

    others = inward(b, c), inward(c, a)
    tolerance = 1e-9 * max(bbox_diagonal(v), 1e-30)

    def samples(spacing):
        half = np.ceil(sides.max(1) / (2 * spacing)).astype(np.int64)
        grids = []
        for t in range(len(faces)):
            rows_up = np.arange(int(on_crease[t]), int(depth[t] / spacing) + 1)
            i, j = (g.ravel() for g in np.meshgrid(np.arange(-half[t], half[t] + 1), rows_up, indexing="ij"))
            grid = middle[t] + spacing * (i[:, None] * along[t] + j[:, None] * up[t])
            inside = np.ones(len(grid), dtype=bool)
            for n, p in others:
                inside &= (grid - p[t]) @ n[t] >= spacing / 2
            grids.append(grid[inside])
        grid = np.concatenate(grids)
        # a row on a quad's diagonal runs close to the other triangle's sides near its ends
        grid = grid[_segment_distance(grid, *ends) >= spacing / 2 - tolerance]
        parts = np.ceil(edge_length / spacing).astype(np.int64).clip(min=1)
        points = np.concatenate([along_segments(*ends, parts, ends=False)[0], grid])
        _, first = np.unique(np.round(points / tolerance).astype(np.int64), axis=0, return_index=True)
        return points[np.sort(first)]

    return samples(_finest_spacing(lambda s: len(samples(s)), size, count))  # at the mesh's size, no point


def _segment_distance(points: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Each point's (N, 3) distance to the nearest of the segments a -> b (E, 3); inf without any."""
    if not len(a) or not len(points):
        return np.full(len(points), np.inf)
    d = b - a
    t = (((points[:, None] - a[None]) * d[None]).sum(-1) / np.maximum((d * d).sum(-1), 1e-300)).clip(0.0, 1.0)
    return np.linalg.norm(points[:, None] - (a[None] + t[..., None] * d[None]), axis=-1).min(1)


def along_segments(a: np.ndarray, b: np.ndarray, parts: np.ndarray, ends: bool = True):
    """The points (N, 3) that split each segment a -> b (E, 3) into ``parts`` (E,) equal parts, its
    ends included or not, segment by segment, and each point's segment (N,)."""
    counts = parts + 1 if ends else parts - 1
    edge = np.repeat(np.arange(len(parts)), counts)
    fraction = (ranks(counts) + (0 if ends else 1)) / parts[edge]
    return a[edge] + fraction[:, None] * (b - a)[edge], edge


def most_on_one_plane(points: np.ndarray, vertices: np.ndarray, faces: np.ndarray) -> int:
    """The most of ``points`` (C, 3) on the plane of any one triangle (within a millionth of the
    mesh's size): the most that a flat surface can press at once."""
    a, b, c = (vertices[faces[:, k]] for k in range(3))
    normal = cross(b - a, c - a)
    length = np.linalg.norm(normal, axis=1)
    normal, a = normal[length > 0] / length[length > 0, None], a[length > 0]
    tolerance = 1e-6 * max(bbox_diagonal(vertices), 1e-30)
    on = np.abs(points @ normal.T - (normal * a).sum(1)) <= tolerance  # (C, T)
    return int(on.sum(0).max(initial=1))


def ranks(counts: np.ndarray) -> np.ndarray:
    """0, 1, ..., count - 1 for each count in turn: a row's copies' ranks after np.repeat(rows, counts)."""
    return np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)


def fibonacci_sphere(n: int) -> np.ndarray:
    """n nearly uniform unit vectors (golden-angle spiral)."""
    k = np.arange(n) + 0.5
    z = 1 - 2 * k / n
    r = np.sqrt(1 - z * z)
    phi = np.pi * (3 - np.sqrt(5)) * k
    return np.stack([r * np.cos(phi), r * np.sin(phi), z], axis=1)


def loose_parts(faces: np.ndarray, vertex_count: int) -> np.ndarray:
    """Part label per vertex: vertices joined by triangles share a label (0, 1, ... by first vertex).
    The connected components of the graph of the triangles' edges (scipy's, imported here: the
    add-on reads ``options``, which reads this module, when Blender starts)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    edges = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]]])
    graph = coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(vertex_count, vertex_count))
    _, labels = connected_components(graph, directed=False)
    _, first = np.unique(labels, return_index=True)  # each component's first vertex
    order = np.empty(len(first), dtype=np.int64)
    order[np.argsort(first)] = np.arange(len(first))
    return order[labels]


def cross(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """u x v over the last axis (..., 3), broadcast, written per component: np.cross moves axes and
    copies, seven times as slow on a million-triangle mesh's rows."""
    ux, uy, uz = u[..., 0], u[..., 1], u[..., 2]
    vx, vy, vz = v[..., 0], v[..., 1], v[..., 2]
    return np.stack([uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx], -1)


def triangle_areas(vertices, faces):
    """|(b - a) x (c - a)| / 2 per triangle (F,), each coordinate a contiguous column: the rows' norms
    bit for bit, in half their time on a million-triangle mesh, which several steps of a build measure."""
    x, y, z = np.ascontiguousarray(np.asarray(vertices).T)
    i, j, k = np.ascontiguousarray(np.asarray(faces).T)
    xi, yi, zi = x[i], y[i], z[i]
    ux, uy, uz = x[j] - xi, y[j] - yi, z[j] - zi
    vx, vy, vz = x[k] - xi, y[k] - yi, z[k] - zi
    cx, cy, cz = uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
    return 0.5 * np.sqrt(cx * cx + cy * cy + cz * cz)


def bbox_diagonal(vertices) -> float:
    """The diagonal of the vertices' axis-aligned bounding box: a body's size."""
    return float(np.linalg.norm(vertices.max(0) - vertices.min(0)))


def signed_volume(vertices: np.ndarray, faces: np.ndarray) -> float:
    """Enclosed volume, positive when the triangles face outwards (divergence theorem)."""
    return float(tetrahedron_volumes(vertices, faces).sum())


def tetrahedron_volumes(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Signed volume of the tetrahedron (origin, a, b, c) of each triangle, det(a, b, c) / 6, (F,)."""
    a, b, c = (vertices[faces[:, k]] for k in range(3))
    return np.einsum("fi,fi->f", a, cross(b, c)) / 6.0


def winding_number(points: np.ndarray, vertices: np.ndarray, faces: np.ndarray, chunk: int = 2_000_000) -> np.ndarray:
    """Generalized winding number (Jacobson et al. 2013): 1 inside a closed outward surface, 0 outside,
    robust to small holes. The solid angle of each triangle (a, b, c relative to the point) by Van
    Oosterom and Strackee:

        tan(Omega / 2) = a . (b x c) / (|a||b||c| + (a . b)|c| + (b . c)|a| + (c . a)|b|),   w = sum Omega / 4 pi

    computed in chunks of about ``chunk`` point-triangle pairs.
    """
    corners = vertices[faces]  # (F, 3, 3)
    out = np.empty(len(points))
    step = max(1, chunk // max(len(faces), 1))
    for start in range(0, len(points), step):
        rel = corners[None] - points[start:start + step, None, None]  # (p, F, 3, 3)
        a, b, c = rel[:, :, 0], rel[:, :, 1], rel[:, :, 2]
        la, lb, lc = (np.linalg.norm(x, axis=-1) for x in (a, b, c))
        numerator = np.einsum("pfi,pfi->pf", a, cross(b, c))
        denominator = la * lb * lc + (a * b).sum(-1) * lc + (b * c).sum(-1) * la + (c * a).sum(-1) * lb
        out[start:start + step] = np.arctan2(numerator, denominator).sum(1) / (2 * np.pi)
    return out


def lattice_inside(vertices: np.ndarray, faces: np.ndarray, xs: np.ndarray, ys: np.ndarray, zs: np.ndarray) -> np.ndarray:
    """The points of the lattice xs x ys x zs (each evenly spaced, increasing) inside a closed surface,
    (N, 3) in x, y, z index order.

    Inside means winding number 1/2 or more, counted along vertical rays: each column of points
    crosses the triangles above it, signed by the triangle's facing (exiting upwards +1, entering
    -1). Each triangle is tested only against the columns under its shadow's bounding box, so the
    work grows as triangles + lattice points, where ``winding_number`` grows as their product (the
    mass points of a 200k-triangle mesh: 0.5 s, where winding numbers took about 45 s).

    Watertight: a ray through an edge or a vertex (a box's diagonal on a lattice line) counts once.
    The test of a ray p against an edge a -> b is the sign of e = (b - a) x (p - a), computed from the
    edge's lower vertex index so the two triangles sharing it see exactly opposite values; where
    e = 0 the ray is moved symbolically to p + eps (1, 0) + eps^2 (0, 1), whose sign is that of
    -(b - a)_y, else (b - a)_x (simulation of simplicity).
    """
    spacing = np.array([_spacing(xs), _spacing(ys)])
    origin = np.array([xs[0], ys[0]])  # column (i, j) is at origin + (i, j) spacing
    flat = vertices[:, :2]
    area = _cross2(flat[faces[:, 1]] - flat[faces[:, 0]], flat[faces[:, 2]] - flat[faces[:, 0]])
    faces = faces[area != 0]  # a vertical triangle is never crossed
    area = area[area != 0]
    corners = flat[faces]  # (F, 3, 2)
    # the columns under each shadow's bounding box, a millionth of a column wider on each side against
    # rounding: a small triangle of a fine mesh has none under it, and tests none
    low = np.clip(np.ceil((corners.min(1) - origin) / spacing - 1e-6).astype(int), 0, None)
    high = np.minimum(np.floor((corners.max(1) - origin) / spacing + 1e-6).astype(int), [len(xs) - 1, len(ys) - 1])
    width = np.clip(high - low + 1, 0, None)
    counts = width[:, 0] * width[:, 1]
    triangle = np.repeat(np.arange(len(counts)), counts)
    local = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    i = low[triangle, 0] + local // width[triangle, 1]
    j = low[triangle, 1] + local % width[triangle, 1]
    ray = origin + np.stack([i, j], 1) * spacing
    facing = np.sign(area[triangle])  # > 0 where the triangle faces up
    hit = np.ones(len(triangle), dtype=bool)
    for k in range(3):  # inside: the ray is on the triangle's own side of all three edges
        start, end = faces[triangle, k], faces[triangle, (k + 1) % 3]
        a, b = np.minimum(start, end), np.maximum(start, end)
        edge = flat[b] - flat[a]
        side = np.sign(_cross2(edge, ray - flat[a]))
        tie = np.where(edge[:, 1] != 0, -np.sign(edge[:, 1]), np.sign(edge[:, 0]))
        side = np.where(side != 0, side, tie) * np.where(start < end, 1, -1)
        hit &= side == facing
    corners, top, ray = corners[triangle[hit]], vertices[faces[triangle[hit]], 2], ray[hit]
    # height of the crossing, from the ray's barycentric coordinates in the triangle's shadow
    ab, ac, ap = corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0], ray - corners[:, 0]
    u, v = _cross2(ap, ac) / area[triangle[hit]], _cross2(ab, ap) / area[triangle[hit]]
    height = top[:, 0] + u * (top[:, 1] - top[:, 0]) + v * (top[:, 2] - top[:, 0])
    column, facing = i[hit] * len(ys) + j[hit], facing[hit]
    # each crossing adds its facing to the points of its column below it: a difference array over z
    steps = np.zeros((len(xs) * len(ys), len(zs) + 1))
    np.add.at(steps, (column, 0), facing)
    np.add.at(steps, (column, np.searchsorted(zs, height)), -facing)
    winding = np.cumsum(steps, 1)[:, :-1].reshape(len(xs), len(ys), len(zs))
    grid = np.stack(np.meshgrid(xs, ys, zs, indexing="ij"), -1)
    return grid[np.abs(winding) >= 0.5]  # either orientation of the surface


def _spacing(axis: np.ndarray) -> float:
    return float(axis[1] - axis[0]) if len(axis) > 1 else 1.0


def _cross2(p, q):
    """z of the cross product of 2D vectors (broadcasting), the signed parallelogram area."""
    return p[..., 0] * q[..., 1] - p[..., 1] * q[..., 0]
