"""The container contract round-trips through environment variables, field by field."""

from __future__ import annotations

import dataclasses
import re

import pytest

from tfyarn_jupyter.protocol import contract
from tfyarn_jupyter.protocol.contract import (
    ATTEMPT_VAR,
    DEFAULT,
    ESTIMATOR,
    FUNCTION,
    KERAS,
    KERAS_2,
    KERAS_3,
    LEGACY_KERAS_VAR,
    MULTI_WORKER_MIRRORED,
    PARAMETER_SERVER,
    PEER_TIMEOUT_VAR,
    PROGRAM_VAR,
    TASKS_VAR,
    TF_KERAS,
    ContractError,
    StrategyError,
    TaskContract,
    check_keras,
    keras_flavour,
    known_strategy,
    strategy_for,
)

FULL = TaskContract(
    topology={"chief": 1, "worker": 3, "ps": 2, "evaluator": 1},
    attempt=2,
    peer_timeout_s=45.5,
    heartbeat_timeout_s=20.0,
    ack_timeout_s=3.0,
    env_key="ab12cd",
    mode="function",
)


def test_every_field_round_trips_through_the_environment():
    back = TaskContract.from_env(FULL.to_env())
    assert back == FULL
    for field in dataclasses.fields(TaskContract):
        assert getattr(back, field.name) == getattr(FULL, field.name), field.name


def test_defaults_round_trip_and_an_unset_env_key_is_not_written():
    c = TaskContract({"chief": 1})
    env = c.to_env()
    assert "TFYARN_ENV_KEY" not in env
    assert TaskContract.from_env(env) == c


def test_the_topology_keeps_panel_order_and_carries_no_quotes():
    env = FULL.to_env()
    assert env[TASKS_VAR] == "chief=1,worker=3,ps=2,evaluator=1"
    assert not any('"' in v for v in env.values())


def test_a_new_attempt_changes_only_the_attempt():
    nxt = FULL.with_attempt(3)
    assert nxt.attempt == 3
    assert dataclasses.replace(nxt, attempt=FULL.attempt) == FULL


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, "TFYARN_TASKS is not set"),
        ({TASKS_VAR: "chief"}, "expected type=count"),
        ({TASKS_VAR: "chief=x"}, "expected type=count"),
        ({TASKS_VAR: "chief=1", PEER_TIMEOUT_VAR: "soon"}, "not a number of seconds"),
        ({TASKS_VAR: "chief=1", ATTEMPT_VAR: "-1"}, "attempt must be >= 0"),
    ],
)
def test_a_broken_environment_is_a_contract_error_naming_the_variable(env, message):
    with pytest.raises(ContractError, match=message):
        TaskContract.from_env(env)


@pytest.mark.parametrize("field", ["peer_timeout_s", "heartbeat_timeout_s", "ack_timeout_s"])
def test_negative_bounds_are_refused_at_construction(field):
    with pytest.raises(ContractError, match=field):
        TaskContract({"chief": 1}, **{field: -1.0})


def test_the_program_kind_round_trips_and_defaults_to_unknown():
    c = TaskContract({"chief": 1}, program="keras")
    assert c.to_env()[PROGRAM_VAR] == "keras"
    assert TaskContract.from_env(c.to_env()) == c
    env = c.to_env()
    del env[PROGRAM_VAR]
    assert TaskContract.from_env(env).program == "unknown"
    with pytest.raises(ContractError, match="program must be one of"):
        TaskContract({"chief": 1}, program="pytorch")


# -- the strategy table -------------------------------------------------------------------------
D, M, P, E = DEFAULT, MULTI_WORKER_MIRRORED, PARAMETER_SERVER, ESTIMATOR
NEEDS_PS = '!trains with workers through a "ps"'
NO_TRAINER = "!nothing trains"
PS_NEEDS_CHIEF = '!a "ps" needs a "chief"'
#: topology -> (estimator, keras, function): a strategy, or "!" and the error's words.
TABLE = [
    ({"chief": 1}, (E, D, D)),
    ({"chief": 1, "evaluator": 1}, (E, D, D)),
    ({"chief": 1, "worker": 0}, (E, D, D)),
    ({"worker": 1}, ('!an Estimator experiment needs a "chief"', D, D)),
    ({"worker": 3}, ('!an Estimator experiment needs a "chief"', M, M)),
    ({"worker": 2, "evaluator": 1}, ('!an Estimator experiment needs a "chief"', M, M)),
    ({"chief": 1, "worker": 2}, (NEEDS_PS, M, M)),
    ({"chief": 1, "worker": 2, "evaluator": 1}, (NEEDS_PS, M, M)),
    ({"chief": 1, "ps": 1}, (E, "!ParameterServerStrategy trains on workers", P)),
    ({"chief": 1, "worker": 2, "ps": 1}, (E, P, P)),
    ({"chief": 1, "worker": 2, "ps": 2, "evaluator": 1}, (E, P, P)),
    ({"worker": 2, "ps": 1}, (PS_NEEDS_CHIEF, PS_NEEDS_CHIEF, PS_NEEDS_CHIEF)),
    ({"evaluator": 1}, (NO_TRAINER, NO_TRAINER, NO_TRAINER)),
    ({"ps": 1}, (NO_TRAINER, NO_TRAINER, NO_TRAINER)),
]


