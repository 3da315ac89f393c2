"""The cluster as a client sees it.

``conf``: the client's Hadoop configuration (``HADOOP_CONF_DIR``, HA, viewfs);
``filesystem``: HDFS through hdfs-native; ``kerberos``: tickets and keytab logins;
``queue_acls`` and ``capacity``: who may submit where, and whether a topology fits;
``resourcemanager``: the ResourceManager's REST and RPC client (submit, kill, reports).
"""
