"""The sandbox cluster's Hadoop configuration, as plain data.

Pure functions from a :class:`Layout` (directories, ports, user) to the
properties of ``core-site.xml``, ``hdfs-site.xml``, ``yarn-site.xml`` and
``capacity-scheduler.xml``, and of the optional ``resource-types.xml`` and
``node-resources.xml`` (``start --gpus N``); :func:`to_xml` renders one such
mapping. Kept free of I/O so the topology (two NodeManagers, one in an exclusive
``gpu`` partition; queues ``default`` and ``ml-gpu``, or with ``--preemption``
also ``low`` and ``high``), its restarts and its GPUs are tested without a cluster.
"""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path

GPU_LABEL = "gpu"
QUEUES = ("default", "ml-gpu")
#: The queues ``start --preemption`` adds beside :data:`QUEUES`.
PREEMPTION_QUEUES = ("low", "high")
#: With ``--preemption``, each queue's guarantee on the unlabelled partition (%). ``high``
#: keeps half: with a quarter, asking one vcore more than was free, the preemption monitor
#: took nothing in 46 s (2026-12-07).
PREEMPTION_GUARANTEES = {"default": 12.5, "ml-gpu": 12.5, "low": 25.0, "high": 50.0}
#: The resource type YARN counts GPUs as (Hadoop's ``ResourceInformation.GPU_URI``).
GPU_RESOURCE = "yarn.io/gpu"
#: Memory and vcores of each NodeManager: two of them fit a 2-core, 24 GiB host.
NM_MEMORY_MB = 8192
NM_VCORES = 8

