"""A model's actuators as definitions: replace them, read them back, import and export them as XML.

DC-motor actuators (:class:`~jaxmor.ActuatorDefinition`, the spec's ``setActuators``/``getActuators``)
and affine actuators (:class:`~jaxmor.AffineActuatorDefinition`) are model editors: they return a new
:class:`~jaxmor.Model`. After changing the actuators of a model, fit a world's State to them with
:func:`jaxmor.reset_actuator_state` (the number and order of the actuators may have changed).
A robot may mix both kinds, one actuator per joint.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import jax.numpy as jnp
import numpy as np

from jaxmor.actuation.affine import AffineActuatorDefinition, compile_affine
from jaxmor.actuation.compile import compile_actuators, with_backlash_definitions
from jaxmor.actuation.controller import controller_definition
from jaxmor.actuation.definitions import ActuatorCoupling, ActuatorDefinition, BacklashDefinition
from jaxmor.actuation.latency import fitted_max_delay
from jaxmor.actuation.motor import DcMotorParameters
from jaxmor.actuation.motor_dynamics import features_of
from jaxmor.errors import ArgumentError
from jaxmor.io.actuators import actuators_from_element, actuators_to_xml
from jaxmor.io.residual_file import read_residual
from jaxmor.io.xml import looks_like_xml, parse_xml
from jaxmor.modeling.learned import residual_from_file, save_residual
from jaxmor.state import reset_actuator_state
from jaxmor.types import Model, State


def with_actuators(model: Model, definitions: Sequence[ActuatorDefinition]) -> Model:
    """Replace all DC-motor actuators of a model (an empty list removes them).

    Fit the states of the model's worlds to the new actuators with :func:`jaxmor.reset_actuator_state`.

    Args:
        model: the model.
        definitions: one :class:`ActuatorDefinition` per actuator, in the order of every
            per-actuator array. Unnamed actuators are named after their joints.

    Returns:
        The new model.

    Raises:
        ModelError: invalid definitions (the message names the actuator, and the file and line for
            definitions read from a file).
        ArgumentError: an entry that is not an :class:`ActuatorDefinition`, or a joint already driven by
            an affine actuator.
    """
    model = model.replace(actuators=compile_actuators(model, definitions))
    return fitted_max_delay(with_backlash_definitions(model, definitions))


def get_actuators(model: Model, state: State | None = None) -> list[ActuatorDefinition]:
    """The actuator definitions of a model, with the bus voltages of ``state`` when given.

    Args:
        model: an unbatched model.
        state: an unbatched state whose bus voltages (set since loading) replace the model's.
    """
    act = model.actuators
    ratios = np.asarray(act.coupling_ratio, dtype=float)
    volts = np.asarray(act.motor.bus_voltage if state is None else state.bus_voltage, dtype=float)
    out = []
    for i, name in enumerate(act.names):
        mine = [k for k, a in enumerate(act.coupling_actuator) if a == i]
        couplings = tuple(ActuatorCoupling(j, float(ratios[k])) for j, k in zip(act.couplings[i], mine, strict=True))
        motor = DcMotorParameters(
            resistance=float(act.motor.resistance[i]),
            torque_constant=float(act.motor.torque_constant[i]),
            velocity_constant=float(act.motor.velocity_constant[i]),
            bus_voltage=float(volts[i]),
            peak_torque=float(act.motor.peak_torque[i]),
        )
        out.append(
            ActuatorDefinition(
                act.joints[i],
                float(act.gear_ratio[i]),
                motor,
                name=name,
                model=act.models[i],
                couplings=couplings,
                output_damping=float(act.output_damping[i]),
                output_friction=float(act.output_friction[i]),
                **features_of(act.dynamics, i),
                delay=int(np.asarray(act.delay)[i]),
                controller=controller_definition(act.controller, i),
                backlash=_backlash_definition(act, i),
            )
        )
    return out


def _backlash_definition(act, i: int) -> BacklashDefinition | None:
    """Actuator ``i``'s backlash, its rotor inertia explicit, or ``None``."""
    if not act.backlash.active[i]:
        return None
    return BacklashDefinition(float(act.backlash.width[i]), float(act.backlash.inertia[i]))


