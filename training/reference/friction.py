"""Ground friction of the MuJoCo references: Coulomb's round cone, as the solver applies it.

MuJoCo's default pyramidal cone holds only mu / sqrt(2) along the diagonals of the world axes, so a
body slid that way went further than Coulomb friction lets it (mu 0.3: a chain at 45 degrees slowed
at 0.21 g instead of 0.30 g; an elastic superquadric at 0.21 g, 0.29 g with the elliptic cone).
"""

FRICTION_CONE = 'cone="elliptic"'  # an attribute of MuJoCo's <option>
