"""The checks made before submitting: where the ResourceManager is, whether it answers, and
whether the queue and the nodes can run the request. The cluster is a fake skein client; the
only network is a loopback socket the test opens itself.
"""

from __future__ import annotations

import signal
import socket
import time
from collections.abc import Iterator

import pytest
import skein

from tfyarn_jupyter.core.spec import NodeLabel, SpecError, TaskSpec
from tfyarn_jupyter.hadoop import filesystem, queue_acls
from tfyarn_jupyter.hadoop import resourcemanager as cluster


def rm_conf(*props: str) -> dict[str, str]:
    """``"address=h:1"``, ... as yarn-site properties (``yarn.resourcemanager.`` implied)."""
    return {f"yarn.resourcemanager.{k}": v for k, _, v in (p.partition("=") for p in props)}


HA_IDS = ("ha.enabled=true", "ha.rm-ids=rm1, rm2")


# -- where the ResourceManager is -------------------------------------------------------------
@pytest.mark.parametrize(
    ("yarn_site", "expected"),
    [
        pytest.param(rm_conf("address=rm.example:8050"), ["rm.example:8050"], id="plain"),
        pytest.param(rm_conf("hostname=rm.example"), ["rm.example:8032"], id="hostname"),
        pytest.param({}, ["0.0.0.0:8032"], id="nothing"),
        pytest.param(
            rm_conf(*HA_IDS, "address.rm1=a.example:8050", "hostname.rm2=b.example", "address=x:1"),
            ["a.example:8050", "b.example:8032"],
            id="ha",
        ),
        pytest.param(
            rm_conf("ha.enabled=True", "ha.rm-ids=x", "hostname.x=x.example"),
            ["x.example:8032"],
            id="ha-enabled-in-any-case",
        ),
        pytest.param(
            rm_conf("ha.enabled=true", "address=rm.example:8050"),
            ["rm.example:8050"],
            id="ha-without-ids",
        ),
        pytest.param(
            rm_conf(HA_IDS[1], "address.rm1=a.example:8050", "address=rm.example:8050"),
            ["rm.example:8050"],
            id="ids-without-ha",
        ),
    ],
)
def test_resourcemanager_addresses(yarn_site, expected):
    assert cluster.resourcemanager_addresses(yarn_site) == expected


# -- whether it answers -----------------------------------------------------------------------
@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port held (bound, not listening) by the test: connecting is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


@pytest.fixture
def listening_port() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def rm_at(port: int) -> dict[str, str]:
    return rm_conf(f"address=127.0.0.1:{port}")


def test_a_closed_resourcemanager_port_is_a_config_error_naming_it(closed_port, monkeypatch):
    monkeypatch.setenv("HADOOP_CONF_DIR", "/etc/my-hadoop")
    with pytest.raises(filesystem.ClusterConfigError) as err:
        cluster.check_resourcemanager(rm_at(closed_port), timeout=2.0)
    assert f"127.0.0.1:{closed_port}: " in str(err.value)
    assert "/etc/my-hadoop/yarn-site.xml" in str(err.value)


def test_a_listening_resourcemanager_passes(listening_port):
    assert cluster.check_resourcemanager(rm_at(listening_port), timeout=2.0) is None


def test_with_ha_one_listening_resourcemanager_is_enough(closed_port, listening_port):
    closed, listening = f"127.0.0.1:{closed_port}", f"127.0.0.1:{listening_port}"
    yarn_site = rm_conf(*HA_IDS, f"address.rm1={closed}", f"address.rm2={listening}")
    assert cluster.check_resourcemanager(yarn_site, timeout=2.0) is None


def test_with_ha_every_unreachable_resourcemanager_is_named(closed_port):
    yarn_site = rm_conf(
        *HA_IDS, f"address.rm1=127.0.0.1:{closed_port}", "address.rm2=127.0.0.1:notaport"
    )
    with pytest.raises(filesystem.ClusterConfigError) as err:
        cluster.check_resourcemanager(yarn_site, timeout=2.0)
    assert f"127.0.0.1:{closed_port}: " in str(err.value)
    assert "127.0.0.1:notaport: " in str(err.value)


