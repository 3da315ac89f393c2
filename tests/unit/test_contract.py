"""The container contract round-trips through environment variables, field by field."""

from __future__ import annotations

import dataclasses

import pytest

from tfyarn_jupyter.contract import (
    ATTEMPT_VAR,
    PEER_TIMEOUT_VAR,
    TASKS_VAR,
    ContractError,
    TaskContract,
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