#: Port names the sandbox allocates; each maps to one listening socket.
PORT_NAMES = (
    "namenode_rpc",
    "namenode_http",
    "datanode",
    "datanode_http",
    "datanode_ipc",
    "rm",
    "rm_scheduler",
    "rm_tracker",
    "rm_admin",
    "rm_http",
    "nm_cpu",
    "nm_cpu_localizer",
    "nm_cpu_http",
    "nm_gpu",
    "nm_gpu_localizer",
    "nm_gpu_http",
)


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where one sandbox lives: its directory, jar cache, ports and admin user."""

    root: Path
    lib: Path
    ports: dict[str, int]
    user: str
    host: str = "127.0.0.1"
    #: Port name to hostname, for daemons at a host of their own (else :attr:`host`).
    hosts: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def host_of(self, name: str) -> str:
        """The host that serves port ``name``."""
        return self.hosts.get(name, self.host)

    def addr(self, name: str) -> str:
        return f"{self.host_of(name)}:{self.ports[name]}"

    @property
    def default_fs(self) -> str:
        return f"hdfs://{self.addr('namenode_rpc')}"

    @property
    def conf_dir(self) -> Path:
        """The client configuration: what ``HADOOP_CONF_DIR`` points at."""
        return self.root / "conf"

    def nm_conf_dir(self, nm: str) -> Path:
        return self.root / f"conf-nm-{nm}"


def core_site(layout: Layout) -> dict[str, str]:
    return {
        "fs.defaultFS": layout.default_fs,
        "hadoop.tmp.dir": str(layout.root / "tmp"),
        "hadoop.security.authentication": "simple",
        # Fail fast when a daemon is down instead of retrying for minutes.
        "ipc.client.connect.max.retries": "3",
        "ipc.client.connect.retry.interval": "500",
        "ipc.client.connect.max.retries.on.timeouts": "3",
    }


def hdfs_site(layout: Layout) -> dict[str, str]:
    return {
        "dfs.replication": "1",
        "dfs.namenode.name.dir": f"file://{layout.root / 'hdfs' / 'name'}",
        "dfs.datanode.data.dir": f"file://{layout.root / 'hdfs' / 'data'}",
        "dfs.namenode.rpc-address": layout.addr("namenode_rpc"),
        "dfs.namenode.http-address": layout.addr("namenode_http"),
        "dfs.datanode.address": layout.addr("datanode"),
        "dfs.datanode.http.address": layout.addr("datanode_http"),
        "dfs.datanode.ipc.address": layout.addr("datanode_ipc"),
        "dfs.datanode.hostname": layout.host_of("datanode"),
        "dfs.client.use.datanode.hostname": "true",
        "dfs.permissions.enabled": "true",
        "dfs.permissions.superusergroup": "supergroup",
        "dfs.webhdfs.enabled": "true",
        "dfs.namenode.safemode.extension": "0",
        "dfs.namenode.resource.du.reserved": str(64 * 2**20),
        "dfs.datanode.du.reserved": "0",
        "dfs.heartbeat.interval": "1",
    }


#: How long a client, an application master or a NodeManager retries a ResourceManager
#: that does not answer (``tfyarn-sandbox restart resourcemanager`` takes ~10-30 s).
RM_CONNECT_WAIT_MS = 120_000


def rm_state_store(root: Path) -> Path:
    """Where the ResourceManager of the sandbox at ``root`` keeps its applications."""
    return root / "rm-state"


def rm_recovery(layout: Layout) -> dict[str, str]:
    """Work-preserving ResourceManager restart (Hadoop's ResourceManagerRestart.md).

    The applications and their attempts go to a state store in the sandbox's folder
    (the local file system: HDFS may be the very daemon being restarted); a restarted
    ResourceManager reads it back, the NodeManagers report their running containers
    and the application masters register again, so nothing running is killed.
    """
    return {
        "yarn.resourcemanager.recovery.enabled": "true",
        "yarn.resourcemanager.work-preserving-recovery.enabled": "true",
        "yarn.resourcemanager.store.class": (
            "org.apache.hadoop.yarn.server.resourcemanager.recovery.FileSystemRMStateStore"
        ),
        "yarn.resourcemanager.fs.state-store.uri": f"file://{rm_state_store(layout.root)}",
        # Two NodeManagers report within a heartbeat or two: no need for the default 10 s.
        "yarn.resourcemanager.work-preserving-recovery.scheduling-wait-ms": "3000",
    }


def yarn_site(layout: Layout) -> dict[str, str]:
    """Properties shared by the ResourceManager, NodeManagers and clients."""
    return {
        "yarn.resourcemanager.hostname": layout.host_of("rm"),
        "yarn.resourcemanager.address": layout.addr("rm"),
        "yarn.resourcemanager.scheduler.address": layout.addr("rm_scheduler"),
        "yarn.resourcemanager.resource-tracker.address": layout.addr("rm_tracker"),
        "yarn.resourcemanager.admin.address": layout.addr("rm_admin"),
        "yarn.resourcemanager.webapp.address": layout.addr("rm_http"),
        "yarn.resourcemanager.scheduler.class": (
            "org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler"
        ),
        # Application masters read this file too: one that gives up on the
        # ResourceManager before a restart of it is over ends its application.
        "yarn.resourcemanager.connect.max-wait.ms": str(RM_CONNECT_WAIT_MS),
        "yarn.resourcemanager.connect.retry-interval.ms": "500",
        **rm_recovery(layout),
        "yarn.resourcemanager.nm-container-queuing.enabled": "false",
        "yarn.resourcemanager.am.max-attempts": "1",
        "yarn.scheduler.minimum-allocation-mb": "128",
        "yarn.scheduler.maximum-allocation-mb": str(NM_MEMORY_MB),
        "yarn.scheduler.minimum-allocation-vcores": "1",
        "yarn.scheduler.maximum-allocation-vcores": str(NM_VCORES),
        "yarn.acl.enable": "true",
        "yarn.admin.acl": layout.user,
        "yarn.node-labels.enabled": "true",
        "yarn.node-labels.configuration-type": "distributed",
        "yarn.node-labels.fs-store.root-dir": f"file://{layout.root / 'node-labels'}",
        # its default is /tmp/hadoop-yarn-<user>, which would outlive the sandbox
        "yarn.node-attribute.fs-store.root-dir": f"file://{layout.root / 'node-attributes'}",
        "yarn.log-aggregation-enable": "true",
        "yarn.log-aggregation.retain-seconds": str(7 * 24 * 3600),
        "yarn.nodemanager.remote-app-log-dir": "/tmp/logs",
        "yarn.nodemanager.log-aggregation.roll-monitoring-interval-seconds": "-1",
        "yarn.nodemanager.resource.memory-mb": str(NM_MEMORY_MB),
        "yarn.nodemanager.resource.cpu-vcores": str(NM_VCORES),
        "yarn.nodemanager.pmem-check-enabled": "false",
        "yarn.nodemanager.vmem-check-enabled": "false",
        "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage": "99.9",
        "yarn.nodemanager.disk-health-checker.min-free-space-per-disk-mb": "256",
        "yarn.nodemanager.delete.debug-delay-sec": "0",
        "yarn.nodemanager.env-whitelist": (
            "JAVA_HOME,HADOOP_COMMON_HOME,HADOOP_HDFS_HOME,HADOOP_CONF_DIR,"
            "HADOOP_YARN_HOME,HADOOP_HOME,PATH,LANG,TZ"
        ),
        # The sandbox has no Hadoop distribution: applications (skein's
        # application master) get the configuration and the cached jars.
        "yarn.application.classpath": f"$HADOOP_CONF_DIR,{layout.lib}/*",
        # Both NodeManagers share this host's disk, and a TensorFlow venv is ~2 GiB:
        # each keeps about three environment archives (unused ones beyond that go
        # at the next cleanup, each minute rather than YARN's ten: a test suite
        # ships several environments in ten minutes), not YARN's default 10 GiB.
        "yarn.nodemanager.localizer.cache.target-size-mb": "6144",
        "yarn.nodemanager.localizer.cache.cleanup.interval-ms": "60000",
        "yarn.timeline-service.enabled": "false",
    }


def nm_recovery_dir(root: Path, nm: str) -> Path:
    """Where NodeManager ``nm`` of the sandbox at ``root`` keeps its containers' state."""
    return root / "nm" / nm / "recovery"


#: The JVMs a container starts (skein's application master, libhdfs in a task) compile with
#: C1 only and collect with the serial collector, as the daemons do: they live seconds to
#: minutes, and on a machine of two cores the second compiler costs more CPU than it gains
#: (an application master's start: 5.7 CPU seconds with it, 3.0 without).
CONTAINER_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def nodemanager_admin_env(**extra: str) -> str:
    """``yarn.nodemanager.admin-env``: YARN's default, the containers' JVM options and
    ``extra`` variables (``JAVA_TOOL_OPTIONS`` in ``extra`` adds to the JVM options).

    Set by the NodeManager, not by applications: a variable set both ways is joined
    with ``:``, which would break ``JAVA_TOOL_OPTIONS``.
    """
    java = " ".join(o for o in (CONTAINER_JVM_OPTIONS, extra.pop("JAVA_TOOL_OPTIONS", "")) if o)
    pairs = {"MALLOC_ARENA_MAX": "$MALLOC_ARENA_MAX", **extra, "JAVA_TOOL_OPTIONS": java}
    return ",".join(f"{k}={v}" for k, v in pairs.items())


def nodemanager_site(layout: Layout, nm: str) -> dict[str, str]:
    """yarn-site for NodeManager ``nm`` ("cpu" or "gpu"): own ports and dirs."""
    props = yarn_site(layout)
    base = layout.root / "nm" / nm
    props.update(
        {
            "yarn.nodemanager.hostname": layout.host_of(f"nm_{nm}"),
            "yarn.nodemanager.address": layout.addr(f"nm_{nm}"),
            "yarn.nodemanager.localizer.address": layout.addr(f"nm_{nm}_localizer"),
            "yarn.nodemanager.webapp.address": layout.addr(f"nm_{nm}_http"),
            "yarn.nodemanager.local-dirs": str(base / "local"),
            "yarn.nodemanager.log-dirs": str(base / "logs"),
            # NodeManager restart (NodeManager.md): containers it launched are recovered
            # from this store after a crash. Its RPC port is fixed (the sandbox's port
            # map), as recovery needs; not "supervised", so a stopped NodeManager still
            # kills its containers on its way down, as a lost node does.
            "yarn.nodemanager.recovery.enabled": "true",
            "yarn.nodemanager.recovery.dir": str(nm_recovery_dir(layout.root, nm)),
            "yarn.nodemanager.admin-env": nodemanager_admin_env(),
        }
    )
    if nm == GPU_LABEL:
        props["yarn.nodemanager.node-labels.provider"] = "config"
        props["yarn.nodemanager.node-labels.provider.configured-node-partition"] = GPU_LABEL
    return props


def capacity_scheduler(layout: Layout) -> dict[str, str]:
    """Queues ``default`` and ``ml-gpu``; only ``ml-gpu`` reaches the gpu partition.

    Both queues share the unlabelled partition, and each may grow to all of
    it so a lone test can use the whole cluster. Queue administration (which
    would let anyone kill anyone's application) is left to the admin only, so
    application ACLs are what decides who may kill a run.
    """
    q = "yarn.scheduler.capacity.root"
    return {
        f"{q}.queues": ",".join(QUEUES),
        f"{q}.acl_submit_applications": "*",
        f"{q}.acl_administer_queue": layout.user,
        f"{q}.accessible-node-labels": GPU_LABEL,
        f"{q}.accessible-node-labels.{GPU_LABEL}.capacity": "100",
        f"{q}.default.capacity": "50",
        f"{q}.default.maximum-capacity": "100",
        f"{q}.default.user-limit-factor": "2",
        f"{q}.default.acl_submit_applications": "*",
        f"{q}.default.acl_administer_queue": layout.user,
        # A single space means "no labels": default never reaches gpu nodes.
        f"{q}.default.accessible-node-labels": " ",
        f"{q}.ml-gpu.capacity": "50",
        f"{q}.ml-gpu.maximum-capacity": "100",
        f"{q}.ml-gpu.user-limit-factor": "2",
        f"{q}.ml-gpu.acl_submit_applications": "*",
        f"{q}.ml-gpu.acl_administer_queue": layout.user,
        f"{q}.ml-gpu.accessible-node-labels": GPU_LABEL,
        f"{q}.ml-gpu.accessible-node-labels.{GPU_LABEL}.capacity": "100",
        f"{q}.ml-gpu.accessible-node-labels.{GPU_LABEL}.maximum-capacity": "100",
        "yarn.scheduler.capacity.maximum-am-resource-percent": "0.5",
        "yarn.scheduler.capacity.node-locality-delay": "-1",
        # Hadoop 3.5 schedules asynchronously, a pass every 5 ms by default: on an idle
        # sandbox that kept one core 2.5 % busy (2026-12-07), times three clusters in CI.
        # Every 50 ms, an allocation waits at most 45 ms longer.
        "yarn.scheduler.capacity.schedule-asynchronously.scheduling-interval-ms": "50",
        "yarn.scheduler.capacity.resource-calculator": (
            "org.apache.hadoop.yarn.util.resource.DominantResourceCalculator"
        ),
    }


def resource_types() -> dict[str, str]:
    """``resource-types.xml`` of a sandbox with GPUs: ``yarn.io/gpu`` as a countable resource.

    The ResourceManager, the NodeManagers, application masters and clients all read it
    (skein's driver refuses ``gpus=`` for a resource type its configuration lacks).
    """
    return {"yarn.resource-types": GPU_RESOURCE}


def node_resources(gpus: int) -> dict[str, str]:
    """``node-resources.xml`` of the gpu NodeManager: how many GPUs it offers.

    A declared count only: no GPU plugin (it needs ``nvidia-smi``, and the
    LinuxContainerExecutor with cgroups to isolate devices), so YARN counts and
    reserves GPUs but assigns no device to a container.
    """
    return {f"yarn.nodemanager.resource-type.{GPU_RESOURCE}": str(gpus)}


def preemption_site() -> dict[str, str]:
    """The ResourceManager's preemption monitor, quick enough for a test to watch it.

    Every second it compares each queue's use with its guarantee; it takes the whole
    shortfall at once (termination factor 1, all of it in one round, nothing ignored
    over capacity) and kills a container 5 s after asking its application for it.
    """
    pre = "yarn.resourcemanager.monitor.capacity.preemption"
    return {
        "yarn.resourcemanager.scheduler.monitor.enable": "true",
        "yarn.resourcemanager.scheduler.monitor.policies": (
            "org.apache.hadoop.yarn.server.resourcemanager.monitor.capacity."
            "ProportionalCapacityPreemptionPolicy"
        ),
        f"{pre}.monitoring_interval": "1000",
        f"{pre}.max_wait_before_kill": "5000",
        f"{pre}.natural_termination_factor": "1",
        f"{pre}.total_preemption_per_round": "1",
        f"{pre}.max_ignored_over_capacity": "0",
    }


def preemption_queues(layout: Layout) -> dict[str, str]:
    """The queues of ``start --preemption``: ``default``, ``ml-gpu``, ``low`` and ``high``
    guaranteed shares of the unlabelled partition (:data:`PREEMPTION_GUARANTEES`), each
    able to grow to all of it; ``ml-gpu`` keeps the gpu partition.

    So an application in ``high`` that asks for its half takes it back from ``low`` (or
    from any queue over its guarantee) through the preemption monitor. Each queue's user
    limit factor is 100 over its guarantee: one user may fill the queue up to its maximum
    capacity and, since YARN bounds a user's application masters by a share of the
    guarantee times that factor, run as many applications at once as in the default
    shape's queues. What a suite of the default shape does thus runs the same here, as
    long as no other queue asks for its guarantee back meanwhile.
    """
    q = "yarn.scheduler.capacity.root"
    props = capacity_scheduler(layout)
    props[f"{q}.queues"] = ",".join((*QUEUES, *PREEMPTION_QUEUES))
    for name, share in PREEMPTION_GUARANTEES.items():
        props |= {
            f"{q}.{name}.capacity": f"{share:g}",
            f"{q}.{name}.maximum-capacity": "100",
            f"{q}.{name}.user-limit-factor": f"{100 / share:g}",
        }
    for name in PREEMPTION_QUEUES:
        props |= {
            f"{q}.{name}.acl_submit_applications": "*",
            f"{q}.{name}.acl_administer_queue": layout.user,
            f"{q}.{name}.accessible-node-labels": " ",
        }
    return props


def to_xml(props: dict[str, str]) -> bytes:
    """Render properties as a Hadoop ``<configuration>`` document."""
    root = ET.Element("configuration")
    for name, value in props.items():
        prop = ET.SubElement(root, "property")
        ET.SubElement(prop, "name").text = name
        ET.SubElement(prop, "value").text = value
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


LOG4J = """\
log4j.rootLogger=INFO,console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.target=System.err
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n
log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR
log4j.logger.org.eclipse.jetty=WARN
log4j.logger.org.apache.hadoop.ipc.Server=WARN
log4j.logger.org.apache.hadoop.hdfs.server.datanode.DataNode.clienttrace=WARN
log4j.logger.org.apache.hadoop.hdfs.StateChange=WARN
log4j.logger.org.apache.hadoop.hdfs.server.namenode.FSNamesystem.audit=WARN
log4j.logger.org.apache.hadoop.yarn.server.resourcemanager.RMAuditLogger=WARN
log4j.logger.org.apache.hadoop.yarn.server.nodemanager.NMAuditLogger=WARN
"""