# -- whether the queue and the nodes can run the request ----------------------------------------
def node(name: str, memory: int, vcores: int, labels=(), state: str = "RUNNING"):
    http, size = f"{name}:8042", skein.Resources(memory, vcores)
    return skein.model.NodeReport(name, http, "/default", set(labels), state, "", size, size)


def queue(name: str, node_labels=()) -> skein.model.Queue:
    return skein.model.Queue(name, "RUNNING", 50.0, 100.0, 0.0, set(node_labels), "")


class FakeClient:
    """skein's ``Client`` for the queue check: queues by name, nodes filtered by state."""

    def __init__(self, queues, nodes) -> None:
        self.queues = {q.name: q for q in queues}
        self.nodes = list(nodes)

    def get_queue(self, name: str) -> skein.model.Queue:
        if name not in self.queues:
            raise ValueError(f"Unknown queue: {name!r}")
        return self.queues[name]

    def get_all_queues(self) -> list[skein.model.Queue]:
        return list(self.queues.values())

    def get_nodes(self, states=None):
        wanted = {str(skein.model.NodeState(s)) for s in states} if states else None
        return [n for n in self.nodes if wanted is None or str(n.state) in wanted]


CLUSTER = FakeClient(
    [queue("default"), queue("gpus", {"gpu"}), queue("any", {"*"})],
    [
        node("cpu1", 4096, 4),
        node("cpu2", 8192, 2),
        node("gpu1", 16384, 8, {"gpu"}),
        node("lost", 65536, 64, state="LOST"),
    ],
)


def test_an_unknown_queue_is_refused_listing_the_queues():
    with pytest.raises(
        SpecError, match=r"queue 'nope' does not exist .*queues here: any, default, gpus$"
    ):
        cluster.check_queue(CLUSTER, "nope", {"chief": TaskSpec(1024, 1)})


def test_an_unknown_queue_when_the_queues_cannot_be_listed():
    class Unlisted(FakeClient):
        def get_all_queues(self):
            raise skein.exceptions.SkeinError("not allowed")

    with pytest.raises(SpecError, match=r"queues here: \?$"):
        cluster.check_queue(Unlisted([], []), "nope", {"chief": TaskSpec(1024, 1)})


def test_a_label_the_queue_cannot_reach_is_refused():
    specs = {"chief": TaskSpec(1024, 1), "worker": TaskSpec(1024, 1, label=NodeLabel.GPU)}
    with pytest.raises(SpecError) as err:
        cluster.check_queue(CLUSTER, "default", specs)
    assert str(err.value).startswith("worker: queue 'default' cannot use nodes labelled 'gpu'")
    assert "unlabelled nodes only" in str(err.value)


def test_a_queue_that_reaches_every_label_passes_the_label_check():
    cluster.check_queue(CLUSTER, "any", {"worker": TaskSpec(1024, 1, label=NodeLabel.GPU)})


def test_a_label_no_running_node_carries_is_refused():
    no_gpu = FakeClient(
        [queue("gpus", {"gpu"})],
        [node("cpu1", 4096, 4), node("gone", 8192, 8, {"gpu"}, state="LOST")],
    )
    with pytest.raises(SpecError, match=r"^worker: no running node carries the label 'gpu'$"):
        cluster.check_queue(no_gpu, "gpus", {"worker": TaskSpec(1024, 1, label="gpu")})


def test_unlabelled_tasks_need_an_unlabelled_node():
    all_gpu = FakeClient([queue("gpus", {"gpu"})], [node("gpu1", 16384, 8, {"gpu"})])
    with pytest.raises(SpecError, match=r"^chief: no running node carries the label '\(none\)'$"):
        cluster.check_queue(all_gpu, "gpus", {"chief": TaskSpec(1024, 1)})


