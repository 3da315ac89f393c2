"""The decision table for lost containers (tfyarn_jupyter.core.recovery): pure, exhaustive
over exit causes x task types x strategies."""

from __future__ import annotations

import itertools

import pytest

from tfyarn_jupyter.core.recovery import (
    DEFAULT_PREEMPTIONS,
    LOSS_BACKOFF_CAP_S,
    PREEMPTIONS_VAR,
    Budget,
    backoff_after,
    decide,
    decide_attempt,
    loss_backoff_s,
    losses_restarted,
    preemptions_bound,
    restart_set,
)
from tfyarn_jupyter.protocol import contract
from tfyarn_jupyter.protocol.causes import Cause

TOPOLOGIES = {
    contract.ESTIMATOR: {"chief": 1, "worker": 2, "ps": 1, "evaluator": 1, "tensorboard": 1},
    contract.MULTI_WORKER_MIRRORED: {"chief": 1, "worker": 2, "evaluator": 1},
    contract.PARAMETER_SERVER: {"chief": 1, "worker": 2, "ps": 1, "evaluator": 1},
    contract.DEFAULT: {"chief": 1, "evaluator": 1},
}


def test_every_cause_task_and_strategy_has_exactly_one_decision():
    for strategy, topology in TOPOLOGIES.items():
        for task_type, cause in itertools.product(topology, Cause):
            d = decide(f"{task_type}:0", cause, strategy, topology, Budget(retries=1))
            assert d.give_up == (cause is Cause.KILLED), (strategy, task_type, cause)
            if cause is Cause.KILLED:
                assert d.restart == () and d.spends == ""
                continue
            assert task_type in d.restart, (strategy, task_type, cause, d)
            losses = (Cause.PREEMPTED, Cause.NODE_LOST, Cause.CONTAINER_KILLED)
            expected = "preemptions" if cause in losses else "retries"
            assert d.spends == expected


@pytest.mark.parametrize("strategy", list(TOPOLOGIES))
def test_an_evaluator_or_tensorboard_restarts_alone_under_every_strategy(strategy):
    topology = TOPOLOGIES[strategy]
    assert restart_set("evaluator", strategy, topology) == ("evaluator",)
    assert restart_set("tensorboard", strategy, topology) == ("tensorboard",)


def test_all_reduce_and_a_lost_ps_restart_the_whole_tensorflow_cluster():
    mwms = TOPOLOGIES[contract.MULTI_WORKER_MIRRORED]
    assert restart_set("worker", contract.MULTI_WORKER_MIRRORED, mwms) == ("chief", "worker")
    est = TOPOLOGIES[contract.ESTIMATOR]
    assert restart_set("worker", contract.ESTIMATOR, est) == ("chief", "worker", "ps")
    ps = TOPOLOGIES[contract.PARAMETER_SERVER]
    assert restart_set("ps", contract.PARAMETER_SERVER, ps) == ("chief", "worker", "ps")
    assert restart_set("chief", contract.PARAMETER_SERVER, ps) == ("chief", "worker", "ps")


def test_a_keras_parameter_server_worker_restarts_with_its_whole_cluster():
    """Its coordinator reaches workers at the addresses of a ClusterSpec fixed at its start;
    a replacement YARN container has a new one: the cluster restarts with a new spec."""
    ps = TOPOLOGIES[contract.PARAMETER_SERVER]
    assert restart_set("worker", contract.PARAMETER_SERVER, ps) == ("chief", "worker", "ps")


def test_preemption_spends_its_own_budget_never_the_users_retries():
    topology = TOPOLOGIES[contract.MULTI_WORKER_MIRRORED]
    budget = Budget(retries=0, preemptions=2)
    first = decide("worker:1", Cause.PREEMPTED, contract.MULTI_WORKER_MIRRORED, topology, budget)
    assert not first.give_up and first.left == Budget(retries=0, preemptions=1)
    second = decide(
        "chief:0", Cause.NODE_LOST, contract.MULTI_WORKER_MIRRORED, topology, first.left
    )
    assert not second.give_up and second.left == Budget(retries=0, preemptions=0)
    third = decide(
        "worker:0", Cause.PREEMPTED, contract.MULTI_WORKER_MIRRORED, topology, second.left
    )
    assert third.give_up and "restarts for lost containers" in third.why