def export_actuators(model: Model, state: State, residual_file: str | os.PathLike | None = None) -> str:
    """The current actuators as an ``<actuators>`` XML element (the spec's world export).

    It holds every actuator with its model inline (including actuators set with
    :func:`with_actuators`), the bus voltages of ``state``, each nonzero commanded torque as a
    ``torque`` attribute, and the monitor mode. :func:`import_actuators` reads it back exactly.

    Args:
        model: an unbatched model.
        state: an unbatched state of a world of it.
        residual_file: where to write the model's learned residual (a weights file, ``.npz``:
            :mod:`jaxmor.io.residual_file`); the element then names it by its file name
            (``<residual file="go2_residual.npz"/>``), so save the XML in the same folder. ``None``: the
            residual is not written.

    Raises:
        ArgumentError: a ``residual_file`` for a model without a residual, or one that cannot be written.
    """
    torques = np.asarray(state.actuator_torque, dtype=float)
    enforced = bool(np.asarray(state.mor_enforced))
    name = None
    if residual_file is not None:
        if not model.actuators.residual.enabled:
            raise ArgumentError("export_actuators: the model has no learned residual to write to residual_file")
        save_residual(model, residual_file, "export_actuators")
        name = Path(residual_file).name
    return actuators_to_xml(get_actuators(model, state), torques, enforced, name)


def import_actuators(
    model: Model,
    state: State,
    path_or_xml: str | os.PathLike,
    *,
    resource_dir: str | os.PathLike | None = None,
    actuator_dirs: Sequence[str | os.PathLike] = (),
) -> tuple[Model, State]:
    """Replace a model's actuators with those of an ``<actuators>`` element (see :func:`export_actuators`).

    The element holds both model data (the actuators, a learned residual's weights file) and state data (bus
    voltages, commanded torques, the monitor mode), so the result is the new model and the state that goes with
    it: the state's actuator inputs are reset for the new actuators (:func:`jaxmor.reset_actuator_state`: actuator
    PD gains and targets zeroed, motors at ambient), then the element's voltages, torques and mode are set; affine
    controls are kept. The model has the element's residual (``<residual file>``), or none.

    Args:
        model: the model.
        state: a state of a world of it.
        path_or_xml: a file or the XML text.
        resource_dir: directory searched for actuator files linked by relative paths (defaults to the
            element's file's directory).
        actuator_dirs: more directory trees where linked actuator files may be read.

    Raises:
        ModelError: an invalid element or actuator (file and line named), actuators that do not fit the model's
            joints, or a residual file that is missing or does not fit them.
    """
    base_dir = resource_dir
    if base_dir is None and not (isinstance(path_or_xml, str) and looks_like_xml(path_or_xml)):
        base_dir = os.path.dirname(os.path.abspath(path_or_xml))
    root, source = parse_xml(path_or_xml)
    dirs = {"base_dir": base_dir, "extra_dirs": actuator_dirs}
    definitions, torques, enforced = actuators_from_element(root, source, **dirs)
    residual = read_residual(root, source, **dirs)
    new_model = with_actuators(model, definitions)
    if residual is not None:
        new_model = residual_from_file(new_model, residual)
    dtype = state.actuator_torque.dtype
    new_state = reset_actuator_state(new_model, state).replace(
        ctrl=state.ctrl,  # the affine actuators are not replaced
        bus_voltage=jnp.asarray(new_model.actuators.motor.bus_voltage, dtype),  # the element's voltages
        actuator_torque=jnp.asarray(np.asarray(torques, dtype=float).reshape(len(definitions)), dtype),
        mor_enforced=jnp.asarray(enforced),
    )
    return new_model, new_state


def with_affine_actuators(model: Model, definitions: Sequence[AffineActuatorDefinition]) -> Model:
    """Replace the affine (MuJoCo-style) actuators of a model; an empty list removes them.

    A robot may mix both kinds, one actuator per joint: a joint driven by a DC-motor actuator
    cannot also take an affine one. Fit the states of the model's worlds with
    :func:`jaxmor.reset_actuator_state`.

    Args:
        model: the model.
        definitions: the affine actuators, in the order of ``State.ctrl``.

    Returns:
        The new model.

    Raises:
        ArgumentError: an unknown joint or tendon, two actuators on one joint, a joint driven by a DC-motor
            actuator, or a duplicate name.
    """
    definitions = tuple(definitions)
    q_index = dict(zip(model.joint_names, model.joint_q, strict=True))
    v_index = dict(zip(model.joint_names, model.joint_u, strict=True))
    tendons = {name: i for i, name in enumerate(model.tendons.names)}
    affine = compile_affine(definitions, q_index, v_index, tendons)
    motor_joints = set(model.actuators.joints)
    for name, joint in zip(affine.names, (d.joint for d in definitions), strict=True):
        if joint in motor_joints:
            raise ArgumentError(
                f"affine actuator '{name}': joint '{joint}' is already driven by a DC-motor actuator (one per joint)"
            )
    return model.replace(affine=affine)