@pytest.mark.parametrize(
    ("spec", "largest"),
    [
        (TaskSpec(16384, 1), "8192 MiB / 2 vcores"),
        (TaskSpec(6144, 4), "8192 MiB / 2 vcores"),  # memory on one node, vcores on the other
        (TaskSpec(1024, 8), "8192 MiB / 2 vcores"),  # neither the GPU node nor a lost one
    ],
)
def test_a_task_larger_than_every_node_is_refused_giving_the_largest(spec, largest):
    with pytest.raises(SpecError) as err:
        cluster.check_queue(CLUSTER, "default", {"chief": TaskSpec(1024, 1), "ps": spec})
    assert str(err.value).startswith(f"ps: {spec.memory} MiB / {spec.vcores} vcores does not fit")
    assert f"(largest: {largest})" in str(err.value)


def test_a_request_that_fits_passes():
    specs = {  # each fits a node, and the whole fits the queue (12288 MiB / 6 vcores unlabelled)
        "chief": TaskSpec(2048, 2),
        "worker": TaskSpec(4096, 1, instances=2),
        "evaluator": TaskSpec(16384, 8, label=NodeLabel.GPU),
    }
    assert cluster.check_queue(CLUSTER, "gpus", specs) is None


def gpu_nodes(gpus_on_the_gpu_node: int | None) -> dict:
    """``/ws/v1/cluster/nodes``, trimmed to the GPU figures; None: no yarn.io/gpu type."""

    def total(gpus):
        infos = [{"name": "memory-mb", "value": 16384}, {"name": "vcores", "value": 8}]
        if gpus is not None:
            infos.append({"name": "yarn.io/gpu", "value": gpus})
        return {"memory": 16384, "vCores": 8,
                "resourceInformations": {"resourceInformation": infos}}  # fmt: skip

    zero = None if gpus_on_the_gpu_node is None else 0
    return {"nodes": {"node": [
        {"state": "RUNNING", "totalResource": total(zero)},
        {"state": "RUNNING", "nodeLabels": ["gpu"], "totalResource": total(gpus_on_the_gpu_node)},
    ]}}  # fmt: skip


def test_gpu_counts_are_checked_against_the_nodes_before_submitting(monkeypatch):
    monkeypatch.setattr(cluster, "nodes_info", lambda: gpu_nodes(2))
    ok = {"chief": TaskSpec(1024, 1), "worker": TaskSpec(1024, 1, 2, label="gpu", gpus=1)}
    assert cluster.check_queue(CLUSTER, "gpus", ok) is None
    too_many = {"chief": TaskSpec(1024, 1), "worker": TaskSpec(1024, 1, label="gpu", gpus=3)}
    with pytest.raises(SpecError, match=r"worker: 3 yarn.io/gpu per task .* \(largest: 2 GPUs\)"):
        cluster.check_queue(CLUSTER, "gpus", too_many)
    monkeypatch.setattr(cluster, "nodes_info", lambda: gpu_nodes(None))
    with pytest.raises(SpecError, match="this cluster does not schedule GPUs"):
        cluster.check_queue(CLUSTER, "gpus", ok)


def test_without_the_nodes_web_service_gpu_counts_are_left_to_yarn(monkeypatch):
    asked: list[bool] = []
    monkeypatch.setattr(cluster, "nodes_info", lambda: asked.append(True))
    specs = {"chief": TaskSpec(1024, 1), "worker": TaskSpec(1024, 1, label="gpu", gpus=8)}
    assert cluster.check_queue(CLUSTER, "gpus", specs) is None
    assert asked == [True]
    cluster.check_queue(CLUSTER, "gpus", {"chief": TaskSpec(1024, 1)})
    assert asked == [True]  # no GPU asked: the nodes are not read


