"""What the MJCF reader does with every element and attribute: read, ignored (documented), or refused.

MuJoCo validates a file against its schema and so does this reader: an attribute that MuJoCo does not know
is an error, as a misspelled ``dampin`` must not pass silently. Of the attributes MuJoCo knows, each handled
element lists

* ``read``: what jaxmor uses;
* ``ignored``: what has no meaning in jaxmor and is documented as such: looks (``rgba``, ``material``),
  names of groups, MuJoCo's soft-constraint and solver parameters (``solref``, ``solimp``, ``margin``,
  ``gap``: jaxmor's contacts and limits are hard constraints of its own solver), user data;
* ``refused``: physics jaxmor does not model. Each maps to a test of its value: the attribute is accepted
  when it says what MuJoCo does by default anyway (``gravcomp="0"``, ``mocap="false"``), and refused with
  an error naming the element and its line otherwise.

Elements listed in :data:`IGNORED_ELEMENTS` are skipped whole (cameras, lights, textures, materials, the
``<visual>`` and ``<statistic>`` sections: nothing in them changes the dynamics), except ``<site>`` and
``<sensor>``, which :mod:`jaxmor.io.mjcf_sensors` reads where they belong;
elements in :data:`REFUSED_ELEMENTS` are refused wherever they appear, with their reason (``<dcmotor>``, read in
``<actuator>`` by :data:`DCMOTOR_SPEC`, is refused everywhere else, in a default class too).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


def _numbers(text: str) -> list[float] | None:
    try:
        return [float(t) for t in text.split()]
    except ValueError:
        return None


def zero(text: str) -> bool:
    """Neutral when every number of the value is zero (``"0"``, ``"0 0 0"``)."""
    values = _numbers(text)
    return values is not None and all(v == 0.0 for v in values)


def false(text: str) -> bool:
    """Neutral when the value is ``false``."""
    return text.strip() == "false"


def false_or_auto(text: str) -> bool:
    """Neutral when the value is ``false`` or ``auto``."""
    return text.strip() in ("false", "auto")


def negative(text: str) -> bool:
    """Neutral when the value is a negative number (MuJoCo's "unset", e.g. ``actdim="-1"``)."""
    values = _numbers(text)
    return values is not None and len(values) == 1 and values[0] < 0


def empty(text: str) -> bool:
    """Neutral when the value is empty."""
    return not text.strip()


def value(*allowed: str) -> Callable[[str], bool]:
    """Neutral when the value is one of ``allowed``."""
    return lambda text: text.strip() in allowed


@dataclass(frozen=True)
class ElementSpec:
    """The attributes of one MJCF element: ``read``, ``ignored``, and ``refused`` with the test that accepts a
    neutral value and the reason given otherwise."""

    read: frozenset[str]
    ignored: frozenset[str] = frozenset()
    refused: dict[str, tuple[Callable[[str], bool], str]] = field(default_factory=dict)

    @property
    def known(self) -> frozenset[str]:
        return self.read | self.ignored | frozenset(self.refused)


def _spec(read: str, ignored: str = "", refused: dict | None = None) -> ElementSpec:
    return ElementSpec(frozenset(read.split()), frozenset(ignored.split()), dict(refused or {}))


_SOFT = "margin gap solref solimp solmix"
_ORIENTATION = "quat axisangle euler xyaxes zaxis"
_FLUID = "the ellipsoid fluid model (fluidshape) is not modelled: jaxmor has MuJoCo's inertia-box model"

#: The elements the reader handles, by tag.
SPECS: dict[str, ElementSpec] = {
    "mujoco": _spec("model"),
    "compiler": _spec(
        "angle eulerseq autolimits meshdir assetdir inertiafromgeom inertiagrouprange boundmass boundinertia "
        "settotalmass strippath",
        "texturedir discardvisual fusestatic usethread savecompiled saveinertial savecanonical fitaabb conflict",
        {
            "coordinate": (value("local"), "global coordinates are not supported (nor by MuJoCo 3)"),
            "balanceinertia": (
                false,
                "balanceinertia is not supported: give inertias that satisfy the triangle inequality",
            ),
            "alignfree": (false, "alignfree is not supported: the free joint's frame stays the body's"),
            "passthrough": (false, "passthrough is not supported"),
        },
    ),
    "option": _spec(
        "timestep gravity density viscosity wind",
        # MuJoCo's integrator and solver settings: jaxmor steps with its own semi-implicit integrator and PGS.
        "integrator solver iterations ls_iterations ls_tolerance tolerance noslip_iterations noslip_tolerance "
        "cone impratio jacobian ccd_iterations ccd_tolerance sdf_iterations sdf_initpoints sleep_tolerance "
        "magnetic o_margin o_solref o_solimp o_friction",
        {
            "actuatorgroupdisable": (empty, "actuatorgroupdisable is not supported"),
        },
    ),
    "flag": _spec(
        "gravity contact limit frictionloss spring damper constraint equality",
        "warmstart eulerdamp energy midphase sensor refsafe autoreset nativeccd island multiccd fwdinv "
        "invdiscrete sleep diagexact ipc speculative",
        {
            "filterparent": (
                value("enable"),
                "disabling filterparent is not supported: jaxmor never collides a body with its parent",
            ),
            "actuation": (value("enable"), "disabling the actuation is not supported: remove the actuators"),
            "clampctrl": (
                value("enable"),
                "disabling clampctrl is not supported: jaxmor always clamps the controls to ctrlrange",
            ),
            "override": (value("disable"), "the contact override flag is not supported"),
        },
    ),
    "default": _spec("class"),
    "include": _spec("file"),
    "body": _spec(
        "name childclass pos mocap " + _ORIENTATION,
        "user sleep simple fuse",
        {
            "gravcomp": (zero, "gravity compensation (gravcomp) is not supported"),
        },
    ),
    "frame": _spec("name childclass pos " + _ORIENTATION),
    "inertial": _spec("pos mass diaginertia fullinertia " + _ORIENTATION),
    "joint": _spec(
        "name class type pos axis range limited damping frictionloss armature stiffness springref ref "
        "actuatorfrcrange actuatorfrclimited springdamper",
        "group user margin solreflimit solimplimit solreffriction solimpfriction",
        {
            "springyield": (zero, "springyield is not supported"),
            "actuatorgravcomp": (false, "actuatorgravcomp is not supported"),
        },
    ),
    "freejoint": _spec("name", "group", {"align": (false_or_auto, "freejoint align is not supported")}),
    "geom": _spec(
        "name class type size pos fromto mesh hfield contype conaffinity condim priority friction group density mass "
        + _ORIENTATION,
        _SOFT + " material rgba user castshadow adhesion fluidcoef fitscale",
        {
            "shellinertia": (
                false,
                "shellinertia is not supported (a mesh's shell inertia is its asset's inertia='shell')",
            ),
            "surfacevel": (zero, "surface velocities (surfacevel) are not supported"),
            "fluidshape": (value("none"), _FLUID),
        },
    ),
    "mesh": _spec(
        "name class file scale inertia maxhullvert",
        "content_type smoothnormal material",
        {
            "vertex": (empty, "meshes given by their vertices in the file are not supported: give a mesh file"),
            "face": (empty, "meshes given by their faces in the file are not supported: give a mesh file"),
            "normal": (empty, "meshes given in the file are not supported: give a mesh file"),
            "texcoord": (empty, "meshes given in the file are not supported: give a mesh file"),
            "builtin": (empty, "built-in (procedural) meshes are not supported"),
            "params": (empty, "built-in (procedural) meshes are not supported"),
            "refpos": (zero, "mesh refpos is not supported"),
            "refquat": (value("1 0 0 0"), "mesh refquat is not supported"),
        },
    ),
    # A fixed tendon and the default class of tendons (MJCF <tendon><fixed>, <default><tendon>).
    "tendon": _spec(
        "class limited range frictionloss springlength stiffness damping armature",
        "group user margin solreflimit solimplimit solreffriction solimpfriction rgba width material",
        {
            "actuatorfrcrange": (empty, "a tendon's actuatorfrcrange is not supported: give the actuators' forcerange"),
            "actuatorfrclimited": (false_or_auto, "a tendon's actuatorfrcrange is not supported"),
        },
    ),
    # A height field asset (<asset><hfield>).
    "hfield": _spec("name file nrow ncol size elevation", "content_type"),
    # A joint of a fixed tendon (<fixed><joint joint coef>).
    "tendon_joint": _spec("joint coef"),
    "exclude": _spec("body1 body2", "name"),
    "pair": _spec("geom1 geom2 condim friction", "name " + _SOFT + " solreffriction"),
    "key": _spec(
        "name time qpos qvel ctrl act mpos mquat",
        "",
        {
            "plastic": (empty, "plastic states (key plastic) are not supported"),
        },
    ),
    "text": _spec("name data"),
    # <default><equality>: what every equality constraint of the class takes.
    "equality": _spec("active", "solref solimp"),
    "site": _spec("name class pos fromto type size " + _ORIENTATION, "material rgba group user"),
}

#: Attributes of every affine actuator element: the transmission, the common ones, and the refused ones.
_ACTUATOR_COMMON = (
    "name class joint jointinparent tendon gear ctrlrange ctrllimited forcerange forcelimited delay nsample interp"
)
_ACTUATOR_IGNORED = "group user lengthrange"
_TRANSMISSION = "only joint and fixed-tendon transmissions (joint=..., tendon=...) are supported"
_ACTUATOR_REFUSED = {
    "site": (empty, "site transmissions are not supported: " + _TRANSMISSION),
    "refsite": (empty, "site transmissions are not supported: " + _TRANSMISSION),
    "body": (empty, "body transmissions are not supported: " + _TRANSMISSION),
    "cranksite": (empty, "slider-crank transmissions are not supported: " + _TRANSMISSION),
    "slidersite": (empty, "slider-crank transmissions are not supported: " + _TRANSMISSION),
    "cranklength": (zero, "slider-crank transmissions are not supported: " + _TRANSMISSION),
    "armature": (zero, "actuator armature is not supported: give the joint's armature"),
    "damping": (zero, "actuator damping is not supported: give the joint's damping"),
}


def _actuator(read: str, refused: dict | None = None) -> ElementSpec:
    return _spec(_ACTUATOR_COMMON + " " + read, _ACTUATOR_IGNORED, {**_ACTUATOR_REFUSED, **(refused or {})})


ACTUATOR_SPECS: dict[str, ElementSpec] = {
    "motor": _actuator(""),
    "position": _actuator(
        "kp kv inheritrange timeconst",
        {"dampratio": (zero, "position dampratio is not supported: give kv")},
    ),
    "velocity": _actuator("kv"),
    "intvelocity": _actuator("kp kv actrange actlimited actearly"),
    "general": _actuator(
        "gaintype gainprm biastype biasprm dyntype dynprm actlimited actrange actearly",
        {
            "actdim": (negative, "actdim is not supported: each actuator with dynamics has one activation"),
            "ffrange": (zero, "ffrange is not supported"),
            "velrange": (zero, "velrange is not supported"),
            "input": (empty, "actuator inputs are not supported"),
            "inheritrange": (
                zero,
                "inheritrange on a <general> is not supported (MuJoCo ignores the element's own and applies a "
                "default class's): give ctrlrange",
            ),
        },
    ),
}

#: MuJoCo's ``<dcmotor>`` on a joint: a jaxmor DC-motor actuator (:mod:`jaxmor.io.mjcf_actuators`). Its schema has
#: no ``forcerange``/``forcelimited`` and no body transmission; ``damping`` is read to be refused with its reason
#: (with ``nominal`` it changes how MuJoCo derives the motor constant), and the voltage command is the only input.
_DCMOTOR_REFUSED = {name: test for name, test in _ACTUATOR_REFUSED.items() if name not in ("body", "damping")}
DCMOTOR_SPEC = _spec(
    "name class joint jointinparent gear ctrlrange ctrllimited motorconst resistance nominal saturation inductance "
    "cogging thermal lugre damping",
    _ACTUATOR_IGNORED,
    {
        **_DCMOTOR_REFUSED,
        "tendon": (empty, "a dcmotor on a tendon is not supported: jaxmor's DC motors drive a joint"),
        "armature": (zero, "actuator armature is not supported: give the joint's armature (gear^2 times the rotor's)"),
        "input": (
            value("voltage"),
            "only the voltage input is supported: jaxmor's driver commands a torque (the actuator torque, or "
            "jaxmor's actuator PD), MuJoCo's on-board controller and passive dcmotors are not modelled",
        ),
        "controller": (
            zero,
            "the dcmotor's on-board controller (kp ki kd slewmax Imax Vmax) is not supported: command the "
            "actuator torque, or use jaxmor's actuator PD (jaxmor.set_actuator_pd_gains)",
        ),
    },
)

#: The attributes of an actuator shortcut that belong to that shortcut (the rest are common to all):
#: what a default of one kind can pass to an element of the same kind only.
ACTUATOR_OWN = {
    "motor": frozenset(),
    "position": frozenset({"kp", "kv", "dampratio", "timeconst", "inheritrange"}),
    "velocity": frozenset({"kv"}),
    "intvelocity": frozenset({"kp", "kv", "actrange", "actlimited", "actearly"}),
    "general": frozenset(
        {
            "gaintype",
            "gainprm",
            "biastype",
            "biasprm",
            "dyntype",
            "dynprm",
            "actdim",
            "actearly",
            "actlimited",
            "actrange",
        }
    ),
}

#: Elements skipped whole, wherever they appear: nothing in them changes the dynamics (a ``<skin>`` is named in the
#: MuJoCo-difference warning).
IGNORED_ELEMENTS = frozenset(
    "site camera light visual statistic size texture material sensor numeric tuple model lengthrange skin".split()
)

#: Elements refused wherever they appear, with the reason.
REFUSED_ELEMENTS = {
    "deformable": "deformable objects are not supported",
    "flexcomp": "deformable objects (flexcomp) are not supported",
    "composite": "composite objects are not supported",
    "extension": "plugins are not supported",
    "plugin": "plugins are not supported",
    "attach": "attaching models (<attach>) is not supported: include the model's file instead",
    "replicate": "<replicate> is not supported: write the copies out",
    "damper": "damper actuators are not supported",
    "cylinder": "cylinder actuators (activation dynamics) are not supported",
    "muscle": "muscle actuators are not supported",
    "adhesion": "adhesion actuators are not supported",
    "pid": "pid actuators are not supported: use a position actuator",
    "orientation": "orientation actuators are not supported",
    # <dcmotor> is read in <actuator> (DCMOTOR_SPEC); anywhere else, a default class included, it is refused.
    "dcmotor": "a <dcmotor> is read only in <actuator>, with its parameters on the element: dcmotor defaults are "
    "not supported (MuJoCo passes a default's compiled constants on sub-value by sub-value)",
}

#: The elements of ``<equality>`` (``joint`` there is a coupling of two joints, not a body's joint).
EQUALITY_SPECS: dict[str, ElementSpec] = {
    "connect": _spec("name class body1 body2 anchor site1 site2 active", "solref solimp"),
    "weld": _spec("name class body1 body2 relpose anchor torquescale site1 site2 active", "solref solimp"),
    "joint": _spec("name class joint1 joint2 polycoef active", "solref solimp"),
    "tendon": _spec("name class tendon1 tendon2 polycoef active", "solref solimp"),
}

#: Elements of ``<equality>`` refused, with the reason.
REFUSED_EQUALITIES = {
    "flex": "flex equality constraints are not supported (jaxmor has no deformables)",
    "flexvert": "flex equality constraints are not supported (jaxmor has no deformables)",
    "flexstrain": "flex equality constraints are not supported (jaxmor has no deformables)",
}
