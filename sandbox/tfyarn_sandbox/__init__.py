"""tfyarn_sandbox: a real Hadoop YARN + HDFS cluster on one machine, for tfyarn_jupyter.

A second distribution beside the library (as skein's test cluster and
dask-gateway's server are): ``pip install ./sandbox`` gives the ``tfyarn-sandbox``
command and, for test suites, the pytest plugin ``tfyarn_sandbox.pytest_plugin``
(fixtures ``sandbox``, ``skein_client``, ``apps``). It needs a JDK 17 and Maven,
and root for some shapes; the library never imports it.

``sandbox``: :class:`Sandbox` (start, stop, status, env, daemon restarts);
``cli``: the command; ``config``: what a sandbox is made of (ports, folders,
commands); ``site_xml``: the Hadoop configuration it writes; ``jars``: the JDK
and Hadoop's jars (``pom.xml``); ``daemons``: probes of the running daemons;
``shapes/``: Kerberos, HA NameNodes, viewfs, hosts of their own, secure IO;
``fixtures``: a session's sandbox and application cleanup, for tests and benchmarks.
"""

from tfyarn_sandbox.config import SandboxError, default_root
from tfyarn_sandbox.sandbox import Sandbox

__all__ = ["Sandbox", "SandboxError", "default_root"]
