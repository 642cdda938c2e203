"""Fuzzing the terrain generator and the height-field readers: every seeded bad or odd input gives a valid result or a
jaxmor error, never a foreign exception, a NaN height or a silent empty field.

The oracle is the contract each function states: :func:`jaxmor.terrain.generate` returns finite heights on a grid of
``levels x len(kinds)`` cells of its size, or raises ``ArgumentError``; :func:`jaxmor.load_mjcf` on an ``<hfield>``
returns a model whose field holds finite heights of the declared grid, or raises ``ModelError`` naming the file.
No case compiles anything (host-side NumPy only), so the run takes seconds.
"""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest
from fuzz import mutate

import jaxmor
from jaxmor import ArgumentError, ModelError
from jaxmor.tools.terrain import KINDS, Parameters

#: Values the fuzzer puts where a number goes: ordinary, boundary and hostile.
ODD = (0, 1, 2, -1, 0.5, 1e-9, 1e9, float("nan"), float("inf"), -float("inf"), 2**40, "3", None, (1, 2), True)


def _arguments(rng: random.Random) -> dict:
    """A random argument set of ``generate``: each argument ordinary, or odd one time in eight."""
    ordinary = {
        "levels": rng.randint(1, 3),
        "kinds": tuple(rng.sample(KINDS, rng.randint(1, 3))),
        "size": rng.choice([1.0, 2.0, 4.0]),
        "resolution": rng.choice([0.1, 0.25, 0.5]),
        "seed": rng.randint(0, 5),
        "difficulty": tuple(sorted((rng.random(), rng.random()))),
    }
    out = {}
    for name, value in ordinary.items():
        if rng.random() < 0.125:
            value = rng.choice(ODD) if name != "kinds" else rng.choice([(), ("lava",), "rough", (1,), KINDS * 2])
        out[name] = value
    if rng.random() < 0.3:
        field = rng.choice(["max_roughness", "roughness_step", "run", "wavelength", "max_step", "max_slope"])
        if field in Parameters.__dataclass_fields__:
            out["parameters"] = Parameters(**{field: rng.choice(ODD[:10])})
    return out


def test_four_hundred_generator_argument_sets_give_a_terrain_or_a_jaxmor_error():
    rng = random.Random(0)
    made = refused = 0
    for case in range(400):
        kwargs = _arguments(rng)
        try:
            terrain = jaxmor.terrain.generate(**kwargs)
        except ArgumentError:
            refused += 1
            continue
        except Exception as exc:  # noqa: BLE001 - the assertion names the case
            pytest.fail(f"case {case} {kwargs!r}: foreign {type(exc).__name__}: {exc}")
        made += 1
        heights = np.asarray(terrain.heights)
        cells = int(round(terrain.size / terrain.spacing))
        assert np.all(np.isfinite(heights)), (case, kwargs)
        assert heights.shape == (len(terrain.difficulty) * cells + 1, len(terrain.kinds) * cells + 1), (case, kwargs)
        assert np.all((0 <= terrain.difficulty) & (terrain.difficulty <= 1)), (case, kwargs)
    assert made > 100 and refused > 50  # both branches were exercised


HFIELD = """<mujoco>
  <asset>
    <hfield name="h" nrow="3" ncol="4" size="1.5 2 0.3 0.1" elevation="0 1 2 3 4 5 6 7 8 9 10 11"/>
  </asset>
  <worldbody>
    <geom type="hfield" hfield="h" pos="0.5 -1 0.2"/>
    <body pos="0 0 1"><freejoint/><geom type="sphere" size="0.1"/></body>
  </worldbody>
</mujoco>
"""


def test_six_hundred_mutated_height_field_files_load_or_fail_cleanly():
    rng = random.Random(1)
    loaded = refused = 0
    for case in range(600):
        text = HFIELD
        for _ in range(rng.randint(1, 3)):
            if not text:
                break
            text = mutate(text, rng, tags=("hfield", "geom", "body", "asset"), types=("hfield", "plane", "box", "x"))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = jaxmor.load_mjcf(text)
        except (ModelError, ArgumentError) as exc:
            refused += 1
            assert str(exc), case
            continue
        except Exception as exc:  # noqa: BLE001 - the assertion names the case
            pytest.fail(f"case {case}: foreign {type(exc).__name__}: {exc}\n{text}")
        loaded += 1
        field = model.height_field
        if field is not None:
            heights = np.asarray(field.heights)
            assert heights.ndim == 2 and min(heights.shape) >= 2 and np.all(np.isfinite(heights)), (case, text)
            assert np.all(np.isfinite(field.spacing)) and np.all(np.asarray(field.spacing) > 0), (case, text)
    assert loaded > 50 and refused > 50