@pytest.mark.parametrize(
    ("answer", "expected"),
    [(gpu_nodes(2), {"": 0, "gpu": 2}), (gpu_nodes(None), None), (None, None)],
    ids=["two on the gpu node", "no gpu resource type", "no web service"],
)
def test_cluster_gpus_says_the_largest_node_per_partition_or_none(monkeypatch, answer, expected):
    monkeypatch.setattr(cluster, "nodes_info", lambda: answer)
    assert cluster.cluster_gpus() == expected


# -- submitting --------------------------------------------------------------------------------
class Submitter:
    def __init__(self, fail: BaseException | None = None) -> None:
        self.fail = fail
        self.killed: list[str] = []

    def submit(self, spec):
        if self.fail is not None:
            raise self.fail
        return "application_1_0007"

    def kill_application(self, app_id: str) -> None:
        self.killed.append(app_id)


SPEC = skein.ApplicationSpec(
    services={"chief": skein.Service(script="true", resources=skein.Resources(128, 1))}
)


def test_submit_spec_returns_yarns_id_and_kills_nothing():
    client = Submitter()
    assert cluster.submit_spec(client, SPEC) == "application_1_0007"
    assert client.killed == []


@pytest.mark.parametrize("fail", [KeyboardInterrupt(), skein.exceptions.DriverError("down")])
def test_a_failed_submission_is_raised_as_is_and_kills_nothing(fail):
    client = Submitter(fail)
    with pytest.raises(type(fail)) as err:
        cluster.submit_spec(client, SPEC)
    assert err.value is fail
    assert client.killed == []


def test_an_interrupt_while_yarn_accepts_the_application_kills_what_it_accepted():
    import _thread

    class SlowSubmitter(Submitter):
        def submit(self, spec):
            _thread.interrupt_main()  # the user interrupts while YARN is accepting it
            time.sleep(0.5)
            return "application_1_0009"

    client = SlowSubmitter()
    # A shell's background job inherits SIGINT ignored, and then interrupt_main does nothing.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            cluster.submit_spec(client, SPEC)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert client.killed == ["application_1_0009"]


# -- the ResourceManager's web services, and queue ACLs from its scheduler report -----------
@pytest.mark.parametrize(
    ("yarn_site", "expected"),
    [
        pytest.param({"yarn.resourcemanager.webapp.address": "rm:1"}, ["http://rm:1"], id="plain"),
        pytest.param({"yarn.resourcemanager.hostname": "rm"}, ["http://rm:8088"], id="hostname"),
        pytest.param(
            {
                "yarn.http.policy": "HTTPS_ONLY",
                "yarn.resourcemanager.webapp.address": "rm:1",
                "yarn.resourcemanager.webapp.https.address": "rm:2",
            },
            ["https://rm:2"],
            id="https",
        ),
        pytest.param(
            {
                **rm_conf(*HA_IDS, "hostname.rm2=b"),
                "yarn.resourcemanager.webapp.address.rm1": "a:1",
            },
            ["http://a:1", "http://b:8088"],
            id="ha",
        ),
    ],
)
def test_rm_web_bases(yarn_site, expected):
    assert cluster.rm_web_bases(yarn_site) == expected


def _queue(path: str, submit: str, admin: str = " ", kids: list | None = None) -> dict:
    acl = [{"accessType": "ADMINISTER_QUEUE", "accessControlList": admin},
           {"accessType": "APPLICATION_MAX_PRIORITY", "accessControlList": "*"},
           {"accessType": "SUBMIT_APP", "accessControlList": submit}]  # fmt: skip
    q: dict = {"queueName": path.rpartition(".")[2], "queuePath": path,
               "queueAcls": {"queueAcl": acl}}  # fmt: skip
    if kids:
        q["queues"] = {"queue": kids}
    return q


def scheduler(root: dict) -> dict:
    return {"scheduler": {"schedulerInfo": root}}


#: The secure sandbox's queues: root allows nobody, default everyone, ml-gpu root and alice.
SANDBOX = scheduler(_queue("root", " ", "root ", [
    _queue("root.default", "*", "root "), _queue("root.ml-gpu", "root,alice ", "root "),
]))  # fmt: skip


