"""Colliders as contact planes: where each contact point meets the nearest obstacle surface.

The ground is one plane for every point. A triangle-mesh collider is a plane per point, chosen at the
start of each step from the point's nearest surface feature and held through the step: the tangent
plane there, pushed out by the collider's thickness tau, moving with the surface,

    depth_i = o_i - n_i . x_i,    o_i = n_i . c_i + tau,    n_i = (x_i - c_i) / |x_i - c_i|

with c_i the closest point on the triangles. Past an edge or corner the normal turns round it (a body
slides off it), but within 45 degrees of a face's normal it stays the face's: a box set on an equal
box has its corners on the other's edges, where a normal tilted by every millimetre of offset would
slide it off. Where several faces meet at the nearest edge or corner within those 45 degrees, the
normal is the mean of theirs: a point on a mirror plane over an edge in it then gets a normal in the
plane, not one tied face's (a push sideways out of nothing). The same spring, dashpot and friction
law then acts on every plane (contact.py).

A point that has gone past the surface (depth above tau) keeps the plane it had, moved along with the
collider, until it is back out: a fast body is pushed back the way it came, never through a thin
plank. A point inside a closed collider with no such history (it started there) is pushed out through
the nearest face only from within tau + reach of it; deeper, it is left alone, as Blender's Cloth does.
"""

from dataclasses import dataclass

import numpy as np

from .mesh import along_segments, crease_edges, cross, ranks, triangle_areas
from .options import Collider

FAR = -1e30  # the offset of an inactive plane: no depth anywhere
SLACK = 1e-3  # m: a point this much beyond its reach still gets its plane (the step's velocities change)
FIELDS = ("normal", "offset", "velocity", "friction", "thickness", "owner", "corners", "weights")  # of Planes
FACING = np.cos(np.radians(45))  # a point this square over a face's plane meets the face, not the edge round it
SPANNED_CELLS = 64  # a collider triangle whose box covers more grid cells than this is a candidate everywhere
LISTED_CELLS = 65536  # a query box of at most this many cells is looked up cell by cell, a larger one by a scan
CREASE_ANGLE = np.radians(30.0)  # a collider's edge whose faces turn by more meets bodies as an edge (crease_points)
QUERY_CELLS = 512  # of the many small boxes of ``TriangleGrid.pairs``, one of more cells is looked up alone


@dataclass
class Planes:
    """One contact plane per (body, point): depth = offset - normal . x, moving at ``velocity``."""

    normal: np.ndarray  # (B, C, 3) unit
    offset: np.ndarray  # (B, C) m; FAR where inactive
    velocity: np.ndarray  # (B, C, 3) m/s of the surface under the point
    friction: np.ndarray  # (B, C) the surface's Coulomb coefficient
    thickness: np.ndarray  # (B, C) m
    owner: np.ndarray  # (B, C) the body whose surface it is, -1 for a collider
    corners: np.ndarray  # (B, C, 3) the owner's surface vertices round the place the point meets, 0 for a collider
    weights: np.ndarray  # (B, C, 3) that place's barycentric weights on them

    @property
    def active(self) -> np.ndarray:
        return self.offset > FAR / 2

    def copy(self) -> "Planes":
        return Planes(*(getattr(self, k).copy() for k in FIELDS))


@dataclass
class BodySurfaces:
    """The bodies' own meshes, which the other bodies' contact points meet (a scene of several bodies)."""

    faces: list[np.ndarray]  # per body (T_b, 3), indices into its rows of the positions below
    friction: np.ndarray  # (B,) each body's Coulomb coefficient
    closed: np.ndarray  # (B,) bool: whether its mesh is a closed solid (a point inside it is pushed out)
    thickness: float = 0.005  # m: the gap at which two bodies touch