@pytest.mark.parametrize(
    ("topology", "kind", "expected"),
    [
        (t, kind, e)
        for t, row in TABLE
        for kind, e in zip((ESTIMATOR, KERAS, FUNCTION), row, strict=True)
    ],
    ids=lambda v: ",".join(f"{k}={n}" for k, n in v.items()) if isinstance(v, dict) else str(v),
)
def test_the_strategy_for_each_topology_and_kind(topology, kind, expected):
    if expected.startswith("!"):
        with pytest.raises(StrategyError, match=re.escape(expected[1:])):
            strategy_for(kind, topology)
    else:
        assert strategy_for(kind, topology) == expected


def test_a_kind_outside_the_table_is_refused():
    with pytest.raises(ValueError, match="kind must be"):
        strategy_for("unknown", {"chief": 1})


def test_the_client_knows_the_strategy_of_a_known_program_else_takes_the_default():
    assert known_strategy(KERAS, {"chief": 1, "worker": 2}) == MULTI_WORKER_MIRRORED
    assert known_strategy(ESTIMATOR, {"chief": 1, "worker": 1, "ps": 1}) == ESTIMATOR
    assert known_strategy("unknown", {"chief": 1, "worker": 2}) == DEFAULT  # attached
    assert known_strategy(KERAS, {"ps": 1}) == DEFAULT  # cannot train: it never started


@pytest.mark.parametrize(
    ("tf_version", "env", "flavour"),
    [
        ((2, 15), {}, KERAS_2),
        ((2, 15), {LEGACY_KERAS_VAR: "1"}, KERAS_2),
        ((2, 16), {}, KERAS_3),
        ((2, 21), {LEGACY_KERAS_VAR: "0"}, KERAS_3),
        ((2, 21), {LEGACY_KERAS_VAR: "1"}, TF_KERAS),
        ((2, 21), {LEGACY_KERAS_VAR: "True"}, TF_KERAS),
        (None, {}, KERAS_3),
    ],
)
def test_which_keras_tf_keras_is(tf_version, env, flavour):
    assert keras_flavour(tf_version, env) == flavour


@pytest.mark.parametrize("flavour", [KERAS_2, KERAS_3, TF_KERAS])
@pytest.mark.parametrize("strategy", [DEFAULT, MULTI_WORKER_MIRRORED, PARAMETER_SERVER])
def test_keras_3_alone_is_refused_the_distributed_strategies_with_what_to_do(flavour, strategy):
    if flavour == KERAS_3 and strategy != DEFAULT:
        with pytest.raises(StrategyError) as err:
            check_keras(strategy, flavour)
        message = str(err.value)
        assert message.startswith(f"{strategy.replace('_', ' ')} training with Keras 3: ")
        assert 'env={"TF_USE_LEGACY_KERAS": "1"}' in message and "tf-keras" in message
    else:
        check_keras(strategy, flavour)


def test_checkpoints_come_every_epoch_unless_the_environment_names_a_whole_number():
    assert contract.checkpoint_epochs({}) == 1
    assert contract.checkpoint_epochs({contract.CHECKPOINT_EPOCHS_VAR: ""}) == 1
    assert contract.checkpoint_epochs({contract.CHECKPOINT_EPOCHS_VAR: "3"}) == 3


@pytest.mark.parametrize("value", ["0", "-2", "2.5", "three"])
def test_a_bad_checkpoint_interval_is_refused_saying_what_to_give(value):
    with pytest.raises(ContractError, match="a whole number of epochs, 1 or more") as err:
        contract.checkpoint_epochs({contract.CHECKPOINT_EPOCHS_VAR: value})
    assert f"TFYARN_CHECKPOINT_EPOCHS={value!r}" in str(err.value)