def test_a_task_that_raises_spends_a_retry_and_nb_retries_zero_means_one_try():
    topology = TOPOLOGIES[contract.DEFAULT]
    one = decide("chief:0", Cause.FAILED, contract.DEFAULT, topology, Budget(retries=1))
    assert one.spends == "retries" and one.left.retries == 0 and not one.give_up
    none_left = decide("chief:0", Cause.FAILED, contract.DEFAULT, topology, Budget(retries=0))
    assert none_left.give_up and "nb_retries" in none_left.why
    assert none_left.left == Budget(retries=0)  # nothing spent on a refusal


@pytest.mark.parametrize(
    ("env", "bound"),
    [
        ({}, DEFAULT_PREEMPTIONS),
        ({PREEMPTIONS_VAR: "0"}, 0),
        ({PREEMPTIONS_VAR: "3"}, 3),
        ({PREEMPTIONS_VAR: "many"}, DEFAULT_PREEMPTIONS),
        ({PREEMPTIONS_VAR: "-1"}, DEFAULT_PREEMPTIONS),
    ],
)
def test_the_bound_on_restarts_for_lost_containers_comes_from_the_runs_env(env, bound):
    assert preemptions_bound(env) == bound


def test_only_a_lost_container_counts_against_the_bound_not_a_peer_that_regrouped():
    records = {
        "worker:1": [{"cause": "preempted"}, {"cause": "node lost"}],
        "chief:0": [{"cause": "peer restarted"}, {"cause": "peer restarted"}],
        "evaluator:0": [{"cause": "preempted"}, {"cause": "failed"}],
        "ps:0": [{"cause": "container killed"}],
    }
    assert losses_restarted(records) == 4
    assert losses_restarted({}) == 0


def test_restarts_made_inside_the_application_come_out_of_the_runs_bound():
    topology = TOPOLOGIES[contract.MULTI_WORKER_MIRRORED]
    mwm = contract.MULTI_WORKER_MIRRORED
    budget = Budget(retries=1, preemptions=3)
    # two restarted inside, a third loss ended the attempt: the last restart is a new attempt
    one_left = decide_attempt("worker:1", Cause.PREEMPTED, mwm, topology, budget, 2)
    assert not one_left.give_up and one_left.left == Budget(retries=1, preemptions=0)
    # the bound spent inside: the loss that ended the attempt is one too many
    spent = decide_attempt("worker:1", Cause.PREEMPTED, mwm, topology, budget, 3)
    assert spent.give_up and spent.left == Budget(retries=1, preemptions=0)
    # the application itself went past the bound (its tasks ended it): no new attempt,
    # whatever the last task's own exit says, and the user's retries are not spent on it
    over = decide_attempt("chief:0", Cause.FAILED, mwm, topology, budget, 4)
    assert over.give_up and over.left == Budget(retries=1, preemptions=0)
    assert "restarted 4 lost containers, more than the run's 3" in over.why
    assert PREEMPTIONS_VAR in over.why
    # a task that raised after restarts inside, within the bound, spends a retry as before
    failed = decide_attempt("chief:0", Cause.FAILED, mwm, topology, budget, 1)
    assert failed.spends == "retries" and failed.left == Budget(retries=0, preemptions=2)


def test_loss_backoff_doubles_from_its_base_up_to_its_cap():
    waits = [loss_backoff_s(n) for n in range(-1, 8)]
    assert waits[:4] == [5.0, 5.0, 10.0, 20.0]
    assert waits[-1] == LOSS_BACKOFF_CAP_S == max(waits)
    assert waits == sorted(waits)


def test_backoff_after_a_lost_container_grows_with_the_losses_before_and_a_failure_waits_none():
    lost, failed = {"spent": "preemptions"}, {"spent": "retries"}
    assert backoff_after([]) == 0.0
    assert backoff_after([lost, failed]) == 0.0
    assert backoff_after([lost]) == loss_backoff_s(0)
    assert backoff_after([lost, failed, lost]) == loss_backoff_s(1) > loss_backoff_s(0)
