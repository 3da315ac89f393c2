"""Sandboxes shaped like production clusters.

``shape``: what each option means (ports, hosts, folders, commands; pure);
``boot``: configuring and starting a shaped sandbox; ``kerberos``: an MIT KDC and
keytabs; ``ha``: two NameNodes behind a nameservice; ``hosts``: daemons at
addresses and hostnames of their own; ``secure_io``: what Kerberized daemons ask of
their log handling.
"""