class TriangleGrid:
    """Triangles binned on a uniform grid by their boxes, so that those near a box are found among the
    few binned round it, not by testing every one: each triangle is listed in every cell its box
    overlaps, the cell twice the median triangle's largest side (most lie in at most 8); one whose box
    spans more than SPANNED_CELLS cells (a long sliver, or a collider swept far by its animation) is a
    candidate for every query."""

    def __init__(self, low: np.ndarray, high: np.ndarray):
        """``low``, ``high`` (T, 3): each triangle's box, m."""
        self.count = len(low)
        self.cell = max(2.0 * float(np.median(_of_three(np.maximum, *(high - low).T))) if len(low) else 1.0, 1e-6)
        self.origin = low.min(0) if len(low) else np.zeros(3)
        first, last = self._cells(low), self._cells(high)
        self.shape = (last.max(0) + 1) if len(low) else np.ones(3, np.int64)
        spans = last - first + 1
        counts = spans.prod(1)
        self.everywhere = np.flatnonzero(counts > SPANNED_CELLS)
        binned = np.flatnonzero(counts <= SPANNED_CELLS)
        triangle, keys = self._cell_keys(first[binned], spans[binned])
        order = np.argsort(keys, kind="stable")  # timsort: the keys come in long sorted runs
        keys, self.triangles = keys[order], binned[triangle[order]]
        new = np.flatnonzero(np.diff(keys, prepend=-1) != 0) if len(keys) else np.zeros(0, np.int64)
        self.keys = keys[new]  # the occupied cells, sorted
        self.starts = np.append(new, len(keys))  # cell u lists triangles[starts[u]:starts[u + 1]]
        self.occupied = np.stack(np.unravel_index(self.keys, self.shape), -1) if len(self.keys) else np.zeros((0, 3), np.int64)

    def _cells(self, points):
        cells = np.subtract(points, self.origin)
        cells /= self.cell
        return np.floor(cells, out=cells).astype(np.int64)

    def _keys(self, ijk):
        return np.ravel_multi_index(ijk.T, self.shape) if len(ijk) else np.zeros(0, np.int64)

    def _cell_keys(self, first, spans):
        """Every cell of each box of cells (its first cell and spans (N, 3)): (the box's row, the
        cell's key), built an axis at a time: the boxes' keys so far, then those one cell further on
        for the boxes that span further, and so on (no division: most boxes span one or two cells)."""
        small = np.int32 if max(int(np.prod(self.shape)), len(first)) < 2**31 else np.int64  # half the memory to touch
        rows, keys = np.arange(len(first), dtype=small), self._keys(first).astype(small)
        for axis, stride in enumerate((self.shape[1] * self.shape[2], self.shape[2], 1)):
            span = spans[rows, axis]
            further, grown_rows, grown_keys = np.arange(len(rows)), [rows], [keys]
            for step in range(1, int(span.max(initial=1))):
                further = further[span[further] > step]
                grown_rows.append(rows[further])
                grown_keys.append(keys[further] + step * stride)
            rows, keys = np.concatenate(grown_rows), np.concatenate(grown_keys)
        return rows, keys

    def _box_cells(self, low, high):
        """The first and last cells (N, 3) of boxes [low, high] clipped to the grid; outside it last < first."""
        return np.maximum(self._cells(low), 0), np.minimum(self._cells(high), self.shape - 1)

    def _listed(self, cells):
        """The triangles of the cells (indices into ``keys``) and, for each, its cell's place in ``cells``."""
        counts = self.starts[cells + 1] - self.starts[cells]
        listed = self.triangles[np.repeat(self.starts[cells], counts) + ranks(counts)]
        return listed, np.repeat(np.arange(len(cells)), counts)

    def near(self, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        """The sorted triangles (indices) whose boxes may overlap the box [low, high] (3,): every one
        that does, and some near it."""
        first, last = self._box_cells(low[None], high[None])
        if (last < first).any():
            return self.everywhere
        spans = last - first + 1
        if spans.prod() <= LISTED_CELLS:
            cells = self._occupied(self._cell_keys(first, spans)[1])[1]
        else:  # a box of many cells: scan the occupied ones
            cells = np.flatnonzero(((self.occupied >= first) & (self.occupied <= last)).all(1))
        return np.union1d(self.everywhere, self._listed(cells)[0])

    def _occupied(self, keys):
        """Which of the cell keys are occupied, and those cells (indices into ``keys``)."""
        at = np.clip(np.searchsorted(self.keys, keys), 0, max(len(self.keys) - 1, 0))
        found = self.keys[at] == keys if len(self.keys) else np.zeros(len(keys), bool)
        return found, at[found]

    def pairs(self, low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(box, triangle) index pairs for boxes [low, high] (N, 3) each: every triangle whose box
        meets a box, and some near it, each pair once, ordered by box, then triangle. A box of
        more than QUERY_CELLS cells (a fast point's) is read as ``near`` reads one."""
        first, last = self._box_cells(low, high)
        spans = np.maximum(last - first + 1, 0)
        cells = spans.prod(1)
        small = np.flatnonzero((cells > 0) & (cells <= QUERY_CELLS))  # none: outside the grid
        box, keys = self._cell_keys(first[small], spans[small])
        found, at = self._occupied(keys)
        triangles, listed = self._listed(at)
        boxes, lists = [small[box[found]][listed]], [triangles]
        for large in np.flatnonzero(cells > QUERY_CELLS):
            near = self.near(low[large], high[large])
            boxes.append(np.full(len(near), large))
            lists.append(near)
        if len(self.everywhere):
            boxes.append(np.repeat(np.arange(len(low)), len(self.everywhere)))
            lists.append(np.tile(self.everywhere, len(low)))
        key = np.unique(np.concatenate(boxes) * max(self.count, 1) + np.concatenate(lists))
        return key // max(self.count, 1), key % max(self.count, 1)


class Obstacles:
    """All colliders of a scene as one triangle soup, sampled at the simulation's frames (``fps``),
    and, in a scene of several bodies, the bodies' own surfaces (``bodies``)."""

    def __init__(self, colliders: list[Collider], fps: float, bodies: BodySurfaces | None = None):
        soups, faces, friction, thickness, closed = [np.zeros((1, 0, 3))], [np.zeros((0, 3), np.int64)], [], [], []
        skins = [np.zeros(0)]  # each vertex's collider's thickness
        offset, count = 0, max([len(collider.frames()) for collider in colliders], default=1)
        for collider in colliders:
            positions = collider.frames()
            positions = np.concatenate([positions, np.repeat(positions[-1:], count - len(positions), 0)])
            tris = np.asarray(collider.faces, dtype=np.int64)
            keep = triangle_areas(positions[0], tris) > 0.5e-12  # degenerate triangles have no plane
            soups.append(positions)
            faces.append(tris[keep] + offset)
            friction.append(np.full(keep.sum(), collider.friction))
            thickness.append(np.full(keep.sum(), collider.thickness))
            closed.append(np.full(keep.sum(), collider.closed))
            skins.append(np.full(positions.shape[1], collider.thickness))
            offset += positions.shape[1]
        self.positions = np.concatenate([np.repeat(s, count, 0) if len(s) == 1 else s for s in soups], axis=1)  # (F, V, 3)
        self.faces = np.concatenate(faces)
        self.fps = fps
        self.bodies = bodies
        # each triangle's friction, thickness, closed, owner and corners' rows: the colliders', then the
        # bodies' (``triangles``)
        self._fixed = (np.concatenate([[]] + friction), np.concatenate([[]] + thickness),
                       np.concatenate([np.zeros(0, bool)] + closed), np.full(len(self.faces), -1), np.zeros_like(self.faces))
        self._bodies_fixed = None if bodies is None else tuple(np.concatenate(column) for column in zip(*[
            (np.full(len(faces), bodies.friction[body]), np.full(len(faces), bodies.thickness),
             np.full(len(faces), bodies.closed[body]), np.full(len(faces), body), faces)
            for body, faces in enumerate(bodies.faces)]))
        self._body_rows = None
        # the colliders' triangles binned by where they ever are (the box of their corners' boxes over
        # every frame), so that a step reads the few near its points whatever the colliders' size
        lowest, highest = self.positions.min(0).T.copy(), self.positions.max(0).T.copy()  # (3, V) over every frame
        box = lambda op, bound: np.stack([_of_three(op, *(row[k] for k in self.faces.T)) for row in bound], -1)
        self.grid = TriangleGrid(box(np.minimum, lowest), box(np.maximum, highest))
        self._skins = np.concatenate(skins)
        # m: how far beyond its points' travel a body looks for them, and m/s: the colliders' fastest vertex
        self.reach_out = (float(self._fixed[1].max()) if len(self.faces) else 0.0) + SLACK
        # frame by frame: no (F, V, 3) copy of a long animation
        moves = zip(self.positions[:-1], self.positions[1:]) if self.positions.shape[1] else ()
        self.top_speed = max((float(np.abs(after - before).max()) for before, after in moves), default=0.0) * fps

    def at(self, t: float, rows=None) -> tuple[np.ndarray, np.ndarray]:
        """Vertex positions (V, 3) at time t and their velocities (``along_frames``); of the vertices
        ``rows`` (an index array of any shape) alone, shaped as it is, given them."""
        frames = self.positions if rows is None else _Picked(self.positions, rows)
        positions, per_frame = along_frames(frames, t * self.fps)
        return positions, per_frame * self.fps

    def triangles(self, t: float, surfaces=None, subset=None):
        """Every surface triangle at time t, or of the colliders' the ``subset`` (indices) alone: corners
        (T, 3, 3), their velocities (T, 3, 3), and per triangle its friction, thickness, whether its
        mesh is closed, its owner (-1: a collider, else the body, from ``surfaces`` = the bodies'
        vertex positions and velocities (B, V, 3)) and its corners' rows of the owner's vertices (T, 3)
        (0 for a collider)."""
        faces = self.faces if subset is None else self.faces[subset]
        fixed = self._fixed if subset is None else tuple(column[subset] for column in self._fixed)
        colliders = self.at(t, faces)
        if self.bodies is None or surfaces is None:
            return (*colliders, *fixed)
        where, moving = surfaces
        rows = self._rows(where.shape[1])  # the bodies' corners as rows of (B V, 3)
        return (np.concatenate([colliders[0], where.reshape(-1, 3)[rows]]),
                np.concatenate([colliders[1], moving.reshape(-1, 3)[rows]]),
                *(np.concatenate(pair) for pair in zip(fixed, self._bodies_fixed)))

    def crease_points(self, t: float, low: np.ndarray, high: np.ndarray, spacing: float):
        """Points (N, 3) along the colliders' creases at time t within the box [low, high] (3,), and each
        one's collider's thickness (N,): where a collider's own edges and corners meet a body's faces.
        A crease is an edge whose faces turn by more than CREASE_ANGLE (as they are at frame 0), or an
        open border; each is split into equal parts at most ``spacing`` (m) long, its ends included.
        Only the triangles binned round the box are read: both faces of an edge that reaches into
        it do too, so its crease is found there as in the whole mesh (a terrain's millions of
        triangles are not read for a box on a table)."""
        edges = crease_edges(self.positions[0], self.faces[self.grid.near(low, high)], CREASE_ANGLE)
        points, edge = points_along(self.at(t, edges)[0], low, high, spacing)
        return points, self._skins[edges[edge, 0]]

    def nearby(self, x: np.ndarray, v: np.ndarray, h: float) -> tuple[np.ndarray, np.ndarray]:
        """(point, triangle) pairs of contact points x, v (B, C, 3), indexed as x.reshape(-1, 3), and
        the colliders' triangles they may meet within a step h: those binned round each point's box
        grown by its travel and theirs, 2 h (|v| + the fastest collider vertex's speed), and the
        thickest collider's thickness (a moving triangle is binned along its whole path). A point gone
        non-finite (in a step the run will redo with more steps) meets none."""
        grow = (2 * h * (np.linalg.norm(v, axis=-1) + self.top_speed) + self.reach_out).reshape(-1, 1)
        points = x.reshape(-1, 3)
        finite = np.flatnonzero(np.isfinite(points).all(1) & np.isfinite(grow[:, 0]))
        if len(finite) == len(points):
            return self.grid.pairs(points - grow, points + grow)
        rows, triangles = self.grid.pairs(points[finite] - grow[finite], points[finite] + grow[finite])
        return finite[rows], triangles

    def _rows(self, vertices: int) -> np.ndarray:
        """The bodies' triangles' corners as rows of their stacked vertices (B V, 3), for ``vertices``
        rows a body: (T_bodies, 3), kept."""
        if self._body_rows is None or self._body_rows[0] != vertices:
            self._body_rows = (vertices, np.concatenate([faces + body * vertices
                                                         for body, faces in enumerate(self.bodies.faces)]))
        return self._body_rows[1]

    def planes(self, x: np.ndarray, v: np.ndarray, t: float, h: float, previous: Planes | None,
               surfaces=None) -> Planes:
        """The plane of every contact point x, v (B, C, 3) for the step [t, t + h], each surface as it
        is at t, where the step then moves it on by h n . u: the bodies' ``surfaces`` (positions,
        velocities (B, V, 3); the engine carries those planes with their bodies through the step), and
        the colliders' triangles at t with their velocity u read at the step's midpoint (within the
        frame the step is in, not the next one's at a frame's end). The nearest feature, the side of a
        sheet and the plane are all found there: a sheet taken at the midpoint but moved on from t
        rode a box half a step's travel above it, and moved on from the midpoint it passed up through
        the box at one step a frame. A point gets one if it is within tau + reach of a surface not its
        own body's, reach = 2 h (|v| + |u|) + SLACK its own and the surface's travel, or if it has
        gone past the surface of ``previous`` (the last step's planes, moved on to t with their
        surfaces)."""
        b, c, _ = x.shape
        near_rows, near_triangles = self.nearby(x, v, h)
        subset, near_cols = np.unique(near_triangles, return_inverse=True)
        tri, tri_velocity, friction, thickness, closed, owner, corners = self.triangles(t + 0.5 * h, surfaces, subset)
        tri = tri - np.where(owner < 0, 0.5 * h, 0.0)[:, None, None] * tri_velocity  # the colliders back to t
        speed = np.abs(tri_velocity).max() if len(tri_velocity) else 0.0
        reach = 2 * h * (np.linalg.norm(v, axis=-1) + speed) + SLACK + (thickness.max() if len(thickness) else 0.0)
        planes = Planes(np.zeros((b, c, 3)) + [0.0, 0.0, 1.0], np.full((b, c), FAR), np.zeros((b, c, 3)),
                        np.zeros((b, c)), np.zeros((b, c)), np.full((b, c), -1), np.zeros((b, c, 3), np.int64),
                        np.zeros((b, c, 3)))
        points, radius = x.reshape(-1, 3), reach.reshape(-1)
        rows, cols = self._near(x, reach, tri, owner, near_rows, near_cols)
        if len(rows):
            closest, weights = closest_on_triangles(points[rows], *tri[cols].transpose(1, 0, 2))
            gap = points[rows] - closest
            distance = np.linalg.norm(gap, axis=-1)
            face_normal = _unit(cross(tri[cols, 1] - tri[cols, 0], tri[cols, 2] - tri[cols, 0]))
            facing = (gap * face_normal).sum(-1) / np.maximum(distance, 1e-300)  # cos(gap, face normal)
            facing = np.where(distance > 1e-9, facing, 1.0)
            facing = np.where(closed[cols], facing, np.abs(facing))  # an open sheet has two sides
            best = np.full(len(points), np.inf)
            np.minimum.at(best, rows, distance)
            tied = distance <= best[rows] * (1 + 1e-6) + 1e-12  # the triangles around the nearest feature
            score = np.where(tied, facing, -np.inf)
            top = np.full(len(points), -np.inf)
            np.maximum.at(top, rows, score)
            winner = np.full(len(points), -1)
            chosen = tied & (score >= top[rows])
            winner[rows[chosen]] = np.flatnonzero(chosen)  # a pair per point: the face that faces it best
            has = winner >= 0
            pair = winner[has]
            face = cols[pair]
            tau = thickness[face]
            d = distance[pair]
            sided = face_normal * np.where(closed[cols] | ((gap * face_normal).sum(-1) >= 0), 1.0, -1.0)[:, None]
            # on an edge or a corner every face round it that faces the point within FACING gives its
            # normal to the mean: a point on a mirror plane over an edge in that plane gets a normal in
            # it, not its tie's by index order (a lateral push out of nothing between symmetric bodies)
            facing_faces = tied & (score >= FACING)
            flat = np.zeros((len(points), 3))
            np.add.at(flat, rows[facing_faces], sided[facing_faces])
            flat = np.where(facing_faces[pair][:, None], _unit(flat[has]), sided[pair])
            outward = np.where(d[:, None] > 1e-9, gap[pair] / np.maximum(d, 1e-300)[:, None], flat)
            inside = closed[face] & (facing[pair] < 0)
            normal = np.where((inside | (facing[pair] >= FACING))[:, None], flat, outward)
            acting = d < radius[has]  # within tau + reach, from either side
            where = np.flatnonzero(has)[acting]
            bi, ci = np.unravel_index(where, (b, c))
            n = normal[acting]
            planes.normal[bi, ci] = n
            planes.offset[bi, ci] = (n * closest[pair][acting]).sum(-1) + tau[acting]
            planes.velocity[bi, ci] = np.einsum("pk,pki->pi", weights[pair][acting], tri_velocity[face[acting]])
            planes.friction[bi, ci] = friction[face[acting]]
            planes.thickness[bi, ci] = tau[acting]
            planes.owner[bi, ci] = owner[face[acting]]
            planes.corners[bi, ci] = corners[face[acting]]
            planes.weights[bi, ci] = weights[pair][acting]
        if previous is not None:  # past the surface: held on the plane it came through
            past = previous.active & (previous.offset - (previous.normal * x).sum(-1) > previous.thickness)
            for field in FIELDS:
                getattr(planes, field)[past] = getattr(previous, field)[past]
        return planes

    @staticmethod
    def _near(x, reach, tri, owner, rows, cols):
        """(point, triangle) pairs whose bounding boxes, the point's grown by its reach, overlap, ordered
        by point, then triangle (points indexed as x.reshape(-1, 3)): of the colliders' candidate pairs
        ``rows``, ``cols``, and of the bodies' triangles (owner >= 0) first those near each body's points
        as a whole (not its own), then each point against those."""
        low, high = (_of_three(op, tri[:, 0], tri[:, 1], tri[:, 2]) for op in (np.minimum, np.maximum))
        points, radius = x.reshape(-1, 3), reach.reshape(-1, 1)
        meets = ((points[rows] >= low[cols] - radius[rows]) & (points[rows] <= high[cols] + radius[rows])).all(1)
        rows, cols = [rows[meets]], [cols[meets]]
        surfaces = np.flatnonzero(owner >= 0)
        low_axes, high_axes = low[surfaces].T.copy(), high[surfaces].T.copy()  # (3, T): a contiguous row per axis
        for body in range(x.shape[0] if len(surfaces) else 0):
            grow = reach[body][:, None]
            below, above = (x[body] - grow).min(0), (x[body] + grow).max(0)
            around = owner[surfaces] != body  # a body does not collide with itself
            for axis in range(3):
                around &= (high_axes[axis] >= below[axis]) & (low_axes[axis] <= above[axis])
            candidates = surfaces[around]
            near = ((x[body][:, None] >= low[candidates][None] - grow[..., None]) &
                    (x[body][:, None] <= high[candidates][None] + grow[..., None])).all(-1)
            point, index = np.nonzero(near)
            rows.append(point + body * x.shape[1])
            cols.append(candidates[index])
        rows, cols = np.concatenate(rows), np.concatenate(cols)
        order = np.lexsort((cols, rows))
        return rows[order], cols[order]

    def clear(self, x: np.ndarray, v: np.ndarray, t: float, h: float, surfaces=None) -> bool:
        """Whether no contact point x, v (B, C, 3) can reach a surface within [t, t + h]."""
        return not self.planes(x, v, t, h, None, surfaces).active.any()


class _Picked:
    """Frames (K, V, 3) read at the rows ``rows`` alone, frame by frame as ``along_frames`` asks."""

    def __init__(self, frames, rows):
        self.frames, self.rows = frames, rows

    def __len__(self):
        return len(self.frames)

    def __getitem__(self, k):
        return self.frames[k][self.rows]


def along_frames(frames, f: float):
    """The value at frame f of values given at frames 0..K-1 (``frames[k]``, numpy or torch): linear
    between frames, the first before 0 and the last held after K-1; and its change per frame (zero
    where held after the last)."""
    last = len(frames) - 1
    if f >= last:
        return frames[last], frames[last] * 0
    f = max(f, 0.0)
    k = int(f)
    w = f - k
    return (1 - w) * frames[k] + w * frames[k + 1], frames[k + 1] - frames[k]


def points_along(ends, low, high, spacing: float):
    """Points (N, 3) along the segments ``ends`` (E, 2, 3) within the box [low, high] (3,), each
    segment split into equal parts at most ``spacing`` (m) long, its ends included and an end that
    segments share once, and each point's segment (N,)."""
    a, b = ends[:, 0], ends[:, 1]
    parts = np.ceil(np.linalg.norm(b - a, axis=-1) / spacing).astype(np.int64).clip(min=1)
    points, edge = along_segments(a, b, parts)
    inside = np.flatnonzero(((points >= low) & (points <= high)).all(1))
    _, first = np.unique(points[inside], axis=0, return_index=True)
    kept = inside[np.sort(first)]
    return points[kept], edge[kept]


def nearest_on_triangles(points, corners, reach: float):
    """The nearest place (N, 3) to each point (N, 3) on the triangles ``corners`` (T, 3, 3) whose boxes
    come within ``reach`` (m) of it, its distance (N,), inf where none does, and whether the point
    lies behind the triangles there (N,): behind every face round the nearest edge or corner (their
    normals by the corners' order, outward on a closed mesh: inside it)."""
    lows, highs = corners.min(1), corners.max(1)
    point, triangle = np.nonzero(((points[:, None] >= lows - reach) & (points[:, None] <= highs + reach)).all(-1))
    closest, _ = closest_on_triangles(points[point], *corners[triangle].transpose(1, 0, 2))
    gap = points[point] - closest
    distance = np.linalg.norm(gap, axis=-1)
    best = np.full(len(points), np.inf)
    np.minimum.at(best, point, distance)
    nearest = np.zeros((len(points), 3))
    won = distance <= best[point]
    nearest[point[won]] = closest[won]
    tri = corners[triangle]
    side = (gap * cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])).sum(-1)
    facing = np.full(len(points), -np.inf)  # the most the point lies in front of a tied face
    tied = distance <= best[point] * (1 + 1e-6) + 1e-12
    np.maximum.at(facing, point[tied], side[tied])
    return nearest, best, (facing < 0) & (best > 1e-9)


def closest_on_triangles(p, a, b, c):
    """The closest points (N, 3) to p on triangles (a, b, c), each (N, 3), and their barycentric
    weights (N, 3), by the Voronoi region of the triangle p projects into (vertex, edge or face)."""
    ab, ac = b - a, c - a
    dot = lambda u, w: (u * w).sum(-1)
    ap, bp, cp = p - a, p - b, p - c
    d1, d2, d3, d4, d5, d6 = dot(ab, ap), dot(ac, ap), dot(ab, bp), dot(ac, bp), dot(ab, cp), dot(ac, cp)
    va, vb, vc = d3 * d6 - d5 * d4, d5 * d2 - d1 * d6, d1 * d4 - d3 * d2
    with np.errstate(divide="ignore", invalid="ignore"):
        total = va + vb + vc
        weights = np.stack([va, vb, vc], -1) / total[:, None]  # the face's interior
        regions = [  # later ones take precedence, vertices over edges over the face
            ((va <= 0) & (d4 - d3 >= 0) & (d5 - d6 >= 0), _edge(1, 2, (d4 - d3) / ((d4 - d3) + (d5 - d6)))),
            ((vb <= 0) & (d2 >= 0) & (d6 <= 0), _edge(0, 2, d2 / (d2 - d6))),
            ((vc <= 0) & (d1 >= 0) & (d3 <= 0), _edge(0, 1, d1 / (d1 - d3))),
            ((d6 >= 0) & (d5 <= d6), _vertex(2, len(p))),
            ((d3 >= 0) & (d4 <= d3), _vertex(1, len(p))),
            ((d1 <= 0) & (d2 <= 0), _vertex(0, len(p))),
        ]
        for mask, w in regions:
            weights = np.where(mask[:, None], w, weights)
    return weights[:, :1] * a + weights[:, 1:2] * b + weights[:, 2:] * c, weights


def _edge(i, j, s):
    w = np.zeros((len(s), 3))
    w[:, i], w[:, j] = 1 - s, s
    return w


def _vertex(i, n):
    w = np.zeros((n, 3))
    w[:, i] = 1.0
    return w


def _of_three(op, a, b, c):
    """op(op(a, b), c) for a binary ufunc such as np.minimum, elementwise: reducing a strided axis of
    three (a triangle's corners, a box's sides) takes several times as long (0.40 s against 0.08 s for
    two million triangles' boxes)."""
    return op(op(a, b), c)


def _unit(vectors):
    return vectors / np.linalg.norm(vectors, axis=-1, keepdims=True).clip(min=1e-300)