@pytest.mark.parametrize(
    ("user", "queue", "allowed"),
    [("alice", "ml-gpu", True), ("mallory", "ml-gpu", False), ("mallory", "default", True),
     ("root", "ml-gpu", True), ("mallory", "root.ml-gpu", False)],
)  # fmt: skip
def test_queue_acls_of_the_sandbox(user, queue, allowed):
    assert queue_acls.decide(SANDBOX, queue, user, []).allowed is allowed


def test_a_refusal_names_the_user_the_queue_and_every_acl_on_the_way():
    why = queue_acls.decide(SANDBOX, "ml-gpu", "mallory", []).explain("mallory", "ml-gpu")
    assert why.startswith("user mallory may not submit to queue 'ml-gpu'")
    assert "root: submit=nobody, administer=root" in why
    assert "root.ml-gpu: submit=alice,root" in why
    assert queue_acls.allowed_queues(SANDBOX, "mallory", []) == ["default"]


def test_any_ancestor_allowing_is_enough_and_administer_counts():
    deep = scheduler(_queue("root", " ", " ", [
        _queue("root.team", "bob ", " ", [_queue("root.team.gpu", " ", " ")]),
        _queue("root.ops", " ", "carol ", [_queue("root.ops.x", " ", " ")]),
    ]))  # fmt: skip
    assert queue_acls.decide(deep, "gpu", "bob", []).allowed is True
    assert queue_acls.decide(deep, "root.team.gpu", "carol", []).allowed is False
    assert queue_acls.decide(deep, "x", "carol", []).allowed is True  # admin of the parent
    assert queue_acls.decide(deep, "x", "bob", []).path == ("root", "root.ops", "root.ops.x")


def test_groups_allow_when_known_and_leave_it_to_yarn_when_not():
    grouped = scheduler(_queue("root", " ", " ", [_queue("root.gpu", "alice ml,ops", " ")]))
    assert queue_acls.decide(grouped, "gpu", "eve", ["ops"]).allowed is True
    assert queue_acls.decide(grouped, "gpu", "eve", ["staff"]).allowed is None
    assert queue_acls.decide(grouped, "gpu", "alice", []).allowed is True


@pytest.mark.parametrize(
    ("text", "everyone", "users", "groups"),
    [("*", True, set(), set()), ("* ", True, set(), set()), (" ", False, set(), set()),
     ("a,b g", False, {"a", "b"}, {"g"}), (" g1, g2", False, set(), {"g1", "g2"}),
     ("root ", False, {"root"}, set())],
)  # fmt: skip
def test_acl_text_as_hadoop_reads_it(text, everyone, users, groups):
    acl = queue_acls.Acl.parse(text)
    assert (acl.everyone, set(acl.users), set(acl.groups)) == (everyone, users, groups)


def test_unknown_queues_and_other_schedulers_leave_it_to_yarn():
    assert queue_acls.decide(SANDBOX, "nope", "mallory", []).allowed is None
    fifo = scheduler({"type": "fifoScheduler"})
    assert queue_acls.decide(fifo, "default", "mallory", []).allowed is None
    no_acls = scheduler({"queueName": "root", "queuePath": "root"})
    assert queue_acls.decide(no_acls, "root", "mallory", []).allowed is None


def test_the_driver_starts_with_c1_and_the_serial_collector_unless_told_otherwise():
    assert cluster.driver_java_options({}) == [
        "-XX:+IgnoreUnrecognizedVMOptions",
        "-XX:TieredStopAtLevel=1",
        "-XX:+UseSerialGC",
    ]


@pytest.mark.parametrize(("own", "expected"), [("-Xmx1g  -Dx=1", ["-Xmx1g", "-Dx=1"]), ("", [])])
def test_skein_driver_java_options_replaces_the_drivers_options(own, expected):
    assert cluster.driver_java_options({"SKEIN_DRIVER_JAVA_OPTIONS": own}) == expected
